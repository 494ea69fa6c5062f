//! Custom-field bookkeeping: the type inferred once per project and key, coverage, distinct
//! values, and removing a field from every contact.

use std::collections::HashMap;

use herald_core::fields::{DataPatch, FieldType};
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::AssertSqlSafe;

use crate::engine::sql;
use crate::{Store, StoreResult, Tx};

/// Keys whose type this process recorded or saw recorded recently. Entries expire after a
/// minute, so a field deleted through another node is recorded again soon after; a delete
/// through this node forgets the project's entries at once.
#[derive(Default)]
pub(crate) struct KnownFields(std::sync::Mutex<HashMap<(Uuid, String), std::time::Instant>>);

const KNOWN_FIELD_TTL: std::time::Duration = std::time::Duration::from_secs(60);

impl KnownFields {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Uuid, String), std::time::Instant>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn is_known(&self, project: Uuid, key: &str) -> bool {
        self.lock()
            .get(&(project, key.to_owned()))
            .is_some_and(|at| at.elapsed() < KNOWN_FIELD_TTL)
    }

    fn remember(&self, project: Uuid, keys: impl Iterator<Item = String>) {
        let now = std::time::Instant::now();
        let mut map = self.lock();
        if map.len() > 100_000 {
            map.clear();
        }
        for k in keys {
            map.insert((project, k), now);
        }
    }

    fn forget_project(&self, project: Uuid) {
        self.lock().retain(|(p, _), _| *p != project);
    }
}

/// Records the type of every leaf the patch stores, unless the key already has one. Keys are
/// remembered once recorded; a rolled-back transaction can leave a key remembered but not
/// recorded for at most a minute.
pub async fn record_types(
    tx: &mut Tx,
    project_id: Uuid,
    patch: &DataPatch,
    now: Millis,
) -> StoreResult<()> {
    let known = tx.known_fields.clone();
    let mut leaves = patch.typed_leaves();
    leaves.retain(|(k, _)| !known.is_known(project_id, k));
    if leaves.is_empty() {
        return Ok(());
    }
    leaves.sort_by(|a, b| a.0.cmp(&b.0));
    leaves.dedup_by(|a, b| a.0 == b.0);
    // One statement per 500 keys (bind-parameter limits): `($1, $2, $3, $4), ($1, $2, $5, $6), ...`.
    for chunk in leaves.chunks(500) {
        let values: Vec<String> = (0..chunk.len())
            .map(|i| format!("($1, $2, ${}, ${})", 3 + 2 * i, 4 + 2 * i))
            .collect();
        let q = format!(
            "INSERT INTO contact_fields (project_id, created_at, key, type) VALUES {} \
             ON CONFLICT (project_id, key) DO NOTHING",
            values.join(", ")
        );
        db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(now);
            for (key, ty) in chunk {
                query = query.bind(key.clone()).bind(ty.as_str());
            }
            query.execute(&mut *conn).await?;
        });
    }
    known.remember(project_id, leaves.into_iter().map(|(k, _)| k));
    Ok(())
}

/// SQLite JSON path for a dotted key: `$."a"."b"`.
fn sqlite_path(key: &str) -> String {
    let mut p = String::from("$");
    for seg in key.split('.') {
        p.push_str(".\"");
        p.push_str(&seg.replace('\\', "\\\\").replace('"', "\\\""));
        p.push('"');
    }
    p
}

fn pg_path(key: &str) -> Vec<String> {
    key.split('.').map(str::to_owned).collect()
}

/// A custom field of a project: its key below `data` and its inferred type.
#[derive(Clone, Debug)]
pub struct CustomField {
    pub key: String,
    pub field_type: FieldType,
}

