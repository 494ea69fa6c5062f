//! The PostgreSQL twin of `segments::seed`: a fresh schema (dropped by [`PgSeeded::drop_schema`])
//! holding one project with `count` generated contacts (the same 5 custom fields, 6 in 7
//! subscribed) and their `login` / `page_view` events, generated in SQL (`generate_series`).
//! Contact ids are time-ordered like `segments::seed`'s.

use std::time::Instant;

use anyhow::Context;
use herald_store::{Store, StoreOptions};
use sqlx::Connection;

pub struct PgSeeded {
    pub store: Store,
    pub project: uuid::Uuid,
    pub now: i64,
    url: String,
    schema: String,
}

impl PgSeeded {
    /// The schema holding the benchmark's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Removes the benchmark's schema.
    pub async fn drop_schema(self) -> anyhow::Result<()> {
        self.store.close().await;
        let mut conn = sqlx::PgConnection::connect(&self.url).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA {} CASCADE",
            self.schema
        )))
        .execute(&mut conn)
        .await?;
        Ok(())
    }
}

const DAY_MS: i64 = 86_400_000;

pub async fn seed(url: &str, count: usize) -> anyhow::Result<PgSeeded> {
    let schema = format!("bench_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .context("connecting to PostgreSQL")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut conn)
        .await?;
    let opts = StoreOptions {
        pg_schema: Some(schema.clone()),
        ..StoreOptions::default()
    };
    let store = Store::connect(url, &opts).await?;
    store.migrate().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path TO {schema}")))
        .execute(&mut conn)
        .await?;
    let project = uuid::Uuid::now_v7();
    let now = herald_core::clock::system().now();
    let started = Instant::now();
    sqlx::query(
        "INSERT INTO projects (id, name, public_key, secret_key_hash, secret_key_prefix, created_at, updated_at) \
         VALUES ($1, 'bench', 'pk', 'sk', 'sk', 0, 0)",
    )
    .bind(project)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
         SELECT (lpad(to_hex($3 - $2 + i), 12, '0') || '7' || substr(md5(i::text), 1, 19))::uuid, \
           $1, 'user' || i || '@example.com', i % 7 <> 0, \
           jsonb_build_object('plan', (ARRAY['pro','free','team','trial'])[1 + i % 4], \
             'age', i % 90, 'city', 'city' || (i % 500), 'score', (i * 7919) % 1000, \
             'signup', '2026-0' || (1 + i % 9) || '-1' || (i % 10)), \
           $3, $3 FROM generate_series(1, $2) AS i",
    )
    .bind(project)
    .bind(count as i64)
    .bind(now)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at) \
         SELECT gen_random_uuid(), project_id, id, 'login', '{}', $1 - (abs(hashtext(email)) % 20) * $2 \
         FROM contacts WHERE abs(hashtext(email)) % 10 = 0",
    )
    .bind(now)
    .bind(DAY_MS)
    .execute(&mut conn)
    .await?;
    sqlx::query("ANALYZE").execute(&mut conn).await?;
    println!(
        "{count} contacts with 5 custom fields seeded in {:.1} s (PostgreSQL)",
        started.elapsed().as_secs_f64()
    );
    Ok(PgSeeded {
        store,
        project,
        now,
        url: url.to_owned(),
        schema,
    })
}
