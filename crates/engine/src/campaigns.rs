//! Campaign sending in the background (docs/campaigns.md):
//! - the fan-out: a `campaign.fanout` job per sent campaign, due at its scheduled time, walks
//!   the audience (subscribed contacts only) in keyset pages by contact id and queues each
//!   page's messages through the send path's staging ([`MessageSpec`]: the same rendering,
//!   suppression and unsubscribe rules as `/v1/send`);
//! - the move to SENT, once the fan-out is done and no message of the campaign is left PENDING
//!   or SENDING.
//!
//! Guarantees: each page's messages, their send jobs and the checkpoint commit in one
//! transaction whose first write is the fenced hold of the fan-out job, so a fan-out resumed
//! after a crash (or taken over by another node when the lease expired) starts after the last
//! committed page: every recipient is queued exactly once. A cancel is seen at the next page
//! (read inside the page's transaction), and delivery skips the campaign's messages not yet
//! handed over.
//!
//! A fan-out that stops on its own is not a cancel (DECISIONS.md "Campaigns"): the billing
//! limit reached at a page, an audience that no longer resolves (checked when the run starts
//! and, for a segment, in every page's transaction), or a failure that outlived its retries
//! ends the fan-out with a [`StoppedReason`] (`store_campaigns::stop_fanout`); the campaign
//! stays SENDING, so what was already queued, and billed, is delivered, and then ends SENT.

mod history;
mod send;

pub use history::SentMessage;

use std::time::Duration;

use herald_core::billing::Category;
use herald_core::campaign::{AudienceType, CampaignStatus, StoppedReason};
use herald_core::email::EmailAddress;
use herald_core::filter::Filter;
use herald_core::ids::Uuid;
use herald_store::audience::Audience;
use herald_store::campaigns::{self as store_campaigns, Campaign, FANOUT_JOB, PageRecord};
use herald_store::contacts::Contact;
use herald_store::jobs::{self, Job};
use herald_store::{StoreError, StoreResult, Tx, billing, suppressions};
use serde_json::Value;
use tokio::sync::watch;

use crate::Engine;
use crate::send::accept::{Addressee, CampaignMessage, MessageSpec, Rendered, Staged};

pub use send::CampaignSendError;

/// The period of the SENT check (once per cluster per period).
const COMPLETION_PERIOD: Duration = Duration::from_secs(2);

/// Runs campaign fan-outs (one at a time on this node) until shutdown. A scheduled campaign is
/// a fan-out job due at its time, claimed under a lease like every job: one node runs it.
pub async fn run_campaigns(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    loop {
        let mark = engine.due_mark();
        let found = match engine.fan_out_due().await {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(error = %e, "claiming campaign fan-outs failed");
                false
            }
        };
        let stop = if found {
            *shutdown.borrow()
        } else {
            engine
                .wait_for_due(&[FANOUT_JOB], mark, &mut shutdown)
                .await
        };
        if stop {
            return;
        }
    }
}

/// Moves finished campaigns to SENT once per [`COMPLETION_PERIOD`] in the cluster
/// (`periodic`).
pub async fn run_completion(engine: Engine, shutdown: watch::Receiver<bool>) {
    let worker = engine.clone();
    crate::periodic::run_each_period(
        engine,
        crate::periodic::PeriodicTask::CampaignCompletion,
        COMPLETION_PERIOD,
        Duration::ZERO,
        shutdown,
        move || {
            let engine = worker.clone();
            async move {
                if let Err(e) = store_campaigns::finish_sent(&engine.store, engine.now()).await {
                    tracing::error!(error = %e, "the campaign SENT check failed");
                }
                false
            }
        },
    )
    .await;
}

impl Engine {
    /// Claims one due fan-out job and runs it to its end (all queued, stopped, or failed and
    /// settled); returns whether there was one.
    pub async fn fan_out_due(&self) -> StoreResult<bool> {
        let lease = crate::job_lease::lease_ms(self);
        let claimed = self
            .store
            .claim_jobs(FANOUT_JOB, 1, self.now(), lease)
            .await?;
        let found = !claimed.is_empty();
        for job in claimed {
            run_one(self, job).await;
        }
        Ok(found)
    }
}

