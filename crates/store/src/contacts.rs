//! Contacts: the write path (upsert and patch with the custom-field rules and subscription
//! events, all in the caller's transaction) and the read paths (get, keyset list, lookup).
//! A flip to subscribed also lifts the address's suppression, in the same transaction.

use herald_core::fields::DataPatch;
use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::{Map, Value, json};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::contact_search::{ContactCount, SAMPLE, SearchPlan, trigram_pattern, trigram_rows};
use crate::engine::sql;
use crate::{Store, StoreError, StoreResult, Tx};

#[derive(Clone, Debug, PartialEq)]
pub struct Contact {
    pub id: Uuid,
    pub email: String,
    pub subscribed: bool,
    pub data: Map<String, Value>,
    pub created_at: Millis,
    pub updated_at: Millis,
}

#[derive(FromRow)]
pub(crate) struct ContactRow {
    id: Uuid,
    email: String,
    subscribed: bool,
    data: Json<Map<String, Value>>,
    created_at: Millis,
    updated_at: Millis,
}

impl From<ContactRow> for Contact {
    fn from(r: ContactRow) -> Self {
        Contact {
            id: r.id,
            email: r.email,
            subscribed: r.subscribed,
            data: r.data.0,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

pub(crate) const COLUMNS: &str = "id, email, subscribed, data, created_at, updated_at";

/// Create-or-update of a contact by email.
pub struct ContactUpsert<'a> {
    pub project_id: Uuid,
    /// Already validated and normalised.
    pub email: &'a str,
    /// `None` keeps an existing contact's state and gives a new one `default_subscribed`.
    pub subscribed: Option<bool>,
    pub default_subscribed: bool,
    pub patch: &'a DataPatch,
    pub now: Millis,
}

#[derive(Clone, Debug)]
pub struct UpsertOutcome {
    pub contact: Contact,
    pub is_new: bool,
}

/// A change to one contact by id.
pub struct ContactUpdate<'a> {
    pub email: Option<&'a str>,
    pub subscribed: Option<bool>,
    pub patch: &'a DataPatch,
    pub now: Millis,
    /// The message (and campaign) that caused the change, linked to its subscription event
    /// (an unsubscribe link, a complaint); default for none.
    pub cause: crate::events::Links,
}

/// Event names of subscription flips.
pub const SUBSCRIBED_EVENT: &str = herald_core::events::SUBSCRIBED;
pub const UNSUBSCRIBED_EVENT: &str = herald_core::events::UNSUBSCRIBED;

/// Upserts inside `tx`: merges data, records field types, and records `contact.subscribed` /
/// `contact.unsubscribed` when an existing contact's state flips.
pub async fn upsert_contact(tx: &mut Tx, req: &ContactUpsert<'_>) -> StoreResult<UpsertOutcome> {
    // Insert first: a new contact costs one statement (plus its field types); an existing one
    // falls through to the locked read and update. A lost race also falls through.
    let mut data = Map::new();
    req.patch.apply(&mut data);
    let contact = Contact {
        id: new_id(),
        email: req.email.to_owned(),
        subscribed: req.subscribed.unwrap_or(req.default_subscribed),
        data,
        created_at: req.now,
        updated_at: req.now,
    };
    let inserted = db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (project_id, email) DO NOTHING",
        )
        .bind(contact.id)
        .bind(req.project_id)
        .bind(&contact.email)
        .bind(contact.subscribed)
        .bind(Json(&contact.data))
        .bind(req.now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    if inserted == 1 {
        crate::fields::record_types(tx, req.project_id, req.patch, req.now).await?;
        crate::segment_membership::enqueue_reevaluate(tx, req.project_id, &[contact.id], req.now)
            .await?;
        return Ok(UpsertOutcome {
            contact,
            is_new: true,
        });
    }
    let existing = select_locked(tx, req.project_id, ContactKey::Email(req.email))
        .await?
        .ok_or_else(|| StoreError::Conflict("contacts_project_email_key".into()))?;
    update_found(tx, req, existing).await
}

/// [`upsert_contact`] of a contact a statement of `tx` just found existing (a batch's insert
/// ahead that conflicted): straight to the locked read and the update, without the insert
/// that would conflict again. The whole upsert if the contact is gone since.
pub async fn upsert_existing_contact(
    tx: &mut Tx,
    req: &ContactUpsert<'_>,
) -> StoreResult<UpsertOutcome> {
    match select_locked(tx, req.project_id, ContactKey::Email(req.email)).await? {
        Some(existing) => update_found(tx, req, existing).await,
        None => upsert_contact(tx, req).await,
    }
}

/// The update half of an upsert, of the locked row `existing`.
async fn update_found(
    tx: &mut Tx,
    req: &ContactUpsert<'_>,
    existing: Contact,
) -> StoreResult<UpsertOutcome> {
    let contact = apply_update(
        tx,
        req.project_id,
        existing,
        &ContactUpdate {
            email: None,
            subscribed: req.subscribed,
            patch: req.patch,
            now: req.now,
            cause: Default::default(),
        },
    )
    .await?;
    Ok(UpsertOutcome {
        contact,
        is_new: false,
    })
}

/// Patches a contact by id inside `tx`. `Conflict` when the new email belongs to another contact.
pub async fn update_contact(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
    change: &ContactUpdate<'_>,
) -> StoreResult<Contact> {
    let row = select_locked(tx, project_id, ContactKey::Id(id)).await?;
    let existing = row.ok_or(StoreError::NotFound)?;
    apply_update(tx, project_id, existing, change).await
}

/// Reads a contact by id for update inside `tx`.
pub(crate) async fn select_by_id_locked(
    tx: &mut Tx,
    project_id: Uuid,
    id: Uuid,
) -> StoreResult<Option<Contact>> {
    select_locked(tx, project_id, ContactKey::Id(id)).await
}

/// How a contact is named in a locked read.
enum ContactKey<'a> {
    Id(Uuid),
    Email(&'a str),
}

/// Reads a contact for update (row-locked on PostgreSQL; SQLite's single writer serialises).
async fn select_locked(
    tx: &mut Tx,
    project_id: Uuid,
    key: ContactKey<'_>,
) -> StoreResult<Option<Contact>> {
    let column = match key {
        ContactKey::Id(_) => "id",
        ContactKey::Email(_) => "email",
    };
    let lock = if tx.dialect() == crate::Dialect::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    let q = format!("SELECT {COLUMNS} FROM contacts WHERE project_id = $1 AND {column} = $2{lock}");
    let row: Option<ContactRow> = db_tx!(tx, |conn| {
        let query = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
        let query = match key {
            ContactKey::Id(id) => query.bind(id),
            ContactKey::Email(email) => query.bind(email),
        };
        query.fetch_optional(&mut *conn).await?
    });
    Ok(row.map(Contact::from))
}

pub(crate) async fn apply_update(
    tx: &mut Tx,
    project_id: Uuid,
    mut contact: Contact,
    change: &ContactUpdate<'_>,
) -> StoreResult<Contact> {
    let mut changed = change.patch.apply(&mut contact.data);
    if let Some(email) = change.email.filter(|e| *e != contact.email) {
        contact.email = email.to_owned();
        changed = true;
    }
    let flipped = change.subscribed.filter(|s| *s != contact.subscribed);
    if let Some(s) = flipped {
        contact.subscribed = s;
        changed = true;
    }
    if !changed {
        return Ok(contact);
    }
    contact.updated_at = change.now;
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE contacts SET email = $3, subscribed = $4, data = $5, updated_at = $6 \
             WHERE project_id = $1 AND id = $2",
        )
        .bind(project_id)
        .bind(contact.id)
        .bind(&contact.email)
        .bind(contact.subscribed)
        .bind(Json(&contact.data))
        .bind(change.now)
        .execute(&mut *conn)
        .await?;
    });
    crate::fields::record_types(tx, project_id, change.patch, change.now).await?;
    crate::segment_membership::enqueue_reevaluate(tx, project_id, &[contact.id], change.now)
        .await?;
    if flipped == Some(true) {
        // Subscribing again lifts a suppression (DECISIONS.md "Feedback, suppression"): here,
        // so every way of subscribing (PATCH, pages, imports, /v1/send) does it.
        crate::suppressions::lift(tx, project_id, &contact.email).await?;
    }
    if let Some(s) = flipped {
        let name = if s {
            SUBSCRIBED_EVENT
        } else {
            UNSUBSCRIBED_EVENT
        };
        crate::events::insert_linked_event(
            tx,
            project_id,
            Some(contact.id),
            change.cause,
            name,
            &json!({ "subscribed": s }),
            change.now,
        )
        .await?;
    }
    Ok(contact)
}

