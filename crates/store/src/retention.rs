//! Retention purges, each one bounded batch in its own short transaction so the SQLite writer
//! is never held long (the engine's periodic task repeats them until a batch comes back short).
//!
//! - Message bodies: a finished message (not PENDING or SENDING) created before the cutoff
//!   loses its HTML and its attachment references and gets `body_purged_at`; its metadata
//!   (addresses, subject, status, attachment names and sizes) and history stay. Blobs no longer
//!   referenced by any message are deleted in the same transaction (see [`crate::blobs`]).
//! - `Idempotency-Key`s created before the cutoff.
//! - Finished jobs (`done`, `failed`, `dead`) last updated before the cutoff.

use std::collections::BTreeSet;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use sqlx::AssertSqlSafe;

use crate::{Store, StoreResult};

/// What one body-purge batch removed.
#[derive(Clone, Debug, Default)]
pub struct PurgedBodies {
    /// The messages whose bodies were purged.
    pub message_ids: Vec<Uuid>,
    /// Blobs deleted because nothing references them any more.
    pub blobs: u64,
}

impl Store {
    /// Purges the bodies and attachments of at most `limit` finished messages created before
    /// `cutoff`, and the blobs that leaves unreferenced.
    pub async fn purge_message_bodies(
        &self,
        cutoff: Millis,
        now: Millis,
        limit: u32,
    ) -> StoreResult<PurgedBodies> {
        let mut tx = self.begin().await?;
        let ids: Vec<(Uuid,)> = db_tx!(tx, |conn| {
            sqlx::query_as(
                "SELECT id FROM messages WHERE body_purged_at IS NULL AND created_at < $1 \
                 AND status NOT IN ('PENDING', 'SENDING') ORDER BY created_at LIMIT $2",
            )
            .bind(cutoff)
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
            .await?
        });
        let ids: Vec<Uuid> = ids.into_iter().map(|(id,)| id).collect();
        if ids.is_empty() {
            return Ok(PurgedBodies::default());
        }
        let update = format!(
            "UPDATE messages SET html = '', body_purged_at = $1 WHERE id IN ({})",
            crate::engine::placeholder_list(ids.len(), 2)
        );
        let unref = format!(
            "DELETE FROM message_attachments WHERE message_id IN ({}) RETURNING project_id, sha256",
            crate::engine::placeholder_list(ids.len(), 1)
        );
        let refs: Vec<(Uuid, String)> = db_tx!(tx, |conn| {
            let mut query = sqlx::query(AssertSqlSafe(update.as_str())).bind(now);
            for id in &ids {
                query = query.bind(*id);
            }
            query.execute(&mut *conn).await?;
            let mut query = sqlx::query_as(AssertSqlSafe(unref.as_str()));
            for id in &ids {
                query = query.bind(*id);
            }
            query.fetch_all(&mut *conn).await?
        });
        let candidates: BTreeSet<(Uuid, String)> = refs.into_iter().collect();
        let mut blobs = 0;
        for (project_id, sha256) in &candidates {
            blobs += db_tx!(tx, |conn| {
                sqlx::query(
                    "DELETE FROM blobs WHERE project_id = $1 AND sha256 = $2 AND last_used_at < $3 \
                     AND NOT EXISTS (SELECT 1 FROM message_attachments r \
                         WHERE r.project_id = $1 AND r.sha256 = $2)",
                )
                .bind(*project_id)
                .bind(sha256.as_str())
                .bind(cutoff)
                .execute(&mut *conn)
                .await?
                .rows_affected()
            });
        }
        tx.commit().await?;
        Ok(PurgedBodies {
            message_ids: ids,
            blobs,
        })
    }

    /// Deletes at most `limit` `Idempotency-Key`s created before `cutoff`; returns how many.
    pub async fn purge_idempotency_keys(&self, cutoff: Millis, limit: u32) -> StoreResult<u64> {
        Ok(db_write!(self, |pool| {
            sqlx::query(
                "DELETE FROM idempotency_keys WHERE (project_id, key) IN \
                 (SELECT project_id, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2)",
            )
            .bind(cutoff)
            .bind(i64::from(limit))
            .execute(pool)
            .await?
            .rows_affected()
        }))
    }

    /// Deletes at most `limit` finished jobs (`done`, `failed`, `dead`) last updated before
    /// `cutoff`; returns how many. Waiting and active jobs are never touched.
    pub async fn purge_finished_jobs(&self, cutoff: Millis, limit: u32) -> StoreResult<u64> {
        Ok(db_write!(self, |pool| {
            sqlx::query(
                "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs \
                 WHERE state IN ('done', 'failed', 'dead') AND updated_at < $1 LIMIT $2)",
            )
            .bind(cutoff)
            .bind(i64::from(limit))
            .execute(pool)
            .await?
            .rows_affected()
        }))
    }
}
