//! Attachments stored once: a blob is the content of an attachment, keyed by project and the
//! SHA-256 of its bytes, written once however many messages (recipients, requests) carry it.
//! Each message names its attachments in `message_attachments`; a blob lives while a row there
//! names it (the retention purge removes the rows with the body, then unreferenced blobs).
//!
//! Invariant: a blob is never removed while a message that was not purged references it.
//! Every accept that references a blob bumps its `last_used_at` in the accepting transaction
//! (which also row-locks it on PostgreSQL), and the purge only removes blobs last used before
//! the retention cutoff that no `message_attachments` row names.

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use sqlx::AssertSqlSafe;

use crate::{Store, StoreResult, Tx};

/// An attachment's bytes, as referenced by `sha256`.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Blob {
    pub sha256: String,
    pub content: Vec<u8>,
}

/// Stores `content` for the project under its hash unless it is there already; marks it used.
pub async fn put(
    tx: &mut Tx,
    project_id: Uuid,
    sha256: &str,
    content: &[u8],
    now: Millis,
) -> StoreResult<()> {
    let size = i64::try_from(content.len()).unwrap_or(i64::MAX);
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO blobs (project_id, sha256, size, content, created_at, last_used_at) \
             VALUES ($1, $2, $3, $4, $5, $5) \
             ON CONFLICT (project_id, sha256) DO UPDATE SET last_used_at = excluded.last_used_at",
        )
        .bind(project_id)
        .bind(sha256)
        .bind(size)
        .bind(content)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// A reference from a message to one of its attachments (in the message's order).
pub struct AttachmentRef<'a> {
    pub message_id: Uuid,
    pub position: i32,
    pub project_id: Uuid,
    pub sha256: &'a str,
}

/// Records many references in multi-row statements.
pub async fn add_refs(tx: &mut Tx, refs: &[AttachmentRef<'_>]) -> StoreResult<()> {
    for chunk in refs.chunks(200) {
        let q = format!(
            "INSERT INTO message_attachments (message_id, position, project_id, sha256) VALUES {}",
            crate::engine::value_rows(chunk.len(), 4, 1)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query(AssertSqlSafe(q.as_str()));
            for r in chunk {
                query = query
                    .bind(r.message_id)
                    .bind(r.position)
                    .bind(r.project_id)
                    .bind(r.sha256);
            }
            query.execute(&mut *conn).await?;
        });
    }
    Ok(())
}

impl Store {
    /// The attachments of a message, in order (empty once its body was purged).
    pub async fn message_blobs(&self, message_id: Uuid) -> StoreResult<Vec<Blob>> {
        let q = "SELECT b.sha256, b.content FROM message_attachments a \
                 JOIN blobs b ON b.project_id = a.project_id AND b.sha256 = a.sha256 \
                 WHERE a.message_id = $1 ORDER BY a.position";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(message_id)
            .fetch_all(pool)
            .await?))
    }

    /// How many blobs the project holds (tests and diagnostics).
    pub async fn count_blobs(&self, project_id: Uuid) -> StoreResult<i64> {
        let (n,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as("SELECT count(*) FROM blobs WHERE project_id = $1")
                .bind(project_id)
                .fetch_one(pool)
                .await?
        });
        Ok(n)
    }
}
