//! The two engines behind one `Store`, and the macros that expand one query body for each.
//!
//! Invariants:
//! - SQLite: one writer connection and a pool of read-only readers (WAL). Write transactions
//!   begin `IMMEDIATE`, so the write lock is taken at `BEGIN` and waits up to the busy timeout
//!   (10 s) for another process on the same file, instead of failing with `SQLITE_BUSY` when a
//!   deferred transaction tries to upgrade its read lock.
//! - PostgreSQL: one pool for the API and the workers, sized for both
//!   ([`StoreOptions::max_connections`] for requests plus [`StoreOptions::worker_connections`],
//!   one per concurrent delivery and a few for the background tasks), so a full send queue
//!   cannot take every connection from the API. Every statement runs under
//!   [`StoreOptions::statement_timeout`] (`statement_timeout`), except migrations.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

/// SQLite page cache of the writer and of each reader (`cache_size`, negative: KiB). Small on
/// purpose: pages a connection's cache misses come from the kernel's page cache (a `pread`
/// copy), and every connection's cache is its own (up to ten connections per process), so
/// large ones cost resident memory without speed: 32 MB caches added about 30 MB to a
/// delivering node's peak RSS and made no benchmark faster (the import and the segment count
/// were slower; docs/benchmarks.md, `campaign`).
const WRITER_CACHE_KIB: &str = "-8000";
const READER_CACHE_KIB: &str = "-4000";

/// Prepared statements each PostgreSQL connection keeps (sqlx's default is 100). The
/// multi-row statements of the fan-out and of the delivery recorder have a text of their own
/// for every row count, up to 2,100 parameters each, so a larger cache fills with them: 100
/// cost a delivering node about 40 MB of its peak RSS at the same speed (docs/benchmarks.md,
/// `campaign`). A statement not cached costs one more round trip to be prepared, as the
/// cache's churn did already.
const PG_STATEMENT_CACHE: usize = 16;

