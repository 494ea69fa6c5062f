//! Audiences: the contacts of a project matching a filter tree, read in SQL on either engine
//! (the compiler is [`compile`]). Campaign fan-out streams them in keyset pages
//! ([`Store::matching_contacts_page`]); segments count them ([`Store::count_matching`]) and
//! page them for `GET /segments/:id/contacts` ([`Store::matching_contacts_offset`]).
//!
//! Invariants:
//! - Every query is bound to one project (`c.project_id = $1`); a `segment.<id>` leaf naming
//!   another project's segment, or none, matches nobody (it is resolved per project).
//! - The SQL result equals `herald_core::filter::evaluate` on every contact (property test in
//!   `crates/herald/tests/api/filters.rs`).
//! - `subscribed_only` keeps contacts with `subscribed = true` only (campaign audiences).

mod compile;
mod field_indexes;

use std::collections::HashMap;

use herald_core::fields::FieldType;
use herald_core::filter::{Field, Filter, Leaf, Operand, Operator};
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::types::Json;

pub use compile::SegmentDef;
use compile::{Bind, Compiled, Compiler};

use crate::contacts::{COLUMNS, Contact, ContactRow};
use crate::{Store, StoreResult};

/// Binds every value of a compiled filter, in order.
macro_rules! bind_all {
    ($q:expr, $binds:expr) => {{
        let mut q = $q;
        for b in $binds {
            q = match b {
                Bind::Text(s) => q.bind(s.clone()),
                Bind::F64(f) => q.bind(*f),
                Bind::I64(i) => q.bind(*i),
                Bind::Bool(v) => q.bind(*v),
                Bind::Id(id) => q.bind(*id),
            };
        }
        q
    }};
}

/// Which contacts: a filter (none: everybody) and whether only subscribed ones.
#[derive(Clone, Copy, Debug)]
pub struct Audience<'a> {
    pub filter: Option<&'a Filter>,
    pub subscribed_only: bool,
}

impl<'a> Audience<'a> {
    pub fn new(filter: Option<&'a Filter>, subscribed_only: bool) -> Self {
        Self {
            filter,
            subscribed_only,
        }
    }
}

/// The leaf "member of segment `id`", the audience of a segment whatever its type.
pub fn member_of(id: Uuid) -> Filter {
    Filter::Leaf(Leaf {
        field: Field::Segment(id),
        op: Operator::MemberOfSegment,
        operand: Operand::None,
    })
}

impl Store {
    /// The project's inferred custom-field types, as `Filter::parse_with_types` wants them.
    pub async fn field_types(&self, project_id: Uuid) -> StoreResult<HashMap<String, FieldType>> {
        Ok(self
            .custom_fields(project_id)
            .await?
            .into_iter()
            .map(|f| (f.key, f.field_type))
            .collect())
    }

    /// Loads every segment `filter` refers to, transitively (within the project), so the
    /// compiler can inline dynamic ones and probe membership rows of static ones.
    pub async fn segment_defs(
        &self,
        project_id: Uuid,
        filter: &Filter,
    ) -> StoreResult<HashMap<Uuid, SegmentDef>> {
        let mut defs = HashMap::new();
        let mut todo = filter.segment_refs();
        let mut types = None;
        while let Some(id) = todo.pop() {
            if defs.contains_key(&id) {
                continue;
            }
            let row: Option<(String, Option<Json<Value>>)> = db_read!(self, |pool| {
                sqlx::query_as(
                    "SELECT type, filters FROM segments WHERE project_id = $1 AND id = $2",
                )
                .bind(project_id)
                .bind(id)
                .fetch_optional(pool)
                .await?
            });
            let Some((kind, filters)) = row else { continue };
            if kind != "DYNAMIC" {
                defs.insert(id, SegmentDef::Members);
                continue;
            }
            if types.is_none() {
                types = Some(self.field_types(project_id).await?);
            }
            let known = types.as_ref().map(|t| |k: &str| t.get(k).copied());
            let parsed = match (filters, known) {
                (Some(Json(v)), Some(lookup)) => Filter::parse_with_types(&v, &lookup).ok(),
                _ => None,
            };
            if let Some(tree) = parsed {
                todo.extend(tree.segment_refs());
                defs.insert(id, SegmentDef::Dynamic(tree));
            }
        }
        Ok(defs)
    }

