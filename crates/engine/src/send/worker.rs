//! The delivery worker.
//!
//! Guarantees:
//! - A claimed send job is held under its claim's owner token, its lease renewed by the node's
//!   heartbeat ([`super::leases`]) from the claim to its last write. Every write the worker
//!   makes for the job (ack, retry, dead letter, the message's status and history) is fenced
//!   by that token: a worker whose lease was taken over changes nothing. Right before the
//!   transport handoff the worker checks that the database confirmed its lease (at the claim
//!   or the last heartbeat) for at least a third of the lease time from now; if not, it sends
//!   nothing.
//! - When the transport accepts, SENT, its history, `email.sent` and the ack commit together
//!   ([`super::record`]), so a re-claimed job finds the message SENT and does not send it
//!   again. The only window for a second handoff is a process that dies (or loses its lease)
//!   after the relay's 250 and before that commit: its messages in flight may go out once
//!   more. With the local outbox the file's presence makes delivery exactly-once.
//! - Every claim counts an attempt, a re-claim after a crash included. Transient failures
//!   (4xx, connection errors) retry with exponential backoff; a 5xx refusing the recipient or
//!   its message (`RCPT TO`, `DATA`) is a permanent bounce ([`crate::feedback::apply`]) in the
//!   transaction of the job's ack; other permanent failures (a 5xx to `MAIL FROM`, a message
//!   the relay can never take) fail the message with the reply kept. Mailbox-simulator
//!   messages never reach the transport ([`super::simulate`]). A job claimed again past
//!   `send_max_attempts` (its workers kept dying or losing the lease) ends FAILED with the
//!   reason and stays as a dead letter.
//! - Deliveries in flight share the node's memory budget ([`super::budget`]): a message's
//!   attachments are read, and it is composed, only once its estimated size is reserved, and
//!   the reservation lasts until the transport is done with it. Jobs claimed ahead hold their
//!   message rows only, never attachments' bytes.

use std::sync::Arc;
use std::time::Duration;

use herald_core::time::Millis;
use herald_mail::transport::{Envelope, Transport, TransportError};
use herald_store::StoreResult;
use herald_store::blobs::Blob;
use herald_store::delivery::{DeliveryContext, DeliveryRead};
use herald_store::jobs::{self, Job};
use herald_store::messages::{self, Message, MessageStatus};
use tokio::sync::{Notify, Semaphore, mpsc, watch};
use tokio::task::JoinSet;

use herald_core::feedback::{FeedbackKind, relay_message_id};

use super::accept::SEND_JOB;
use super::budget::{DeliveryCost, SendBudget};
use super::compose::compose;
use super::decorate::decorate;
use super::leases::{Leases, run_heartbeat};
use super::prefetch::{Claimed, SignerLookup, prefetch};
use super::record::{SentDone, record_sent, run_completer};
use crate::Engine;
use crate::feedback::{Feedback, apply_feedback, target_of};

/// Jobs claimed per query.
const CLAIM_BATCH: usize = 64;
/// After a claim that took fewer than a quarter of a batch, the claimer waits this long for
/// more jobs to queue before claiming again: under a steady stream of requests, claiming at
/// once took one or two jobs per claim (two statements and a read each, per message on
/// PostgreSQL), while a few milliseconds gather a batch for the same statements.
const LINGER: Duration = Duration::from_millis(5);