#[derive(Clone)]
pub(crate) enum Db {
    Sqlite {
        read: SqlitePool,
        write: SqlitePool,
        /// Checkpoints the WAL off the writer (see `checkpoint.rs`).
        _checkpointer: std::sync::Arc<crate::checkpoint::Checkpointer>,
    },
    Postgres(PgPool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub(crate) db: Db,
    /// Custom-field keys known to have a recorded type, so writes skip re-inserting them.
    pub(crate) known_fields: std::sync::Arc<crate::fields::KnownFields>,
    /// Projects by API key, for a second (see `ttl_cache.rs`).
    pub(crate) key_cache: std::sync::Arc<crate::ttl_cache::KeyCache>,
    /// Whether a project has a tracked dynamic segment, for a second (see `ttl_cache.rs`).
    pub(crate) tracked_segments: std::sync::Arc<crate::ttl_cache::TrackedSegments>,
    /// Whether a campaign was cancelled, for a second (see `ttl_cache.rs`).
    pub(crate) cancelled_campaigns: std::sync::Arc<crate::ttl_cache::CancelledCampaigns>,
    /// Verified sender domains, for a second (see `ttl_cache.rs`).
    pub(crate) verified_domains: std::sync::Arc<crate::ttl_cache::VerifiedDomains>,
    /// Request writes before background writes at SQLite's writer (`write_precedence.rs`).
    pub(crate) precedence: std::sync::Arc<crate::write_precedence::Precedence>,
    /// Claims of periodic work on SQLite, which is one node (`periodic.rs`).
    pub(crate) periodic: std::sync::Arc<crate::periodic::LocalClaims>,
    /// Bumped by each commit that queued jobs (`job_signal.rs`).
    pub(crate) job_signal: std::sync::Arc<crate::job_signal::JobSignal>,
}

#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Connections for requests (SQLite: readers, at most 8).
    pub max_connections: u32,
    /// PostgreSQL only: the schema to use (tests give each run its own).
    pub pg_schema: Option<String>,
    /// PostgreSQL only: connections added to the pool for the background workers.
    pub worker_connections: u32,
    /// PostgreSQL only: the longest a statement may run (`statement_timeout`); zero: no limit.
    pub statement_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            pg_schema: None,
            worker_connections: 0,
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// Runs `$body` with `$pool` bound to the reading pool of the engine.
macro_rules! db_read {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.db {
            $crate::engine::Db::Sqlite { read: $pool, .. } => $body,
            $crate::engine::Db::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body` with `$pool` bound to the writing pool of the engine.
macro_rules! db_write {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.db {
            $crate::engine::Db::Sqlite { write: $pool, .. } => $body,
            $crate::engine::Db::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body` with `$conn` bound to the connection of an open transaction.
macro_rules! db_tx {
    ($tx:expr, |$conn:ident| $body:expr) => {
        match &mut $tx.inner {
            $crate::engine::TxInner::Sqlite(t) => {
                let $conn: &mut sqlx::SqliteConnection = &mut *t;
                $body
            }
            $crate::engine::TxInner::Postgres(t) => {
                let $conn: &mut sqlx::PgConnection = &mut *t;
                $body
            }
        }
    };
}

/// Like `db_read!`, with a separate body per engine (for SQL or binds only one engine has).
macro_rules! db_read_each {
    ($store:expr, sqlite |$p1:ident| $b1:expr, postgres |$p2:ident| $b2:expr $(,)?) => {
        match &$store.db {
            $crate::engine::Db::Sqlite { read: $p1, .. } => $b1,
            $crate::engine::Db::Postgres($p2) => $b2,
        }
    };
}

/// Like `db_tx!`, with a separate body per engine.
macro_rules! db_tx_each {
    ($tx:expr, sqlite |$c1:ident| $b1:expr, postgres |$c2:ident| $b2:expr $(,)?) => {
        match &mut $tx.inner {
            $crate::engine::TxInner::Sqlite(t) => {
                let $c1: &mut sqlx::SqliteConnection = &mut *t;
                $b1
            }
            $crate::engine::TxInner::Postgres(t) => {
                let $c2: &mut sqlx::PgConnection = &mut *t;
                $b2
            }
        }
    };
}

/// An open write transaction. Work caused by a write joins the same transaction (outbox).
pub struct Tx {
    pub(crate) inner: TxInner,
    pub(crate) known_fields: std::sync::Arc<crate::fields::KnownFields>,
    pub(crate) tracked_segments: std::sync::Arc<crate::ttl_cache::TrackedSegments>,
    pub(crate) key_cache: std::sync::Arc<crate::ttl_cache::KeyCache>,
    /// Set by a write that changes a project row: the key cache is cleared after the commit.
    pub(crate) projects_changed: bool,
    pub(crate) job_signal: std::sync::Arc<crate::job_signal::JobSignal>,
    /// Set by a write that queues or reschedules a job: announced after the commit.
    pub(crate) jobs_queued: bool,
}

pub(crate) enum TxInner {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    pub fn dialect(&self) -> Dialect {
        match self.inner {
            TxInner::Sqlite(_) => Dialect::Sqlite,
            TxInner::Postgres(_) => Dialect::Postgres,
        }
    }

    pub async fn commit(self) -> crate::StoreResult<()> {
        match self.inner {
            TxInner::Sqlite(t) => t.commit().await?,
            TxInner::Postgres(t) => t.commit().await?,
        }
        if self.projects_changed {
            self.key_cache.clear();
        }
        if self.jobs_queued {
            self.job_signal.bump();
        }
        Ok(())
    }
}

/// How long a PostgreSQL connection may sit in the pool before it is pinged when taken.
const PG_PING_AFTER_IDLE: Duration = Duration::from_secs(1);

impl Store {
    /// Connects to `sqlite://path` (created if missing) or `postgres://...`.
    pub async fn connect(url: &str, opts: &StoreOptions) -> anyhow::Result<Store> {
        let db = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let mut connect =
                PgConnectOptions::from_str(url).context("parsing the PostgreSQL URL")?;
            if let Some(schema) = &opts.pg_schema {
                connect = connect.options([("search_path", schema.as_str())]);
            }
            // Zero is PostgreSQL's own "no limit".
            let timeout_ms = opts.statement_timeout.as_millis().min(i32::MAX as u128);
            connect = connect
                .options([("statement_timeout", format!("{timeout_ms}ms"))])
                .statement_cache_capacity(PG_STATEMENT_CACHE);
            let pool = PgPoolOptions::new()
                .max_connections(opts.max_connections.max(1) + opts.worker_connections)
                .acquire_timeout(Duration::from_secs(30))
                // A connection used within the last second is alive: the ping sqlx sends before
                // every acquire was a round trip more per transaction (a quarter of a track
                // batch's time). One idle for longer (a restart, a proxy's idle timeout) is
                // still tested; a restart within that second fails the transaction once, as
                // one during a statement would (docs/architecture.md "Connections").
                .test_before_acquire(false)
                .before_acquire(|conn, meta| {
                    Box::pin(async move {
                        if meta.idle_for > PG_PING_AFTER_IDLE {
                            sqlx::Connection::ping(conn).await?;
                        }
                        Ok(true)
                    })
                })
                .connect_with(connect)
                .await
                .context("connecting to PostgreSQL")?;
            Db::Postgres(pool)
        } else if url.starts_with("sqlite:") {
            let connect = SqliteConnectOptions::from_str(url)
                .context("parsing the SQLite URL")?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10))
                .pragma("temp_store", "memory")
                .pragma("cache_size", WRITER_CACHE_KIB);
            // One writer: SQLite allows one at a time anyway, and queueing in the pool is
            // cheaper and fairer than retrying on SQLITE_BUSY.
            // No test query before each acquire: a connection to a local file does not go
            // stale, and the ping was a round trip to SQLite's thread on every transaction.
            let write = SqlitePoolOptions::new()
                .max_connections(1)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(60))
                .connect_with(connect.clone())
                .await
                .context("opening the SQLite database")?;
            let checkpointer = crate::checkpoint::Checkpointer::start(&connect, write.clone())
                .await
                .context("opening the SQLite database for checkpoints")?;
            let read = SqlitePoolOptions::new()
                .max_connections(opts.max_connections.clamp(2, 8))
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(
                    connect
                        .read_only(true)
                        .pragma("cache_size", READER_CACHE_KIB),
                )
                .await
                .context("opening the SQLite database for reading")?;
            Db::Sqlite {
                read,
                write,
                _checkpointer: std::sync::Arc::new(checkpointer),
            }
        } else {
            anyhow::bail!("unsupported database URL (expected sqlite:// or postgres://)");
        };
        Ok(Store {
            db,
            known_fields: Default::default(),
            key_cache: Default::default(),
            tracked_segments: Default::default(),
            cancelled_campaigns: Default::default(),
            verified_domains: Default::default(),
            precedence: Default::default(),
            periodic: Default::default(),
            job_signal: Default::default(),
        })
    }

    pub fn dialect(&self) -> Dialect {
        match self.db {
            Db::Sqlite { .. } => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    pub fn engine_name(&self) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    /// Applies the engine's migrations (idempotent).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match &self.db {
            Db::Sqlite { write, .. } => sqlx::migrate!("./migrations/sqlite")
                .run(write)
                .await
                .context("applying SQLite migrations")?,
            Db::Postgres(pool) => {
                // A migration may rewrite a large table: no statement timeout for it.
                let mut conn = pool.acquire().await?;
                sqlx::query("SET statement_timeout = 0")
                    .execute(&mut *conn)
                    .await?;
                let done = sqlx::migrate!("./migrations/postgres")
                    .run(&mut *conn)
                    .await
                    .context("applying PostgreSQL migrations");
                sqlx::query("RESET statement_timeout")
                    .execute(&mut *conn)
                    .await?;
                done?
            }
        }
        Ok(())
    }

    /// True when the database answers.
    pub async fn ping(&self) -> bool {
        db_read!(self, |pool| sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .is_ok())
    }

    /// Starts a write transaction.
    pub async fn begin(&self) -> crate::StoreResult<Tx> {
        let inner = match &self.db {
            // IMMEDIATE: take the write lock now, waiting for another process if need be.
            Db::Sqlite { write, .. } => TxInner::Sqlite(write.begin_with("BEGIN IMMEDIATE").await?),
            Db::Postgres(pool) => TxInner::Postgres(pool.begin().await?),
        };
        Ok(Tx {
            inner,
            known_fields: self.known_fields.clone(),
            tracked_segments: self.tracked_segments.clone(),
            key_cache: self.key_cache.clone(),
            projects_changed: false,
            job_signal: self.job_signal.clone(),
            jobs_queued: false,
        })
    }

    pub async fn close(&self) {
        match &self.db {
            Db::Sqlite { read, write, .. } => {
                read.close().await;
                write.close().await;
            }
            Db::Postgres(pool) => pool.close().await,
        }
    }
}

