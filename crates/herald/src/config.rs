//! Configuration: defaults, then a TOML file (`--config` or `HERALD_CONFIG`), then environment
//! variables (`HERALD_<SETTING>`), the environment winning; layered with figment. Secrets never appear in `Debug` or in
//! `herald config`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use herald_core::redact;
use serde::{Deserialize, Serialize};

pub use role::Role;

mod env_overlay;
mod oauth;
mod role;
mod smtp;

#[derive(Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the HTTP server listens on.
    pub listen: String,
    /// Where the SQLite database, the generated secret and the local outbox live.
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`; empty means SQLite in the data directory.
    pub database_url: String,
    /// PostgreSQL schema to use (default: the server's search_path).
    pub database_schema: Option<String>,
    /// Base of links in mail and pages; default from the listen address.
    pub public_url: String,
    /// SMTP relay (`smtp://user:pass@host:587`, `smtps://...`); unset means the local outbox.
    pub smtp_url: Option<String>,
    /// DNS resolver `ip:port` for domain verification; unset means the system's.
    pub dns_resolver: Option<SocketAddr>,
    /// Signing key for sessions and links; generated once into the data directory when unset.
    pub secret: Option<String>,
    /// Secrets replaced by `herald rotate-secret` whose links (tracking, list pages) in mail
    /// already sent still open; in the environment a comma-separated list. Added to those kept
    /// in `data_dir/secret.retired` (docs/security.md "Rotating the secret").
    #[serde(deserialize_with = "list_or_commas")]
    pub retired_secrets: Vec<String>,
    pub rate_limit_per_minute: u32,
    pub disable_signups: bool,
    /// Largest request body for ordinary endpoints, in bytes.
    pub max_body_bytes: usize,
    /// Largest image `POST /uploads/image` accepts, in bytes.
    pub upload_max_bytes: usize,
    /// Rows of a CSV import committed per transaction (each commit moves the job's progress).
    pub import_batch_rows: usize,
    /// Contacts per campaign fan-out transaction (each commit is a checkpoint).
    pub campaign_page_size: u32,
    /// Let workflow WEBHOOK steps call private, loopback and link-local addresses (off: such
    /// calls are refused, so a workflow cannot reach the operator's internal network).
    pub webhook_allow_private: bool,
    /// Seconds a workflow WEBHOOK call may take.
    pub webhook_timeout_secs: f64,
    pub database_max_connections: u32,
    /// Run the background workers (send queue, domain checks) in this process. An `api` node
    /// never does, a `worker` node always does ([`Config::apply_role`]).
    pub workers: bool,
    /// `all`, `api` or `worker` (`herald serve --role`).
    pub role: Role,
    /// This node's name, shown in `/metrics` as the node that ran each periodic task
    /// (default: the host name and the process id).
    pub node_name: String,
    /// The SPF mechanism sender domains must publish (default `a:<public host>`).
    pub spf_mechanism: String,
    /// Host receiving bounces; when set, domains also get an MX record for it.
    pub return_path_host: Option<String>,
    /// DKIM selector prefix; each domain gets the prefix plus 8 random hex characters.
    pub dkim_selector_prefix: String,
    /// Seconds between background re-checks of every domain's DNS records.
    pub domain_check_interval_secs: f64,
    /// Seconds one DNS query may take.
    pub dns_timeout_secs: f64,
    /// Most concurrent connections to the SMTP relay.
    pub smtp_max_connections: usize,
    /// Messages per second per project (0 = unlimited), so a relay quota is never overrun.
    pub send_rate_per_second: u32,
    /// Concurrent deliveries of this node.
    pub send_concurrency: usize,
    /// Bytes this node's deliveries in flight may hold (estimated from each message's HTML
    /// and attachment sizes); more wait. A message larger than this goes alone.
    pub send_memory_budget_bytes: usize,
    /// Linux: while the node delivers, run every thread of `herald serve` under
    /// `SCHED_BATCH`, so a thread waking up does not preempt the signing threads
    /// (scheduling.rs).
    pub batch_scheduling: bool,
    /// Delivery attempts before a message fails for good.
    pub send_max_attempts: u32,
    /// First retry delay in seconds (doubled for each further attempt).
    pub send_retry_base_secs: f64,
    /// Seconds a claimed send job is reserved for its worker (extended while sending); after
    /// a crash, unfinished sends are taken up again once it expires.
    pub send_lease_secs: f64,
    /// Seconds an idle worker waits before looking for work again when no wake-up came (a
    /// fallback: queued work wakes the workers at once, on PostgreSQL across nodes).
    pub idle_poll_secs: f64,
    /// Seconds a stopping node (SIGTERM) gives its deliveries in hand to finish; claimed jobs
    /// not started are given back at once. Past it the process ends and what was still in
    /// flight is taken up by another node when its lease runs out.
    pub shutdown_grace_secs: f64,
    /// Seconds a client has to send a whole request head (request line and headers); also
    /// bounds the wait for the next request on a kept-alive connection.
    pub header_timeout_secs: f64,
    /// Seconds a request body may go without a byte while a handler reads it (then 408).
    pub body_timeout_secs: f64,
    /// Seconds a kept-alive connection may stay open with no request in progress.
    pub idle_timeout_secs: f64,
    /// Most HTTP connections served at once; more wait in the listen backlog. Keep it below
    /// the process's open-file limit.
    pub max_connections: usize,
    /// Bearer token that `GET /metrics` requires; unset (or `off`) disables the endpoint.
    pub metrics_token: Option<String>,
    /// MCP (`POST /mcp`, `herald mcp`): offer only the tools that change nothing.
    pub mcp_read_only: bool,
    /// MCP: run the tools that send mail or delete without the person's confirmation when the
    /// client cannot ask for it (docs/mcp.md "Safety").
    pub mcp_allow_unconfirmed: bool,
    /// `text` (default) or `json` (one JSON object per line) log output.
    pub log_format: LogFormat,
    /// Days a message's body and attachments are kept (0 = forever); metadata and history stay.
    pub retention_days: u32,
    /// Password hashes computed at once, each on its own thread (0 = the number of cores).
    pub password_hash_threads: usize,
    /// Sign-ins and sign-ups that may wait for a hashing thread; more answer 429.
    pub password_hash_queue: usize,
    /// Bytes of large request bodies (declared over 64 KiB) in flight at once; more wait.
    pub body_budget_bytes: usize,
    /// PostgreSQL: seconds a statement may run before it is cancelled (0 = no limit).
    pub database_statement_timeout_secs: f64,
    /// Key of the generic signed feedback format of `POST /webhooks/notifications`
    /// (`Herald-Signature`); unset refuses that format.
    pub feedback_secret: Option<String>,
    /// Amazon SNS topic ARNs whose notifications are accepted (empty: SNS refused); in the
    /// environment a comma-separated list.
    #[serde(deserialize_with = "list_or_commas")]
    pub sns_topic_arns: Vec<String>,
    /// Custom-field keys segments and campaigns filter on most (SQLite): each gets an index at
    /// startup (docs/segments.md "Hot fields"); in the environment a comma-separated list.
    #[serde(deserialize_with = "list_or_commas")]
    pub indexed_fields: Vec<String>,
    /// TEST ONLY: a PEM certificate the SNS verifier trusts from a loopback URL.
    pub sns_trust_cert_pem: Option<PathBuf>,
    /// Sender of Herald's own account mail (verification, password reset, invitations);
    /// default `herald@<host of public_url>`.
    pub system_from: String,
    /// Sign-in refused (403 EMAIL_VERIFICATION_REQUIRED) until the address is verified.
    pub require_email_verification: bool,
    /// GitHub sign-in (docs/accounts.md "OAuth"): the OAuth app's client id and secret; both
    /// or neither.
    pub oauth_github_client_id: Option<String>,
    pub oauth_github_client_secret: Option<String>,
    /// GitHub's endpoints (defaults: the real ones; change only to test).
    pub oauth_github_auth_url: String,
    pub oauth_github_token_url: String,
    pub oauth_github_api_url: String,
    /// Google sign-in: the OAuth client's id and secret; both or neither.
    pub oauth_google_client_id: Option<String>,
    pub oauth_google_client_secret: Option<String>,
    /// Google's endpoints (defaults: the real ones; change only to test).
    pub oauth_google_auth_url: String,
    pub oauth_google_token_url: String,
    pub oauth_google_userinfo_url: String,
    /// Requests per minute per client address and route on the unauthenticated account routes.
    pub auth_rate_limit_per_minute: u32,
    /// Peers whose `X-Forwarded-For` names the client (IP addresses); in the environment a
    /// comma-separated list.
    #[serde(deserialize_with = "list_or_commas")]
    pub trusted_proxies: Vec<String>,
    /// Bounce rate (fraction of sent mail) reported as a warning / as critical.
    pub bounce_rate_warning: f64,
    pub bounce_rate_critical: f64,
    /// Complaint rate (fraction of sent mail) reported as a warning / as critical.
    pub complaint_rate_warning: f64,
    pub complaint_rate_critical: f64,
    /// Messages a project must have sent in 7 days before a critical rate disables it.
    pub security_min_messages: i64,
    /// Stripe secret API key (`sk_...`); set, it turns payments on (checkout, billing portal,
    /// invoices, the payment webhook) and requires the webhook secret and the price id.
    pub stripe_secret_key: Option<String>,
    /// Signing secret of Stripe's webhook endpoint (`whsec_...`).
    pub stripe_webhook_secret: Option<String>,
    /// The Stripe price a checkout subscribes to (`price_...`).
    pub stripe_price_id: Option<String>,
    /// Base URL of Stripe's API.
    pub stripe_api_base: String,
    /// SMTP submission listener with STARTTLS, e.g. `0.0.0.0:587` (unset: off; docs/smtp.md).
    pub submission_listen: Option<String>,
    /// SMTP submission listener with implicit TLS, e.g. `0.0.0.0:465` (needs the certificate).
    pub submission_tls_listen: Option<String>,
    /// PEM certificate chain and private key for STARTTLS and implicit TLS.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Largest message accepted by submission, in bytes.
    pub submission_max_bytes: usize,
    /// Inbound MX listener, e.g. `0.0.0.0:25` (unset: off): mail for verified domains.
    pub mx_listen: Option<String>,
    /// Largest inbound message, in bytes.
    pub mx_max_bytes: usize,
    /// SMTP: seconds a client may stay silent, and seconds a session may last.
    pub smtp_server_idle_timeout_secs: f64,
    pub smtp_server_session_timeout_secs: f64,
    /// SMTP: open connections per listener.
    pub smtp_server_max_connections: usize,
    /// SMTP: the name in the greeting (default: the host of the public URL).
    pub smtp_server_hostname: String,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl LogFormat {
    pub fn parse(s: &str) -> anyhow::Result<LogFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => anyhow::bail!("log_format must be text or json, not {other:?}"),
        }
    }
}

