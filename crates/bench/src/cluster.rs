//! The cluster benchmark (issue 35): one `all` node against one `api` node and two `worker`
//! nodes on the same PostgreSQL and machine, each node the `herald` binary in a process of its
//! own (`herald_testkit::cluster`). For each: `count` single-recipient `/v1/send` requests
//! (`concurrency` in flight) through the node that takes the API, delivered to a loopback
//! SMTP sink with DKIM; accepted/s, delivered/s (from the first request to the last delivery)
//! and the nodes' CPU seconds per 1,000 delivered messages (user + system time from
//! `/proc/<pid>/stat`, every node together). Then the idle cluster's database load: the
//! database's committed and rolled-back transactions per second (`pg_stat_database`, which
//! counts every statement outside an explicit transaction as one) with the three nodes idle,
//! less the same with none, per node.

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use herald_testkit::cluster::Cluster;
use herald_testkit::dns_server::DnsServer;
use herald_testkit::smtp_sink::SmtpSink;

use crate::send::{accept_at, verdict, verify_domain};
use crate::server::{Server, Stall, project_key};

/// The cluster's CPU per message over one node's, at most (issue 35: 15 % slower per message).
const MOST_CPU_RATIO: f64 = 1.15;
/// Idle database queries per second per node, at most.
const MOST_IDLE_QPS: f64 = 5.0;
/// How long each idle reading lasts.
const IDLE_WINDOW: Duration = Duration::from_secs(30);
/// The wait before an idle reading, for PostgreSQL's statistics of the work before to arrive.
const STATS_SETTLE: Duration = Duration::from_secs(12);

pub async fn run(
    count: usize,
    concurrency: usize,
    database_url: Option<&str>,
) -> anyhow::Result<()> {
    let Some(url) = database_url.filter(|u| u.starts_with("postgres")) else {
        bail!("herald-bench cluster needs --database-url postgres://...");
    };
    let sink = SmtpSink::start().await?;
    sink.keep_messages(false);
    let dns = DnsServer::start().await?;
    let (smtp_url, dns_addr) = (sink.url(), dns.addr());
    // The in-process server signs up and verifies the domain; it takes no background work.
    let setup = Server::start_with(Some(url), |c| {
        c.workers = false;
        c.smtp_url = Some(smtp_url.clone());
        c.dns_resolver = Some(dns_addr);
    })
    .await?;
    println!("engine: {}", setup.engine);
    let key = project_key(&setup).await?;
    verify_domain(&setup, &key, &dns).await?;
    let c = &setup.config;
    let env = [
        ("HERALD_DATA_DIR", c.data_dir.display().to_string()),
        ("HERALD_DATABASE_URL", c.database_url.clone()),
        (
            "HERALD_DATABASE_SCHEMA",
            c.database_schema.clone().unwrap_or_default(),
        ),
        ("HERALD_SECRET", c.secret.clone().unwrap_or_default()),
        ("HERALD_SMTP_URL", smtp_url.clone()),
        ("HERALD_DNS_RESOLVER", dns_addr.to_string()),
        ("HERALD_RATE_LIMIT_PER_MINUTE", "1000000000".into()),
        (
            "HERALD_LOG",
            std::env::var("HERALD_LOG").unwrap_or_else(|_| "warn".into()),
        ),
    ];
    let bin = crate::child::herald_binary()?;

    let mut one = Cluster::new(&bin, env.clone());
    one.start("all", &[]).await?;
    let single = measure(&mut one, &sink, &key, count, concurrency).await?;
    single.print("one node (all)");
    drop(one);

    let mut three = Cluster::new(&bin, env);
    three.start("api", &[]).await?;
    three.start("worker", &[]).await?;
    three.start("worker", &[]).await?;
    let cluster = measure(&mut three, &sink, &key, count, concurrency).await?;
    cluster.print("api + 2 workers");
    let ratio = cluster.cpu_per_1000 / single.cpu_per_1000;
    println!(
        "CPU per message, cluster over one node: {ratio:.2} (target <= {MOST_CPU_RATIO}) {}",
        verdict(ratio <= MOST_CPU_RATIO)
    );

    // Idle: the three nodes against none (the setup server runs in both readings). A backend
    // reports its counts at most every second while busy and only after 10 s once idle
    // (PostgreSQL's PGSTAT_IDLE_INTERVAL), so the readings begin past that: the work just done
    // would otherwise be counted as idle load. Autovacuum is turned off for the schema's
    // tables first: after the sending it vacuums and analyses the churned tables (jobs,
    // messages), each a transaction of the database's that no node asked for.
    pause_autovacuum(url, setup.config.database_schema.as_deref()).await?;
    tokio::time::sleep(STATS_SETTLE).await;
    let busy = transactions_per_sec(url).await?;
    drop(three);
    tokio::time::sleep(STATS_SETTLE).await;
    let quiet = transactions_per_sec(url).await?;
    let per_node = (busy - quiet).max(0.0) / 3.0;
    println!(
        "idle database load: {busy:.2} transactions/s with the three nodes, {quiet:.2} without: \
         {per_node:.2} per node (target < {MOST_IDLE_QPS}) {}",
        verdict(per_node < MOST_IDLE_QPS)
    );
    setup.shutdown().await
}