pub async fn run_sender(engine: Engine, shutdown: watch::Receiver<bool>) {
    let concurrency = engine.settings.send_concurrency;
    let permits = Arc::new(Semaphore::new(concurrency));
    let budget = SendBudget::new(engine.settings.send_memory_budget);
    let leases = Arc::new(Leases::default());
    let (stop_heartbeat, heartbeat_stop) = watch::channel(false);
    let heartbeat = tokio::spawn(run_heartbeat(
        engine.clone(),
        leases.clone(),
        heartbeat_stop,
    ));
    let (done_tx, done_rx) = mpsc::channel::<SentDone>(1024);
    let completer = tokio::spawn(run_completer(engine.clone(), leases.clone(), done_rx));
    // Claimed jobs wait here for a permit. The claimer keeps one to two rounds of deliveries
    // claimed ahead, so a claim waiting for the database writer (which the completer's
    // records share) never leaves the permits idle.
    let (ready_tx, mut ready) = mpsc::channel::<Claimed>(2 * concurrency.max(1));
    let room = Arc::new(Notify::new());
    let claimer = tokio::spawn(run_claimer(
        engine.clone(),
        leases.clone(),
        ready_tx,
        room.clone(),
        shutdown,
    ));
    let mut tasks = JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        let claimed = tokio::select! {
            claimed = ready.recv() => claimed,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {
                // A delivery in hand finished: it may have scheduled a retry sooner than
                // anything the claimer waits for.
                room.notify_one();
                continue;
            }
        };
        // None: the claimer stopped (shutdown).
        let Some(claimed) = claimed else { break };
        room.notify_one();
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let worker = Worker {
            engine: engine.clone(),
            leases: leases.clone(),
            budget: budget.clone(),
            done: done_tx.clone(),
        };
        tasks.spawn(async move {
            worker.deliver(claimed).await;
            drop(permit);
        });
    }
    let _ = claimer.await;
    // Jobs claimed ahead and not started are let go, in the database too, so another node
    // takes them at once rather than after their lease (no handoff was made for them).
    let mut unstarted = Vec::new();
    while let Ok(claimed) = ready.try_recv() {
        leases.release(claimed.job.id);
        unstarted.push((claimed.job.id, claimed.job.lease_token));
    }
    release_unstarted(&engine, &unstarted).await;
    // Let sends in hand finish (they are bounded by the transport's timeouts), then record
    // them; the heartbeat keeps their leases until the recorder is done.
    while tasks.join_next().await.is_some() {}
    drop(done_tx);
    let _ = completer.await;
    let _ = stop_heartbeat.send(true);
    let _ = heartbeat.await;
}

