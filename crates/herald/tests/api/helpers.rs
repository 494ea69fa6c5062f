//! The black-box harness: a real server on port 0 with a fresh database per test (a temp
//! SQLite file, or a fresh schema on the PostgreSQL named by `HERALD_TEST_POSTGRES_URL`), and
//! one helper per endpoint family.

use std::sync::Arc;

use herald::{Application, Config};
use herald_store::Store;
use reqwest::{Client, Method, Response};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// Runs each named `async fn name(engine: Engine)` once per engine: `name::sqlite` and
/// `name::postgres`. The PostgreSQL variant is ignored (reported as skipped, not passed) when
/// `HERALD_TEST_POSTGRES_URL` was unset at build time, unless `CI` is set: then it runs and a
/// missing or unreachable PostgreSQL fails it (cfgs from crates/herald/build.rs).
#[macro_export]
macro_rules! both_engines {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn sqlite() {
                super::$name($crate::helpers::Engine::Sqlite).await
            }
            #[tokio::test]
            #[cfg_attr(
                not(any(herald_pg_tests, herald_ci)),
                ignore = "HERALD_TEST_POSTGRES_URL is not set"
            )]
            async fn postgres() {
                super::$name($crate::helpers::Engine::Postgres).await
            }
        }
    )*};
}

/// [`both_engines!`] for tests that also need `python3` (cfg `herald_python` from build.rs):
/// without it they are skipped, except in CI where they run and fail.
#[macro_export]
macro_rules! both_engines_with_python {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            #[cfg_attr(not(any(herald_python, herald_ci)), ignore = "python3 with venv is not installed")]
            async fn sqlite() {
                super::$name($crate::helpers::Engine::Sqlite).await
            }
            #[tokio::test]
            #[cfg_attr(
                not(any(all(herald_pg_tests, herald_python), herald_ci)),
                ignore = "needs HERALD_TEST_POSTGRES_URL and python3 with venv"
            )]
            async fn postgres() {
                super::$name($crate::helpers::Engine::Postgres).await
            }
        }
    )*};
}

/// [`both_engines!`] for tests that drive a real Chromium (cfg `herald_chromium` from
/// build.rs: a Chromium on the PATH when the tests were built): without one they are skipped,
/// except in CI where they run and fail. `scripts/test` installs Chromium when it can.
#[macro_export]
macro_rules! both_engines_with_browser {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            #[cfg_attr(not(any(herald_chromium, herald_ci)), ignore = "Chromium is not installed")]
            async fn sqlite() {
                super::$name($crate::helpers::Engine::Sqlite).await
            }
            #[tokio::test]
            #[cfg_attr(
                not(any(all(herald_pg_tests, herald_chromium), herald_ci)),
                ignore = "needs HERALD_TEST_POSTGRES_URL and Chromium"
            )]
            async fn postgres() {
                super::$name($crate::helpers::Engine::Postgres).await
            }
        }
    )*};
}

pub fn postgres_url() -> Option<String> {
    std::env::var("HERALD_TEST_POSTGRES_URL")
        .ok()
        .filter(|s| !s.is_empty())
}

pub struct TestApp {
    pub base: String,
    pub client: Client,
    pub store: Store,
    pub config: Config,
    /// The server's clock: tests move time with `app.clock.advance(..)` instead of sleeping.
    pub clock: Arc<herald_core::clock::TestClock>,
    /// The server's engine (to run a purge or a batch directly).
    pub engine: herald_engine::Engine,
    /// The SMTP submission listeners (STARTTLS, implicit TLS), when the config sets them.
    pub submission: Option<std::net::SocketAddr>,
    pub submission_tls: Option<std::net::SocketAddr>,
    pub mx: Option<std::net::SocketAddr>,
    _dir: Arc<tempfile::TempDir>,
}

/// A project with both keys, and the signed-in owner's client.
pub struct TestProject {
    pub id: String,
    pub public_key: String,
    pub secret_key: String,
    pub owner: Client,
}

impl Engine {
    pub async fn app(self) -> TestApp {
        self.app_with(|_| {}).await
    }

    /// An app listening on a port chosen before it starts, with its public URL on that port:
    /// a browser sends `Origin` with its form posts, and the cross-site rule compares it with
    /// the public URL.
    pub async fn browser_app(self) -> TestApp {
        self.browser_app_with(|_| {}).await
    }

    /// [`Engine::browser_app`] with a change to its configuration.
    pub async fn browser_app_with(self, tweak: impl FnOnce(&mut Config)) -> TestApp {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        self.app_with(|c| {
            c.listen = format!("127.0.0.1:{port}");
            c.public_url = format!("http://127.0.0.1:{port}");
            tweak(c);
        })
        .await
    }

    pub async fn app_with(self, tweak: impl FnOnce(&mut Config)) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            data_dir: dir.path().to_path_buf(),
            secret: Some("test-secret-test-secret-test-secret-0123".into()),
            database_max_connections: 4,
            // Tests sign up many users from one address; account_limits.rs tests the limit.
            auth_rate_limit_per_minute: 10_000,
            ..Config::default()
        };
        if self == Engine::Postgres {
            let url = postgres_url().expect(
                "HERALD_TEST_POSTGRES_URL must name a PostgreSQL database (required in CI)",
            );
            let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("connecting to HERALD_TEST_POSTGRES_URL: {e}"));
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
                .execute(&mut conn)
                .await
                .expect("create schema");
            config.database_url = url;
            config.database_schema = Some(schema);
        }
        tweak(&mut config);
        let config = config.resolved();
        let clock = herald_core::clock::TestClock::new();
        let app = Application::build_with_clock(config.clone(), clock.clone())
            .await
            .expect("build app");
        let port = app.port();
        let store = app.store().clone();
        let engine_handle = app.engine().clone();
        let (submission, submission_tls) = (app.submission_addr(), app.submission_tls_addr());
        let mx = app.mx_addr();
        tokio::spawn(app.run_until_stopped(std::future::pending()));
        TestApp {
            base: format!("http://127.0.0.1:{port}"),
            client: Client::new(),
            store,
            config,
            clock,
            engine: engine_handle,
            submission,
            submission_tls,
            mx,
            _dir: Arc::new(dir),
        }
    }
}