struct Run {
    accepted_per_sec: f64,
    delivered_per_sec: f64,
    cpu_per_1000: f64,
}

impl Run {
    fn print(&self, what: &str) {
        println!(
            "{what}: {:.0} accepted/s, {:.0} delivered/s, {:.2} CPU s per 1,000 delivered",
            self.accepted_per_sec, self.delivered_per_sec, self.cpu_per_1000
        );
    }
}

/// Sends `count` messages through node 0 and waits until the sink has them all.
async fn measure(
    cluster: &mut Cluster,
    sink: &SmtpSink,
    key: &str,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<Run> {
    let before = sink.accepted_count();
    let cpu_before = cpu_seconds(cluster)?;
    let start = Instant::now();
    let url = format!("{}/v1/send", cluster.nodes[0].base());
    accept_at(url, key, count, concurrency).await?;
    let accepted = start.elapsed();
    let mut stall = Stall::new();
    while sink.accepted_count() < before + count {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stall.check(sink.accepted_count() - before, count)?;
        for i in 0..cluster.nodes.len() {
            ensure!(cluster.running(i), "{} exited", cluster.nodes[i].name);
        }
    }
    let delivered = start.elapsed();
    let cpu = cpu_seconds(cluster)? - cpu_before;
    Ok(Run {
        accepted_per_sec: count as f64 / accepted.as_secs_f64(),
        delivered_per_sec: count as f64 / delivered.as_secs_f64(),
        cpu_per_1000: cpu / count as f64 * 1000.0,
    })
}

/// User + system CPU seconds of every running node so far.
fn cpu_seconds(cluster: &Cluster) -> anyhow::Result<f64> {
    let ticks = clock_ticks()?;
    let mut total = 0.0;
    for node in &cluster.nodes {
        let Some(pid) = node.pid() else { continue };
        let path = format!("/proc/{pid}/stat");
        let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        // Fields after the command name (which may hold spaces) : utime is the 14th field of
        // the line, stime the 15th, i.e. the 12th and 13th after the closing parenthesis.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let f: Vec<&str> = rest.split_whitespace().collect();
        let utime: f64 = f.get(11).and_then(|v| v.parse().ok()).context("utime")?;
        let stime: f64 = f.get(12).and_then(|v| v.parse().ok()).context("stime")?;
        total += (utime + stime) / ticks;
    }
    Ok(total)
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux).
fn clock_ticks() -> anyhow::Result<f64> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output();
    Ok(out
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0))
}

/// Turns autovacuum off for every table of `schema` (the bench's own, dropped afterwards).
async fn pause_autovacuum(url: &str, schema: Option<&str>) -> anyhow::Result<()> {
    use sqlx::Connection as _;
    let Some(schema) = schema else {
        return Ok(());
    };
    let mut conn = sqlx::PgConnection::connect(url).await?;
    let statements: Vec<(String,)> = sqlx::query_as(
        "SELECT format('ALTER TABLE %I.%I SET (autovacuum_enabled = false, \
         toast.autovacuum_enabled = false)', schemaname, tablename) \
         FROM pg_tables WHERE schemaname = $1",
    )
    .bind(schema)
    .fetch_all(&mut conn)
    .await?;
    for (statement,) in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut conn)
            .await?;
    }
    conn.close().await?;
    Ok(())
}

/// The database's transactions per second over [`IDLE_WINDOW`] (less this reading's own).
async fn transactions_per_sec(url: &str) -> anyhow::Result<f64> {
    use sqlx::Connection as _;
    let read = || async {
        // A connection per reading: its statistics are flushed when it closes.
        let mut conn = sqlx::PgConnection::connect(url).await?;
        let (n,): (i64,) = sqlx::query_as(
            "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database \
             WHERE datname = current_database()",
        )
        .fetch_one(&mut conn)
        .await?;
        conn.close().await?;
        Ok::<_, anyhow::Error>(n)
    };
    let first = read().await?;
    tokio::time::sleep(IDLE_WINDOW).await;
    let second = read().await?;
    Ok((second - first - 1).max(0) as f64 / IDLE_WINDOW.as_secs_f64())
}