impl Store {
    /// One row of `table` (`columns`) by project and id: the read behind every
    /// `GET /<resource>/:id`, where another project's id is simply not found.
    pub(crate) async fn project_row<T>(
        &self,
        table: &str,
        columns: &str,
        project_id: uuid::Uuid,
        id: uuid::Uuid,
    ) -> crate::StoreResult<Option<T>>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
            + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
            + Send
            + Unpin,
    {
        let q = format!("SELECT {columns} FROM {table} WHERE project_id = $1 AND id = $2");
        Ok(db_read!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(id)
                .fetch_optional(pool)
                .await?
        }))
    }
}

/// A statement for the engine, its placeholders made anonymous on SQLite when they can be.
///
/// Why: for every bind, sqlx-sqlite asks SQLite the parameter's name, and SQLite finds a named
/// parameter (`$N`) by a linear search, so binding a statement with P named parameters costs
/// P^2: 50% of the CPU of a campaign fan-out went there (100-row inserts of 21 columns).
/// Anonymous `?` parameters have no names and cost nothing to look up. A statement whose
/// placeholders are exactly `$1, $2, ... $n` in text order, each once, means the same with
/// `?`; any other statement is returned as it is. PostgreSQL keeps `$N`.
pub(crate) fn binds_for(dialect: Dialect, sql: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if dialect != Dialect::Sqlite {
        return Cow::Borrowed(sql);
    }
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let (mut next, mut i, mut copied) = (1usize, 0usize, 0usize);
    while i < bytes.len() {
        if bytes[i] == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let start = i;
            i += 1;
            let mut n = 0usize;
            while let Some(d) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
                n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
                i += 1;
            }
            if n != next {
                return Cow::Borrowed(sql);
            }
            next += 1;
            out.push_str(&sql[copied..start]);
            out.push('?');
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
}