pub fn cookie_client() -> Client {
    Client::builder()
        .cookie_store(true)
        .build()
        .expect("client")
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with an optional bearer key and JSON body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Response {
        self.call_with(&self.client, method, path, key, body).await
    }

    pub async fn call_with(
        &self,
        client: &Client,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Response {
        let mut req = client.request(method, self.url(path));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        req.send().await.expect("request")
    }

    pub async fn get(&self, path: &str, key: &str) -> Response {
        self.call(Method::GET, path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Response {
        self.call(Method::POST, path, Some(key), Some(body)).await
    }

    pub async fn patch(&self, path: &str, key: &str, body: &Value) -> Response {
        self.call(Method::PATCH, path, Some(key), Some(body)).await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Response {
        self.call(Method::DELETE, path, Some(key), None).await
    }

    /// Signs up `email` and returns a client holding the session cookie.
    pub async fn signup(&self, email: &str) -> Client {
        let client = cookie_client();
        let res = self
            .call_with(
                &client,
                Method::POST,
                "/auth/signup",
                None,
                Some(&json!({"email": email, "password": "correct horse battery"})),
            )
            .await;
        assert_eq!(
            res.status(),
            201,
            "signup: {}",
            res.text().await.unwrap_or_default()
        );
        client
    }

    /// A new user with a new project.
    pub async fn project(&self) -> TestProject {
        let email = format!("owner-{}@example.com", uuid::Uuid::new_v4().simple());
        let owner = self.signup(&email).await;
        let res = self
            .call_with(
                &owner,
                Method::POST,
                "/users/@me/projects",
                None,
                Some(&json!({"name": "Test project"})),
            )
            .await;
        assert_eq!(res.status(), 201);
        let p: Value = res.json().await.expect("json");
        TestProject {
            id: p["id"].as_str().expect("id").to_owned(),
            public_key: p["publicKey"].as_str().expect("pk").to_owned(),
            secret_key: p["secretKey"].as_str().expect("sk").to_owned(),
            owner,
        }
    }

    /// `POST /contacts`, asserting success; returns the contact.
    pub async fn create_contact(&self, key: &str, body: Value) -> Value {
        let res = self.post("/contacts", key, &body).await;
        assert!(
            res.status().is_success(),
            "create contact: {}",
            res.status()
        );
        res.json().await.expect("json")
    }

    /// The contact with `email` (`POST /contacts/lookup`, then `GET /contacts/:id`).
    pub async fn contact_by_email(&self, key: &str, email: &str) -> Value {
        let found = expect_json(
            self.post("/contacts/lookup", key, &json!({"emails": [email]}))
                .await,
            200,
        )
        .await;
        let id = found["found"][0]["id"].as_str().expect("found").to_owned();
        expect_json(self.get(&format!("/contacts/{id}"), key).await, 200).await
    }
}

/// Reads a JSON body, asserting the status first (the body is printed when it differs).
pub async fn expect_json(res: Response, status: u16) -> Value {
    let got = res.status().as_u16();
    let text = res.text().await.expect("body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Asserts an error envelope with `code`, and returns it.
pub async fn expect_error(res: Response, status: u16, code: &str) -> Value {
    let request_id = res
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = expect_json(res, status).await;
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["statusCode"], status, "{body}");
    assert_eq!(
        body["error"]["requestId"].as_str(),
        request_id.as_deref(),
        "{body}"
    );
    assert!(body["timestamp"].as_str().is_some(), "{body}");
    body
}

/// The `field` values of `error.errors`.
pub fn error_fields(body: &Value) -> Vec<String> {
    body["error"]["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["field"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A connection to a PostgreSQL app's own schema, bypassing the app (`None` on SQLite).
pub async fn pg_schema_connection(app: &TestApp) -> Option<sqlx::PgConnection> {
    use sqlx::Connection as _;
    let schema = app.config.database_schema.as_deref()?;
    let mut conn = sqlx::PgConnection::connect(&app.config.database_url)
        .await
        .expect("connect");
    sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path TO {schema}")))
        .execute(&mut conn)
        .await
        .expect("search path");
    Some(conn)
}

/// Runs statements on a PostgreSQL app's own schema (to install a fault, such as a trigger
/// that stalls a transaction).
pub async fn raw_sql(app: &TestApp, statements: &[&str]) {
    let mut conn = pg_schema_connection(app)
        .await
        .expect("a PostgreSQL app has a schema of its own");
    for q in statements {
        sqlx::query(sqlx::AssertSqlSafe(*q))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}

/// Runs statements on the app's database, bypassing the app (to install a fault).
pub async fn run_sql(app: &TestApp, statements: &[&str]) {
    if app.config.database_schema.is_some() {
        raw_sql(app, statements).await;
        return;
    }
    use sqlx::Connection as _;
    let mut conn = sqlx::SqliteConnection::connect(&app.config.database_url)
        .await
        .expect("sqlite");
    for q in statements {
        sqlx::query(sqlx::AssertSqlSafe(*q))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}
