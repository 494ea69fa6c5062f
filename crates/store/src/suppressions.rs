//! The suppression list: addresses of a project that get no mail of any type.
//!
//! Invariants: one row per (project, address), written in the transaction of the feedback
//! that caused it (the first reason stays until lifted); subscribing the contact again lifts
//! it, in the contact update path ([`crate::contacts`]), so every way of subscribing does.
//! Every query names the project.

use herald_core::feedback::SuppressionReason;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use sqlx::{AssertSqlSafe, FromRow};

use crate::{Store, StoreResult, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Suppression {
    pub email: String,
    #[sqlx(try_from = "String")]
    pub reason: SuppressionReason,
    pub message_id: Option<Uuid>,
    pub detail: Option<String>,
    pub created_at: Millis,
}

/// Puts `email` on the project's list; an address already there keeps its first reason.
pub async fn suppress(
    tx: &mut Tx,
    project_id: Uuid,
    email: &str,
    reason: SuppressionReason,
    message_id: Option<Uuid>,
    detail: Option<&str>,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO suppressions (project_id, email, reason, message_id, detail, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (project_id, email) DO NOTHING",
        )
        .bind(project_id)
        .bind(email)
        .bind(reason.as_str())
        .bind(message_id)
        .bind(detail)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// Removes `email` from the project's list; true when it was there.
pub async fn lift(tx: &mut Tx, project_id: Uuid, email: &str) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query("DELETE FROM suppressions WHERE project_id = $1 AND email = $2")
            .bind(project_id)
            .bind(email)
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    Ok(n > 0)
}

/// Takes `email`'s reason out of what [`suppressed_among`] found (each address once).
pub fn take_reason(found: &mut Vec<(String, String)>, email: &str) -> Option<String> {
    found
        .iter()
        .position(|(e, _)| e == email)
        .map(|i| found.swap_remove(i).1)
}

/// The addresses among `emails` that are on the project's list, with their reason (read in
/// the caller's transaction, so acceptance sees a lift made earlier in it).
pub async fn suppressed_among(
    tx: &mut Tx,
    project_id: Uuid,
    emails: &[&str],
) -> StoreResult<Vec<(String, String)>> {
    let mut found = Vec::new();
    for chunk in emails.chunks(200) {
        let q = format!(
            "SELECT email, reason FROM suppressions WHERE project_id = $1 AND email IN ({})",
            crate::engine::placeholder_list(chunk.len(), 2)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        let rows: Vec<(String, String)> = db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
            for e in chunk {
                query = query.bind(*e);
            }
            query.fetch_all(&mut *conn).await?
        });
        found.extend(rows);
    }
    Ok(found)
}

impl Store {
    /// The list entry of one address, if it is suppressed.
    pub async fn suppression(
        &self,
        project_id: Uuid,
        email: &str,
    ) -> StoreResult<Option<Suppression>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT email, reason, message_id, detail, created_at FROM suppressions \
                 WHERE project_id = $1 AND email = $2",
            )
            .bind(project_id)
            .bind(email)
            .fetch_optional(pool)
            .await?
        }))
    }
}
