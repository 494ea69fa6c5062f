//! Project entries of the activity feed: things that happened to a project rather than to one
//! contact (a domain verified or unverified, a campaign's fan-out stopped on its own). `feed.rs` reads them with the contact events.
//!
//! Invariants:
//! - Entries are append-only and written in the transaction of the change they describe, so an
//!   entry exists exactly when its change was committed.
//! - Ids are UUID v7: listing by id descending is newest first, and a keyset cursor is an id.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;

use crate::{StoreResult, Tx};

/// A domain's DNS records passed and it became verified.
pub const DOMAIN_VERIFIED: &str = "domain.verified";
/// A verified domain lost its records (or its reserved status no longer applies).
pub const DOMAIN_UNVERIFIED: &str = "domain.unverified";

/// A campaign's fan-out stopped before the end of its audience (billing limit, audience error).
pub const CAMPAIGN_STOPPED: &str = "campaign.stopped";

/// Whether entries of `kind` are project entries (this table) rather than contact events.
pub fn is_project_kind(kind: &str) -> bool {
    kind.starts_with("domain.") || kind.starts_with("campaign.")
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
