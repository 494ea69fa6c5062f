//! The user's moves of a campaign: replace, send (now or scheduled), cancel, delete,
//! duplicate. Each reads the status inside its transaction (locked on PostgreSQL; SQLite's
//! single writer serialises) and refuses what the status table of `herald_core::campaign`
//! does not allow, so concurrent requests cannot both win.

use herald_core::campaign::CampaignStatus;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::json;
use sqlx::types::Json;

use super::{Campaign, CampaignContent, FANOUT_JOB, bind_content, domain_of};
use crate::engine::sql;
use crate::{Store, StoreError, StoreResult, Tx, jobs};

/// The result of a move that depends on the campaign's status.
#[derive(Debug)]
pub enum Outcome<T> {
    Done(T),
    NotFound,
    /// The campaign is in a status that does not allow the move.
    Refused(CampaignStatus),
}

pub type SendOutcome = Outcome<Campaign>;
pub type CancelOutcome = Outcome<Campaign>;
pub type DeleteOutcome = Outcome<()>;

/// The campaign's status and fan-out job, read (and locked on PostgreSQL) in `tx`.
pub async fn status_in_tx(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
) -> StoreResult<Option<(CampaignStatus, Option<Uuid>)>> {
    let q = sql(
        tx.dialect(),
        "SELECT status, fanout_job_id FROM campaigns WHERE project_id = $1 AND id = $2",
        "SELECT status, fanout_job_id FROM campaigns WHERE project_id = $1 AND id = $2 FOR UPDATE",
    );
    let row: Option<(String, Option<Uuid>)> = db_tx!(tx, |conn| {
        sqlx::query_as(q)
            .bind(project_id)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?
    });
    row.map(|(s, job)| {
        CampaignStatus::parse(&s)
            .map(|s| (s, job))
            .ok_or_else(|| StoreError::Other(anyhow::anyhow!("campaign {id}: stored status {s:?}")))
    })
    .transpose()
}