/// Claims send jobs in batches while `ready` has room for a batch, reads what their delivery
/// needs, and hands them over held (the heartbeat renews their leases from the claim on).
async fn run_claimer(
    engine: Engine,
    leases: Arc<Leases>,
    ready: mpsc::Sender<Claimed>,
    room: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    // Claim in batches of a round: a claim, its message read and its domain lookup are a
    // few round trips to the database each, so one per round rather than per delivery.
    let batch = (ready.max_capacity() / 2).clamp(1, CLAIM_BATCH);
    loop {
        if *shutdown.borrow() {
            break;
        }
        let free = ready.capacity().min(CLAIM_BATCH);
        if free < batch {
            tokio::select! {
                _ = room.notified() => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        let lease = engine.settings.send_lease.as_millis() as i64;
        let claimed_at = engine.now();
        let mark = engine.due_mark();
        let claimed = engine
            .store
            .claim_jobs(SEND_JOB, free as u32, claimed_at, lease)
            .await;
        let jobs = match claimed {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::error!(error = %e, "claiming send jobs failed");
                if crate::sleep_or_shutdown(&mut shutdown, Duration::from_secs(1)).await {
                    break;
                }
                continue;
            }
        };
        if jobs.is_empty() {
            // Sleep until a job is due (`due_jobs`: a retry's time came, or jobs were queued
            // on any node), new work is queued here, or a delivery in hand finishes.
            let mut stop = shutdown.clone();
            tokio::select! {
                _ = engine.wake.notified() => {}
                _ = engine.wait_for_due(&[SEND_JOB], mark, &mut stop) => {}
                _ = room.notified() => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        // Not held yet: on a failed read the leases expire and the jobs are claimed again.
        let claimed = match prefetch(&engine, jobs).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::error!(error = %e, "reading claimed send jobs failed");
                if crate::sleep_or_shutdown(&mut shutdown, Duration::from_secs(1)).await {
                    break;
                }
                continue;
            }
        };
        let few = claimed.len() < (batch / 4).max(2);
        for claimed in claimed {
            leases.hold(claimed.job.id, claimed.job.lease_token, claimed_at + lease);
            let id = claimed.job.id;
            // Room was counted before the claim and only this task sends: no wait here.
            if ready.send(claimed).await.is_err() {
                leases.release(id);
            }
        }
        if few && crate::sleep_or_shutdown(&mut shutdown, LINGER).await {
            break;
        }
    }
}

/// What a finished job's last write does with the job row.
#[derive(Clone, Copy)]
enum JobEnd {
    /// Delete it: its work is done.
    Ack,
    /// Keep it as a dead letter with the reason.
    DeadLetter,
}

struct Worker {
    engine: Engine,
    leases: Arc<Leases>,
    budget: SendBudget,
    done: mpsc::Sender<SentDone>,
}

impl Worker {
    async fn deliver(&self, claimed: Claimed) {
        let Claimed { job, read, signer } = claimed;
        let handed_to_recorder = match self.try_deliver(&job, read, signer).await {
            Ok(recorder) => recorder,
            Err(e) => {
                // The job stays leased; it is claimed again when the lease expires.
                tracing::error!(job = %job.id, error = %e, "delivery bookkeeping failed");
                false
            }
        };
        if !handed_to_recorder {
            self.leases.release(job.id);
        }
    }

    /// Ok(true) when the job was handed to the recorder (which releases it).
    async fn try_deliver(
        &self,
        job: &Job,
        read: Option<DeliveryRead>,
        signer: Option<SignerLookup>,
    ) -> StoreResult<bool> {
        let engine = &self.engine;
        let now = engine.now();
        let Some(DeliveryRead {
            message: msg,
            context,
        }) = read
        else {
            let mut tx = engine.store.begin().await?;
            let reason = "the job names no existing message";
            if jobs::fail(&mut tx, job.id, job.lease_token, reason, now).await? {
                tx.commit().await?;
            }
            return Ok(false);
        };
        if msg.status.is_done() {
            // Done already (e.g. the ack of an earlier run was lost): ack without sending again.
            let mut tx = engine.store.begin().await?;
            if jobs::complete(&mut tx, job.id, job.lease_token).await? {
                tx.commit().await?;
            }
            return Ok(false);
        }
        if self.campaign_cancelled(job, &msg).await? {
            return Ok(false);
        }
        if job.attempts > job.max_attempts {
            let reason = format!(
                "gave up after {} attempts: the worker delivering it stopped (crashed or lost its lease) \
                 before recording an outcome",
                job.max_attempts
            );
            self.finish_failed(job, &msg, &reason, JobEnd::DeadLetter)
                .await?;
            return Ok(false);
        }
        if msg.simulated {
            // The mailbox simulator: never handed to a transport.
            super::simulate::deliver_simulated(engine, job, &msg).await?;
            return Ok(false);
        }
        let key = msg.id.to_string();
        if let Transport::Outbox(outbox) = &engine.transport
            && outbox.path_for(&key).is_ok_and(|p| p.exists())
        {
            let reply = "recovered: the message was already in the outbox";
            record_sent(engine, &[self.sent_done(job, &msg, reply, now, None)]).await;
            return Ok(false);
        }
        // No write before the handoff: SENT, its history and the ack are recorded together
        // afterwards. The status stays PENDING (or SENDING while retrying) until then.
        engine.throttle.acquire(msg.project_id).await;
        // Cancelled while this message waited in the throttle.
        if self.campaign_cancelled(job, &msg).await? {
            return Ok(false);
        }
        let signer = signer.unwrap_or_else(|| Err("no DKIM signer was looked up".to_owned()));
        // The message's share of the node's delivery memory, from before its attachments are
        // read until the transport is done with it.
        let Some(mut reservation) = self.budget.reserve(DeliveryCost::of(&msg)).await else {
            return Ok(false);
        };
        let blobs = if msg.body_purged_at.is_none() && has_attachments(&msg) {
            engine.store.message_blobs(msg.id).await?
        } else {
            Vec::new()
        };
        let raw = match build_signed(engine, &msg, context, blobs, signer).await {
            Ok(raw) => raw,
            Err(reason) => {
                self.finish_failed(job, &msg, &reason, JobEnd::Ack).await?;
                return Ok(false);
            }
        };
        reservation.composed();
        if !self.still_holds(job) {
            tracing::warn!(job = %job.id, message = %msg.id, "lease lost before the handoff; not sending");
            return Ok(false);
        }
        let envelope = Envelope {
            mail_from: msg.from_email.clone(),
            rcpt_to: vec![msg.to_email.clone()],
        };
        let result = engine.transport.send_owned(&key, &envelope, raw).await;
        drop(reservation);
        crate::metrics::relay_reply(&result);
        match result {
            Ok(reply) => {
                crate::metrics::message_sent(msg.created_at, engine.now());
                engine.throttle.reward(msg.project_id);
                let relay_id = match &engine.transport {
                    Transport::Smtp(_) => relay_message_id(&reply),
                    Transport::Outbox(_) => None,
                };
                let sent = self.sent_done(job, &msg, &reply, now, relay_id);
                if self.done.send(sent).await.is_err() {
                    tracing::error!(message = %msg.id, "the completion recorder stopped; the job will be retried");
                    return Ok(false);
                }
                Ok(true)
            }
            Err(TransportError::Permanent(reply)) => {
                self.finish_failed(job, &msg, &reply, JobEnd::Ack).await?;
                Ok(false)
            }
            Err(TransportError::Rejected(reply)) => {
                self.finish_bounced(job, &msg, &reply).await?;
                Ok(false)
            }
            Err(TransportError::Transient(reply)) => {
                self.retry_later(job, &msg, &reply).await?;
                Ok(false)
            }
        }
    }

    /// Whether the lease is ours, as the database last confirmed it (the claim or the last
    /// heartbeat), for at least a third of the lease time from now: long enough for the
    /// handoff, which the heartbeat then covers. No read: see [`super::leases`].
    fn still_holds(&self, job: &Job) -> bool {
        let margin = (self.engine.settings.send_lease / 3).as_millis() as Millis;
        self.leases
            .holds_until(job.id, job.lease_token, self.engine.now() + margin)
    }

    fn sent_done(
        &self,
        job: &Job,
        msg: &Message,
        reply: &str,
        started_at: Millis,
        relay_message_id: Option<String>,
    ) -> SentDone {
        SentDone {
            job_id: job.id,
            lease_token: job.lease_token,
            message_id: msg.id,
            template_id: msg.template_id,
            subject: msg.subject.clone(),
            reply: reply.to_owned(),
            started_at,
            first_attempt: msg.status == MessageStatus::Pending,
            relay_message_id,
        }
    }

    /// The relay refused the recipient (5xx at SMTP time): the permanent-bounce path
    /// (BOUNCED, `email.bounce`, unsubscribed, suppressed), with the job's ack in the same
    /// transaction, if the lease is still ours.
    async fn finish_bounced(&self, job: &Job, msg: &Message, reply: &str) -> StoreResult<()> {
        let now = self.engine.now();
        let mut tx = self.engine.store.begin().await?;
        if !jobs::complete(&mut tx, job.id, job.lease_token).await? {
            tracing::warn!(job = %job.id, "lease lost; the bounce is not recorded");
            return Ok(());
        }
        if msg.status == MessageStatus::Pending {
            messages::add_history(&mut tx, msg.id, MessageStatus::Sending, None, now).await?;
        }
        let fb = Feedback {
            kind: FeedbackKind::Bounce { permanent: true },
            detail: Some(reply),
            source: "SMTP",
            attempt: true,
        };
        let target = target_of(msg);
        let moved = apply_feedback(&mut tx, &target, &fb, now).await?;
        let limits = &self.engine.settings.reputation;
        crate::feedback::apply::guard_reputation(&mut tx, &target, &fb, moved, limits, now).await?;
        tx.commit().await
    }

    /// A transient failure: another attempt later, or FAILED at the attempt limit.
    async fn retry_later(&self, job: &Job, msg: &Message, reply: &str) -> StoreResult<()> {
        let engine = &self.engine;
        if reply.starts_with('4') {
            engine.throttle.penalize(msg.project_id);
        }
        if job.attempts >= job.max_attempts {
            let reason = format!("gave up after {} attempts: {reply}", job.attempts);
            return self.finish_failed(job, msg, &reason, JobEnd::Ack).await;
        }
        crate::metrics::message_retried();
        let delay = backoff(engine.settings.send_retry_base, job.attempts);
        let detail = format!(
            "attempt {} failed: {reply}; retrying in {:.1} s",
            job.attempts,
            delay.as_secs_f64()
        );
        let now = engine.now();
        let run_at = now + delay.as_millis() as Millis;
        let mut tx = engine.store.begin().await?;
        if !jobs::retry(&mut tx, job.id, job.lease_token, run_at, reply, now).await? {
            tracing::warn!(job = %job.id, "lease lost; the retry is not recorded");
            return Ok(());
        }
        let sending = MessageStatus::Sending;
        if messages::set_status(&mut tx, msg.id, sending, Some(reply), true, now).await? {
            if msg.status == MessageStatus::Pending {
                messages::add_history(&mut tx, msg.id, sending, None, now).await?;
            }
            messages::add_history(&mut tx, msg.id, sending, Some(&detail), now).await?;
        }
        tx.commit().await
    }

    /// True (and the message settled SUPPRESSED) when it belongs to a cancelled campaign. The
    /// answer is cached per campaign for a second (`Store::campaign_cancelled`).
    async fn campaign_cancelled(&self, job: &Job, msg: &Message) -> StoreResult<bool> {
        let Some(campaign) = msg.campaign_id else {
            return Ok(false);
        };
        if !self.engine.store.campaign_cancelled(campaign).await? {
            return Ok(false);
        }
        self.finish_unsent(job, msg, "the campaign was cancelled")
            .await?;
        Ok(true)
    }

    /// SUPPRESSED with `reason` (not sent on purpose) and the job acked, if the lease is
    /// still ours.
    async fn finish_unsent(&self, job: &Job, msg: &Message, reason: &str) -> StoreResult<()> {
        let now = self.engine.now();
        let mut tx = self.engine.store.begin().await?;
        if !jobs::complete(&mut tx, job.id, job.lease_token).await? {
            return Ok(());
        }
        let status = MessageStatus::Suppressed;
        if messages::set_status(&mut tx, msg.id, status, Some(reason), false, now).await? {
            messages::add_history(&mut tx, msg.id, status, Some(reason), now).await?;
        }
        tx.commit().await
    }

    /// FAILED with `reason`, and the job acked or dead-lettered, if the lease is still ours.
    async fn finish_failed(
        &self,
        job: &Job,
        msg: &Message,
        reason: &str,
        end: JobEnd,
    ) -> StoreResult<()> {
        let now = self.engine.now();
        let mut tx = self.engine.store.begin().await?;
        let ours = match end {
            JobEnd::Ack => jobs::complete(&mut tx, job.id, job.lease_token).await?,
            JobEnd::DeadLetter => jobs::fail(&mut tx, job.id, job.lease_token, reason, now).await?,
        };
        if !ours {
            tracing::warn!(job = %job.id, "lease lost; the failure is not recorded");
            return Ok(());
        }
        crate::metrics::message_failed();
        let failed = MessageStatus::Failed;
        if messages::set_status(&mut tx, msg.id, failed, Some(reason), true, now).await? {
            if msg.status == MessageStatus::Pending {
                messages::add_history(&mut tx, msg.id, MessageStatus::Sending, None, now).await?;
            }
            messages::add_history(&mut tx, msg.id, failed, Some(reason), now).await?;
        }
        tx.commit().await
    }
}

/// `base * 2^(attempt-1)`, at most an hour, with ±20% jitter so retries do not march in step.
fn backoff(base: Duration, attempt: i32) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.clamp(1, 16).saturating_sub(1));
    let capped = exp.min(Duration::from_secs(3600));
    let jitter = 0.8 + rand::random::<f64>() * 0.4;
    capped.mul_f64(jitter)
}

