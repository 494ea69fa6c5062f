//! The fingerprint of the secret the nodes of one database share (migration 0025,
//! `herald::node_secret`).

use crate::{Store, StoreResult};

impl Store {
    /// The stored fingerprint; when there is none yet, `fingerprint` becomes it. Two nodes
    /// starting at once with different secrets: one insert wins and the other reads it.
    pub async fn node_secret_fingerprint(&self, fingerprint: &str) -> StoreResult<String> {
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO node_secret (id, fingerprint) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
            )
            .bind(fingerprint)
            .execute(pool)
            .await?;
        });
        let stored: (String,) = db_write!(self, |pool| sqlx::query_as(
            "SELECT fingerprint FROM node_secret WHERE id = 1"
        )
        .fetch_one(pool)
        .await?);
        Ok(stored.0)
    }

    /// Replaces the stored fingerprint (`herald rotate-secret`, once the keys are re-sealed).
    pub async fn set_node_secret_fingerprint(&self, fingerprint: &str) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO node_secret (id, fingerprint) VALUES (1, $1) \
                 ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint",
            )
            .bind(fingerprint)
            .execute(pool)
            .await?;
        });
        Ok(())
    }
}