/// A claimed fan-out job and the campaign it names.
struct Held<'a> {
    engine: &'a Engine,
    job: &'a Job,
    project_id: Uuid,
    campaign_id: Uuid,
}

impl Held<'_> {
    /// A transaction whose first write is the fenced hold of the job; `None`: lease lost.
    async fn begin(&self) -> StoreResult<Option<Tx>> {
        let mut tx = self.engine.store.begin().await?;
        if jobs::hold(
            &mut tx,
            self.job.id,
            self.job.lease_token,
            self.engine.now(),
        )
        .await?
        {
            Ok(Some(tx))
        } else {
            Ok(None)
        }
    }

    /// Stops the fan-out in `tx` (see [`store_campaigns::stop_fanout`]) and acks the job.
    async fn stop(&self, mut tx: Tx, reason: StoppedReason, detail: &str) -> StoreResult<()> {
        let now = self.engine.now();
        tracing::warn!(campaign = %self.campaign_id, reason = reason.as_str(), detail, "campaign fan-out stopped");
        store_campaigns::stop_fanout(
            &mut tx,
            self.project_id,
            self.campaign_id,
            reason,
            detail,
            now,
        )
        .await?;
        if jobs::complete(&mut tx, self.job.id, self.job.lease_token).await? {
            tx.commit().await?;
        }
        Ok(())
    }

    /// Acks the job (the fan-out has nothing more to do).
    async fn complete(&self) -> StoreResult<()> {
        let mut tx = self.engine.store.begin().await?;
        if jobs::complete(&mut tx, self.job.id, self.job.lease_token).await? {
            tx.commit().await?;
        }
        Ok(())
    }
}

async fn run_one(engine: &Engine, job: Job) {
    let campaign_id = job
        .payload
        .0
        .get("campaignId")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Uuid>().ok());
    let (Some(project_id), Some(campaign_id)) = (job.project_id, campaign_id) else {
        settle_error(engine, &job, None, "the job names no campaign").await;
        return;
    };
    let held = Held {
        engine,
        job: &job,
        project_id,
        campaign_id,
    };
    let outcome = if job.attempts > job.max_attempts {
        Err(StoreError::Other(anyhow::anyhow!(
            "the fan-out was interrupted {} times",
            job.attempts - 1
        )))
    } else {
        crate::job_lease::with_heartbeat(engine, &job, fan_out(&held)).await
    };
    if let Err(e) = outcome {
        tracing::warn!(error = %e, job = %job.id, campaign = %campaign_id, "campaign fan-out failed");
        settle_error(
            engine,
            &job,
            Some((project_id, campaign_id)),
            &e.to_string(),
        )
        .await;
    }
}

/// Pages through the audience until it is all queued, the campaign is no longer SENDING, or
/// the lease is lost. Each page's read of the next one runs while the page is written (the
/// read pool beside the writer): the keyset cursor of the next page is the page's last id,
/// which is what the page's checkpoint commits, so a read-ahead is used only when the
/// committed cursor (re-read every page) still equals it.
async fn fan_out(held: &Held<'_>) -> StoreResult<()> {
    let engine = held.engine;
    let mut audience: Option<(Option<Filter>, MessageSpec)> = None;
    let mut ahead: Option<ReadAhead> = None;
    loop {
        let now = engine.now();
        let Some(campaign) = engine
            .store
            .campaign(held.project_id, held.campaign_id)
            .await?
        else {
            return held.complete().await;
        };
        match campaign.status {
            CampaignStatus::Scheduled => {
                if let Some(at) = campaign.scheduled_at.filter(|at| *at > now) {
                    // Rescheduled later while this job was claimed: wait for the new time.
                    if let Some(mut tx) = held.begin().await?
                        && jobs::postpone(&mut tx, held.job.id, held.job.lease_token, at, now)
                            .await?
                    {
                        tx.commit().await?;
                    }
                    return Ok(());
                }
                let Some(mut tx) = held.begin().await? else {
                    return Ok(());
                };
                store_campaigns::start_if_due(&mut tx, held.project_id, held.campaign_id, now)
                    .await?;
                tx.commit().await?;
                continue;
            }
            CampaignStatus::Sending if !campaign.fanout_done => {}
            _ => return held.complete().await,
        }
        if audience.is_none() {
            match prepare(engine, &campaign).await? {
                Ok(prepared) => audience = Some(prepared),
                Err((reason, detail)) => {
                    return match held.begin().await? {
                        Some(tx) => held.stop(tx, reason, &detail).await,
                        None => Ok(()),
                    };
                }
            }
        }
        let Some((filter, spec)) = &audience else {
            continue;
        };
        let size = engine.settings.campaign_page_size.max(1);
        let read = |after: Option<Uuid>| async move {
            let audience = Audience::new(filter.as_ref(), true);
            let contacts = engine
                .store
                .matching_contacts_page(held.project_id, audience, after, size, now)
                .await?;
            Ok::<_, StoreError>(render_page(spec, contacts))
        };
        let page = match ahead.take() {
            Some(a) if a.after == campaign.fanout_after => a.page,
            _ => read(campaign.fanout_after).await?,
        };
        let (len, done) = (page.len(), page.len() < size as usize);
        let next_after = page.last().map(|(c, _)| c.id);
        let segment = match campaign.content.audience_type {
            AudienceType::Segment => campaign.content.segment_id,
            _ => None,
        };
        let write = write_page(held, spec, segment, page, done, now);
        let (written, next) = tokio::join!(write, async {
            match done {
                true => Ok(None),
                false => read(next_after).await.map(Some),
            }
        });
        match written? {
            Written::Page => {}
            Written::Recheck => continue,
            Written::Stop => return Ok(()),
        }
        engine.send_queued();
        crate::metrics::campaign_page(len);
        if done {
            return Ok(());
        }
        ahead = next?.map(|page| ReadAhead {
            after: next_after,
            page,
        });
    }
}