/// One page of a keyset listing, newest first.
pub struct ContactPage {
    pub contacts: Vec<Contact>,
    pub has_more: bool,
}

/// Binds a [`ContactFilter`]'s values in the order of its condition.
macro_rules! bind_filter {
    ($query:expr, $filter:expr) => {{
        let mut query = $query;
        if let Some(b) = $filter.before {
            query = query.bind(b);
        }
        if let Some(p) = &$filter.pattern {
            query = query.bind(p.clone());
        }
        if let Some(s) = $filter.subscribed {
            query = query.bind(s);
        }
        query
    }};
}

impl Store {
    /// Upserts in a transaction of its own.
    pub async fn upsert_contact(&self, req: &ContactUpsert<'_>) -> StoreResult<UpsertOutcome> {
        let mut tx = self.begin().await?;
        let out = upsert_contact(&mut tx, req).await?;
        tx.commit().await?;
        Ok(out)
    }

    pub async fn update_contact(
        &self,
        project_id: Uuid,
        id: Uuid,
        change: &ContactUpdate<'_>,
    ) -> StoreResult<Contact> {
        let mut tx = self.begin().await?;
        let out = update_contact(&mut tx, project_id, id, change).await?;
        tx.commit().await?;
        Ok(out)
    }

    pub async fn contact(&self, project_id: Uuid, id: Uuid) -> StoreResult<Option<Contact>> {
        let row: Option<ContactRow> = self
            .project_row("contacts", COLUMNS, project_id, id)
            .await?;
        Ok(row.map(Contact::from))
    }

