//! The store side of the campaign fan-out (engine `campaigns`): the start of a due scheduled
//! campaign, the per-page checkpoint, a stop before the end of the audience, and the move to
//! SENT.
//!
//! Every write here runs in a transaction whose first write was the fenced hold of the
//! fan-out job (`jobs::hold`), so a worker that lost its lease commits nothing.
//!
//! A stop ([`stop_fanout`]) is not a cancel: the campaign stays SENDING with its fan-out done,
//! so delivery sends what was queued (and billed) and [`finish_sent`] ends it SENT; the reason
//! and its activity entry commit in the same transaction.

use herald_core::campaign::{CampaignStatus, StoppedReason};
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::json;

use super::lifecycle::status_in_tx;
use crate::activity::{CAMPAIGN_STOPPED, insert_activity};
use crate::{Store, StoreResult, Tx};

/// Queue job kind of a campaign's fan-out (payload `{campaignId}`).
pub const FANOUT_JOB: &str = "campaign.fanout";

/// Moves a SCHEDULED campaign whose time has come to SENDING. Returns the status after the
/// call (`None`: the campaign is gone).
pub async fn start_if_due(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
    now: Millis,
) -> StoreResult<Option<CampaignStatus>> {
    let Some((status, _)) = status_in_tx(tx, project_id, id).await? else {
        return Ok(None);
    };
    if status != CampaignStatus::Scheduled {
        return Ok(Some(status));
    }
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE campaigns SET status = 'SENDING', started_at = $3, updated_at = $3 \
             WHERE project_id = $1 AND id = $2 AND status = 'SCHEDULED' \
             AND (scheduled_at IS NULL OR scheduled_at <= $3)",
        )
        .bind(project_id)
        .bind(id)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(Some(if n > 0 {
        CampaignStatus::Sending
    } else {
        status
    }))
}

/// One committed page of the fan-out.
#[derive(Clone, Copy, Debug)]
pub struct PageRecord {
    /// The page's last contact id (the next page starts after it); `None` for an empty page.
    pub last: Option<Uuid>,
    /// Messages written (queued or skipped) and, of those, skipped.
    pub written: i64,
    pub skipped: i64,
    /// The page was the audience's last.
    pub done: bool,
}

/// The checkpoint after a page, in the page's transaction.
pub async fn record_page(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
    page: PageRecord,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE campaigns SET fanout_after = COALESCE($3, fanout_after), \
             total_recipients = total_recipients + $4, \
             skipped_recipients = skipped_recipients + $5, fanout_done = $6, \
             fanout_job_id = CASE WHEN $6 THEN NULL ELSE fanout_job_id END, updated_at = $7 \
             WHERE project_id = $1 AND id = $2",
        )
        .bind(project_id)
        .bind(id)
        .bind(page.last)
        .bind(page.written)
        .bind(page.skipped)
        .bind(page.done)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// Moves every SENDING campaign whose fan-out is done and which has no message left PENDING
/// or SENDING to SENT; returns how many moved. One index probe per sending campaign.
pub async fn finish_sent(store: &Store, now: Millis) -> StoreResult<u64> {
    // A read first: most of the time no campaign is sending, and an idle node should not take
    // the (single, on SQLite) writer twice a second for nothing.
    let sending: Option<(Uuid,)> = db_read!(store, |pool| {
        sqlx::query_as(
            "SELECT id FROM campaigns WHERE status = 'SENDING' AND fanout_done = TRUE LIMIT 1",
        )
        .fetch_optional(pool)
        .await?
    });
    if sending.is_none() {
        return Ok(0);
    }
    Ok(db_write!(store, |pool| {
        sqlx::query(
            "UPDATE campaigns SET status = 'SENT', finished_at = $1, updated_at = $1 \
             WHERE status = 'SENDING' AND fanout_done = TRUE AND NOT EXISTS \
             (SELECT 1 FROM messages m WHERE m.project_id = campaigns.project_id \
              AND m.campaign_id = campaigns.id AND m.status IN ('PENDING', 'SENDING'))",
        )
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected()
    }))
}

/// Records a DRAFT campaign as sent in the past, in the transaction that wrote its messages
/// (already SENT, with no send job: [`crate::messages::record_sent_without_job`]): SENT,
/// started at `started_at`, finished at `finished_at`, its fan-out done with `recipients`.
/// The history `herald demo` writes after the fact; false when the campaign is not a DRAFT.
pub async fn record_past_send(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
    recipients: i64,
    started_at: Millis,
    finished_at: Millis,
) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE campaigns SET status = 'SENT', started_at = $3, finished_at = $4, \
             fanout_done = TRUE, total_recipients = $5, updated_at = $4 \
             WHERE project_id = $1 AND id = $2 AND status = 'DRAFT'",
        )
        .bind(project_id)
        .bind(id)
        .bind(started_at)
        .bind(finished_at)
        .bind(recipients)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

/// Whether the project still has the segment, read in `tx` (a SEGMENT audience whose segment
/// is gone no longer resolves: its compiled audience would silently match nobody).
pub async fn segment_exists_in_tx(
    tx: &mut Tx,
    project_id: Uuid,
    segment_id: Uuid,
) -> StoreResult<bool> {
    let row: Option<(Uuid,)> = db_tx!(tx, |conn| {
        sqlx::query_as("SELECT id FROM segments WHERE project_id = $1 AND id = $2")
            .bind(project_id)
            .bind(segment_id)
            .fetch_optional(&mut *conn)
            .await?
    });
    Ok(row.is_some())
}

/// Stops the fan-out of an active campaign before the end of its audience: nothing more is
/// queued, the campaign is (or stays) SENDING with its fan-out done, so what was queued is
/// delivered and the SENT check ends it; `reason` and `detail` are kept, and a
/// `campaign.stopped` activity entry says why. Returns whether the campaign was active.
pub async fn stop_fanout(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
    reason: StoppedReason,
    detail: &str,
    now: Millis,
) -> StoreResult<bool> {
    let stopped: Option<(String, i64)> = db_tx!(tx, |conn| {
        sqlx::query_as(
            "UPDATE campaigns SET status = 'SENDING', started_at = COALESCE(started_at, $3), \
             fanout_done = TRUE, fanout_job_id = NULL, stopped_reason = $4, fanout_error = $5, \
             updated_at = $3 \
             WHERE project_id = $1 AND id = $2 AND status IN ('SCHEDULED', 'SENDING') \
             RETURNING name, total_recipients",
        )
        .bind(project_id)
        .bind(id)
        .bind(now)
        .bind(reason.as_str())
        .bind(detail)
        .fetch_optional(&mut *conn)
        .await?
    });
    let Some((name, queued)) = stopped else {
        return Ok(false);
    };
    let data = json!({
        "campaignId": id.to_string(),
        "name": name,
        "reason": reason.as_str(),
        "message": detail,
        "queued": queued,
    });
    insert_activity(tx, project_id, CAMPAIGN_STOPPED, &data, now).await?;
    Ok(true)
}
