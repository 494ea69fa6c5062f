//! Counts behind a project's bounce and complaint rates: messages handed to the relay (sent
//! and everything after it), and of those the bounced and the complained ones. Simulated
//! messages never count.

use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::{Store, StoreResult};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    pub sent: i64,
    pub bounced: i64,
    pub complained: i64,
}

impl Store {
    /// Counts of the project's messages created since `since` (0 for all time).
    pub async fn delivery_counts(
        &self,
        project: Uuid,
        since: Millis,
    ) -> StoreResult<DeliveryCounts> {
        let q = "SELECT \
            COUNT(*), \
            COALESCE(SUM(CASE WHEN status = 'BOUNCED' THEN 1 ELSE 0 END), 0), \
            COALESCE(SUM(CASE WHEN status = 'COMPLAINED' THEN 1 ELSE 0 END), 0) \
            FROM messages WHERE project_id = $1 AND created_at >= $2 AND NOT simulated \
            AND status IN ('SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED')";
        let (sent, bounced, complained): (i64, i64, i64) = db_read!(self, |pool| sqlx::query_as(q)
            .bind(project)
            .bind(since)
            .fetch_one(pool)
            .await?);
        Ok(DeliveryCounts {
            sent,
            bounced,
            complained,
        })
    }
}
