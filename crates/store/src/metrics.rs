//! Counts for the operator's `/metrics` scrape: the job queue by kind and state, messages by
//! status. These are deliberately across every project (an operator view of the node: counts
//! only, no row of any project is read out) and carry no project label, so the number of
//! series stays bounded.

use crate::{Store, StoreResult};

impl Store {
    /// `(kind, state, count)` of every job in the queue.
    pub async fn job_counts(&self) -> StoreResult<Vec<(String, String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as("SELECT kind, state, count(*) FROM jobs GROUP BY kind, state")
                .fetch_all(pool)
                .await?
        }))
    }

    /// `(status, count)` of every message.
    pub async fn message_counts(&self) -> StoreResult<Vec<(String, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as("SELECT status, count(*) FROM messages GROUP BY status")
                .fetch_all(pool)
                .await?
        }))
    }
}
