//! Load benchmarks against a real Herald server started in-process on port 0.
//!
//! ```text
//! cargo run --release -p herald-bench -- contacts|send|memory|track|import|analytics [--count N] [--concurrency 32]
//!     [--database-url postgres://user@host/db]
//! ```
//!
//! `contacts` signs up, creates a project, upserts `count` contacts with `concurrency`
//! requests in flight, pages through them all by cursor, and times the first page. The data
//! lives in a temporary SQLite directory, or in a fresh schema (dropped afterwards) of the
//! PostgreSQL database given with `--database-url`.
//!
//! `send` measures `/v1/send` acceptance (one recipient each) and then delivery of those
//! messages to a loopback SMTP sink with DKIM signing, with peak memory while draining, and
//! the 2-thread signing rate of the same signer, printing delivered/s as a ratio of it.
//! `send --concurrent` measures acceptance alone, from outside with wrk (`concurrency`
//! connections, `--seconds` each, default 10) side by side with the perf baseline's `/sqlite`:
//! workers off, then with the workers delivering to the local outbox at the same time.
//!
//! `smtp` measures SMTP submission (`count` messages over `concurrency` sessions) against
//! `POST /v1/send` on the same server, acceptance alone (`smtp.rs`), then inbound mail: `count`
//! DKIM-signed messages of 10 KB to the MX listener with their verdicts (`smtp_inbound.rs`).
//!
//! `track` measures `POST /v1/track` with a new contact every request (public key,
//! `concurrency` in flight): accepted/s and the clients' p50/p99 latency. `track
//! --concurrent` measures it from outside with wrk, three passes side by side with the perf
//! baseline's `/sqlite` (or `/postgres` with `--database-url`).
//!
//! `segments` counts a two-condition dynamic segment over 1,000,000 contacts on SQLite
//! (docs/segments.md), without and with an expression index on the `data.` field.
//! `campaign` fans out one campaign to `count` contacts (default 1,000,000) on SQLite and
//! prints recipients queued per second and the peak RSS (docs/campaigns.md); with
//! `--database-url` it then does the same on PostgreSQL (a fresh schema, dropped afterwards).
//! `campaign --deliver` runs the whole campaign on a node with workers instead, fan-out and
//! delivery to a loopback SMTP sink with DKIM, and prints delivered/s against the signing
//! bound and the node's peak RSS (the node runs the `herald` binary in a process of its own,
//! so build both: `cargo build --release -p herald -p herald-bench`).
//! `import` imports a ~5 MB CSV (60,000 rows) into a project already holding `count`
//! contacts (default 1,000,000) and prints rows/s; `analytics` times `/analytics/timeseries`
//! over 30 days of `count` sends (default 1,000,000) (both in `imports.rs`).
//!
//! `dashboard` times the dashboard's home, contacts page, an email-prefix search and a contact's
//! page at `count` contacts (default 1,000,000, SQLite) with a session cookie, p50 and p95,
//! then the template editor and its two preview round trips, prints the shipped JS + CSS
//! gzipped (`dashboard.rs`), and times the report of a campaign sent to every contact
//! (`dashboard_campaign.rs`) and a 50-step workflow's page (`dashboard_workflow.rs`).
//!
//! `cluster` (PostgreSQL, `--database-url`) sends `count` messages (default 20,000) through one
//! `all` node, then through an `api` node with two `worker` nodes, each node the `herald`
//! binary in a process of its own: accepted/s, delivered/s, CPU seconds per 1,000 delivered,
//! and the idle cluster's database transactions per second per node (`cluster.rs`).
//!
//! `mcp` compares `list_contacts` through `POST /mcp` with `GET /contacts` on `count`
//! contacts (default 1,000), alternated, and prints the p50 ratio (target <= 1.3x).
//!
//! `memory` prints the RSS through a 128-way login flood and through `count` (default 2,000)
//! `/v1/send` requests with a 5 MB attachment at `concurrency` (default 16) in flight, and
//! 30 s after each; then the peak RSS of a node (the `herald` binary in a process of its own)
//! delivering those messages to a loopback SMTP sink with DKIM. `--no-default-features`
//! builds it with the system allocator.
#![forbid(unsafe_code)]

mod campaigns;
mod child;
mod cluster;
mod contacts;
mod dashboard;
mod dashboard_campaign;
mod dashboard_live;
mod dashboard_workflow;
mod imports;
mod load;
mod mcp;
mod memory;
mod pg_seed;
mod segments;
mod send;
mod server;
mod signing;
mod smtp;
mod smtp_inbound;
mod track;
mod workflows;
mod wrk;

