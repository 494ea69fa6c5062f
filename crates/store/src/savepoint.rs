//! Savepoints inside a write transaction: one part of a shared transaction (one request of a
//! group commit) can fail and be undone alone while the rest commits.

use crate::{StoreResult, Tx};

impl Tx {
    /// Opens the savepoint `name` (a fixed identifier, never input).
    pub async fn savepoint(&mut self, name: &'static str) -> StoreResult<()> {
        self.exec_static(name, "SAVEPOINT").await
    }

    /// Keeps the work since the savepoint and forgets the savepoint.
    pub async fn release_savepoint(&mut self, name: &'static str) -> StoreResult<()> {
        self.exec_static(name, "RELEASE SAVEPOINT").await
    }

    /// Undoes the work since the savepoint (the transaction stays usable) and forgets it.
    pub async fn rollback_to_savepoint(&mut self, name: &'static str) -> StoreResult<()> {
        self.exec_static(name, "ROLLBACK TO SAVEPOINT").await?;
        self.exec_static(name, "RELEASE SAVEPOINT").await
    }

    async fn exec_static(&mut self, name: &'static str, verb: &'static str) -> StoreResult<()> {
        debug_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
        let q = format!("{verb} {name}");
        db_tx!(self, |conn| {
            sqlx::query(sqlx::AssertSqlSafe(q.as_str()))
                .execute(&mut *conn)
                .await?;
        });
        Ok(())
    }
}
