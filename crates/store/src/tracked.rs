//! Tracked events (`POST /v1/track`): the multi-row insert of the group commit, and the reads
//! and deletion of the Events resource.
//!
//! Invariants:
//! - Tracked events are rows of `events` with `tracked` true; system events (`email.*`,
//!   `contact.*`, segment entry/exit) have it false and are never listed, counted or deleted
//!   here. Every query names the project.
//! - Ids are UUID v7, so a keyset page by id descending is newest first.
//! - Deletion runs in batches of [`DELETE_BATCH`] rows, each its own short transaction, so a
//!   large delete never holds the SQLite writer for long.

use std::collections::{BTreeMap, HashMap, HashSet};

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::engine::column;
use crate::events::{EVENT_COLUMNS, Event};
use crate::workflows::run::{EventRef, enqueue_dispatch, enqueue_for_names, reacting_names_pg};
use crate::{Store, StoreResult, Tx};

/// Rows removed per transaction by [`Store::delete_tracked_events`].
pub const DELETE_BATCH: i64 = 1000;
/// Most distinct names [`Store::tracked_event_names`] and the stats return.
pub const MAX_NAMES: i64 = 10_000;

/// A tracked event to insert.
#[derive(Clone, Debug)]
pub struct NewTrackedEvent {
    pub id: Uuid,
    pub project_id: Uuid,
    pub contact_id: Uuid,
    pub name: String,
    pub data: Value,
    pub created_at: Millis,
}

/// Inserts tracked events in multi-row statements inside `tx`, with the outbox rows of those a
/// workflow reacts to.
pub async fn insert_tracked_many(tx: &mut Tx, events: &[NewTrackedEvent]) -> StoreResult<()> {
    let reacting = insert_rows(tx, events).await?;
    let mut by_project: BTreeMap<Uuid, Vec<EventRef<'_>>> = Default::default();
    for e in events {
        by_project.entry(e.project_id).or_default().push(EventRef {
            id: e.id,
            name: &e.name,
        });
    }
    let now = events.iter().map(|e| e.created_at).max().unwrap_or(0);
    let none = HashSet::new();
    for (project_id, refs) in by_project {
        match &reacting {
            Some(names) => {
                let names = names.get(&project_id).unwrap_or(&none);
                enqueue_for_names(tx, project_id, &refs, names, now).await?;
            }
            None => enqueue_dispatch(tx, project_id, &refs, now).await?,
        }
    }
    Ok(())
}

/// On PostgreSQL one array per column through `UNNEST`: one statement text whatever the
/// number of events, so it stays prepared (as `contacts_batch`'s insert of new contacts). The
/// same statement reads the names the events' projects' workflows react to (the outbox needs
/// them), a round trip less per batch: returned by project. SQLite takes multi-row `VALUES`
/// of 200 rows at most, and returns `None` (its reads cost no round trip).
async fn insert_rows(
    tx: &mut Tx,
    events: &[NewTrackedEvent],
) -> StoreResult<Option<HashMap<Uuid, HashSet<String>>>> {
    Ok(db_tx_each!(
        tx,
        sqlite
            | conn
            | {
                for chunk in events.chunks(200) {
                    let rows: Vec<String> = (0..chunk.len())
                        .map(|i| {
                            let b = 1 + 6 * i;
                            let (c, d, e, f, g) = (b + 1, b + 2, b + 3, b + 4, b + 5);
                            format!("(${b}, ${c}, ${d}, ${e}, ${f}, ${g}, TRUE)")
                        })
                        .collect();
                    let q = format!(
                        "INSERT INTO events (id, project_id, contact_id, name, data, created_at, tracked) \
                     VALUES {}",
                        rows.join(", ")
                    );
                    let q = crate::engine::binds_for(crate::Dialect::Sqlite, &q).into_owned();
                    let mut query = sqlx::query(AssertSqlSafe(q));
                    for e in chunk {
                        query = query
                            .bind(e.id)
                            .bind(e.project_id)
                            .bind(e.contact_id)
                            .bind(&e.name)
                            .bind(Json(&e.data))
                            .bind(e.created_at);
                    }
                    query.execute(&mut *conn).await?;
                }
                None
            },
        postgres | conn | {
            let mut projects: Vec<Uuid> = events.iter().map(|e| e.project_id).collect();
            projects.sort_unstable();
            projects.dedup();
            // A data-modifying WITH runs to completion whether or not the query reads it.
            let rows: Vec<(Uuid, Option<String>)> = sqlx::query_as(concat!(
                "WITH inserted AS (INSERT INTO events \
                     (id, project_id, contact_id, name, data, created_at, tracked) \
                     SELECT id, project_id, contact_id, name, data, created_at, TRUE \
                     FROM UNNEST($2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::jsonb[], \
                     $7::int8[]) AS r(id, project_id, contact_id, name, data, created_at)) ",
                reacting_names_pg!()
            ))
            .bind(projects)
            .bind(column(events, |e| e.id))
            .bind(column(events, |e| e.project_id))
            .bind(column(events, |e| e.contact_id))
            .bind(column(events, |e| e.name.as_str()))
            .bind(column(events, |e| Json(&e.data)))
            .bind(column(events, |e| e.created_at))
            .fetch_all(&mut *conn)
            .await?;
            let mut names: HashMap<Uuid, HashSet<String>> = HashMap::new();
            for (project, name) in rows {
                if let Some(name) = name {
                    names.entry(project).or_default().insert(name);
                }
            }
            Some(names)
        },
    ))
}

