//! Many contacts at once, for imports and bulk operations, with the rules of the one-contact
//! write path (`contacts.rs`): new contacts are inserted by multi-row statements; existing
//! ones go through the same update as `PATCH /contacts/:id` (custom-field merge, subscription
//! events, suppression lift), so a rule lives once.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use herald_core::fields::DataPatch;
use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Map;
use serde_json::value::RawValue;
use sqlx::AssertSqlSafe;
use sqlx::types::Json;

use crate::contacts::{COLUMNS, Contact, ContactRow, ContactUpdate, ContactUpsert, apply_update};
use crate::engine::column;
use crate::{Dialect, StoreError, StoreResult, Tx};

/// One row of a batch upsert; emails are validated, normalised and unique within a batch.
pub struct BatchRow<'a> {
    pub subscribed: Option<bool>,
    pub patch: &'a DataPatch,
    /// The contact inserted if the email is new in the project: `subscribed` resolved with
    /// the default, `patch` applied to no data ([`BatchRow::new`]). The caller builds it, so an
    /// import builds it on its parsing thread, off the writer's path.
    pub new: NewContact<'a>,
}

impl<'a> BatchRow<'a> {
    /// A row whose new contact is built now; `default_subscribed` stands in for a missing
    /// `subscribed` when the contact is new.
    pub fn new(
        project_id: Uuid,
        email: &'a str,
        subscribed: Option<bool>,
        default_subscribed: bool,
        patch: &'a DataPatch,
    ) -> StoreResult<Self> {
        let data = Cow::Owned(NewContact::encode(patch)?);
        let id = new_id();
        Ok(Self::prepared(
            project_id,
            email,
            subscribed,
            default_subscribed,
            patch,
            id,
            data,
        ))
    }

    /// A row whose new contact's id and encoded data ([`NewContact::encode`]) were made
    /// ahead, as [`BatchRow::new`] makes them.
    pub fn prepared(
        project_id: Uuid,
        email: &'a str,
        subscribed: Option<bool>,
        default_subscribed: bool,
        patch: &'a DataPatch,
        id: Uuid,
        data: Cow<'a, RawValue>,
    ) -> Self {
        Self {
            subscribed,
            patch,
            new: NewContact {
                id,
                project_id,
                email,
                subscribed: subscribed.unwrap_or(default_subscribed),
                data,
            },
        }
    }

    pub fn email(&self) -> &'a str {
        self.new.email
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    pub created: u64,
    pub updated: u64,
}

/// Rows per multi-row INSERT (7 values each, well inside both engines' bind limits).
const INSERT_CHUNK: usize = 500;