impl Store {
    async fn reread(&self, project_id: Uuid, id: Uuid) -> StoreResult<Campaign> {
        self.campaign(project_id, id)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// Replaces the content of a DRAFT or SCHEDULED campaign.
    pub async fn replace_campaign(
        &self,
        project_id: Uuid,
        id: Uuid,
        content: &CampaignContent,
        now: Millis,
    ) -> StoreResult<Outcome<Campaign>> {
        let mut tx = self.begin().await?;
        let Some((status, _)) = status_in_tx(&mut tx, project_id, id).await? else {
            return Ok(Outcome::NotFound);
        };
        if !status.is_editable() {
            return Ok(Outcome::Refused(status));
        }
        db_tx!(&mut tx, |conn| {
            let q = sqlx::query(
                "UPDATE campaigns SET name = $3, description = $4, subject = $5, body = $6, \
                 from_email = $7, from_name = $8, reply_to = $9, from_domain = $10, \
                 audience_type = $11, segment_id = $12, audience_filter = $13, updated_at = $14 \
                 WHERE project_id = $1 AND id = $2",
            )
            .bind(project_id)
            .bind(id);
            bind_content!(q, content)
                .bind(now)
                .execute(&mut *conn)
                .await?;
        });
        tx.commit().await?;
        Ok(Outcome::Done(self.reread(project_id, id).await?))
    }

    /// Sends a DRAFT or SCHEDULED campaign at `at`: SENDING now when `at <= now`, else
    /// SCHEDULED. The fan-out job is enqueued (or moved to the new time) in the same
    /// transaction; a job already running checks the status and time itself.
    pub async fn send_campaign(
        &self,
        project_id: Uuid,
        id: Uuid,
        at: Millis,
        now: Millis,
        max_attempts: i32,
    ) -> StoreResult<SendOutcome> {
        let mut tx = self.begin().await?;
        let Some((status, job)) = status_in_tx(&mut tx, project_id, id).await? else {
            return Ok(Outcome::NotFound);
        };
        if !status.can_send() {
            return Ok(Outcome::Refused(status));
        }
        let scheduled = at > now;
        let (next, scheduled_at, started_at) = if scheduled {
            (CampaignStatus::Scheduled, Some(at), None)
        } else {
            (CampaignStatus::Sending, None, Some(now))
        };
        let run_at = at.max(now);
        let job = match job {
            Some(job) if reschedule(&mut tx, job, run_at).await? => job,
            _ => {
                let payload = json!({"campaignId": id.to_string()});
                jobs::enqueue(
                    &mut tx,
                    Some(project_id),
                    FANOUT_JOB,
                    &payload,
                    run_at,
                    max_attempts,
                )
                .await?
            }
        };
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "UPDATE campaigns SET status = $3, scheduled_at = $4, started_at = $5, \
                 fanout_job_id = $6, updated_at = $7 WHERE project_id = $1 AND id = $2",
            )
            .bind(project_id)
            .bind(id)
            .bind(next.as_str())
            .bind(scheduled_at)
            .bind(started_at)
            .bind(job)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        });
        tx.commit().await?;
        Ok(Outcome::Done(self.reread(project_id, id).await?))
    }

    /// Cancels a SCHEDULED or SENDING campaign: its waiting fan-out job is removed, a running
    /// one stops at its next page, and delivery skips the messages not yet handed over.
    pub async fn cancel_campaign(
        &self,
        project_id: Uuid,
        id: Uuid,
        now: Millis,
    ) -> StoreResult<CancelOutcome> {
        let mut tx = self.begin().await?;
        let Some((status, job)) = status_in_tx(&mut tx, project_id, id).await? else {
            return Ok(Outcome::NotFound);
        };
        if !status.can_cancel() {
            return Ok(Outcome::Refused(status));
        }
        if let Some(job) = job {
            db_tx!(&mut tx, |conn| {
                sqlx::query("DELETE FROM jobs WHERE id = $1 AND state = 'waiting'")
                    .bind(job)
                    .execute(&mut *conn)
                    .await?;
            });
        }
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "UPDATE campaigns SET status = 'CANCELLED', cancelled_at = $3, updated_at = $3, \
                 fanout_job_id = NULL WHERE project_id = $1 AND id = $2",
            )
            .bind(project_id)
            .bind(id)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        });
        tx.commit().await?;
        self.cancelled_campaigns.put(id, true);
        Ok(Outcome::Done(self.reread(project_id, id).await?))
    }

    /// Whether the campaign was cancelled (or deleted), as of at most a second ago on another
    /// node, and at once for a cancel made on this one.
    pub async fn campaign_cancelled(&self, id: Uuid) -> StoreResult<bool> {
        if let Some(known) = self.cancelled_campaigns.get(&id) {
            return Ok(known);
        }
        let row: Option<(String,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT status FROM campaigns WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        let cancelled = row.is_none_or(|(s,)| s == CampaignStatus::Cancelled.as_str());
        self.cancelled_campaigns.put(id, cancelled);
        Ok(cancelled)
    }

    /// Deletes a campaign that is not active. Its messages and events stay (with the id).
    pub async fn delete_campaign(&self, project_id: Uuid, id: Uuid) -> StoreResult<DeleteOutcome> {
        let mut tx = self.begin().await?;
        let Some((status, _)) = status_in_tx(&mut tx, project_id, id).await? else {
            return Ok(Outcome::NotFound);
        };
        if !status.can_delete() {
            return Ok(Outcome::Refused(status));
        }
        db_tx!(&mut tx, |conn| {
            sqlx::query("DELETE FROM campaigns WHERE project_id = $1 AND id = $2")
                .bind(project_id)
                .bind(id)
                .execute(&mut *conn)
                .await?;
        });
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    /// A DRAFT copy of a campaign under `name`; `None` when there is no source.
    pub async fn duplicate_campaign(
        &self,
        project_id: Uuid,
        id: Uuid,
        name: impl FnOnce(&str) -> String,
        now: Millis,
    ) -> StoreResult<Option<Campaign>> {
        let Some(source) = self.campaign(project_id, id).await? else {
            return Ok(None);
        };
        let content = CampaignContent {
            name: name(&source.content.name),
            ..source.content
        };
        Ok(Some(self.create_campaign(project_id, &content, now).await?))
    }
}

/// Moves a waiting fan-out job to `run_at`; false when the job is gone or failed (a new one is
/// needed). A job being run right now counts as kept: it checks the campaign itself.
async fn reschedule(tx: &mut Tx, job: Uuid, run_at: Millis) -> StoreResult<bool> {
    tx.jobs_queued = true;
    let moved = db_tx!(tx, |conn| {
        sqlx::query("UPDATE jobs SET run_at = $2 WHERE id = $1 AND state = 'waiting'")
            .bind(job)
            .bind(run_at)
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    if moved > 0 {
        return Ok(true);
    }
    let running: Option<(Uuid,)> = db_tx!(tx, |conn| {
        sqlx::query_as("SELECT id FROM jobs WHERE id = $1 AND state = 'active'")
            .bind(job)
            .fetch_optional(&mut *conn)
            .await?
    });
    Ok(running.is_some())
}
