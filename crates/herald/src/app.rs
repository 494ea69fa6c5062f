//! Startup as a value: `Application::build` opens the database, applies migrations and binds
//! the listener (port 0 in tests); `run_until_stopped` serves until the shutdown future fires,
//! then drains in-flight requests. HTTP is served by [`crate::server`] (timeouts, connection
//! cap, one envelope for every response).

use std::future::Future;

use anyhow::Context;
use herald_api::{ApiSettings, AppState};
use herald_engine::Engine;
use herald_store::{Store, StoreOptions};
use tokio::net::TcpListener;

use crate::config::Config;

pub struct Application {
    listener: TcpListener,
    router: axum::Router,
    store: Store,
    engine: Engine,
    workers: bool,
    shutdown_grace: std::time::Duration,
    port: u16,
    limits: crate::server::ServerLimits,
    /// The SMTP listeners (submission, inbound MX), bound when configured.
    smtp: herald_smtp::SmtpServers,
    /// PostgreSQL: the node's clock corrected by the database's, measured again while serving.
    db_clock: Option<std::sync::Arc<herald_core::clock::CorrectedClock>>,
    /// The dashboard's live activity streams, ended on shutdown.
    live: herald_web::LiveFeeds,
}

/// Opens the configured database and applies its migrations.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let opts = StoreOptions {
        max_connections: config.database_max_connections,
        pg_schema: config.database_schema.clone(),
        worker_connections: config.worker_connections(),
        statement_timeout: std::time::Duration::from_secs_f64(
            config.database_statement_timeout_secs,
        ),
    };
    let store = Store::connect(&config.database_url, &opts).await?;
    store.migrate().await?;
    store
        .ensure_field_indexes(&config.indexed_fields)
        .await
        .context("HERALD_INDEXED_FIELDS")?;
    Ok(store)
}

/// The database, the engine and the API's state, built from the configuration as `serve`
/// builds them (shared with `herald demo`, which starts no listener and no worker).
pub struct Services {
    pub store: Store,
    pub engine: Engine,
    pub state: AppState,
    /// The clock corrected to the database's on PostgreSQL, which `serve` keeps measuring.
    pub db_clock: Option<std::sync::Arc<herald_core::clock::CorrectedClock>>,
}