/// A tracked event with its contact's address.
#[derive(Clone, Debug, FromRow)]
pub struct TrackedEvent {
    #[sqlx(flatten)]
    pub event: Event,
    /// `None` once the contact is gone (its events go with it, so only in a race).
    pub email: Option<String>,
}

/// Filters of [`Store::list_tracked_events`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TrackedFilter<'a> {
    pub name: Option<&'a str>,
    pub contact_id: Option<Uuid>,
    /// Ids below this one (the cursor).
    pub before: Option<Uuid>,
}

/// One page of tracked events, newest first.
pub struct TrackedPage {
    pub events: Vec<TrackedEvent>,
    pub has_more: bool,
}

/// Per-name figures over a time window.
#[derive(Clone, Debug, FromRow)]
pub struct EventStat {
    pub name: String,
    pub count: i64,
    pub contacts: i64,
    pub last_seen: Millis,
}

impl Store {
    /// Tracked events of the project, newest first, at most `limit`.
    pub async fn list_tracked_events(
        &self,
        project_id: Uuid,
        limit: u32,
        filter: TrackedFilter<'_>,
    ) -> StoreResult<TrackedPage> {
        // Conditions only when present, so each filter seeks its index (see list_contacts).
        let mut cond = String::from("project_id = $1 AND tracked");
        let mut n = 1;
        if filter.name.is_some() {
            n += 1;
            cond.push_str(&format!(" AND name = ${n}"));
        }
        if filter.contact_id.is_some() {
            n += 1;
            cond.push_str(&format!(" AND contact_id = ${n}"));
        }
        if filter.before.is_some() {
            n += 1;
            cond.push_str(&format!(" AND id < ${n}"));
        }
        let q = format!(
            "SELECT {EVENT_COLUMNS}, \
             (SELECT email FROM contacts WHERE contacts.id = events.contact_id) AS email \
             FROM events WHERE {cond} ORDER BY id DESC LIMIT ${}",
            n + 1
        );
        let rows: Vec<TrackedEvent> = db_read!(self, |pool| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
            if let Some(name) = filter.name {
                query = query.bind(name);
            }
            if let Some(c) = filter.contact_id {
                query = query.bind(c);
            }
            if let Some(b) = filter.before {
                query = query.bind(b);
            }
            query.bind(i64::from(limit) + 1).fetch_all(pool).await?
        });
        let has_more = rows.len() > limit as usize;
        let events = rows.into_iter().take(limit as usize).collect();
        Ok(TrackedPage { events, has_more })
    }

    /// Per tracked name since `since`: events, distinct contacts, last time seen; most
    /// frequent first.
    pub async fn tracked_event_stats(
        &self,
        project_id: Uuid,
        since: Millis,
    ) -> StoreResult<Vec<EventStat>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT name, count(*) AS count, count(DISTINCT contact_id) AS contacts, \
                 max(created_at) AS last_seen FROM events \
                 WHERE project_id = $1 AND tracked AND created_at >= $2 \
                 GROUP BY name ORDER BY count(*) DESC, name LIMIT $3",
            )
            .bind(project_id)
            .bind(since)
            .bind(MAX_NAMES)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Distinct tracked names, alphabetically.
    pub async fn tracked_event_names(&self, project_id: Uuid) -> StoreResult<Vec<String>> {
        let rows: Vec<(String,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT DISTINCT name FROM events WHERE project_id = $1 AND tracked \
                 ORDER BY name LIMIT $2",
            )
            .bind(project_id)
            .bind(MAX_NAMES)
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }

    /// How many tracked events of `name` the project holds.
    pub async fn count_tracked_events(&self, project_id: Uuid, name: &str) -> StoreResult<i64> {
        let (n,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT count(*) FROM events WHERE project_id = $1 AND name = $2 AND tracked",
            )
            .bind(project_id)
            .bind(name)
            .fetch_one(pool)
            .await?
        });
        Ok(n)
    }

    /// Deletes every tracked event of `name` in the project (in batches); returns how many.
    /// Their `event.dispatch` jobs stay: consumers skip an event that no longer exists.
    pub async fn delete_tracked_events(&self, project_id: Uuid, name: &str) -> StoreResult<u64> {
        let mut total = 0;
        loop {
            let n = db_write!(self, |pool| {
                sqlx::query(
                    "DELETE FROM events WHERE id IN (SELECT id FROM events \
                     WHERE project_id = $1 AND name = $2 AND tracked LIMIT $3)",
                )
                .bind(project_id)
                .bind(name)
                .bind(DELETE_BATCH)
                .execute(pool)
                .await?
                .rows_affected()
            });
            total += n;
            if n < DELETE_BATCH as u64 {
                return Ok(total);
            }
        }
    }
}

impl Store {
    /// Payloads of the project's waiting jobs of `kind`, oldest first, at most `limit`: lets
    /// tests and diagnostics see the outbox of tracked events (`event.dispatch`).
    pub async fn waiting_job_payloads(
        &self,
        project_id: Uuid,
        kind: &str,
        limit: u32,
    ) -> StoreResult<Vec<Value>> {
        let rows: Vec<(Json<Value>,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT payload FROM jobs WHERE project_id = $1 AND kind = $2 \
                 AND state = 'waiting' ORDER BY id LIMIT $3",
            )
            .bind(project_id)
            .bind(kind)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|(p,)| p.0).collect())
    }
}
