//! Campaigns: the record (content, sender, audience, status, schedule) and the fan-out's
//! checkpoint. The moves between statuses are the rules of `herald_core::campaign`, applied
//! here as conditional updates (`WHERE status IN (...)`), so two requests racing (a send and a
//! cancel, two sends) cannot both win. Every query is scoped by project.
//!
//! The fan-out (engine `campaigns`) pages through the audience by contact id; each page's
//! messages and [`record_page`] (the checkpoint) commit in one transaction, so a resumed
//! fan-out starts after the last committed page.

mod fanout;
mod lifecycle;

use herald_core::campaign::{AudienceType, CampaignStatus, StoppedReason};
use herald_core::filter::Filter;
use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::audience::member_of;

pub use fanout::{
    FANOUT_JOB, PageRecord, finish_sent, record_page, record_past_send, segment_exists_in_tx,
    start_if_due, stop_fanout,
};
pub use lifecycle::{CancelOutcome, DeleteOutcome, Outcome, SendOutcome, status_in_tx};

use crate::{Store, StoreError, StoreResult};

#[derive(Clone, Debug)]
pub struct Campaign {
    pub id: Uuid,
    pub project_id: Uuid,
    pub content: CampaignContent,
    pub status: CampaignStatus,
    pub scheduled_at: Option<Millis>,
    pub started_at: Option<Millis>,
    pub finished_at: Option<Millis>,
    pub cancelled_at: Option<Millis>,
    pub fanout_job_id: Option<Uuid>,
    pub fanout_after: Option<Uuid>,
    pub fanout_done: bool,
    /// Why the fan-out stopped before the end of the audience, if it did (the campaign still
    /// ends SENT once what was queued is delivered), and the detail.
    pub stopped_reason: Option<StoppedReason>,
    pub fanout_error: Option<String>,
    pub total_recipients: i64,
    pub skipped_recipients: i64,
    pub created_at: Millis,
    pub updated_at: Millis,
}

/// What create and replace set: everything a user writes.
#[derive(Clone, Debug)]
pub struct CampaignContent {
    pub name: String,
    pub description: Option<String>,
    pub subject: String,
    pub body: String,
    /// Lower-cased, validated, on a verified domain when written.
    pub from_email: String,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub audience_type: AudienceType,
    pub segment_id: Option<Uuid>,
    pub audience_filter: Option<Value>,
}

#[derive(FromRow)]
struct Row {
    id: Uuid,
    project_id: Uuid,
    name: String,
    description: Option<String>,
    subject: String,
    body: String,
    from_email: String,
    from_name: Option<String>,
    reply_to: Option<String>,
    audience_type: String,
    segment_id: Option<Uuid>,
    audience_filter: Option<Json<Value>>,
    status: String,
    scheduled_at: Option<Millis>,
    started_at: Option<Millis>,
    finished_at: Option<Millis>,
    cancelled_at: Option<Millis>,
    fanout_job_id: Option<Uuid>,
    fanout_after: Option<Uuid>,
    fanout_done: bool,
    fanout_error: Option<String>,
    stopped_reason: Option<String>,
    total_recipients: i64,
    skipped_recipients: i64,
    created_at: Millis,
    updated_at: Millis,
}

impl TryFrom<Row> for Campaign {
    type Error = StoreError;