    async fn compile_audience(
        &self,
        project_id: Uuid,
        audience: Audience<'_>,
        now: Millis,
        first: usize,
    ) -> StoreResult<Compiled> {
        let all = Filter::Group {
            op: herald_core::filter::GroupOp::And,
            conditions: Vec::new(),
        };
        let filter = audience.filter.unwrap_or(&all);
        let defs = self.segment_defs(project_id, filter).await?;
        let mut compiled = Compiler::new(self.dialect(), now, &defs, first).compile(filter);
        if audience.subscribed_only {
            compiled.sql = format!("(c.subscribed = TRUE AND {})", compiled.sql);
        }
        Ok(compiled)
    }

    /// One keyset page of the audience: contacts with `id > after` (all when `None`), by id,
    /// at most `limit`. A page shorter than `limit` is the last.
    pub async fn matching_contacts_page(
        &self,
        project_id: Uuid,
        audience: Audience<'_>,
        after: Option<Uuid>,
        limit: u32,
        now: Millis,
    ) -> StoreResult<Vec<Contact>> {
        let c = self.compile_audience(project_id, audience, now, 4).await?;
        let q = format!(
            "SELECT {COLUMNS} FROM contacts c WHERE c.project_id = $1 AND c.id > $2 AND {} \
             ORDER BY c.id LIMIT $3",
            c.sql
        );
        let rows: Vec<ContactRow> = db_read!(self, |pool| {
            let q = sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(after.unwrap_or(Uuid::nil()))
                .bind(i64::from(limit));
            bind_all!(q, &c.binds).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(Contact::from).collect())
    }

    /// The ids of one keyset page of the audience (see [`Store::matching_contacts_page`]).
    pub async fn matching_ids_page(
        &self,
        project_id: Uuid,
        audience: Audience<'_>,
        after: Option<Uuid>,
        limit: u32,
        now: Millis,
    ) -> StoreResult<Vec<Uuid>> {
        let c = self.compile_audience(project_id, audience, now, 4).await?;
        let q = format!(
            "SELECT c.id FROM contacts c WHERE c.project_id = $1 AND c.id > $2 AND {} \
             ORDER BY c.id LIMIT $3",
            c.sql
        );
        let rows: Vec<(Uuid,)> = db_read!(self, |pool| {
            let q = sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(after.unwrap_or(Uuid::nil()))
                .bind(i64::from(limit));
            bind_all!(q, &c.binds).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    /// A page by offset (ordered by id), for the page-based segment contacts list.
    pub async fn matching_contacts_offset(
        &self,
        project_id: Uuid,
        audience: Audience<'_>,
        offset: u64,
        limit: u32,
        now: Millis,
    ) -> StoreResult<Vec<Contact>> {
        let c = self.compile_audience(project_id, audience, now, 4).await?;
        let q = format!(
            "SELECT {COLUMNS} FROM contacts c WHERE c.project_id = $1 AND {} \
             ORDER BY c.id LIMIT $2 OFFSET $3",
            c.sql
        );
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let rows: Vec<ContactRow> = db_read!(self, |pool| {
            let q = sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(i64::from(limit))
                .bind(offset);
            bind_all!(q, &c.binds).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(Contact::from).collect())
    }

    /// How many contacts of the project match.
    pub async fn count_matching(
        &self,
        project_id: Uuid,
        audience: Audience<'_>,
        now: Millis,
    ) -> StoreResult<u64> {
        let c = self.compile_audience(project_id, audience, now, 2).await?;
        let q = format!(
            "SELECT COUNT(*) FROM contacts c WHERE c.project_id = $1 AND {}",
            c.sql
        );
        let (n,): (i64,) = db_read!(self, |pool| {
            let q = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
            bind_all!(q, &c.binds).fetch_one(pool).await?
        });
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Whether one contact matches (re-evaluating tracked segments after a change).
    pub async fn contact_matches(
        &self,
        project_id: Uuid,
        contact_id: Uuid,
        audience: Audience<'_>,
        now: Millis,
    ) -> StoreResult<bool> {
        let c = self.compile_audience(project_id, audience, now, 3).await?;
        let q = format!(
            "SELECT c.id FROM contacts c WHERE c.project_id = $1 AND c.id = $2 AND {}",
            c.sql
        );
        let row: Option<(Uuid,)> = db_read!(self, |pool| {
            let q = sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(contact_id);
            bind_all!(q, &c.binds).fetch_optional(pool).await?
        });
        Ok(row.is_some())
    }
}

#[cfg(test)]
mod tests;