/// Gives the jobs back and wakes the other nodes for them; on failure their leases run out.
async fn release_unstarted(engine: &Engine, held: &[(uuid::Uuid, uuid::Uuid)]) {
    if held.is_empty() {
        return;
    }
    match engine.store.release_jobs(held, engine.now()).await {
        Ok(n) => {
            tracing::info!(released = n, "shutting down: claimed send jobs given back");
            if let Err(e) = engine.store.notify_wake(crate::cluster_wake::SEND).await {
                tracing::warn!(error = %e, "waking the other nodes failed");
            }
        }
        Err(e) => tracing::warn!(error = %e, "giving back claimed send jobs failed"),
    }
}

fn has_attachments(msg: &Message) -> bool {
    msg.attachments.0.as_array().is_some_and(|a| !a.is_empty())
}

async fn build_signed(
    engine: &Engine,
    msg: &Message,
    context: Option<DeliveryContext>,
    blobs: Vec<Blob>,
    signer: SignerLookup,
) -> Result<Vec<u8>, String> {
    let signer = signer?;
    let msg = msg.clone();
    let now = engine.now();
    let links = engine.links.clone();
    crate::cpu_pool::run(move || {
        let body = decorate(&msg, &links, context.as_ref());
        compose(&msg, body, blobs, signer.as_ref(), now).map_err(|e| e.0)
    })
    .await
    .unwrap_or_else(|| Err("composing the message failed (it panicked)".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let base = Duration::from_secs(10);
        let b1 = backoff(base, 1).as_secs_f64();
        let b3 = backoff(base, 3).as_secs_f64();
        assert!((8.0..=12.0).contains(&b1), "{b1}");
        assert!((32.0..=48.0).contains(&b3), "{b3}");
        assert!(backoff(base, 30) <= Duration::from_secs(4320));
    }
}
