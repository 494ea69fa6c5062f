//! Tracked events of new contacts written by one statement, outside a transaction, on
//! PostgreSQL: the acceptance group commit's path for a batch of plain `/v1/track` requests
//! (issue 35).
//!
//! The usual batch is four round trips (BEGIN, the new contacts, the events with the names the
//! workflows react to, COMMIT), each a wake-up of the server's process and of the node's. One
//! statement whose data-modifying `WITH` parts insert the contacts, the events of those
//! inserted, and the outbox rows of the events a workflow reacts to, commits as one
//! transaction of its own: one round trip.
//!
//! What the statement cannot do, a caller leaves to the usual path:
//! - a contact whose email exists in its project is not inserted, and neither is its event:
//!   the request takes the usual upsert ([`Store::insert_fresh_tracks`] returns the contacts
//!   inserted);
//! - a key whose type is not recorded yet, or a project that may track a segment (the
//!   membership outbox), makes the request not [`Store::fresh_track_ready`].

use std::collections::HashSet;

use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;

use crate::contacts_batch::NewContact;
use crate::engine::{Db, column};
use crate::workflows::run::{EVENT_JOB, MAX_ATTEMPTS, reacting_names_pg};
use crate::{Store, StoreResult};

/// A tracked event and its contact, new if its email is new in its project.
pub struct FreshTrack<'a> {
    pub contact: NewContact<'a>,
    pub event_id: Uuid,
    pub name: &'a str,
    pub data: Value,
    /// The event's outbox row's id, used when a workflow of the project reacts to its name.
    pub job_id: Uuid,
}

impl Store {
    /// Whether a track of `project` holding `patch` may be written by
    /// [`Store::insert_fresh_tracks`]: PostgreSQL, every key of `patch` has its type recorded,
    /// and the project is known (within the caches' second) to track no segment.
    pub fn fresh_track_ready(&self, project: Uuid, patch: &DataPatch) -> bool {
        matches!(self.db, Db::Postgres(_))
            && self.tracked_segments.get(&project) == Some(false)
            && patch
                .typed_leaves()
                .iter()
                .all(|(key, _)| self.known_fields.is_known(project, key))
    }

    /// Inserts, in one statement committed on its own, the contacts of `rows` whose email is
    /// new in their project, the events of those contacts, and the outbox rows of the events a
    /// workflow of their project reacts to. Returns the ids of the contacts inserted; the
    /// other rows wrote nothing. `rows` in (project, email) order, so two batches inserting
    /// some of the same addresses wait for each other in one order. PostgreSQL only.
    pub async fn insert_fresh_tracks(
        &self,
        rows: &[FreshTrack<'_>],
        now: Millis,
    ) -> StoreResult<HashSet<Uuid>> {
        let Db::Postgres(pool) = &self.db else {
            return Err(crate::StoreError::Other(anyhow::anyhow!(
                "the one-statement track write is PostgreSQL's"
            )));
        };
        let mut projects: Vec<Uuid> = rows.iter().map(|r| r.contact.project_id).collect();
        projects.sort_unstable();
        projects.dedup();
        let found: Vec<(Option<Uuid>, i64)> = sqlx::query_as(concat!(
            "WITH c AS (INSERT INTO contacts \
                 (id, project_id, email, subscribed, data, created_at, updated_at) \
                 SELECT id, project_id, email, subscribed, data, $11, $11 \
                 FROM UNNEST($2::uuid[], $3::uuid[], $4::text[], $5::bool[], $6::jsonb[]) \
                 AS r(id, project_id, email, subscribed, data) \
                 ON CONFLICT (project_id, email) DO NOTHING RETURNING id), \
             e AS (INSERT INTO events (id, project_id, contact_id, name, data, created_at, tracked) \
                 SELECT r.id, r.project_id, r.contact_id, r.name, r.data, $11, TRUE \
                 FROM UNNEST($7::uuid[], $3::uuid[], $2::uuid[], $8::text[], $9::jsonb[]) \
                 AS r(id, project_id, contact_id, name, data) \
                 WHERE r.contact_id IN (SELECT id FROM c) RETURNING id, project_id, name), \
             n(project_id, name) AS (",
            reacting_names_pg!(),
            "), j AS (INSERT INTO jobs (id, project_id, kind, payload, state, run_at, \
                 max_attempts, created_at, updated_at) \
                 SELECT r.job_id, e.project_id, $12, \
                 jsonb_build_object('eventId', e.id, 'name', e.name), 'waiting', $11, $13, $11, $11 \
                 FROM e JOIN UNNEST($7::uuid[], $10::uuid[]) AS r(event_id, job_id) \
                 ON r.event_id = e.id \
                 WHERE (e.project_id, e.name) IN (SELECT project_id, name FROM n) RETURNING 1) \
             SELECT id, 0::int8 FROM c UNION ALL SELECT NULL, count(*) FROM j"
        ))
        .bind(projects)
        .bind(column(rows, |r| r.contact.id))
        .bind(column(rows, |r| r.contact.project_id))
        .bind(column(rows, |r| r.contact.email))
        .bind(column(rows, |r| r.contact.subscribed))
        .bind(column(rows, |r| Json(&*r.contact.data)))
        .bind(column(rows, |r| r.event_id))
        .bind(column(rows, |r| r.name))
        .bind(column(rows, |r| Json(&r.data)))
        .bind(column(rows, |r| r.job_id))
        .bind(now)
        .bind(EVENT_JOB)
        .bind(MAX_ATTEMPTS)
        .fetch_all(pool)
        .await?;
        let mut inserted = HashSet::with_capacity(found.len());
        for (id, jobs) in found {
            match id {
                Some(id) => {
                    inserted.insert(id);
                }
                None if jobs > 0 => self.announce_jobs(),
                None => {}
            }
        }
        Ok(inserted)
    }
}
