//! Prometheus metrics: the process-wide registry (the `metrics` facade with the Prometheus
//! recorder of `metrics-exporter-prometheus`), the functions the pipeline and the API call to
//! record, and the scrape, which first reads the database-backed gauges.
//!
//! Invariants:
//! - [`install`] is idempotent: the first call installs the recorder, later calls (several
//!   applications in one test process) share it. Recording before it is a no-op.
//! - Label values come from fixed sets (route templates, status codes, outcome and class
//!   names, job states), never from request data, so the series count stays bounded.
//! - Queue depth and messages by status are read from the database at scrape time: they are
//!   always exact, across every node, and survive restarts. Counters and histograms are per
//!   process, as Prometheus expects.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use herald_core::message_status::MessageStatus;
use herald_core::time::Millis;
use herald_mail::transport::TransportError;
use herald_store::Store;
use herald_store::periodic::PeriodicRun;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
/// `(kind, state)` of every queue-depth series reported so far.
static SEEN: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());

/// Seconds: 5 ms to 1 min (HTTP requests).
const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Seconds: 50 ms to 1 day (acceptance to the relay's acceptance, retries included).
const DELIVERY_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0,
];

/// Installs the process-wide recorder (once).
pub fn install() {
    HANDLE.get_or_init(|| {
        let built = PrometheusBuilder::new()
            .set_buckets_for_metric(
                metrics_exporter_prometheus::Matcher::Full(
                    "herald_http_request_duration_seconds".into(),
                ),
                REQUEST_BUCKETS,
            )
            .and_then(|b| {
                b.set_buckets_for_metric(
                    metrics_exporter_prometheus::Matcher::Full(
                        "herald_delivery_latency_seconds".into(),
                    ),
                    DELIVERY_BUCKETS,
                )
            })
            .and_then(|b| b.install_recorder());
        match built {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder not installed; /metrics will be empty");
                None
            }
        }
    });
}

/// One HTTP request answered: `route` is the matched route template (or `unmatched`).
pub fn http_request(route: &str, method: &str, status: u16, seconds: f64) {
    let labels = [
        ("route", route.to_owned()),
        ("method", method.to_owned()),
        ("status", status.to_string()),
    ];
    metrics::counter!("herald_http_requests_total", &labels).increment(1);
    let labels = [("route", route.to_owned()), ("method", method.to_owned())];
    metrics::histogram!("herald_http_request_duration_seconds", &labels).record(seconds);
}

/// The class of a relay's (or the outbox's) answer: `2xx`, `4xx`, `5xx`, or `none` when the
/// relay gave no reply (connection refused, timeout, a message refused before sending).
pub fn reply_class(reply: &str) -> &'static str {
    match reply.as_bytes().first() {
        Some(b'2') => "2xx",
        Some(b'4') => "4xx",
        Some(b'5') => "5xx",
        _ => "none",
    }
}

/// The transport's answer to one delivery attempt.
pub fn relay_reply(result: &Result<String, TransportError>) {
    let class = match result {
        Ok(reply) => reply_class(reply),
        Err(e) => reply_class(e.message()),
    };
    metrics::counter!("herald_relay_replies_total", "class" => class).increment(1);
}

/// The relay accepted a message accepted by the API at `accepted_at`.
pub fn message_sent(accepted_at: Millis, now: Millis) {
    metrics::counter!("herald_messages_total", "outcome" => "sent").increment(1);
    let seconds = (now - accepted_at).max(0) as f64 / 1000.0;
    metrics::histogram!("herald_delivery_latency_seconds").record(seconds);
}

/// A message failed for good.
pub fn message_failed() {
    metrics::counter!("herald_messages_total", "outcome" => "failed").increment(1);
}

