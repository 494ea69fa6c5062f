//! Sender domains: a project's claim on a domain name, its DKIM key (private half sealed by the
//! caller before it gets here) and the result of the last DNS check.
//!
//! Invariants:
//! - `(project_id, domain)` is unique; several projects may hold the same pending domain, but
//!   at most one row per domain is verified (partial unique index `domains_verified_domain`),
//!   so ownership goes to the first project to verify and is enforced by the database.
//! - [`Domain`] never carries the private key; only [`Store::sealed_dkim_key`] reads it.
//! - A change of `verified` and its `domain.verified` / `domain.unverified` activity entry are
//!   written in one transaction.
//! - Background checks are claimed by compare-and-set on `next_check_at`: of several nodes
//!   claiming the same due row, exactly one wins.

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::{Value, json};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::activity::{DOMAIN_VERIFIED, insert_activity};
use crate::engine::sql;
use crate::{Store, StoreError, StoreResult};

/// `Conflict` payload: this project already has the domain.
pub const CONFLICT_ALREADY_ADDED: &str = "domains_project_domain_key";
/// `Conflict` payload: another project has verified the domain.
pub const CONFLICT_VERIFIED_ELSEWHERE: &str = "domains_verified_domain";

#[derive(Clone, Debug, FromRow)]
pub struct Domain {
    pub id: Uuid,
    pub project_id: Uuid,
    pub domain: String,
    pub selector: String,
    /// Base64 SubjectPublicKeyInfo: the DKIM `p=` value.
    pub dkim_public_key: String,
    pub verified: bool,
    pub verified_at: Option<Millis>,
    pub last_checked_at: Option<Millis>,
    pub next_check_at: Millis,
    /// Record states of the last check (`None`: never checked by DNS).
    pub last_check: Option<Json<Value>>,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

pub(crate) const COLUMNS: &str = "id, project_id, domain, selector, dkim_public_key, verified, verified_at, \
     last_checked_at, next_check_at, last_check, last_error, created_at, updated_at";

/// A domain to add.
pub struct NewDomain<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    /// Already validated and normalised.
    pub domain: &'a str,
    pub selector: &'a str,
    pub dkim_public_key: &'a str,
    /// The DKIM private key, sealed.
    pub sealed_private_key: &'a [u8],
    /// Verified at once (reserved domains with the local outbox); `reason` goes to the feed.
    pub verified: Option<&'a str>,
    pub next_check_at: Millis,
    pub now: Millis,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DomainDeletion {
    Deleted,
    NotFound,
    /// Something that sends in the background sends from it.
    InUse(DomainUsers),
}

/// What keeps a domain from being deleted, each as `(id, name)` ordered by name: the project's
/// SCHEDULED or SENDING campaigns whose sender is on it, and its enabled workflows with a
/// SEND_EMAIL step whose template's sender is on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainUsers {
    pub campaigns: Vec<(Uuid, String)>,
    pub workflows: Vec<(Uuid, String)>,
}

pub(crate) fn activity_data(id: Uuid, domain: &str, reason: &str) -> Value {
    json!({ "domainId": id.to_string(), "domain": domain, "reason": reason })
}

mod checks;

pub use checks::{CheckOutcome, CheckRecord};