/// The next page, read and rendered while the one before it was written.
struct ReadAhead {
    /// The cursor it was read after.
    after: Option<Uuid>,
    page: Vec<(Contact, Rendered)>,
}

/// Each contact's message rendered: the CPU part of staging, which needs no transaction.
fn render_page(spec: &MessageSpec, contacts: Vec<Contact>) -> Vec<(Contact, Rendered)> {
    contacts
        .into_iter()
        .map(|c| {
            let rendered = spec.render_one(c.id, &c.email, &c.data, None);
            (c, rendered)
        })
        .collect()
}

/// What became of a page's transaction.
enum Written {
    /// Committed: the page is queued and checkpointed.
    Page,
    /// Nothing written: the campaign is no longer SENDING; the caller looks again.
    Recheck,
    /// The fan-out ends here: the lease is lost, or the fan-out stopped on its own.
    Stop,
}

/// Queues one page in one transaction: its messages and send jobs, the billing count, the
/// checkpoint and, for the last page, the job's ack. A page the billing limit does not allow,
/// or one of a SEGMENT audience (`segment`) whose segment is gone, stops the fan-out instead.
async fn write_page(
    held: &Held<'_>,
    spec: &MessageSpec,
    segment: Option<Uuid>,
    page: Vec<(Contact, Rendered)>,
    done: bool,
    now: i64,
) -> StoreResult<Written> {
    let engine = held.engine;
    let Some(mut tx) = held.begin().await? else {
        return Ok(Written::Stop);
    };
    let in_tx = store_campaigns::status_in_tx(&mut tx, held.project_id, held.campaign_id)
        .await?
        .map(|(s, _)| s);
    if in_tx != Some(CampaignStatus::Sending) {
        // Cancelled (or deleted) since the read above: queue nothing; the loop acks.
        return Ok(Written::Recheck);
    }
    if let Some(segment) = segment
        && !store_campaigns::segment_exists_in_tx(&mut tx, held.project_id, segment).await?
    {
        let detail = "the campaign's segment was deleted";
        held.stop(tx, StoppedReason::AudienceError, detail).await?;
        return Ok(Written::Stop);
    }
    let category = Category::Campaigns;
    let adding = page.len() as i64;
    if !billing::allows(&mut tx, held.project_id, category, adding, now).await? {
        let detail = "the project's monthly campaigns limit is reached";
        held.stop(tx, StoppedReason::BillingLimit, detail).await?;
        return Ok(Written::Stop);
    }
    let emails: Vec<&str> = page.iter().map(|(c, _)| c.email.as_str()).collect();
    let mut suppressed = suppressions::suppressed_among(&mut tx, held.project_id, &emails).await?;
    let last = page.last().map(|(c, _)| c.id);
    let mut staged = Staged::default();
    let mut skipped = 0;
    for (contact, rendered) in page {
        let on_list = suppressions::take_reason(&mut suppressed, &contact.email);
        let addressee = Addressee {
            contact_id: contact.id,
            email: contact.email,
            name: None,
            subscribed: contact.subscribed,
            suppressed: on_list,
        };
        let accepted = spec.stage_rendered(&mut staged, addressee, rendered);
        skipped += i64::from(accepted.skipped.is_some());
    }
    staged.flush(&mut tx, max_attempts(engine), now).await?;
    billing::count(&mut tx, held.project_id, category, adding - skipped, now).await?;
    let record = PageRecord {
        last,
        written: adding,
        skipped,
        done,
    };
    store_campaigns::record_page(&mut tx, held.project_id, held.campaign_id, record, now).await?;
    if done && !jobs::complete(&mut tx, held.job.id, held.job.lease_token).await? {
        return Ok(Written::Stop);
    }
    tx.commit().await?;
    Ok(Written::Page)
}