impl Services {
    pub async fn open(
        config: &Config,
        clock: herald_core::clock::SharedClock,
    ) -> anyhow::Result<Services> {
        let store = open_store(config).await?;
        // Every time the node uses (leases, timers, schedules) comes from the database's clock
        // on PostgreSQL, measured before the node serves or works (engine/src/db_clock.rs).
        let (clock, db_clock) = herald_engine::db_clock::for_store(&store, clock).await?;
        let secret = config.load_or_create_secret()?;
        crate::node_secret::check(&store, &secret).await?;
        let settings = ApiSettings {
            disable_signups: config.disable_signups,
            rate_limit_per_minute: config.rate_limit_per_minute,
            public_url: config.public_url.clone(),
            max_body_bytes: config.max_body_bytes,
            metrics_token: config.metrics_token(),
            password_hash_threads: config.password_hash_threads(),
            password_hash_queue: config.password_hash_queue,
            body_budget_bytes: config.body_budget_bytes,
            system_from: config.system_from.clone(),
            require_email_verification: config.require_email_verification,
            auth_rate_limit_per_minute: config.auth_rate_limit_per_minute,
            trusted_proxies: config
                .trusted_proxies
                .iter()
                .filter_map(|p| p.trim().parse().ok())
                .collect(),
            security: herald_api::state::SecurityThresholds {
                bounce_warning: config.bounce_rate_warning,
                bounce_critical: config.bounce_rate_critical,
                complaint_warning: config.complaint_rate_warning,
                complaint_critical: config.complaint_rate_critical,
            },
            oauth: config.oauth_settings()?,
        };
        herald_engine::metrics::install();
        let mut engine_settings = config.engine_settings();
        engine_settings.clock = clock;
        let retired = config.load_retired_secrets()?;
        let engine =
            Engine::with_retired_secrets(store.clone(), engine_settings, &secret, &retired)?;
        let state = AppState::new(store.clone(), engine.clone(), settings, &secret)
            .context("starting the password hashing threads and the OAuth HTTP client")?;
        Ok(Services {
            store,
            engine,
            state,
            db_clock,
        })
    }
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        Self::build_with_clock(config, herald_core::clock::system()).await
    }

    /// Like [`Application::build`], with time from `clock` (tests pass a test clock).
    pub async fn build_with_clock(
        config: Config,
        clock: herald_core::clock::SharedClock,
    ) -> anyhow::Result<Application> {
        // A half-configured OAuth provider stops startup before anything is opened.
        config.oauth_settings()?;
        // An incomplete payment setup is a startup error, not a 502 at the first checkout.
        config.stripe()?;
        let Services {
            store,
            engine,
            state,
            db_clock,
        } = Services::open(&config, clock).await?;
        // A worker node answers /health and /metrics only (config/role.rs). Elsewhere `POST
        // /mcp` sits beside the API and the dashboard; its tools call the API's router.
        // The dashboard's live activity streams end when the server stops (else they would
        // hold its graceful stop open).
        let live = herald_web::LiveFeeds::new();
        let router = if config.role.serves_api() {
            let api = herald_api::router(state.clone());
            let mcp = herald_mcp::http::router(api, state.clone(), config.mcp_settings())
                .context("building the MCP tools")?;
            mcp.merge(herald_api::router_with(
                state,
                herald_web::router(live.clone()),
            ))
        } else {
            herald_api::worker_router(state)
        };
        let listener = TcpListener::bind(&config.listen)
            .await
            .with_context(|| format!("binding {}", config.listen))?;
        let port = listener.local_addr()?.port();
        tracing::info!(
            "Herald ({:?} node) listening on http://{} with {} database {}",
            config.role,
            listener.local_addr()?,
            store.engine_name(),
            config.database_description()
        );
        let smtp = herald_smtp::SmtpServers::bind(&config.smtp_settings(), &engine).await?;
        Ok(Application {
            live,
            db_clock,
            smtp,
            listener,
            router,
            store,
            engine,
            workers: config.role.runs_workers(config.workers),
            shutdown_grace: std::time::Duration::from_secs_f64(
                config.shutdown_grace_secs.clamp(0.0, 3600.0),
            ),
            port,
            limits: config.server_limits(),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The SMTP submission listener's address (STARTTLS), when configured.
    pub fn submission_addr(&self) -> Option<std::net::SocketAddr> {
        self.smtp.submission_addr()
    }

    /// The inbound MX listener's address, when configured.
    pub fn mx_addr(&self) -> Option<std::net::SocketAddr> {
        self.smtp.mx_addr()
    }

    /// The implicit-TLS submission listener's address, when configured.
    pub fn submission_tls_addr(&self) -> Option<std::net::SocketAddr> {
        self.smtp.submission_tls_addr()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Serves HTTP and runs the workers until `shutdown` resolves; then stops taking requests,
    /// lets the workers finish the job in hand, and closes the database.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut smtp = self.smtp.spawn(stop_rx.clone());
        let mut workers = if self.workers {
            remove_stale_outbox_temps(&self.engine);
            self.engine.spawn_workers(stop_rx.clone())
        } else {
            tokio::task::JoinSet::new()
        };
        // Every node that queues work wakes the others (PostgreSQL; engine/src/cluster_wake.rs).
        workers.spawn(herald_engine::cluster_wake::run_notifier(
            self.engine.clone(),
            stop_rx.clone(),
        ));
        if let Some(clock) = self.db_clock.clone() {
            workers.spawn(herald_engine::db_clock::run_refresh(
                self.store.clone(),
                clock,
                stop_rx,
            ));
        }
        let live = self.live.clone();
        crate::server::serve(self.listener, self.router, self.limits, async move {
            shutdown.await;
            live.close();
            let _ = stop_tx.send(true);
        })
        .await;
        // The workers finish what they hold or give it back (engine/src/send/worker.rs),
        // within the grace period; past it, leases left behind run out on their own.
        let drained = tokio::time::timeout(self.shutdown_grace, async {
            while workers.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                grace_secs = self.shutdown_grace.as_secs_f64(),
                "the workers did not stop within the grace period; stopping them"
            );
            workers.abort_all();
            while workers.join_next().await.is_some() {}
        }
        while smtp.join_next().await.is_some() {}
        self.store.close().await;
        Ok(())
    }
}

/// Removes the outbox's temporary files left by a process killed mid-write. Only a process
/// that runs the workers writes the outbox, and it does so only once they start, so before
/// that no temporary file there can be in use (an API-only node beside it keeps its hands off).
fn remove_stale_outbox_temps(engine: &Engine) {
    if let herald_mail::transport::Transport::Outbox(outbox) = &engine.transport {
        match outbox.remove_stale_temps() {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "removed stale temporary files from the outbox"),
            Err(e) => tracing::warn!(error = %e, "cleaning the outbox of temporary files failed"),
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
