//! Indexes for hot custom fields (SQLite): `HERALD_INDEXED_FIELDS` names the `data` keys that
//! segments and campaign audiences filter on most; each gets one index on
//! `(project_id, id, json_extract(data, path), json_type(data, path))`, with the same path text
//! the filter compiler emits (`compile::path_literal`).
//!
//! Why this shape: a count such as `plan = "pro" AND login within 30 days` starts from the
//! event's index range and looks each contact up by `(project_id, id)`; with the field's
//! value and type in that index, the lookup answers the field's condition from the index
//! alone, without reading and parsing the contact's `data` (docs/benchmarks.md, `segments`).
//! A field condition without an event condition can scan it too.
//!
//! Creating an index also runs `ANALYZE contacts`: the planner picks the index by the table's
//! statistics (at 1,000,000 contacts it does: `herald-bench segments`; on a small table it may
//! not, where it does not matter). Each index costs every contact write one more b-tree
//! insert, which is why the fields are named by the operator rather than guessed. PostgreSQL: nothing is created (its planner
//! does not answer these expressions from an index); the setting is ignored there.

use herald_core::fields::is_valid_key;
use herald_core::filter::data_path;

use super::compile::path_literal;
use crate::{Dialect, Store, StoreResult};

impl Store {
    /// Creates the index of every key of `keys` that lacks one (idempotent; on a large table
    /// the first creation takes seconds and holds the writer). Invalid keys are an error.
    pub async fn ensure_field_indexes(&self, keys: &[String]) -> StoreResult<()> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(());
        }
        let mut created = false;
        for key in keys {
            let Some(path) = data_path(key).filter(|_| is_valid_key(key)) else {
                return Err(crate::StoreError::Other(anyhow::anyhow!(
                    "not a custom field key a filter can name: {key:?}"
                )));
            };
            let name = index_name(key);
            let exists: Option<(String,)> = db_read!(self, |pool| {
                sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'index' AND name = $1")
                    .bind(&name)
                    .fetch_optional(pool)
                    .await?
            });
            if exists.is_some() {
                continue;
            }
            let p = path_literal(Dialect::Sqlite, &path);
            let q = format!(
                "CREATE INDEX {name} ON contacts \
                 (project_id, id, json_extract(data, {p}), json_type(data, {p}))"
            );
            db_write!(self, |pool| {
                sqlx::query(sqlx::AssertSqlSafe(q.as_str()))
                    .execute(pool)
                    .await?;
            });
            created = true;
        }
        if created {
            // The planner picks the new index only with statistics of the table (seconds at
            // a million contacts, once).
            db_write!(self, |pool| {
                sqlx::query("ANALYZE contacts").execute(pool).await?;
            });
        }
        Ok(())
    }
}

/// `contacts_field_<hex of the key>`: any valid key gives a valid, distinct name.
fn index_name(key: &str) -> String {
    format!("contacts_field_{}", hex::encode(key.as_bytes()))
}
