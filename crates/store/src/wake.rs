//! Wake-ups between nodes on PostgreSQL (LISTEN/NOTIFY): a node that queued work notifies,
//! the nodes running workers listen and claim at once instead of at their next poll. The
//! channel is per schema (`herald_wake_<schema>`), so databases shared by several Herald
//! installations (or test runs) do not wake each other. SQLite is one node: nothing to do.
//!
//! A notification is a hint, never the work itself: one lost while a listener reconnects
//! costs at most the workers' polling interval.

use sqlx::postgres::PgListener;

use crate::engine::Db;
use crate::{Store, StoreResult};

/// A PostgreSQL connection listening for wake-ups.
pub struct WakeListener(PgListener);

impl WakeListener {
    /// The next wake-up's payload (what was queued). After a lost connection it reconnects
    /// and listens again; notifications sent meanwhile are lost.
    pub async fn recv(&mut self) -> StoreResult<String> {
        Ok(self.0.recv().await?.payload().to_owned())
    }
}

impl Store {
    /// Tells the listening nodes that `what` was queued (PostgreSQL; nothing on SQLite).
    pub async fn notify_wake(&self, what: &str) -> StoreResult<()> {
        if let Db::Postgres(pool) = &self.db {
            sqlx::query("SELECT pg_notify('herald_wake_' || current_schema(), $1)")
                .bind(what)
                .execute(pool)
                .await?;
        }
        Ok(())
    }

    /// A listener for wake-ups on PostgreSQL; `None` on SQLite.
    pub async fn wake_listener(&self) -> StoreResult<Option<WakeListener>> {
        let Db::Postgres(pool) = &self.db else {
            return Ok(None);
        };
        let (channel,): (String,) = sqlx::query_as("SELECT 'herald_wake_' || current_schema()")
            .fetch_one(pool)
            .await?;
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen(&channel).await?;
        Ok(Some(WakeListener(listener)))
    }
}