    pub async fn contact_by_email(
        &self,
        project_id: Uuid,
        email: &str,
    ) -> StoreResult<Option<Contact>> {
        let q = format!("SELECT {COLUMNS} FROM contacts WHERE project_id = $1 AND email = $2");
        let row: Option<ContactRow> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(email)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(Contact::from))
    }

    /// Deletes a contact (its events go with it, its active workflow executions are
    /// cancelled). False when there was none.
    pub async fn delete_contact(
        &self,
        project_id: Uuid,
        id: Uuid,
        now: Millis,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let deleted = crate::contacts_batch::delete(&mut tx, project_id, id, now).await?;
        tx.commit().await?;
        Ok(deleted)
    }

    /// Contacts with ids below `before` (newest first), at most `limit`. A search takes the
    /// plan its term calls for (`contact_search.rs`).
    pub async fn list_contacts(
        &self,
        project_id: Uuid,
        limit: u32,
        before: Option<Uuid>,
        search: Option<&str>,
        subscribed: Option<bool>,
    ) -> StoreResult<ContactPage> {
        let filter = ContactFilter::new(before, search, subscribed);
        let (cond, n) = filter.condition();
        let plan = self.plan_for(project_id, search, &filter).await?;
        let (rows_sql, mark, limit_at) = match plan {
            SearchPlan::Trigrams { mark } => (
                format!(
                    "{}SELECT {COLUMNS} FROM hits CROSS JOIN contacts ON contacts.rowid = hits.r",
                    trigram_rows(n + 1, n + 2)
                ),
                Some(mark),
                n + 3,
            ),
            _ => (format!("SELECT {COLUMNS} FROM contacts"), None, n + 1),
        };
        let q = format!("{rows_sql} WHERE {cond} ORDER BY id DESC LIMIT ${limit_at}");
        let rows: Vec<ContactRow> = db_read!(self, |pool| {
            let query = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
            let mut query = bind_filter!(query, filter);
            if let (Some(mark), Some(term)) = (mark, search) {
                query = query.bind(trigram_pattern(term)).bind(mark);
            }
            query.bind(i64::from(limit) + 1).fetch_all(pool).await?
        });
        let has_more = rows.len() > limit as usize;
        let contacts = rows
            .into_iter()
            .take(limit as usize)
            .map(Contact::from)
            .collect();
        Ok(ContactPage { contacts, has_more })
    }

    /// How many contacts match `search` (a substring of the email) and `subscribed`, exactly.
    /// Without a search, the project's counts kept by the `contact_counts` triggers (migration
    /// 0028) answer in one indexed read, whatever the number of contacts.
    pub async fn count_contacts(
        &self,
        project_id: Uuid,
        search: Option<&str>,
        subscribed: Option<bool>,
    ) -> StoreResult<i64> {
        Ok(self
            .count_searched(project_id, search, subscribed, false)
            .await?
            .count)
    }

    /// [`Store::count_contacts`], estimated from a sample where the term is common
    /// (`contact_search.rs`): what a page that shows "about" a number can afford.
    pub async fn estimate_contacts(
        &self,
        project_id: Uuid,
        search: Option<&str>,
        subscribed: Option<bool>,
    ) -> StoreResult<ContactCount> {
        self.count_searched(project_id, search, subscribed, true)
            .await
    }

    async fn count_searched(
        &self,
        project_id: Uuid,
        search: Option<&str>,
        subscribed: Option<bool>,
        estimate: bool,
    ) -> StoreResult<ContactCount> {
        if search.is_none() {
            let count = self.counted_contacts(project_id, subscribed).await?;
            return Ok(ContactCount { count, exact: true });
        }
        let filter = ContactFilter::new(None, search, subscribed);
        let (cond, n) = filter.condition();
        let plan = self.plan_for(project_id, search, &filter).await?;
        let mark = match plan {
            SearchPlan::Common { hits, contacts } if estimate => {
                return Ok(ContactCount {
                    count: hits * contacts / SAMPLE,
                    exact: false,
                });
            }
            SearchPlan::Trigrams { mark } => Some(mark),
            _ => None,
        };
        let q = match mark {
            Some(_) => format!(
                "{}SELECT count(*) FROM hits CROSS JOIN contacts ON contacts.rowid = hits.r \
                 WHERE {cond}",
                trigram_rows(n + 1, n + 2)
            ),
            None => format!("SELECT count(*) FROM contacts WHERE {cond}"),
        };
        let (count,): (i64,) = db_read!(self, |pool| {
            let query = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
            let mut query = bind_filter!(query, filter);
            if let (Some(mark), Some(term)) = (mark, search) {
                query = query.bind(trigram_pattern(term)).bind(mark);
            }
            query.fetch_one(pool).await?
        });
        Ok(ContactCount { count, exact: true })
    }

    /// The plan of a listing or count: a scan unless it searches.
    async fn plan_for(
        &self,
        project_id: Uuid,
        search: Option<&str>,
        filter: &ContactFilter,
    ) -> StoreResult<SearchPlan> {
        match (search, &filter.pattern) {
            (Some(term), Some(pattern)) => {
                self.search_plan(project_id, term, pattern, filter.subscribed)
                    .await
            }
            _ => Ok(SearchPlan::Scan),
        }
    }

    /// The project's contacts (all, subscribed or unsubscribed) from `contact_counts`: one row
    /// on SQLite, one per writing connection's shard on PostgreSQL.
    pub(crate) async fn counted_contacts(
        &self,
        project_id: Uuid,
        subscribed: Option<bool>,
    ) -> StoreResult<i64> {
        let q = "SELECT CAST(coalesce(sum(total), 0) AS BIGINT), \
                 CAST(coalesce(sum(subscribed), 0) AS BIGINT) \
                 FROM contact_counts WHERE project_id = $1";
        let (total, subscribed_count): (i64, i64) = db_read!(self, |pool| {
            sqlx::query_as(q).bind(project_id).fetch_one(pool).await?
        });
        Ok(match subscribed {
            None => total,
            Some(true) => subscribed_count,
            Some(false) => total - subscribed_count,
        })
    }

    /// The (email, id) of each given email that is a contact of the project.
    pub async fn lookup_contacts(
        &self,
        project_id: Uuid,
        emails: &[String],
    ) -> StoreResult<Vec<(String, Uuid)>> {
        let q = sql(
            self.dialect(),
            "SELECT email, id FROM contacts WHERE project_id = $1 \
             AND email IN (SELECT value FROM json_each($2))",
            "SELECT email, id FROM contacts WHERE project_id = $1 \
             AND email IN (SELECT jsonb_array_elements_text($2::jsonb))",
        );
        let list = Json(emails);
        Ok(db_read!(self, |pool| {
            sqlx::query_as(q)
                .bind(project_id)
                .bind(list)
                .fetch_all(pool)
                .await?
        }))
    }
}

/// The optional conditions of a contact listing or count, after `project_id = $1`. A condition
/// is written only when present: `($2 IS NULL OR id < $2)` would keep SQLite from seeking the
/// (project_id, id) index to the cursor.
struct ContactFilter {
    before: Option<Uuid>,
    pattern: Option<String>,
    subscribed: Option<bool>,
}

impl ContactFilter {
    fn new(before: Option<Uuid>, search: Option<&str>, subscribed: Option<bool>) -> Self {
        ContactFilter {
            before,
            pattern: search.map(crate::like::contains),
            subscribed,
        }
    }

    /// The WHERE condition and the number of its last parameter; [`bind_filter!`] binds the
    /// values in the same order.
    fn condition(&self) -> (String, usize) {
        let mut cond = String::from("project_id = $1");
        let mut n = 1;
        let parts = [
            (self.before.is_some(), "id < ", ""),
            (self.pattern.is_some(), "email LIKE ", " ESCAPE '\\'"),
            (self.subscribed.is_some(), "subscribed = ", ""),
        ];
        for (present, test, suffix) in parts {
            if present {
                n += 1;
                cond.push_str(&format!(" AND {test}${n}{suffix}"));
            }
        }
        (cond, n)
    }
}
