//! Counts behind `/analytics/*`, read from indexed tables so they stay fast at millions of
//! messages: mail events by project and time from the covering index
//! `events(project_id, created_at, name)`, campaign breakdowns from the partial indexes on
//! `campaign_id` (migration 0012). Mail events are the ones the send and feedback paths record
//! (`email.sent`, `email.delivery`, `email.open`, `email.click`, `email.bounce`,
//! `email.complaint`); opens and clicks of a campaign count messages, not repeat events.

use herald_core::analytics::SLOT_MS;
use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::{Store, StoreResult};

/// The mail events a time series counts, in the order of its columns.
pub const SERIES_EVENTS: [&str; 5] = [
    "email.sent",
    "email.delivery",
    "email.open",
    "email.click",
    "email.bounce",
];

/// One campaign's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CampaignCounts {
    pub total_recipients: i64,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
    pub unsubscribed: i64,
}

impl Store {
    /// Counts of the [`SERIES_EVENTS`] per 15-minute slot (`created_at / SLOT_MS`) in
    /// `[from, to)`: `(slot, event name, count)`.
    pub async fn mail_event_slots(
        &self,
        project_id: Uuid,
        from: Millis,
        to: Millis,
    ) -> StoreResult<Vec<(i64, String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT created_at / $4 AS slot, name, count(*) FROM events \
                 WHERE project_id = $1 AND created_at >= $2 AND created_at < $3 \
                 AND name IN ('email.sent', 'email.delivery', 'email.open', 'email.click', 'email.bounce') \
                 GROUP BY slot, name",
            )
            .bind(project_id)
            .bind(from)
            .bind(to)
            .bind(SLOT_MS)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Campaigns with the most events named `event`: `(campaign id, count)`, most first.
    pub async fn top_campaigns(
        &self,
        project_id: Uuid,
        event: &str,
        limit: u32,
    ) -> StoreResult<Vec<(Uuid, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT campaign_id, count(*) AS n FROM events \
                 WHERE project_id = $1 AND campaign_id IS NOT NULL AND name = $2 \
                 GROUP BY campaign_id ORDER BY n DESC, campaign_id LIMIT $3",
            )
            .bind(project_id)
            .bind(event)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        }))
    }

    /// One campaign's recipients and the messages that reached each stage.
    pub async fn campaign_counts(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
    ) -> StoreResult<CampaignCounts> {
        let (total,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT count(*) FROM messages WHERE project_id = $1 AND campaign_id = $2",
            )
            .bind(project_id)
            .bind(campaign_id)
            .fetch_one(pool)
            .await?
        });
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT name, count(DISTINCT coalesce(message_id, id)) FROM events \
                 WHERE project_id = $1 AND campaign_id = $2 GROUP BY name",
            )
            .bind(project_id)
            .bind(campaign_id)
            .fetch_all(pool)
            .await?
        });
        let mut c = CampaignCounts {
            total_recipients: total,
            ..CampaignCounts::default()
        };
        for (name, n) in rows {
            match name.as_str() {
                "email.sent" => c.sent = n,
                "email.delivery" => c.delivered = n,
                "email.open" => c.opened = n,
                "email.click" => c.clicked = n,
                "email.bounce" => c.bounced = n,
                "email.complaint" => c.complained = n,
                "contact.unsubscribed" => c.unsubscribed = n,
                _ => {}
            }
        }
        Ok(c)
    }

    /// The most frequent tracked event names: `(name, count)`, most first.
    pub async fn top_tracked_events(
        &self,
        project_id: Uuid,
        limit: u32,
    ) -> StoreResult<Vec<(String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT name, count(*) AS n FROM events WHERE project_id = $1 AND tracked \
                 GROUP BY name ORDER BY n DESC, name LIMIT $2",
            )
            .bind(project_id)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        }))
    }
}