fn max_attempts(engine: &Engine) -> i32 {
    i32::try_from(engine.settings.send_max_attempts).unwrap_or(i32::MAX)
}

/// The campaign's audience filter (`None`: every contact); an audience that no longer
/// resolves is an error of the fan-out.
async fn audience_filter(engine: &Engine, campaign: &Campaign) -> StoreResult<Option<Filter>> {
    engine
        .store
        .campaign_audience(campaign)
        .await?
        .map_err(|why| invalid(&why))
}

/// Why a fan-out cannot run at all: no retry would change it.
type Unrunnable = (StoppedReason, String);

/// The campaign's audience filter and its message, resolved once per fan-out run (a SENDING
/// campaign can no longer be edited); `Err` when the campaign cannot be sent (its audience no
/// longer resolves, its sender is not an address).
async fn prepare(
    engine: &Engine,
    campaign: &Campaign,
) -> StoreResult<Result<(Option<Filter>, MessageSpec), Unrunnable>> {
    let c = &campaign.content;
    let filter = match engine.store.campaign_audience(campaign).await? {
        Ok(filter) => filter,
        Err(why) => return Ok(Err((StoppedReason::AudienceError, why))),
    };
    let Ok(from) = EmailAddress::parse(&c.from_email) else {
        let why = "the campaign's sender is not a valid address".to_owned();
        return Ok(Err((StoppedReason::FanoutError, why)));
    };
    let spec = MessageSpec::campaign(
        CampaignMessage {
            project_id: campaign.project_id,
            campaign_id: campaign.id,
            subject: &c.subject,
            body: &c.body,
            from: &from,
            from_name: c.from_name.clone(),
            reply_to: c.reply_to.clone(),
        },
        &engine.links,
    );
    Ok(Ok((filter, spec)))
}

impl Engine {
    /// How many contacts the campaign would go to now (subscribed ones of its audience).
    pub async fn campaign_audience_size(&self, campaign: &Campaign) -> StoreResult<u64> {
        let filter = audience_filter(self, campaign).await?;
        self.store
            .count_matching(
                campaign.project_id,
                Audience::new(filter.as_ref(), true),
                self.now(),
            )
            .await
    }
}

fn invalid(why: &str) -> StoreError {
    StoreError::Other(anyhow::anyhow!("{why}"))
}

/// Retries a failed attempt with backoff, or, once the attempts are spent, dead-letters the
/// job and stops the fan-out (FANOUT_ERROR, with the error): what was queued still goes out.
async fn settle_error(engine: &Engine, job: &Job, campaign: Option<(Uuid, Uuid)>, error: &str) {
    let now = engine.now();
    let result: StoreResult<()> = async {
        let dead = crate::job_lease::settle_failure(engine, job, error, campaign.is_none());
        if let Some(mut tx) = dead.await? {
            if let Some((project_id, id)) = campaign {
                let detail = format!("the fan-out failed: {error}");
                let reason = StoppedReason::FanoutError;
                store_campaigns::stop_fanout(&mut tx, project_id, id, reason, &detail, now).await?;
            }
            tx.commit().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        tracing::error!(error = %e, job = %job.id, "recording a fan-out failure failed");
    }
}