    fn try_from(r: Row) -> StoreResult<Campaign> {
        let bad = |what: &str, v: &str| {
            StoreError::Other(anyhow::anyhow!("campaign {}: stored {what} {v:?}", r.id))
        };
        let status = CampaignStatus::parse(&r.status).ok_or_else(|| bad("status", &r.status))?;
        let audience_type = AudienceType::parse(&r.audience_type)
            .ok_or_else(|| bad("audience type", &r.audience_type))?;
        let stopped_reason = r
            .stopped_reason
            .as_deref()
            .map(|v| StoppedReason::parse(v).ok_or_else(|| bad("stopped reason", v)))
            .transpose()?;
        Ok(Campaign {
            id: r.id,
            project_id: r.project_id,
            content: CampaignContent {
                name: r.name,
                description: r.description,
                subject: r.subject,
                body: r.body,
                from_email: r.from_email,
                from_name: r.from_name,
                reply_to: r.reply_to,
                audience_type,
                segment_id: r.segment_id,
                audience_filter: r.audience_filter.map(|j| j.0),
            },
            status,
            scheduled_at: r.scheduled_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            cancelled_at: r.cancelled_at,
            fanout_job_id: r.fanout_job_id,
            fanout_after: r.fanout_after,
            fanout_done: r.fanout_done,
            stopped_reason,
            fanout_error: r.fanout_error,
            total_recipients: r.total_recipients,
            skipped_recipients: r.skipped_recipients,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

pub(crate) const COLUMNS: &str = "id, project_id, name, description, subject, body, from_email, \
     from_name, reply_to, audience_type, segment_id, audience_filter, status, scheduled_at, \
     started_at, finished_at, cancelled_at, fanout_job_id, fanout_after, fanout_done, \
     fanout_error, stopped_reason, total_recipients, skipped_recipients, created_at, updated_at";

/// Binds the eleven columns of [`CampaignContent`] (name ... audience_filter, with
/// `from_domain`), in the order create and replace list them.
macro_rules! bind_content {
    ($q:expr, $c:expr) => {
        $q.bind(&$c.name)
            .bind(&$c.description)
            .bind(&$c.subject)
            .bind(&$c.body)
            .bind(&$c.from_email)
            .bind(&$c.from_name)
            .bind(&$c.reply_to)
            .bind(domain_of(&$c.from_email))
            .bind($c.audience_type.as_str())
            .bind($c.segment_id)
            .bind($c.audience_filter.as_ref().map(Json))
    };
}
pub(crate) use bind_content;

/// The lower-cased domain of a sender address (what domain removal checks).
fn domain_of(email: &str) -> String {
    email
        .rsplit_once('@')
        .map(|(_, d)| d.to_lowercase())
        .unwrap_or_default()
}

fn rows_to_campaigns(rows: Vec<Row>) -> StoreResult<Vec<Campaign>> {
    rows.into_iter().map(Campaign::try_from).collect()
}

/// One page of a listing and the number of matches over all pages.
pub struct CampaignPage {
    pub campaigns: Vec<Campaign>,
    pub total: i64,
}

impl Store {
    pub async fn create_campaign(
        &self,
        project_id: Uuid,
        content: &CampaignContent,
        now: Millis,
    ) -> StoreResult<Campaign> {
        let id = new_id();
        db_write!(self, |pool| {
            let q = sqlx::query(
                "INSERT INTO campaigns (id, project_id, name, description, subject, body, \
                 from_email, from_name, reply_to, from_domain, audience_type, segment_id, \
                 audience_filter, status, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'DRAFT', $14, $14)",
            )
            .bind(id)
            .bind(project_id);
            bind_content!(q, content).bind(now).execute(pool).await?;
        });
        self.campaign(project_id, id)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// One campaign of the project.
    pub async fn campaign(&self, project_id: Uuid, id: Uuid) -> StoreResult<Option<Campaign>> {
        let row: Option<Row> = self
            .project_row("campaigns", COLUMNS, project_id, id)
            .await?;
        row.map(Campaign::try_from).transpose()
    }

    /// Campaigns, newest first, optionally of one status: `limit` after skipping `offset`.
    pub async fn list_campaigns(
        &self,
        project_id: Uuid,
        status: Option<CampaignStatus>,
        limit: u32,
        offset: u64,
    ) -> StoreResult<CampaignPage> {
        let clause = if status.is_some() {
            "project_id = $1 AND status = $2"
        } else {
            "project_id = $1 AND $2 = $2"
        };
        let status = status.map_or("", CampaignStatus::as_str);
        let list = format!(
            "SELECT {COLUMNS} FROM campaigns WHERE {clause} \
             ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
        );
        let count = format!("SELECT count(*) FROM campaigns WHERE {clause}");
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let rows: Vec<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(list.as_str()))
                .bind(project_id)
                .bind(status)
                .bind(i64::from(limit))
                .bind(offset)
                .fetch_all(pool)
                .await?
        });
        let (total,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(count.as_str()))
                .bind(project_id)
                .bind(status)
                .fetch_one(pool)
                .await?
        });
        Ok(CampaignPage {
            campaigns: rows_to_campaigns(rows)?,
            total,
        })
    }

