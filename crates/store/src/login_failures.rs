//! Failed sign-ins per (account address, client address), for the slow-down of DECISIONS.md
//! "Accounts" (`herald_api::auth::login_throttle`). Stored, so every node and a restart see
//! the same count.
//!
//! Invariant: a pair's count never involves another client address, so failures from one
//! address never slow down the account's sign-in from another.

use herald_core::time::Millis;

use crate::{Store, StoreResult};

impl Store {
    /// Records a failed sign-in of `email` from `client`, and forgets that pair's failures
    /// older than `keep_since` (they no longer count), so the table stays small.
    pub async fn record_login_failure(
        &self,
        email: &str,
        client: &str,
        now: Millis,
        keep_since: Millis,
    ) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "DELETE FROM login_failures WHERE email = $1 AND client = $2 AND failed_at <= $3",
            )
            .bind(email)
            .bind(client)
            .bind(keep_since)
            .execute(&mut *conn)
            .await?;
            sqlx::query(
                "INSERT INTO login_failures (email, client, failed_at) VALUES ($1, $2, $3)",
            )
            .bind(email)
            .bind(client)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        });
        tx.commit().await
    }

    /// The failed sign-ins of `email` from `client` since `since`: their count and the oldest
    /// one's time.
    pub async fn login_failures_since(
        &self,
        email: &str,
        client: &str,
        since: Millis,
    ) -> StoreResult<(i64, Option<Millis>)> {
        let q = "SELECT COUNT(*), MIN(failed_at) FROM login_failures \
                 WHERE email = $1 AND client = $2 AND failed_at > $3";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(email)
            .bind(client)
            .bind(since)
            .fetch_one(pool)
            .await?))
    }

    /// A successful sign-in from `client` forgets that pair's failures (only that pair's: a
    /// success elsewhere says nothing about who is guessing here).
    pub async fn clear_login_failures(&self, email: &str, client: &str) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query("DELETE FROM login_failures WHERE email = $1 AND client = $2")
                .bind(email)
                .bind(client)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
