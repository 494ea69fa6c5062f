//! A Herald server started in-process for a benchmark, and the HTTP helpers every benchmark
//! needs.

use anyhow::{Context, ensure};
use herald::{Application, Config};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A loopback address (`127.0.0.1:port`) with a port free at the time of the call, for a
/// listener the benchmark connects to by address.
pub fn free_loopback_addr() -> anyhow::Result<String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(format!("127.0.0.1:{port}"))
}

/// A server running in this process, and what to clean up when it stops.
pub struct Server {
    base: String,
    pub engine: String,
    pub config: Config,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    pg_schema: Option<(String, String)>,
    _dir: tempfile::TempDir,
}

impl Server {
    /// A fresh server: a temporary SQLite directory, or a fresh schema of `database_url`.
    pub async fn start_with(
        database_url: Option<&str>,
        tweak: impl FnOnce(&mut Config),
    ) -> anyhow::Result<Server> {
        let dir = tempfile::tempdir().context("creating a temporary data directory")?;
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            data_dir: dir.path().to_path_buf(),
            rate_limit_per_minute: u32::MAX,
            // `HERALD_BATCH_SCHEDULING` as `herald serve` reads it (the configuration's own
            // parsing), and no other variable: the benchmark sets the rest itself.
            batch_scheduling: Config::layered(None, |name| {
                (name == "HERALD_BATCH_SCHEDULING")
                    .then(|| std::env::var(name).ok())
                    .flatten()
            })?
            .batch_scheduling,
            ..Config::default()
        };
        let mut pg_schema = None;
        if let Some(url) = database_url {
            if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                let schema = format!("bench_{}", uuid::Uuid::new_v4().simple());
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                    .await
                    .context("connecting to PostgreSQL")?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
                    .execute(&mut conn)
                    .await
                    .context("creating the benchmark schema")?;
                config.database_schema = Some(schema.clone());
                pg_schema = Some((url.to_owned(), schema));
            }
            config.database_url = url.to_owned();
        }
        tweak(&mut config);
        let config = config.resolved();
        let engine = match &pg_schema {
            Some((_, schema)) => format!(
                "PostgreSQL ({}, schema {schema})",
                config.database_description()
            ),
            None => format!("SQLite ({})", config.database_description()),
        };
        Self::spawn(config, engine, pg_schema, dir).await
    }

    /// Another node on the same database and data directory as `config` (it owns nothing to
    /// clean up).
    pub async fn start_on(
        mut config: Config,
        tweak: impl FnOnce(&mut Config),
    ) -> anyhow::Result<Server> {
        config.listen = "127.0.0.1:0".into();
        tweak(&mut config);
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        Self::spawn(config, "second node".into(), None, dir).await
    }

    async fn spawn(
        config: Config,
        engine: String,
        pg_schema: Option<(String, String)>,
        dir: tempfile::TempDir,
    ) -> anyhow::Result<Server> {
        // As `herald serve` does (for the whole process: the server runs in it).
        herald::scheduling::Governor::start_if_enabled(&config);
        let app = Application::build(config.clone())
            .await
            .context("starting Herald")?;
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Ok(Server {
            base,
            engine,
            config,
            stop,
            task,
            pg_schema,
            _dir: dir,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.stop().await?.cleanup().await
    }

    /// Stops the server and keeps its data (the database another node still uses) until
    /// [`Stopped::cleanup`].
    pub async fn stop(self) -> anyhow::Result<Stopped> {
        let _ = self.stop.send(());
        self.task.await.context("the server task failed")??;
        Ok(Stopped {
            pg_schema: self.pg_schema,
            _dir: self._dir,
        })
    }
}

/// A delivering node's `send_concurrency` and `smtp_max_connections`, where the benchmark's
/// options give them (`--send-concurrency`, `--smtp-connections`).
pub fn tune_delivery(c: &mut Config, send_concurrency: Option<usize>, smtp: Option<usize>) {
    if let Some(n) = send_concurrency {
        c.send_concurrency = n;
    }
    if let Some(n) = smtp {
        c.smtp_max_connections = n;
    }
}

/// The data of a stopped server.
pub struct Stopped {
    pg_schema: Option<(String, String)>,
    _dir: tempfile::TempDir,
}

impl Stopped {
    /// Drops the PostgreSQL schema (the SQLite directory goes with `self`).
    pub async fn cleanup(self) -> anyhow::Result<()> {
        if let Some((url, schema)) = self.pg_schema {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                .execute(&mut conn)
                .await
                .context("dropping the benchmark schema")?;
        }
        Ok(())
    }
}

/// Signs up a user and creates a project; returns its secret key.
pub async fn project_key(server: &Server) -> anyhow::Result<String> {
    Ok(project_keys(server).await?.1)
}

/// Signs up a user and creates a project; returns its (public, secret) keys.
pub async fn project_keys(server: &Server) -> anyhow::Result<(String, String)> {
    let session = Client::builder().cookie_store(true).build()?;
    let project = signed_up_project(server, &session).await?;
    let key = |name: &str| {
        project[name]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("the project has no {name}"))
    };
    Ok((key("publicKey")?, key("secretKey")?))
}

/// Signs a new user up through `session` (a client keeping cookies, which stays signed in)
/// and creates a project; returns the project as the API answered it.
pub async fn signed_up_project(server: &Server, session: &Client) -> anyhow::Result<Value> {
    let email = format!("bench-{}@example.com", uuid::Uuid::new_v4().simple());
    let res = session
        .post(server.url("/auth/signup"))
        .json(&json!({"email": email, "password": "benchmark password"}))
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, "POST /auth/signup").await?;
    let res = session
        .post(server.url("/users/@me/projects"))
        .json(&json!({"name": "Benchmark"}))
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, "POST /users/@me/projects").await
}

/// The JSON body of a response with the expected status, or an error showing the body.
pub async fn expect_status(
    res: reqwest::Response,
    status: StatusCode,
    what: &str,
) -> anyhow::Result<Value> {
    let got = res.status();
    let text = res
        .text()
        .await
        .with_context(|| format!("{what}: reading the body"))?;
    ensure!(
        got == status,
        "{what}: expected {status}, got {got}: {text}"
    );
    serde_json::from_str(&text).with_context(|| format!("{what}: the body is not JSON: {text}"))
}

/// A delivery counter that must keep moving: [`Stall::check`] fails once it has stood still
/// for [`Stall::LIMIT`] (a benchmark that stops delivering says so instead of waiting forever).
pub struct Stall {
    last: usize,
    since: std::time::Instant,
}

impl Stall {
    pub const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

    pub fn new() -> Stall {
        Stall {
            last: 0,
            since: std::time::Instant::now(),
        }
    }

    /// Records the count `now` of `total`; an error when it has not moved for the limit.
    pub fn check(&mut self, now: usize, total: impl std::fmt::Display) -> anyhow::Result<()> {
        if now != self.last {
            (self.last, self.since) = (now, std::time::Instant::now());
        }
        ensure!(
            self.since.elapsed() < Self::LIMIT,
            "delivery stalled at {now} of {total}"
        );
        Ok(())
    }
}