/// Placeholders `($a, $b, ...), (...)` for `rows` rows of `width` values, numbered from
/// `first` in text order (so [`binds_for`] makes them anonymous on SQLite when `first` is 1).
/// Written into one string: a 500-row insert has thousands of placeholders.
pub(crate) fn value_rows(rows: usize, width: usize, first: usize) -> String {
    let mut out = String::with_capacity(rows * (width * 8 + 4));
    for r in 0..rows {
        out.push_str(if r == 0 { "(" } else { ", (" });
        push_placeholders(&mut out, width, first + r * width);
        out.push(')');
    }
    out
}

/// One column of `rows` as an array to bind on PostgreSQL (`UNNEST($1::uuid[], ...)`, `= ANY`):
/// a batch statement's text then stays the same whatever its number of rows
/// (docs/architecture.md "Batch inserts on PostgreSQL go through `UNNEST`").
pub(crate) fn column<'a, T, R>(rows: &'a [T], value: impl Fn(&'a T) -> R) -> Vec<R> {
    rows.iter().map(value).collect()
}

/// Placeholders `$a, $b, ...`: `n` of them numbered from `first`, for `IN (...)` lists.
pub(crate) fn placeholder_list(n: usize, first: usize) -> String {
    let mut out = String::with_capacity(n * 8);
    push_placeholders(&mut out, n, first);
    out
}

fn push_placeholders(out: &mut String, n: usize, first: usize) {
    use std::fmt::Write as _;
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = std::write!(out, "${}", first + i);
    }
}

/// `INDEXED BY index` on SQLite, nothing on PostgreSQL. Herald gathers no statistics on
/// SQLite's `events`, and without them SQLite sometimes planned a read through an index that
/// holds every event where a partial one holds only those asked for (docs/analytics.md "Top
/// campaigns"); PostgreSQL plans from the statistics its autovacuum keeps.
pub(crate) fn sqlite_index(dialect: Dialect, index: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("INDEXED BY {index}"),
        Dialect::Postgres => String::new(),
    }
}

/// Picks the statement text for the engine.
pub(crate) fn sql(dialect: Dialect, sqlite: &'static str, postgres: &'static str) -> &'static str {
    match dialect {
        Dialect::Sqlite => sqlite,
        Dialect::Postgres => postgres,
    }
}