impl Store {
    pub async fn custom_fields(&self, project_id: Uuid) -> StoreResult<Vec<CustomField>> {
        let rows: Vec<(String, String)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT key, type FROM contact_fields WHERE project_id = $1 ORDER BY key",
            )
            .bind(project_id)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(key, t)| CustomField {
                key,
                field_type: FieldType::parse(&t).unwrap_or(FieldType::String),
            })
            .collect())
    }

    /// How many contacts have each key set. Top-level keys are counted in one pass; nested
    /// paths (`address.city`) one query each.
    pub async fn field_counts(
        &self,
        project_id: Uuid,
        keys: &[String],
    ) -> StoreResult<HashMap<String, i64>> {
        let q = sql(
            self.dialect(),
            "SELECT j.key, count(*) FROM contacts c, json_each(c.data) j \
             WHERE c.project_id = $1 AND j.type != 'null' GROUP BY j.key",
            "SELECT k, count(*) FROM contacts c, jsonb_object_keys(c.data) k \
             WHERE c.project_id = $1 GROUP BY k",
        );
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(q).bind(project_id).fetch_all(pool).await?
        });
        let mut counts: HashMap<String, i64> = rows.into_iter().collect();
        let nested: Vec<&String> = keys
            .iter()
            .filter(|k| k.contains('.') && !counts.contains_key(*k))
            .collect();
        for key in nested {
            let (n,): (i64,) = db_read_each!(
                self,
                sqlite
                    | pool
                    | {
                        sqlx::query_as(
                        "SELECT count(*) FROM contacts WHERE project_id = $1 AND json_type(data, $2) IS NOT NULL \
                         AND json_type(data, $2) != 'null'",
                    )
                    .bind(project_id)
                    .bind(sqlite_path(key))
                    .fetch_one(pool)
                    .await?
                    },
                postgres
                    | pool
                    | {
                        sqlx::query_as(
                        "SELECT count(*) FROM contacts WHERE project_id = $1 AND data #> $2 IS NOT NULL \
                         AND jsonb_typeof(data #> $2) != 'null'",
                    )
                    .bind(project_id)
                    .bind(pg_path(key))
                    .fetch_one(pool)
                    .await?
                    },
            );
            counts.insert(key.clone(), n);
        }
        Ok(counts)
    }

    /// Distinct values of a custom field, at most `limit`, as JSON values.
    pub async fn field_values(
        &self,
        project_id: Uuid,
        key: &str,
        limit: u32,
    ) -> StoreResult<Vec<Value>> {
        let texts: Vec<(String,)> = db_read_each!(
            self,
            sqlite
                | pool
                | {
                    sqlx::query_as(
                    "SELECT DISTINCT data -> $2 AS v FROM contacts WHERE project_id = $1 \
                     AND json_type(data, $2) IS NOT NULL AND json_type(data, $2) != 'null' ORDER BY v LIMIT $3",
                )
                .bind(project_id)
                .bind(sqlite_path(key))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
                },
            postgres
                | pool
                | {
                    sqlx::query_as(
                    "SELECT DISTINCT (data #> $2)::text AS v FROM contacts WHERE project_id = $1 \
                     AND data #> $2 IS NOT NULL AND jsonb_typeof(data #> $2) != 'null' ORDER BY v LIMIT $3",
                )
                .bind(project_id)
                .bind(pg_path(key))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
                },
        );
        Ok(texts
            .into_iter()
            .filter_map(|(t,)| serde_json::from_str(&t).ok())
            .collect())
    }

    /// Removes a custom field (and its nested paths) from every contact of the project and
    /// forgets its type. False when the project had no such field.
    pub async fn delete_field(
        &self,
        project_id: Uuid,
        key: &str,
        now: Millis,
    ) -> StoreResult<bool> {
        self.known_fields.forget_project(project_id);
        let mut tx = self.begin().await?;
        let prefix = format!("{}.%", crate::like::escape(key));
        let known = db_tx!(&mut tx, |conn| {
            sqlx::query(
                "DELETE FROM contact_fields WHERE project_id = $1 AND (key = $2 OR key LIKE $3 ESCAPE '\\')",
            )
            .bind(project_id)
            .bind(key)
            .bind(&prefix)
            .execute(&mut *conn)
            .await?
            .rows_affected()
        });
        let touched = db_tx_each!(
            &mut tx,
            sqlite
                | conn
                | sqlx::query(
                    "UPDATE contacts SET data = json_remove(data, $2), updated_at = $3 \
                 WHERE project_id = $1 AND json_type(data, $2) IS NOT NULL",
                )
                .bind(project_id)
                .bind(sqlite_path(key))
                .bind(now)
                .execute(&mut *conn)
                .await?
                .rows_affected(),
            postgres
                | conn
                | sqlx::query(
                    "UPDATE contacts SET data = data #- $2, updated_at = $3 \
                 WHERE project_id = $1 AND data #> $2 IS NOT NULL",
                )
                .bind(project_id)
                .bind(pg_path(key))
                .bind(now)
                .execute(&mut *conn)
                .await?
                .rows_affected(),
        );
        tx.commit().await?;
        Ok(known > 0 || touched > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_quote_each_segment() {
        assert_eq!(sqlite_path("a.b"), "$.\"a\".\"b\"");
        assert_eq!(sqlite_path("we\"ird"), "$.\"we\\\"ird\"");
        assert_eq!(pg_path("a.b"), vec!["a", "b"]);
    }
}
