//! Counts behind `/analytics/*`, read from indexed tables so they stay fast at millions of
//! messages: mail events per 15-minute slot from a rollup of closed slots
//! (`analytics_slots`) plus the covering index `events(project_id, created_at, name)` for the
//! open tail and the edges, campaign breakdowns from the partial indexes on
//! `campaign_id` (migration 0012). Mail events are the ones the send and feedback paths record
//! (`email.sent`, `email.delivery`, `email.open`, `email.click`, `email.bounce`,
//! `email.complaint`); opens and clicks of a campaign count messages, not repeat events.

use herald_core::analytics::SLOT_MS;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use sqlx::AssertSqlSafe;

use crate::engine::sqlite_index;
use crate::{Store, StoreResult};

/// The mail events a time series counts, in the order of its columns.
pub const SERIES_EVENTS: [&str; 5] = [
    "email.sent",
    "email.delivery",
    "email.open",
    "email.click",
    "email.bounce",
];

/// Slots are rolled up once they ended this long ago (events are recorded at "now", so a
/// closed slot gets no new event; the grace covers clocks of several nodes).
pub const ROLLUP_GRACE_MS: Millis = 5 * 60 * 1000;

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
    /// `[from, to)`: `(slot, event name, count)`, a slot possibly in several rows. Whole
    /// slots closed before `now - ROLLUP_GRACE_MS` come from the rollup (filled here first,
    /// up to that point); the edges and the open tail are counted from the events index.
    pub async fn mail_event_slots(
        &self,
        project_id: Uuid,
        from: Millis,
        to: Millis,
        now: Millis,
    ) -> StoreResult<Vec<(i64, String, i64)>> {
        let closed = (now - ROLLUP_GRACE_MS).div_euclid(SLOT_MS);
        let first_full = from.div_euclid(SLOT_MS) + i64::from(from.rem_euclid(SLOT_MS) != 0);
        let last_full = to.div_euclid(SLOT_MS).min(closed); // exclusive
        if first_full >= last_full {
            return self.live_slots(project_id, from, to).await;
        }
        self.fill_rollup(project_id, closed).await?;
        let mut rows: Vec<(i64, String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT slot, name, count FROM analytics_slots \
                 WHERE project_id = $1 AND slot >= $2 AND slot < $3",
            )
            .bind(project_id)
            .bind(first_full)
            .bind(last_full)
            .fetch_all(pool)
            .await?
        });
        rows.extend(
            self.live_slots(project_id, from, first_full * SLOT_MS)
                .await?,
        );
        rows.extend(self.live_slots(project_id, last_full * SLOT_MS, to).await?);
        Ok(rows)
    }

    /// Counts per slot straight from the events index over `[from, to)`.
    async fn live_slots(
        &self,
        project_id: Uuid,
        from: Millis,
        to: Millis,
    ) -> StoreResult<Vec<(i64, String, i64)>> {
        if from >= to {
            return Ok(Vec::new());
        }
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

    /// Rolls up the slots from the project's watermark to `closed` (exclusive), once: the
    /// watermark row is locked (PostgreSQL) or the writer held (SQLite) while it moves.
    async fn fill_rollup(&self, project_id: Uuid, closed: i64) -> StoreResult<()> {
        let (mark,): (Option<i64>,) = db_read!(self, |pool| {
            sqlx::query_as("SELECT max(upto_slot) FROM analytics_watermarks WHERE project_id = $1")
                .bind(project_id)
                .fetch_one(pool)
                .await?
        });
        if mark.is_some_and(|m| m >= closed) {
            return Ok(());
        }
        let mut tx = self.begin().await?;
        let lock = if tx.dialect() == crate::Dialect::Postgres {
            " FOR UPDATE"
        } else {
            ""
        };
        let q = format!("SELECT upto_slot FROM analytics_watermarks WHERE project_id = $1{lock}");
        db_tx!(tx, |conn| {
            sqlx::query(
                "INSERT INTO analytics_watermarks (project_id, upto_slot) VALUES ($1, 0) \
                 ON CONFLICT (project_id) DO NOTHING",
            )
            .bind(project_id)
            .execute(&mut *conn)
            .await?;
        });
        let (mark,): (i64,) = db_tx!(tx, |conn| {
            sqlx::query_as(sqlx::AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .fetch_one(&mut *conn)
                .await?
        });
        if mark >= closed {
            return Ok(());
        }
        db_tx!(tx, |conn| {
            sqlx::query(
                "INSERT INTO analytics_slots (project_id, slot, name, count) \
                 SELECT $1, created_at / $4, name, count(*) FROM events \
                 WHERE project_id = $1 AND created_at >= $2 AND created_at < $3 \
                 AND name IN ('email.sent', 'email.delivery', 'email.open', 'email.click', 'email.bounce') \
                 GROUP BY created_at / $4, name \
                 ON CONFLICT (project_id, slot, name) DO UPDATE SET count = excluded.count",
            )
            .bind(project_id)
            .bind(mark * SLOT_MS)
            .bind(closed * SLOT_MS)
            .bind(SLOT_MS)
            .execute(&mut *conn)
            .await?;
            sqlx::query("UPDATE analytics_watermarks SET upto_slot = $2 WHERE project_id = $1")
                .bind(project_id)
                .bind(closed)
                .execute(&mut *conn)
                .await?;
        });
        tx.commit().await?;
        Ok(())
    }

    /// Campaigns with the most events named `event`: `(campaign id, count)`, most first.
    pub async fn top_campaigns(
        &self,
        project_id: Uuid,
        event: &str,
        limit: u32,
    ) -> StoreResult<Vec<(Uuid, i64)>> {
        // Only campaign events, through the partial index that holds nothing else (2-2.7 s
        // at 10,000,000 events when SQLite read every event of the name instead).
        let q = format!(
            "SELECT campaign_id, count(*) AS n FROM events {} \
             WHERE project_id = $1 AND campaign_id IS NOT NULL AND name = $2 \
             GROUP BY campaign_id ORDER BY n DESC, campaign_id LIMIT $3",
            sqlite_index(self.dialect(), "events_project_campaign")
        );
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(event)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        }))
    }

    /// One campaign's recipients and the messages that reached each stage. The recipients are
    /// the messages its fan-out wrote (`campaigns.total_recipients`, counted in the fan-out's
    /// own transactions); the stages are the counts the event triggers keep (migration 0031:
    /// distinct messages per event name), so the cost does not grow with the campaign.
    pub async fn campaign_counts(
        &self,
        project_id: Uuid,
        campaign_id: Uuid,
    ) -> StoreResult<CampaignCounts> {
        let total: Option<(i64,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT total_recipients FROM campaigns WHERE project_id = $1 AND id = $2",
            )
            .bind(project_id)
            .bind(campaign_id)
            .fetch_optional(pool)
            .await?
        });
        let total = total.map_or(0, |(n,)| n);
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT name, CAST(sum(messages) AS BIGINT) FROM campaign_event_counts \
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
        // Only tracked events, through the partial index of them (2 s at 10,000,000 events
        // when SQLite read every event of the project instead).
        let q = format!(
            "SELECT name, count(*) AS n FROM events {} \
             WHERE project_id = $1 AND tracked GROUP BY name ORDER BY n DESC, name LIMIT $2",
            sqlite_index(self.dialect(), "events_tracked")
        );
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        }))
    }

    /// The project's most clicked links over every message it kept: `(url, clicks)`, most
    /// first. Read from the counts the event triggers keep (migration 0035), so the cost
    /// grows with the project's distinct links, not its clicks.
    pub async fn top_links(&self, project_id: Uuid, limit: u32) -> StoreResult<Vec<(String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT url, CAST(sum(clicks) AS BIGINT) AS n FROM link_clicks \
                 WHERE project_id = $1 GROUP BY url HAVING sum(clicks) > 0 \
                 ORDER BY n DESC, url LIMIT $2",
            )
            .bind(project_id)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        }))
    }
}
