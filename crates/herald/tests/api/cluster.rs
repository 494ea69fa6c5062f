//! Several `herald serve` processes on one PostgreSQL schema (`herald_testkit::cluster`): the
//! real binary, each node in a process of its own with its role, killed, stopped and started
//! again as an operator would (docs/deploy.md "Several nodes"). PostgreSQL only: SQLite is
//! one node.

mod delivery;
mod limits;
mod pg_restart;

use std::time::Duration;

use herald_testkit::cluster::Cluster;
use serde_json::json;

use crate::mail_setup::DOMAIN;

/// The `/metrics` token every node of these tests is given.
pub const METRICS_TOKEN: &str = "cluster-metrics";

/// The settings every node shares with the test's in-process app (its database, secret,
/// relay and DNS), with small pools so three nodes and the app fit the test server's
/// connections.
pub fn cluster_of(config: &herald::Config) -> Cluster {
    let opt = |v: Option<String>| v.unwrap_or_default();
    Cluster::new(
        env!("CARGO_BIN_EXE_herald"),
        [
            ("HERALD_DATA_DIR", config.data_dir.display().to_string()),
            ("HERALD_DATABASE_URL", config.database_url.clone()),
            (
                "HERALD_DATABASE_SCHEMA",
                opt(config.database_schema.clone()),
            ),
            ("HERALD_SECRET", opt(config.secret.clone())),
            ("HERALD_SMTP_URL", opt(config.smtp_url.clone())),
            (
                "HERALD_DNS_RESOLVER",
                opt(config.dns_resolver.map(|a| a.to_string())),
            ),
            ("HERALD_SEND_RETRY_BASE_SECS", "0.2".into()),
            ("HERALD_LOG", "warn".into()),
            ("HERALD_DATABASE_MAX_CONNECTIONS", "4".into()),
            ("HERALD_SEND_CONCURRENCY", "8".into()),
            ("HERALD_METRICS_TOKEN", METRICS_TOKEN.into()),
        ],
    )
}

/// Messages node `i` handed to the relay since it started (its `/metrics`).
pub async fn sent_by(cluster: &Cluster, i: usize) -> f64 {
    cluster
        .metric(i, METRICS_TOKEN, "herald_messages_total{outcome=\"sent\"}")
        .await
        .expect("metrics")
}

/// `POST /v1/send` on `base` to `r{i}@example.org` for `i` in `range`: the recipients on
/// success, the status otherwise.
pub async fn send_range(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    range: std::ops::Range<usize>,
) -> Result<Vec<String>, String> {
    let to: Vec<String> = range.map(|i| format!("r{i}@example.org")).collect();
    let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let res = client
        .post(format!("{base}/v1/send"))
        .bearer_auth(key)
        .json(&body)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    match res.status().as_u16() {
        200 => Ok(to),
        s => Err(format!("{s}: {}", res.text().await.unwrap_or_default())),
    }
}
