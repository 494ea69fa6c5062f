//! The project activity feed: things that happened to a project rather than to one contact
//! (a domain verified or unverified, later sends and deliveries).
//!
//! Invariants:
//! - Entries are append-only and written in the transaction of the change they describe, so an
//!   entry exists exactly when its change was committed.
//! - Ids are UUID v7: listing by id descending is newest first, and a keyset cursor is an id.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::FromRow;
use sqlx::types::Json;

use crate::engine::Dialect;
use crate::{Store, StoreResult, Tx};

/// A domain's DNS records passed and it became verified.
pub const DOMAIN_VERIFIED: &str = "domain.verified";
/// A verified domain lost its records (or its reserved status no longer applies).
pub const DOMAIN_UNVERIFIED: &str = "domain.unverified";

#[derive(Clone, Debug, FromRow)]
pub struct Activity {
    pub id: Uuid,
    pub kind: String,
    pub data: Json<Value>,
    pub created_at: Millis,
}

/// One page of the feed, newest first.
pub struct ActivityPage {
    pub entries: Vec<Activity>,
    pub has_more: bool,
}

/// Appends an entry inside `tx`.
pub async fn insert_activity(
    tx: &mut Tx,
    project_id: Uuid,
    kind: &str,
    data: &Value,
    now: Millis,
) -> StoreResult<Uuid> {
    let id = new_id();
    db_tx!(tx, |conn| {
        sqlx::query("INSERT INTO activity (id, project_id, kind, data, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(id)
            .bind(project_id)
            .bind(kind)
            .bind(Json(data))
            .bind(now)
            .execute(&mut *conn)
            .await?;
    });
    Ok(id)
}

impl Store {
    /// Entries with ids below `before` (newest first), at most `limit`, optionally of one kind.
    pub async fn list_activity(
        &self,
        project_id: Uuid,
        limit: u32,
        before: Option<Uuid>,
        kind: Option<&str>,
    ) -> StoreResult<ActivityPage> {
        let q = match self.dialect() {
            Dialect::Sqlite => {
                "SELECT id, kind, data, created_at FROM activity WHERE project_id = $1 \
                 AND ($2 IS NULL OR id < $2) AND ($3 IS NULL OR kind = $3) ORDER BY id DESC LIMIT $4"
            }
            Dialect::Postgres => {
                "SELECT id, kind, data, created_at FROM activity WHERE project_id = $1 \
                 AND ($2::uuid IS NULL OR id < $2) AND ($3::text IS NULL OR kind = $3) \
                 ORDER BY id DESC LIMIT $4"
            }
        };
        let rows: Vec<Activity> = db_read!(self, |pool| {
            sqlx::query_as(q)
                .bind(project_id)
                .bind(before)
                .bind(kind)
                .bind(i64::from(limit) + 1)
                .fetch_all(pool)
                .await?
        });
        let has_more = rows.len() > limit as usize;
        let entries = rows.into_iter().take(limit as usize).collect();
        Ok(ActivityPage { entries, has_more })
    }

    /// The distinct kinds present in the project's feed, sorted.
    pub async fn activity_kinds(&self, project_id: Uuid) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT DISTINCT kind FROM activity WHERE project_id = $1 ORDER BY kind")
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(|r| r.0).collect())
    }
}