    /// Scheduled campaigns of the project, soonest first (`/activity/upcoming`).
    pub async fn scheduled_campaigns(
        &self,
        project_id: Uuid,
        limit: u32,
    ) -> StoreResult<Vec<Campaign>> {
        let q = format!(
            "SELECT {COLUMNS} FROM campaigns WHERE project_id = $1 AND status = 'SCHEDULED' \
             ORDER BY scheduled_at, id LIMIT $2"
        );
        let rows: Vec<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        });
        rows_to_campaigns(rows)
    }

    /// The active (SCHEDULED or SENDING) campaigns of the project.
    pub async fn active_campaigns(&self, project_id: Uuid) -> StoreResult<Vec<Campaign>> {
        let q = format!(
            "SELECT {COLUMNS} FROM campaigns WHERE project_id = $1 \
             AND status IN ('SCHEDULED', 'SENDING') ORDER BY id"
        );
        let rows: Vec<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        rows_to_campaigns(rows)
    }

    /// The campaign's audience as a filter tree (`None`: every contact), parsed with the
    /// project's field types; `Err` says why the audience no longer resolves (a SEGMENT
    /// audience without its segment id, a FILTERED one whose tree no longer parses).
    pub async fn campaign_audience(
        &self,
        campaign: &Campaign,
    ) -> StoreResult<Result<Option<Filter>, String>> {
        let c = &campaign.content;
        Ok(match c.audience_type {
            AudienceType::All => Ok(None),
            AudienceType::Segment => c
                .segment_id
                .map(|id| Some(member_of(id)))
                .ok_or_else(|| "a SEGMENT audience names no segment".to_owned()),
            AudienceType::Filtered => match &c.audience_filter {
                None => Err("a FILTERED audience has no filter".to_owned()),
                Some(raw) => {
                    let types = self.field_types(campaign.project_id).await?;
                    Filter::parse_with_types(raw, &|k| types.get(k).copied())
                        .map(Some)
                        .map_err(|e| format!("the audience filter no longer parses: {e}"))
                }
            },
        })
    }

    /// True when an active (SCHEDULED or SENDING) campaign's audience depends on the segment:
    /// its SEGMENT audience, a `segment.<id>` leaf of its FILTERED audience, or a segment one
    /// of those refers to in its own tree, at any depth (the segments its audience compiles
    /// with, [`Store::segment_defs`]).
    pub async fn segment_in_use(&self, project_id: Uuid, segment_id: Uuid) -> StoreResult<bool> {
        for campaign in self.active_campaigns(project_id).await? {
            if let Ok(Some(audience)) = self.campaign_audience(&campaign).await?
                && self
                    .segment_defs(project_id, &audience)
                    .await?
                    .contains_key(&segment_id)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every campaign of the project whose audience filter is set (field usage).
    pub async fn filtered_campaigns(&self, project_id: Uuid) -> StoreResult<Vec<Campaign>> {
        let q = format!(
            "SELECT {COLUMNS} FROM campaigns WHERE project_id = $1 \
             AND audience_filter IS NOT NULL ORDER BY id"
        );
        let rows: Vec<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        rows_to_campaigns(rows)
    }

    /// The campaign of one of the project's messages: `None` when there is no such message,
    /// `Some(None)` for a message of no campaign.
    pub async fn message_campaign(
        &self,
        project_id: Uuid,
        message_id: Uuid,
    ) -> StoreResult<Option<Option<Uuid>>> {
        let row: Option<(Option<Uuid>,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT campaign_id FROM messages WHERE project_id = $1 AND id = $2")
                .bind(project_id)
                .bind(message_id)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|(c,)| c))
    }

    /// The names of some of the project's campaigns (analytics labels).
    pub async fn campaign_names(
        &self,
        project_id: Uuid,
        ids: &[Uuid],
    ) -> StoreResult<Vec<(Uuid, String)>> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row: Option<(String,)> = db_read!(self, |pool| {
                sqlx::query_as("SELECT name FROM campaigns WHERE project_id = $1 AND id = $2")
                    .bind(project_id)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?
            });
            if let Some((name,)) = row {
                out.push((id, name));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sender_domain_is_lower_cased() {
        assert_eq!(domain_of("news@Example.COM"), "example.com");
        assert_eq!(domain_of("nobody"), "");
    }
}