/// Upserts `rows` by email inside `tx`; a new contact gets its row's `new`.
pub async fn upsert_batch(
    tx: &mut Tx,
    project_id: Uuid,
    rows: &[BatchRow<'_>],
    now: Millis,
) -> StoreResult<BatchOutcome> {
    let mut out = BatchOutcome::default();
    let emails: Vec<&str> = rows.iter().map(BatchRow::email).collect();
    let mut existing: HashMap<String, Contact> = select_by_emails(tx, project_id, &emails)
        .await?
        .into_iter()
        .map(|c| (c.email.clone(), c))
        .collect();
    let (old, new): (Vec<&BatchRow>, Vec<&BatchRow>) =
        rows.iter().partition(|r| existing.contains_key(r.email()));
    for row in old {
        if let Some(contact) = existing.remove(row.email()) {
            let change = ContactUpdate {
                email: None,
                subscribed: row.subscribed,
                patch: row.patch,
                now,
                cause: Default::default(),
            };
            apply_update(tx, project_id, contact, &change).await?;
            out.updated += 1;
        }
    }
    for chunk in new.chunks(INSERT_CHUNK) {
        let contacts: Vec<&NewContact> = chunk.iter().map(|r| &r.new).collect();
        let inserted = insert_new_many(tx, &contacts, now).await?;
        // The field types of the inserted rows at once: the first value of each key decides,
        // as when the rows are upserted one by one.
        // (Objects give dotted paths per row, so a row holding one is recorded on its own.)
        let mut types = DataPatch::default();
        for row in chunk.iter().filter(|r| inserted.contains(&r.new.id)) {
            if row.patch.set.values().any(serde_json::Value::is_object) {
                crate::fields::record_types(tx, project_id, row.patch, now).await?;
                continue;
            }
            for (k, v) in &row.patch.set {
                if !types.set.contains_key(k) {
                    types.set.insert(k.clone(), v.clone());
                }
            }
        }
        crate::fields::record_types(tx, project_id, &types, now).await?;
        // New contacts join tracked segments as an updated one does (its `apply_update`).
        let new_ids: Vec<Uuid> = chunk
            .iter()
            .map(|r| r.new.id)
            .filter(|id| inserted.contains(id))
            .collect();
        crate::segment_membership::enqueue_reevaluate(tx, project_id, &new_ids, now).await?;
        for row in chunk {
            if inserted.contains(&row.new.id) {
                out.created += 1;
                continue;
            }
            // Created meanwhile by another writer: the one-contact upsert updates it.
            let upsert = ContactUpsert {
                project_id,
                email: row.email(),
                subscribed: row.subscribed,
                default_subscribed: row.new.subscribed,
                patch: row.patch,
                now,
            };
            if crate::contacts::upsert_contact(tx, &upsert).await?.is_new {
                out.created += 1;
            } else {
                out.updated += 1;
            }
        }
    }
    Ok(out)
}

async fn select_by_emails(
    tx: &mut Tx,
    project_id: Uuid,
    emails: &[&str],
) -> StoreResult<Vec<Contact>> {
    if emails.is_empty() {
        return Ok(Vec::new());
    }
    let q = if tx.dialect() == Dialect::Postgres {
        format!(
            "SELECT {COLUMNS} FROM contacts WHERE project_id = $1 \
             AND email IN (SELECT jsonb_array_elements_text($2::jsonb)) FOR UPDATE"
        )
    } else {
        format!(
            "SELECT {COLUMNS} FROM contacts WHERE project_id = $1 \
             AND email IN (SELECT value FROM json_each($2))"
        )
    };
    let list = Json(emails);
    let rows: Vec<ContactRow> = db_tx!(tx, |conn| {
        sqlx::query_as(AssertSqlSafe(q.as_str()))
            .bind(project_id)
            .bind(list)
            .fetch_all(&mut *conn)
            .await?
    });
    Ok(rows.into_iter().map(Contact::from).collect())
}

/// A contact to insert if its email is new in its project ([`insert_new_many`]).
pub struct NewContact<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub email: &'a str,
    pub subscribed: bool,
    /// The contact's data, encoded ([`NewContact::encode`]).
    pub data: Cow<'a, RawValue>,
}

impl<'a> NewContact<'a> {
    /// A new contact holding `patch`'s values.
    pub fn new(
        project_id: Uuid,
        email: &'a str,
        subscribed: bool,
        patch: &DataPatch,
    ) -> StoreResult<Self> {
        Ok(Self {
            id: new_id(),
            project_id,
            email,
            subscribed,
            data: Cow::Owned(Self::encode(patch)?),
        })
    }

    /// The data of a new contact holding `patch`'s values, encoded as it is stored (encoded
    /// by the caller, so an import encodes on its parsing thread, off the writer's path).
    pub fn encode(patch: &DataPatch) -> StoreResult<Box<RawValue>> {
        let mut data = Map::new();
        patch.apply(&mut data);
        serde_json::value::to_raw_value(&data).map_err(|e| StoreError::Other(e.into()))
    }
}

/// Inserts the contacts whose email is new in their project (multi-row statements, any mix
/// of projects); returns the ids of those inserted. The others (the email exists, or an
/// earlier row of `rows` has it) are left alone for the caller's update path. Field types and
/// outbox rows are the caller's.
pub async fn insert_new_many<'a, C: std::borrow::Borrow<NewContact<'a>>>(
    tx: &mut Tx,
    rows: &[C],
    now: Millis,
) -> StoreResult<HashSet<Uuid>> {
    let mut inserted = HashSet::with_capacity(rows.len());
    for chunk in rows.chunks(INSERT_CHUNK) {
        let n = insert_chunk(tx, chunk, now).await?;
        let ids = chunk.iter().map(|r| r.borrow().id);
        if n == chunk.len() as u64 {
            inserted.extend(ids);
        } else if n > 0 {
            // Some emails existed. The ids are new, so a row holding one is a row inserted
            // here (counted by `rows_affected` rather than returned: `RETURNING` sends every
            // row back on its own, a cost paid on every batch for the rare conflict).
            inserted.extend(existing_ids(tx, ids.collect()).await?);
        }
    }
    Ok(inserted)
}

