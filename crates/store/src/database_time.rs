//! The database's clock (PostgreSQL), which every node of a cluster shares: the reference the
//! engine corrects a node's clock by (`herald_engine::db_clock`). SQLite is one node and has
//! no clock of its own to share.

use herald_core::time::Millis;

use crate::engine::Db;
use crate::{Store, StoreResult};

impl Store {
    /// PostgreSQL's time in epoch milliseconds when the statement ran (`clock_timestamp()`,
    /// not `now()`, which is the time its transaction began); `None` on SQLite.
    pub async fn database_time(&self) -> StoreResult<Option<Millis>> {
        let Db::Postgres(pool) = &self.db else {
            return Ok(None);
        };
        let (ms,): (i64,) =
            sqlx::query_as("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
                .fetch_one(pool)
                .await?;
        Ok(Some(ms))
    }
}
