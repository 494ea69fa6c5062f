//! What a campaign's report page reads beyond its counts (`Store::campaign_counts`): its opens
//! and clicks per hour, its most clicked links, and its recipients by page with each one's
//! status, open and click. Every query is scoped to the project and the campaign; the counts
//! are the ones the event triggers keep (`campaign_event_counts`, `campaign_link_clicks`,
//! migration 0031), the recipients read the campaign's message index
//! (`messages_project_campaign`) and the events of one page of messages (`events_message`).

use herald_core::ids::Uuid;
use herald_core::message_status::MessageStatus;
use sqlx::{AssertSqlSafe, FromRow};

use crate::{Store, StoreResult};

/// One recipient of a campaign: its message and whether it was opened and clicked.
#[derive(Clone, Debug, FromRow)]
pub struct Recipient {
    pub message_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub email: String,
    #[sqlx(try_from = "String")]
    pub status: MessageStatus,
    pub opened: bool,
    pub clicked: bool,
}

impl Store {
    /// The campaign's `email.open` and `email.click` events per hour (`created_at /
    /// 3,600,000`): `(hour, name, count)`, from the counts the event triggers keep (migration
    /// 0031).
    pub async fn campaign_activity(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
    ) -> StoreResult<Vec<(i64, String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT hour, name, CAST(sum(events) AS BIGINT) FROM campaign_event_counts \
                 WHERE project_id = $1 AND campaign_id = $2 \
                 AND name IN ('email.open', 'email.click') GROUP BY hour, name",
            )
            .bind(project_id)
            .bind(campaign_id)
            .fetch_all(pool)
            .await?
        }))
    }

    /// The campaign's most clicked links: `(url, clicks)`, most first (the counts the event
    /// triggers keep, migration 0031).
    pub async fn campaign_top_links(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
        limit: u32,
    ) -> StoreResult<Vec<(String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT url, CAST(sum(clicks) AS BIGINT) AS n FROM campaign_link_clicks \
                 WHERE project_id = $1 AND campaign_id = $2 GROUP BY url \
                 HAVING sum(clicks) > 0 ORDER BY n DESC, url LIMIT $3",
            )
            .bind(project_id)
            .bind(campaign_id)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        }))
    }

    /// The campaign's recipients after the message id `after`, in id order, at most `limit`.
    pub async fn campaign_recipients(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> StoreResult<Vec<Recipient>> {
        let cursor = if after.is_some() { "AND m.id > $4" } else { "" };
        let q = format!(
            "SELECT m.id AS message_id, m.contact_id, m.to_email AS email, m.status, \
             EXISTS (SELECT 1 FROM events e WHERE e.message_id = m.id AND e.name = 'email.open') AS opened, \
             EXISTS (SELECT 1 FROM events e WHERE e.message_id = m.id AND e.name = 'email.click') AS clicked \
             FROM messages m WHERE m.project_id = $1 AND m.campaign_id = $2 {cursor} \
             ORDER BY m.id LIMIT $3"
        );
        Ok(db_read!(self, |pool| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(campaign_id)
                .bind(i64::from(limit));
            if let Some(a) = after {
                query = query.bind(a);
            }
            query.fetch_all(pool).await?
        }))
    }
}

impl Store {
    /// The campaign's messages per status: `(status, count)` (the progress of a send).
    pub async fn campaign_statuses(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
    ) -> StoreResult<Vec<(MessageStatus, i64)>> {
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT status, count(*) FROM messages \
                 WHERE project_id = $1 AND campaign_id = $2 GROUP BY status",
            )
            .bind(project_id)
            .bind(campaign_id)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .filter_map(|(s, n)| s.parse::<MessageStatus>().ok().map(|s| (s, n)))
            .collect())
    }
}