/// Inserts one chunk of new contacts; the number inserted (the others' emails existed).
///
/// On PostgreSQL the rows travel as one array per column through `UNNEST`, so the statement's
/// text is the same whatever the number of rows: the connection keeps one prepared statement
/// for it, where a multi-row `VALUES` had one text per row count and was parsed and planned
/// again whenever its text had left the connection's small statement cache (issue 35). SQLite
/// keeps the multi-row `VALUES` (no arrays; its statements are prepared in-process).
async fn insert_chunk<'a, C: std::borrow::Borrow<NewContact<'a>>>(
    tx: &mut Tx,
    chunk: &[C],
    now: Millis,
) -> StoreResult<u64> {
    let rows: Vec<&NewContact<'a>> = chunk.iter().map(std::borrow::Borrow::borrow).collect();
    Ok(db_tx_each!(
        tx,
        sqlite
            | conn
            | {
                // Every value bound per row, in column order: id, project, email, subscribed, data,
                // created_at, updated_at.
                let q = format!(
                    "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
                 VALUES {} ON CONFLICT (project_id, email) DO NOTHING",
                    crate::engine::value_rows(chunk.len(), 7, 1)
                );
                let q = crate::engine::binds_for(crate::Dialect::Sqlite, &q).into_owned();
                let mut query = sqlx::query(AssertSqlSafe(q));
                for row in &rows {
                    query = query
                        .bind(row.id)
                        .bind(row.project_id)
                        .bind(row.email)
                        .bind(row.subscribed)
                        .bind(Json(&*row.data))
                        .bind(now)
                        .bind(now);
                }
                query.execute(&mut *conn).await?.rows_affected()
            },
        postgres
            | conn
            | {
                sqlx::query(
                "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
                 SELECT id, project_id, email, subscribed, data, $6, $6 \
                 FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::bool[], $5::jsonb[]) \
                   AS r(id, project_id, email, subscribed, data) \
                 ON CONFLICT (project_id, email) DO NOTHING",
            )
            .bind(column(&rows, |r| r.id))
            .bind(column(&rows, |r| r.project_id))
            .bind(column(&rows, |r| r.email))
            .bind(column(&rows, |r| r.subscribed))
            .bind(column(&rows, |r| Json(&*r.data)))
            .bind(now)
            .execute(&mut *conn)
            .await?
            .rows_affected()
            },
    ))
}

/// Which of `ids` are contacts' ids.
async fn existing_ids(tx: &mut Tx, ids: Vec<Uuid>) -> StoreResult<Vec<Uuid>> {
    let q = format!(
        "SELECT id FROM contacts WHERE id IN ({})",
        crate::engine::placeholder_list(ids.len(), 1)
    );
    let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
    let found: Vec<(Uuid,)> = db_tx!(tx, |conn| {
        let mut query = sqlx::query_as(AssertSqlSafe(q.as_str()));
        for id in &ids {
            query = query.bind(*id);
        }
        query.fetch_all(&mut *conn).await?
    });
    Ok(found.into_iter().map(|(id,)| id).collect())
}

/// Sets one contact's subscription with the PATCH rules (event, suppression lift): `None`
/// when the project has no such contact, else whether it changed.
pub async fn set_subscribed(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
    subscribed: bool,
    now: Millis,
) -> StoreResult<Option<bool>> {
    let Some(contact) = crate::contacts::select_by_id_locked(tx, project_id, id).await? else {
        return Ok(None);
    };
    if contact.subscribed == subscribed {
        return Ok(Some(false));
    }
    let patch = DataPatch::default();
    let change = ContactUpdate {
        email: None,
        subscribed: Some(subscribed),
        patch: &patch,
        now,
        cause: Default::default(),
    };
    apply_update(tx, project_id, contact, &change).await?;
    Ok(Some(true))
}

/// Deletes one contact (its events go with it) and cancels its RUNNING and WAITING workflow
/// executions; false when the project has no such contact.
pub async fn delete(tx: &mut Tx, project_id: Uuid, id: Uuid, now: Millis) -> StoreResult<bool> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE workflow_executions SET status = 'CANCELLED', completed_at = $3, updated_at = $3, \
             exit_reason = 'the contact was deleted' \
             WHERE project_id = $1 AND contact_id = $2 AND status IN ('RUNNING', 'WAITING')",
        )
        .bind(project_id)
        .bind(id)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    let n = db_tx!(tx, |conn| {
        sqlx::query("DELETE FROM contacts WHERE project_id = $1 AND id = $2")
            .bind(project_id)
            .bind(id)
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    Ok(n > 0)
}