use anyhow::{Context, bail, ensure};

const USAGE: &str = "usage: herald-bench contacts|send|memory|track|segments|campaign|import|analytics|workflows|smtp|mcp|dashboard|cluster [--count N] [--concurrency N] [--fields N] \
     [--concurrent [--seconds N]] [--deliver] [--events N] [--send-concurrency N] [--smtp-connections N] [--database-url postgres://... [--postgres-only]]";

#[derive(Debug)]
pub struct Options {
    bench: String,
    pub count: usize,
    pub concurrency: usize,
    /// Keys in each contact's `data` (default 4).
    pub fields: usize,
    pub database_url: Option<String>,
    /// `send` and `track`: measure from outside with wrk, side by side with the baseline
    /// (`send`: workers off, then delivering to the outbox).
    pub concurrent: bool,
    /// `--concurrent` only: seconds of each wrk run (default 10).
    pub seconds: u64,
    /// `send` only: the delivering node's `send_concurrency` and `smtp_max_connections`
    /// (default: the server's defaults).
    pub send_concurrency: Option<usize>,
    pub smtp_connections: Option<usize>,
    /// `campaign` only: deliver the campaign too, not only fan it out.
    pub deliver: bool,
    /// `campaign` only: skip the SQLite run (with `--database-url`).
    pub postgres_only: bool,
    /// `dashboard` only: mail events seeded for Analytics and Activity (0: skip that part).
    pub events: usize,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<Options> {
    let bench = match args.next().as_deref() {
        Some(
            b @ ("contacts" | "send" | "memory" | "track" | "segments" | "campaign" | "import"
            | "analytics" | "workflows" | "smtp" | "mcp" | "dashboard" | "cluster"),
        ) => b.to_owned(),
        None => bail!("{USAGE}"),
        Some(other) => bail!("unknown benchmark {other:?}\n{USAGE}"),
    };
    let mut opts = Options {
        count: match bench.as_str() {
            "send" | "track" | "smtp" | "cluster" => 20_000,
            "memory" => 2_000,
            "segments" | "campaign" | "dashboard" => 1_000_000,
            "workflows" => 100_000,
            "mcp" => 1_000,
            _ => 100_000,
        },
        concurrency: if bench == "memory" { 16 } else { 32 },
        bench,
        fields: 4,
        database_url: None,
        concurrent: false,
        seconds: 10,
        send_concurrency: None,
        smtp_connections: None,
        deliver: false,
        postgres_only: false,
        events: 0,
    };
    if opts.bench == "dashboard" {
        opts.events = 10_000_000;
    }
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg, None),
        };
        let mut value = || -> anyhow::Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => args
                    .next()
                    .with_context(|| format!("{name} needs a value\n{USAGE}")),
            }
        };
        match name.as_str() {
            "--count" | "--contacts" => {
                opts.count = value()?.parse().context("--count must be a whole number")?
            }
            "--concurrency" => {
                opts.concurrency = value()?
                    .parse()
                    .context("--concurrency must be a whole number")?;
            }
            "--fields" => {
                opts.fields = value()?
                    .parse()
                    .context("--fields must be a whole number")?
            }
            "--database-url" => opts.database_url = Some(value()?),
            "--concurrent" => opts.concurrent = true,
            "--seconds" => {
                opts.seconds = value()?
                    .parse()
                    .context("--seconds must be a whole number")?
            }
            "--deliver" => opts.deliver = true,
            "--events" => {
                opts.events = value()?
                    .parse()
                    .context("--events must be a whole number")?
            }
            "--postgres-only" => opts.postgres_only = true,
            "--send-concurrency" => {
                opts.send_concurrency = Some(
                    value()?
                        .parse()
                        .context("--send-concurrency must be a whole number")?,
                );
            }
            "--smtp-connections" => {
                opts.smtp_connections = Some(
                    value()?
                        .parse()
                        .context("--smtp-connections must be a whole number")?,
                );
            }
            other => bail!("unknown option {other:?}\n{USAGE}"),
        }
    }
    ensure!(
        !opts.postgres_only || opts.database_url.is_some(),
        "--postgres-only needs --database-url"
    );
    ensure!(opts.count > 0, "--count must be at least 1");
    ensure!(opts.concurrency > 0, "--concurrency must be at least 1");
    Ok(opts)
}