impl Store {
    /// Adds a domain. `Conflict(CONFLICT_ALREADY_ADDED)` when the project has it already,
    /// `Conflict(CONFLICT_VERIFIED_ELSEWHERE)` when another project has verified it.
    pub async fn insert_domain(&self, new: &NewDomain<'_>) -> StoreResult<Domain> {
        let mut tx = self.begin().await?;
        let (mine, verified_elsewhere): (i64, i64) = db_tx!(&mut tx, |conn| {
            sqlx::query_as(
                "SELECT \
                 (SELECT count(*) FROM domains WHERE project_id = $1 AND domain = $2), \
                 (SELECT count(*) FROM domains WHERE domain = $2 AND verified AND project_id <> $1)",
            )
            .bind(new.project_id)
            .bind(new.domain)
            .fetch_one(&mut *conn)
            .await?
        });
        if mine > 0 {
            return Err(StoreError::Conflict(CONFLICT_ALREADY_ADDED.into()));
        }
        if verified_elsewhere > 0 {
            return Err(StoreError::Conflict(CONFLICT_VERIFIED_ELSEWHERE.into()));
        }
        let verified_at = new.verified.map(|_| new.now);
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "INSERT INTO domains (id, project_id, domain, selector, dkim_public_key, dkim_private_key, \
                 verified, verified_at, next_check_at, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)",
            )
            .bind(new.id)
            .bind(new.project_id)
            .bind(new.domain)
            .bind(new.selector)
            .bind(new.dkim_public_key)
            .bind(new.sealed_private_key)
            .bind(new.verified.is_some())
            .bind(verified_at)
            .bind(new.next_check_at)
            .bind(new.now)
            .execute(&mut *conn)
            .await?;
        });
        if let Some(reason) = new.verified {
            let data = activity_data(new.id, new.domain, reason);
            insert_activity(&mut tx, new.project_id, DOMAIN_VERIFIED, &data, new.now).await?;
        }
        tx.commit().await?;
        self.domain(new.project_id, new.id)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// The project's domains, oldest first.
    pub async fn domains_of_project(&self, project_id: Uuid) -> StoreResult<Vec<Domain>> {
        let q = format!("SELECT {COLUMNS} FROM domains WHERE project_id = $1 ORDER BY id");
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .fetch_all(pool)
                .await?
        }))
    }

    pub async fn domain(&self, project_id: Uuid, id: Uuid) -> StoreResult<Option<Domain>> {
        self.project_row::<Domain>("domains", COLUMNS, project_id, id)
            .await
    }

    /// The project owning the domain row `id`: for resolving a caller's access, nothing more.
    pub async fn domain_project(&self, id: Uuid) -> StoreResult<Option<Uuid>> {
        let row: Option<(Uuid,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT project_id FROM domains WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|r| r.0))
    }

    /// The verified row of exactly `domain` in the project (kept for a second on this node,
    /// `ttl_cache.rs`: every `/v1/send` asks).
    pub async fn verified_domain(
        &self,
        project_id: Uuid,
        domain: &str,
    ) -> StoreResult<Option<Domain>> {
        let key = (project_id, domain.to_owned());
        if let Some(found) = self.verified_domains.get(&key) {
            return Ok(Some(found));
        }
        let q = format!(
            "SELECT {COLUMNS} FROM domains WHERE project_id = $1 AND domain = $2 AND verified"
        );
        let found: Option<Domain> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(domain)
                .fetch_optional(pool)
                .await?
        });
        if let Some(d) = &found {
            self.verified_domains.put(key, d.clone());
        }
        Ok(found)
    }

    /// A verified row of `domain` in any project: only for Herald's own account mail (the
    /// system project), which is DKIM-signed when some project verified its sender domain.
    pub async fn verified_domain_in_any_project(
        &self,
        domain: &str,
    ) -> StoreResult<Option<Domain>> {
        let q = format!(
            "SELECT {COLUMNS} FROM domains WHERE domain = $1 AND verified ORDER BY id LIMIT 1"
        );
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(domain)
                .fetch_optional(pool)
                .await?
        }))
    }

    /// The sealed DKIM private key of a domain row.
    pub async fn sealed_dkim_key(&self, id: Uuid) -> StoreResult<Option<Vec<u8>>> {
        let row: Option<(Vec<u8>,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT dkim_private_key FROM domains WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|r| r.0))
    }

    /// Deletes a domain unless something that sends in the background sends from it
    /// ([`DomainUsers`]). The check runs in the deletion's transaction, after the domain row is
    /// locked (PostgreSQL; SQLite's single writer serialises). A template alone does not hold
    /// a domain: a send naming it is refused while its sender is not on a verified domain.
    pub async fn delete_domain(&self, project_id: Uuid, id: Uuid) -> StoreResult<DomainDeletion> {
        let mut tx = self.begin().await?;
        let lock = sql(
            tx.dialect(),
            "SELECT domain FROM domains WHERE project_id = $1 AND id = $2",
            "SELECT domain FROM domains WHERE project_id = $1 AND id = $2 FOR UPDATE",
        );
        let row: Option<(String,)> = db_tx!(&mut tx, |conn| {
            sqlx::query_as(lock)
                .bind(project_id)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?
        });
        let Some((domain,)) = row else {
            return Ok(DomainDeletion::NotFound);
        };
        let campaigns: Vec<(Uuid, String)> = db_tx!(&mut tx, |conn| {
            sqlx::query_as(
                "SELECT id, name FROM campaigns WHERE project_id = $1 AND from_domain = $2 \
                 AND status IN ('SCHEDULED', 'SENDING') ORDER BY name, id",
            )
            .bind(project_id)
            .bind(&domain)
            .fetch_all(&mut *conn)
            .await?
        });
        let workflows: Vec<(Uuid, String)> = db_tx!(&mut tx, |conn| {
            sqlx::query_as(
                "SELECT w.id, w.name FROM workflows w WHERE w.project_id = $1 AND w.enabled \
                 AND EXISTS (SELECT 1 FROM workflow_steps s JOIN templates t \
                   ON t.id = s.template_id AND t.project_id = s.project_id \
                   WHERE s.workflow_id = w.id AND s.type = 'SEND_EMAIL' AND t.from_domain = $2) \
                 ORDER BY w.name, w.id",
            )
            .bind(project_id)
            .bind(&domain)
            .fetch_all(&mut *conn)
            .await?
        });
        if !campaigns.is_empty() || !workflows.is_empty() {
            return Ok(DomainDeletion::InUse(DomainUsers {
                campaigns,
                workflows,
            }));
        }
        db_tx!(&mut tx, |conn| {
            sqlx::query("DELETE FROM domains WHERE id = $1")
                .bind(id)
                .execute(&mut *conn)
                .await?;
        });
        tx.commit().await?;
        self.verified_domains.clear();
        Ok(DomainDeletion::Deleted)
    }
}