/// Feedback that moved a real (not simulated) message: `delivery`, `bounce`, `complaint`.
pub fn feedback(kind: &herald_core::feedback::FeedbackKind) {
    use herald_core::feedback::FeedbackKind;
    let kind = match kind {
        FeedbackKind::Delivery => "delivery",
        FeedbackKind::Bounce { .. } => "bounce",
        FeedbackKind::Complaint => "complaint",
        FeedbackKind::Open => "open",
        FeedbackKind::Click { .. } => "click",
    };
    metrics::counter!("herald_feedback_total", "kind" => kind).increment(1);
}

/// An attempt failed and the message will be retried.
pub fn message_retried() {
    metrics::counter!("herald_messages_total", "outcome" => "retried").increment(1);
}

/// This node claimed a period of a periodic task and ran it (`periodic`).
pub fn periodic_run(task: &'static str, node: &str) {
    metrics::counter!("herald_periodic_runs_total", "task" => task, "node" => node.to_owned())
        .increment(1);
}

/// The Prometheus text exposition, with the queue and message gauges read now, then this
/// node's name and the last run of every periodic task across the cluster (read from the
/// database, so every node's scrape names the node that ran it).
pub async fn render(store: &Store, node: &str) -> herald_store::StoreResult<String> {
    let jobs = store.job_counts().await?;
    let messages = store.message_counts().await?;
    {
        // A series whose rows are all gone reads 0, not its last value.
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        for (kind, state) in seen.iter() {
            metrics::gauge!("herald_queue_depth", "kind" => kind.clone(), "state" => state.clone())
                .set(0.0);
        }
        for (kind, state, n) in jobs {
            seen.insert((kind.clone(), state.clone()));
            metrics::gauge!("herald_queue_depth", "kind" => kind, "state" => state).set(n as f64);
        }
    }
    for status in MessageStatus::ALL.map(MessageStatus::as_str) {
        let n = messages
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n);
        metrics::gauge!("herald_messages_by_status", "status" => status).set(n as f64);
    }
    let mut text = match HANDLE.get() {
        Some(Some(handle)) => handle.render(),
        _ => String::new(),
    };
    periodic_section(&mut text, node, &store.periodic_runs().await?);
    Ok(text)
}

/// `herald_node_info` and `herald_periodic_last_run_seconds`, written here rather than kept as
/// gauges: the node of a task's last run changes, and a gauge would keep the old node's series.
fn periodic_section(text: &mut String, node: &str, runs: &[PeriodicRun]) {
    use std::fmt::Write as _;
    let _ = writeln!(
        text,
        "# HELP herald_node_info The node answering this scrape (HERALD_NODE_NAME).\n\
         # TYPE herald_node_info gauge\n\
         herald_node_info{{node=\"{}\"}} 1",
        label_value(node)
    );
    if runs.is_empty() {
        return;
    }
    let _ = writeln!(
        text,
        "# HELP herald_periodic_last_run_seconds When each periodic task last ran in the \
         cluster (epoch seconds), and on which node.\n\
         # TYPE herald_periodic_last_run_seconds gauge"
    );
    for run in runs {
        let _ = writeln!(
            text,
            "herald_periodic_last_run_seconds{{task=\"{}\",node=\"{}\"}} {}",
            label_value(&run.task),
            label_value(&run.node),
            run.claimed_at as f64 / 1000.0
        );
    }
}

/// A label value escaped for the text format (backslash, double quote, line feed).
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One committed page of a campaign fan-out with `recipients` contacts.
pub fn campaign_page(recipients: usize) {
    metrics::counter!("herald_campaign_recipients_total").increment(recipients as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_periodic_section_names_the_nodes_and_escapes_them() {
        let runs = [PeriodicRun {
            task: "retention".into(),
            node: "db\"1".into(),
            period_start: 1_200_000,
            claimed_at: 1_200_001,
            claims: 3,
        }];
        let mut text = String::new();
        periodic_section(&mut text, "web-1", &runs);
        assert!(
            text.contains("herald_node_info{node=\"web-1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "herald_periodic_last_run_seconds{task=\"retention\",node=\"db\\\"1\"} 1200.001\n"
            ),
            "{text}"
        );
    }
}