fn main() -> anyhow::Result<()> {
    // The allocator's option is set before the runtime's threads start (allocator.rs).
    herald::allocator::run_main(run())
}

async fn run() -> anyhow::Result<()> {
    // Help anywhere on the line prints the usage and succeeds; `parse_args` never sees it.
    if std::env::args()
        .skip(1)
        .any(|a| matches!(a.as_str(), "-h" | "--help"))
    {
        println!("{USAGE}");
        return Ok(());
    }
    let opts = parse_args(std::env::args().skip(1))?;
    // The node's own logs, when asked for (`HERALD_LOG=warn`): a stalled delivery says why.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("HERALD_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    }
    match opts.bench.as_str() {
        "send" => {
            send::run(&send::SendOptions {
                count: opts.count,
                concurrency: opts.concurrency,
                database_url: opts.database_url.clone(),
                concurrent: opts.concurrent,
                seconds: opts.seconds.max(1),
                send_concurrency: opts.send_concurrency,
                smtp_connections: opts.smtp_connections,
            })
            .await
        }
        "memory" => {
            memory::run(&memory::MemoryOptions {
                count: opts.count,
                concurrency: opts.concurrency,
                database_url: opts.database_url.clone(),
                send_concurrency: opts.send_concurrency,
                smtp_connections: opts.smtp_connections,
            })
            .await
        }
        "segments" => {
            segments::run(&segments::SegmentsOptions {
                count: opts.count,
                database_url: opts.database_url.clone(),
            })
            .await
        }
        "campaign" => {
            campaigns::run(&campaigns::CampaignOptions {
                count: opts.count,
                database_url: opts.database_url.clone(),
                deliver: opts.deliver,
                send_concurrency: opts.send_concurrency,
                smtp_connections: opts.smtp_connections,
                postgres_only: opts.postgres_only,
            })
            .await
        }
        "smtp" => {
            smtp::run(&smtp::SmtpOptions {
                count: opts.count,
                concurrency: opts.concurrency,
                database_url: opts.database_url.clone(),
            })
            .await
        }
        "track" => {
            track::run(&track::TrackOptions {
                count: opts.count,
                concurrency: opts.concurrency,
                database_url: opts.database_url.clone(),
                concurrent: opts.concurrent,
                seconds: opts.seconds.max(1),
            })
            .await
        }
        "cluster" => cluster::run(opts.count, opts.concurrency, opts.database_url.as_deref()).await,
        "import" => imports::import(&opts).await,
        "workflows" => workflows::run(opts.count).await,
        "mcp" => mcp::run(&opts).await,
        "dashboard" => dashboard::run(&opts).await,
        "analytics" => imports::analytics(&opts).await,
        _ => contacts::contacts(&opts).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contacts::{encode_query_value, percentile};
    use std::time::Duration;

    fn args(s: &str) -> impl Iterator<Item = String> {
        s.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn options_have_defaults_and_overrides() {
        let o = parse_args(args("contacts")).unwrap();
        assert_eq!(
            (o.count, o.concurrency, o.database_url),
            (100_000, 32, None)
        );
        let o = parse_args(args(
            "contacts --count 10 --concurrency=4 --database-url postgres://x/y",
        ))
        .unwrap();
        assert_eq!((o.count, o.concurrency), (10, 4));
        assert_eq!(o.database_url.as_deref(), Some("postgres://x/y"));
        assert!(parse_args(args("contacts --count")).is_err());
        assert!(parse_args(args("contacts --count 0")).is_err());
        assert!(parse_args(args("contacts --bogus 1")).is_err());
        assert!(parse_args(args("sends")).is_err());
        assert!(parse_args(args("")).is_err());
        assert!(parse_args(args("campaign --postgres-only")).is_err());
        let o = parse_args(args(
            "campaign --postgres-only --database-url postgres://x/y",
        ))
        .unwrap();
        assert!(o.postgres_only);
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode_query_value("aZ0-_.~"), "aZ0-_.~");
        assert_eq!(encode_query_value("a+b/c=é"), "a%2Bb%2Fc%3D%C3%A9");
    }

    #[test]
    fn percentiles_pick_from_sorted_durations() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&d, 50), 51.0);
        assert_eq!(percentile(&d, 100), 100.0);
        assert_eq!(percentile(&[], 50), 0.0);
    }
}