/// A list of strings, given as a list (TOML) or as one comma-separated string (environment).
fn list_or_commas<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        Commas(String),
    }
    Ok(match Raw::deserialize(d)? {
        Raw::List(items) => items,
        Raw::Commas(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

impl<'de> Deserialize<'de> for LogFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        LogFormat::parse(&raw).map_err(serde::de::Error::custom)
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            data_dir: PathBuf::from("./herald-data"),
            database_url: String::new(),
            database_schema: None,
            public_url: String::new(),
            smtp_url: None,
            dns_resolver: None,
            secret: None,
            retired_secrets: Vec::new(),
            rate_limit_per_minute: 1000,
            disable_signups: false,
            max_body_bytes: 1024 * 1024,
            upload_max_bytes: 5 * 1024 * 1024,
            import_batch_rows: 2000,
            campaign_page_size: 1000,
            webhook_allow_private: false,
            webhook_timeout_secs: 10.0,
            database_max_connections: 16,
            workers: true,
            role: Role::All,
            node_name: String::new(),
            spf_mechanism: String::new(),
            return_path_host: None,
            dkim_selector_prefix: "herald".into(),
            domain_check_interval_secs: 300.0,
            dns_timeout_secs: 5.0,
            smtp_max_connections: herald_engine::DEFAULT_SMTP_MAX_CONNECTIONS,
            send_rate_per_second: 0,
            send_concurrency: herald_engine::DEFAULT_SEND_CONCURRENCY,
            send_memory_budget_bytes: herald_engine::DEFAULT_SEND_MEMORY_BUDGET,
            batch_scheduling: true,
            send_max_attempts: 8,
            send_retry_base_secs: 30.0,
            send_lease_secs: 10.0,
            idle_poll_secs: 1.0,
            shutdown_grace_secs: 20.0,
            header_timeout_secs: 30.0,
            body_timeout_secs: 30.0,
            idle_timeout_secs: 15.0,
            max_connections: 4096,
            metrics_token: None,
            mcp_read_only: false,
            mcp_allow_unconfirmed: false,
            log_format: LogFormat::Text,
            retention_days: 30,
            password_hash_threads: 0,
            password_hash_queue: 64,
            body_budget_bytes: 64 * 1024 * 1024,
            database_statement_timeout_secs: 30.0,
            feedback_secret: None,
            sns_topic_arns: Vec::new(),
            indexed_fields: Vec::new(),
            sns_trust_cert_pem: None,
            system_from: String::new(),
            require_email_verification: false,
            oauth_github_client_id: None,
            oauth_github_client_secret: None,
            oauth_github_auth_url: oauth::GITHUB_AUTH_URL.into(),
            oauth_github_token_url: oauth::GITHUB_TOKEN_URL.into(),
            oauth_github_api_url: oauth::GITHUB_API_URL.into(),
            oauth_google_client_id: None,
            oauth_google_client_secret: None,
            oauth_google_auth_url: oauth::GOOGLE_AUTH_URL.into(),
            oauth_google_token_url: oauth::GOOGLE_TOKEN_URL.into(),
            oauth_google_userinfo_url: oauth::GOOGLE_USERINFO_URL.into(),
            auth_rate_limit_per_minute: 20,
            trusted_proxies: Vec::new(),
            bounce_rate_warning: 0.02,
            bounce_rate_critical: 0.05,
            complaint_rate_warning: 0.001,
            complaint_rate_critical: 0.003,
            security_min_messages: 100,
            stripe_secret_key: None,
            stripe_webhook_secret: None,
            stripe_price_id: None,
            stripe_api_base: "https://api.stripe.com".into(),
            submission_listen: None,
            submission_tls_listen: None,
            tls_cert: None,
            tls_key: None,
            submission_max_bytes: 10 * 1024 * 1024,
            mx_listen: None,
            mx_max_bytes: 25 * 1024 * 1024,
            smtp_server_idle_timeout_secs: 300.0,
            smtp_server_session_timeout_secs: 1800.0,
            smtp_server_max_connections: 500,
            smtp_server_hostname: String::new(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted_toml())
    }
}

impl Config {
    /// Reads the file (if any) and the environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Config> {
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("HERALD_CONFIG").map(PathBuf::from));
        Self::layered(file.as_deref(), |k| std::env::var(k).ok())
    }

    /// Defaults, then the TOML file, then the variables `get` returns (`HERALD_<SETTING>` for
    /// every setting, and the spec's `DISABLE_SIGNUPS`), resolved. Values are typed by serde
    /// through figment, so a setting added to [`Config`] is read from the environment without
    /// code here; an empty variable counts as unset.
    pub fn layered(
        file: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Config> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            anyhow::ensure!(
                path.is_file(),
                "the configuration file {} does not exist",
                path.display()
            );
            figment = figment.merge(Toml::file_exact(path));
        }
        let config: Config = figment
            .merge(env_overlay::EnvStrings::read(get))
            .extract_lossy()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(config.resolved())
    }

    /// Sets the node's role, and with it whether the workers run.
    pub fn apply_role(&mut self, role: Role) {
        self.role = role;
        self.workers = role.runs_workers(self.workers);
    }

    /// Fills the defaults that depend on other settings.
    pub fn resolved(mut self) -> Config {
        self.apply_role(self.role);
        self.node_name = self.node_name.trim().to_owned();
        if self.node_name.is_empty() {
            self.node_name = herald_engine::periodic::default_node_name();
        }
        if self.database_url.is_empty() {
            self.database_url = format!("sqlite://{}", self.data_dir.join("herald.db").display());
        }
        if self.public_url.is_empty() {
            self.public_url = format!("http://{}", self.listen);
        }
        self.public_url = self.public_url.trim_end_matches('/').to_owned();
        let host = self
            .public_url
            .split("://")
            .nth(1)
            .unwrap_or("")
            .split(['/', ':'])
            .next()
            .unwrap_or("")
            .to_owned();
        if self.system_from.trim().is_empty() {
            // An IP address or a one-label host has no mailbox domain: the reserved
            // `herald.localhost` (RFC 6761) stands in for it.
            let bare = host.trim_matches(['[', ']']);
            let domain = if !host.contains('.') || bare.parse::<std::net::IpAddr>().is_ok() {
                "herald.localhost"
            } else {
                host.as_str()
            };
            self.system_from = format!("herald@{domain}");
        }
        if self.spf_mechanism.is_empty() {
            let host = host.as_str();
            // An IP gets the ip4/ip6 mechanism; a host name its A record.
            self.spf_mechanism = match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(ip)) => format!("ip4:{ip}"),
                Ok(std::net::IpAddr::V6(ip)) => format!("ip6:{ip}"),
                Err(_) => format!("a:{host}"),
            };
        }
        self
    }

    /// The MCP server's settings.
    pub fn mcp_settings(&self) -> herald_mcp::McpSettings {
        herald_mcp::McpSettings {
            read_only: self.mcp_read_only,
            allow_unconfirmed: self.mcp_allow_unconfirmed,
        }
    }

    /// The server loop's timeouts and connection cap.
    pub fn server_limits(&self) -> crate::server::ServerLimits {
        use std::time::Duration;
        let secs = |f: f64| Duration::from_secs_f64(f.max(0.05));
        crate::server::ServerLimits {
            header_timeout: secs(self.header_timeout_secs),
            body_timeout: secs(self.body_timeout_secs),
            idle_timeout: secs(self.idle_timeout_secs),
            max_connections: self.max_connections.max(1),
        }
    }

    /// The `/metrics` bearer token; `None` (endpoint off) when unset, empty or `off`.
    pub fn metrics_token(&self) -> Option<String> {
        self.metrics_token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("off"))
            .map(str::to_owned)
    }

    /// Hashing threads: the setting, or the number of cores when it is 0.
    pub fn password_hash_threads(&self) -> usize {
        match self.password_hash_threads {
            0 => std::thread::available_parallelism().map_or(2, usize::from),
            n => n,
        }
    }

    /// PostgreSQL connections kept for the workers on top of `database_max_connections`: one
    /// per concurrent delivery, at most 16, plus 4 for the queue poller, the domain checks and
    /// recovery, so the API never waits behind a busy send queue. None when this node runs no
    /// workers. At most 16: a delivery holds no connection while it composes, signs and talks
    /// to the relay (claims, reads and outcomes are written a group at a time), and a node at
    /// the defaults (16 + 20 = 36) leaves room for a second node and the tools within
    /// PostgreSQL's default limit of 100 connections for all nodes.
    pub fn worker_connections(&self) -> u32 {
        if !self.workers {
            return 0;
        }
        const MOST_FOR_DELIVERIES: u32 = 16;
        u32::try_from(self.send_concurrency.max(1))
            .unwrap_or(MOST_FOR_DELIVERIES)
            .min(MOST_FOR_DELIVERIES)
            .saturating_add(4)
    }

    /// The engine's part of the configuration.
    pub fn engine_settings(&self) -> herald_engine::EngineSettings {
        use std::time::Duration;
        let secs = |f: f64| Duration::from_secs_f64(f.max(0.001));
        herald_engine::EngineSettings {
            public_url: self.public_url.clone(),
            dkim_selector_prefix: self.dkim_selector_prefix.clone(),
            spf_mechanism: self.spf_mechanism.clone(),
            return_path_host: self.return_path_host.clone(),
            domain_check_interval: secs(self.domain_check_interval_secs),
            dns_resolver: self.dns_resolver,
            dns_timeout: secs(self.dns_timeout_secs),
            smtp_url: self.smtp_url.clone(),
            outbox_dir: self.data_dir.join("outbox"),
            smtp_max_connections: self.smtp_max_connections.max(1),
            send_rate_per_second: self.send_rate_per_second,
            send_concurrency: self.send_concurrency.max(1),
            send_memory_budget: self.send_memory_budget_bytes,
            send_max_attempts: self.send_max_attempts.max(1),
            send_retry_base: secs(self.send_retry_base_secs),
            send_lease: secs(self.send_lease_secs.max(1.0)),
            idle_poll: secs(self.idle_poll_secs.clamp(0.05, 300.0)),
            retention_days: self.retention_days,
            clock: herald_core::clock::system(),
            node_name: self.node_name.clone(),
            feedback_secret: self.feedback_secret.clone(),
            sns_topic_arns: self.sns_topic_arns.clone(),
            sns_test_certificate: self.sns_trust_cert_pem.clone(),
            import_batch_rows: self.import_batch_rows.max(1),
            campaign_page_size: self.campaign_page_size.clamp(1, 10_000),
            uploads_dir: self.data_dir.join("uploads"),
            upload_max_bytes: self.upload_max_bytes,
            reputation: herald_core::security::CriticalRates {
                bounce: self.bounce_rate_critical,
                complaint: self.complaint_rate_critical,
                min_messages: self.security_min_messages,
            },
            webhook_allow_private: self.webhook_allow_private,
            webhook_timeout: secs(self.webhook_timeout_secs.clamp(0.1, 60.0)),
            // Checked by `Application::build` (`stripe()`), which refuses an incomplete one.
            stripe: self.stripe().ok().flatten(),
        }
    }

    /// The Stripe settings: `None` without a secret key; an error naming what is missing
    /// when the key is set without the webhook secret or the price id, or with a bad API base.
    pub fn stripe(&self) -> anyhow::Result<Option<herald_engine::payments::StripeSettings>> {
        let set = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let Some(secret_key) = set(&self.stripe_secret_key) else {
            return Ok(None);
        };
        let missing: Vec<&str> = [
            ("HERALD_STRIPE_WEBHOOK_SECRET", &self.stripe_webhook_secret),
            ("HERALD_STRIPE_PRICE_ID", &self.stripe_price_id),
        ]
        .into_iter()
        .filter(|(_, v)| set(v).is_none())
        .map(|(name, _)| name)
        .collect();
        anyhow::ensure!(
            missing.is_empty(),
            "HERALD_STRIPE_SECRET_KEY is set, so payments are on, but {} {} not: set {} \
             (Stripe dashboard: Developers > Webhooks for the signing secret, Products for \
             the price), or unset HERALD_STRIPE_SECRET_KEY",
            missing.join(" and "),
            if missing.len() == 1 { "is" } else { "are" },
            if missing.len() == 1 { "it" } else { "them" },
        );
        let api_base = self.stripe_api_base.trim().trim_end_matches('/').to_owned();
        anyhow::ensure!(
            api_base
                .strip_prefix("https://")
                .or_else(|| api_base.strip_prefix("http://"))
                .is_some_and(|host| !host.is_empty() && !host.contains(char::is_whitespace)),
            "HERALD_STRIPE_API_BASE must be an http(s) URL, not {api_base:?}"
        );
        Ok(Some(herald_engine::payments::StripeSettings {
            secret_key,
            webhook_secret: set(&self.stripe_webhook_secret).unwrap_or_default(),
            price_id: set(&self.stripe_price_id).unwrap_or_default(),
            api_base,
            timeout: std::time::Duration::from_secs(10),
        }))
    }

    /// The signing secret: configured, or read from (and first generated into) the data directory.
    pub fn load_or_create_secret(&self) -> anyhow::Result<Vec<u8>> {
        if let Some(s) = &self.secret {
            anyhow::ensure!(
                s.len() >= MIN_SECRET_LEN,
                "the secret must be at least {MIN_SECRET_LEN} characters"
            );
            return Ok(s.as_bytes().to_vec());
        }
        let path = self.data_dir.join("secret");
        match std::fs::read_to_string(&path) {
            Ok(s) if s.trim().len() >= MIN_SECRET_LEN => return Ok(s.trim().as_bytes().to_vec()),
            Ok(_) => anyhow::bail!(
                "{} is too short; delete it to generate a new one",
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
        let secret = generate_secret();
        write_private(&path, &secret).with_context(|| format!("writing {}", path.display()))?;
        Ok(secret.into_bytes())
    }

    /// The file of retired secrets in the data directory, one a line, written by
    /// `herald rotate-secret` when the secret lives there.
    pub fn retired_secrets_file(&self) -> PathBuf {
        self.data_dir.join("secret.retired")
    }

    /// The retired secrets links still verify with: `HERALD_RETIRED_SECRETS`, then
    /// [`Config::retired_secrets_file`] (absent: none), without duplicates or blank lines.
    pub fn load_retired_secrets(&self) -> anyhow::Result<Vec<Vec<u8>>> {
        let path = self.retired_secrets_file();
        let from_file = match std::fs::read_to_string(&path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let mut out: Vec<Vec<u8>> = Vec::new();
        for s in self
            .retired_secrets
            .iter()
            .map(String::as_str)
            .chain(from_file.lines())
        {
            let s = s.trim();
            if !s.is_empty() && !out.iter().any(|o| o == s.as_bytes()) {
                out.push(s.as_bytes().to_vec());
            }
        }
        Ok(out)
    }

    /// The effective configuration as TOML, secrets and passwords redacted.
    pub fn redacted_toml(&self) -> String {
        let mut c = self.clone();
        c.database_url = redact::url_password(&c.database_url);
        c.smtp_url = c.smtp_url.as_deref().map(redact::url_userinfo);
        c.secret = c.secret.as_ref().map(|_| "[redacted]".to_owned());
        for r in &mut c.retired_secrets {
            *r = "[redacted]".to_owned();
        }
        c.metrics_token = c.metrics_token.as_ref().map(|_| "[redacted]".to_owned());
        c.feedback_secret = c.feedback_secret.as_ref().map(|_| "[redacted]".to_owned());
        for s in [
            &mut c.oauth_github_client_secret,
            &mut c.oauth_google_client_secret,
        ] {
            *s = s.as_ref().map(|_| "[redacted]".to_owned());
        }
        c.stripe_secret_key = c
            .stripe_secret_key
            .as_ref()
            .map(|_| "[redacted]".to_owned());
        c.stripe_webhook_secret = c
            .stripe_webhook_secret
            .as_ref()
            .map(|_| "[redacted]".to_owned());
        toml::to_string_pretty(&c).unwrap_or_default()
    }

    /// What the log line says about the database.
    pub fn database_description(&self) -> String {
        redact::url_password(&self.database_url)
    }
}

/// Shortest accepted server secret, in characters.
pub const MIN_SECRET_LEN: usize = 32;

/// A new random server secret: 32 bytes from the system generator, in hex.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    hex::encode(bytes)
}

#[cfg(unix)]
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents.as_bytes())?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    std::fs::write(path, contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn environment_overrides_and_defaults_resolve() {
        let c = Config::layered(
            None,
            env(&[
                ("HERALD_LISTEN", "0.0.0.0:9000"),
                ("DISABLE_SIGNUPS", "yes"),
                ("HERALD_RATE_LIMIT_PER_MINUTE", "50"),
                ("HERALD_SEND_LEASE_SECS", "2.5"),
                ("HERALD_LOG_FORMAT", "JSON"),
                // Digits only, still a string setting.
                ("HERALD_DATABASE_SCHEMA", "2024"),
                ("HERALD_SECRET", ""),
                ("HERALD_LOG", "debug"),
                ("HERALD_SNS_TOPIC_ARNS", "arn:a, arn:b"),
            ]),
        )
        .unwrap();
        assert_eq!(c.listen, "0.0.0.0:9000");
        assert!(c.disable_signups);
        assert_eq!(c.rate_limit_per_minute, 50);
        assert_eq!(c.send_lease_secs, 2.5);
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.database_schema.as_deref(), Some("2024"));
        assert_eq!(c.secret, None, "empty counts as unset");
        assert_eq!(c.sns_topic_arns, ["arn:a", "arn:b"]);
        assert_eq!(c.public_url, "http://0.0.0.0:9000");
        assert!(c.database_url.starts_with("sqlite://"));
        assert_eq!(c.spf_mechanism, "ip4:0.0.0.0");
        let named = Config {
            public_url: "https://mail.example.com".into(),
            ..Config::default()
        }
        .resolved();
        assert_eq!(named.spf_mechanism, "a:mail.example.com");
    }

    #[test]
    fn the_file_is_read_and_the_environment_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("herald.toml");
        std::fs::write(&path, "listen = \"127.0.0.1:7000\"\nsend_concurrency = 4\n").unwrap();
        let c = Config::layered(Some(&path), env(&[("HERALD_SEND_CONCURRENCY", "9")])).unwrap();
        assert_eq!(c.listen, "127.0.0.1:7000");
        assert_eq!(c.send_concurrency, 9);
        std::fs::write(&path, "lisen = \"typo\"\n").unwrap();
        let err = Config::layered(Some(&path), env(&[])).unwrap_err();
        assert!(err.to_string().contains("lisen"), "{err}");
        assert!(Config::layered(Some(&dir.path().join("missing.toml")), env(&[])).is_err());
    }

    #[test]
    fn the_delivery_memory_budget_is_a_setting_herald_config_shows() {
        let default = Config::default();
        assert_eq!(
            default.engine_settings().send_memory_budget,
            herald_engine::DEFAULT_SEND_MEMORY_BUDGET
        );
        let c =
            Config::layered(None, env(&[("HERALD_SEND_MEMORY_BUDGET_BYTES", "1048576")])).unwrap();
        assert_eq!(c.engine_settings().send_memory_budget, 1 << 20);
        assert!(
            c.redacted_toml()
                .contains("send_memory_budget_bytes = 1048576"),
            "{}",
            c.redacted_toml()
        );
    }

    #[test]
    fn the_node_name_defaults_to_host_and_process_and_herald_config_shows_it() {
        let default = Config::layered(None, env(&[])).unwrap();
        assert!(
            default
                .node_name
                .ends_with(&format!("-{}", std::process::id())),
            "{}",
            default.node_name
        );
        let c = Config::layered(None, env(&[("HERALD_NODE_NAME", "worker-2")])).unwrap();
        assert_eq!(c.engine_settings().node_name, "worker-2");
        assert!(
            c.redacted_toml().contains("node_name = \"worker-2\""),
            "{}",
            c.redacted_toml()
        );
    }

    #[test]
    fn two_default_nodes_fit_in_postgresqls_default_connection_limit() {
        let node = Config::default();
        let per_node = node.database_max_connections + node.worker_connections();
        assert_eq!(node.worker_connections(), 16 + 4);
        assert!(
            2 * per_node <= 80,
            "{per_node} per node leaves no room for tools"
        );
        let quiet = Config {
            send_concurrency: 2,
            ..Config::default()
        };
        assert_eq!(quiet.worker_connections(), 2 + 4);
        let no_workers = Config {
            workers: false,
            ..Config::default()
        };
        assert_eq!(no_workers.worker_connections(), 0);
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable() {
        let err = Config::layered(None, env(&[("HERALD_RATE_LIMIT_PER_MINUTE", "lots")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("HERALD_RATE_LIMIT_PER_MINUTE"), "{err}");
        assert!(Config::layered(None, env(&[("HERALD_LOG_FORMAT", "xml")])).is_err());
        assert!(Config::layered(None, env(&[("HERALD_DNS_RESOLVER", "nowhere")])).is_err());
    }

    #[test]
    fn secrets_are_redacted() {
        let c = Config {
            database_url: "postgres://herald:hunter2@db/herald".into(),
            smtp_url: Some("smtp://u:p%40ss@relay:587".into()),
            secret: Some("x".repeat(40)),
            retired_secrets: vec!["y".repeat(40)],
            ..Config::default()
        };
        let t = c.redacted_toml();
        assert!(
            !t.contains("hunter2")
                && !t.contains("p%40ss")
                && !t.contains(&"x".repeat(40))
                && !t.contains(&"y".repeat(40)),
            "{t}"
        );
        assert!(t.contains("postgres://herald:***@db/herald"));
        assert!(format!("{c:?}").contains("[redacted]"));
        // The relay's user name is a credential too (often the API token itself).
        let relay = Config {
            smtp_url: Some("smtps://tok_live_abc:tok_live_abc@relay.example:465".into()),
            ..Config::default()
        };
        for shown in [
            format!("{relay:?}"),
            format!("{relay:#?}"),
            relay.redacted_toml(),
        ] {
            assert!(!shown.contains("tok_live_abc"), "{shown}");
            assert!(shown.contains("relay.example:465"), "{shown}");
        }
        let engine = format!("{:?}", relay.engine_settings());
        assert!(!engine.contains("tok_live_abc"), "{engine}");
        let stripe = Config {
            stripe_secret_key: Some("sk_live_hidden".into()),
            stripe_webhook_secret: Some("whsec_hidden".into()),
            stripe_price_id: Some("price_shown".into()),
            ..Config::default()
        };
        for shown in [
            format!("{stripe:?}"),
            stripe.redacted_toml(),
            format!("{:?}", stripe.engine_settings()),
        ] {
            assert!(!shown.contains("hidden"), "{shown}");
            assert!(shown.contains("price_shown"), "{shown}");
        }
    }

    #[test]
    fn stripe_is_off_without_a_key_and_incomplete_settings_are_refused() {
        let c = Config::layered(None, env(&[])).unwrap();
        assert!(c.stripe().unwrap().is_none());
        let c = Config::layered(None, env(&[("HERALD_STRIPE_SECRET_KEY", "sk_test_1")])).unwrap();
        let err = c.stripe().unwrap_err().to_string();
        assert!(
            err.contains("HERALD_STRIPE_WEBHOOK_SECRET") && err.contains("HERALD_STRIPE_PRICE_ID"),
            "{err}"
        );
        let c = Config::layered(
            None,
            env(&[
                ("HERALD_STRIPE_SECRET_KEY", "sk_test_1"),
                ("HERALD_STRIPE_WEBHOOK_SECRET", "whsec_1"),
                ("HERALD_STRIPE_PRICE_ID", "price_1"),
                ("HERALD_STRIPE_API_BASE", "http://127.0.0.1:9/"),
            ]),
        )
        .unwrap();
        let s = c.stripe().unwrap().expect("configured");
        assert_eq!(s.api_base, "http://127.0.0.1:9");
        assert_eq!(s.price_id, "price_1");
    }
}
