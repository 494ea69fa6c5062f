//! Load from outside the process: wrk with the perf harness's Lua scripts
//! (`../shared/perf/load`), and the harness's baseline server (one durable SQLite write per
//! request) measured in the same minute, so a rate is taken the way its target is stated.
//!
//! The harness is found at `HERALD_PERF_DIR`, else `../shared/perf` from the working
//! directory (the repository root). wrk is pinned to core 1 as `run_baselines.sh` pins it
//! (`WRK_CPUS` overrides; empty leaves it unpinned); the servers are not pinned.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use tokio::process::{Child, Command};

/// One wrk run's figures (its `RESULT` line).
#[derive(Debug, Clone, Copy)]
pub struct WrkResult {
    pub rps: f64,
    pub p99_ms: f64,
    pub non2xx: u64,
}

/// The perf harness's directory, if it is there.
pub fn perf_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("HERALD_PERF_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/perf"));
    ensure!(
        dir.join("load/run_wrk.sh").is_file(),
        "the perf harness is not at {} (set HERALD_PERF_DIR)",
        dir.display()
    );
    Ok(dir)
}

/// Runs `load/<script>` against `url` for `secs` with `conns` connections; `env` is passed to
/// the script (the key, the sender). Fails when wrk is missing or a response was not 2xx.
pub async fn run(
    perf: &Path,
    script: &str,
    url: &str,
    key: &str,
    secs: u64,
    conns: usize,
    env: &[(&str, &str)],
) -> anyhow::Result<WrkResult> {
    let mut cmd = Command::new(perf.join("load/run_wrk.sh"));
    cmd.arg(perf.join("load").join(script))
        .arg(url)
        .arg(key)
        .arg(secs.to_string())
        .arg(conns.to_string())
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    if std::env::var_os("WRK_CPUS").is_none() {
        cmd.env("WRK_CPUS", "1");
    }
    let out = cmd
        .output()
        .await
        .context("running wrk (apt-get install -y wrk)")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "wrk failed ({}): {}{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let result = parse_result(&stdout)?;
    ensure!(
        result.non2xx == 0,
        "{url}: {} responses were not 2xx",
        result.non2xx
    );
    Ok(result)
}

fn parse_result(stdout: &str) -> anyhow::Result<WrkResult> {
    let Some(line) = stdout.lines().find(|l| l.starts_with("RESULT ")) else {
        bail!("wrk printed no RESULT line: {stdout}");
    };
    let field = |name: &str| -> anyhow::Result<f64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .with_context(|| format!("no {name} in {line}"))?
            .parse::<f64>()
            .with_context(|| format!("{name} in {line}"))
    };
    Ok(WrkResult {
        rps: field("rps")?,
        p99_ms: field("p99_ms")?,
        non2xx: field("non2xx")? as u64,
    })
}

/// The harness's baseline server, on a port of its own with its database in a temporary
/// directory; stopped when dropped.
pub struct Baseline {
    child: Child,
    pub url: String,
    /// Whether the durable write is `/postgres` (started with `--postgres`) or `/sqlite`.
    postgres: bool,
    _dir: tempfile::TempDir,
}

impl Baseline {
    /// `None` (with a notice) when the baseline is not built. With `postgres` (a database
    /// URL), its durable write is one committed INSERT in that PostgreSQL (`/postgres`).
    pub async fn start(perf: &Path, postgres: Option<&str>) -> anyhow::Result<Option<Baseline>> {
        let bin = perf.join("baseline/target/release/perf-baseline");
        if !bin.is_file() {
            println!(
                "no baseline side by side: build it first (cd {}/baseline && cargo build --release)",
                perf.display()
            );
            return Ok(None);
        }
        let addr = crate::server::free_loopback_addr()?;
        let dir = tempfile::tempdir()?;
        let mut command = Command::new(bin);
        command
            .arg(&addr)
            .arg("--db")
            .arg(dir.path().join("baseline.db"));
        if let Some(url) = postgres {
            command.arg("--postgres").arg(url);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting the perf baseline")?;
        let url = format!("http://{addr}");
        let client = reqwest::Client::new();
        for _ in 0..100 {
            if client.get(format!("{url}/health")).send().await.is_ok() {
                return Ok(Some(Baseline {
                    child,
                    url,
                    postgres: postgres.is_some(),
                    _dir: dir,
                }));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the perf baseline did not answer on {url}")
    }

    /// The durable write's path: `/postgres` or `/sqlite`.
    pub fn durable_path(&self) -> &'static str {
        if self.postgres {
            "/postgres"
        } else {
            "/sqlite"
        }
    }

    /// One durable write per request (`/sqlite`, or `/postgres`) with the harness's track body.
    pub async fn durable(&self, perf: &Path, secs: u64, conns: usize) -> anyhow::Result<WrkResult> {
        let url = format!("{}{}", self.url, self.durable_path());
        run(perf, "track.lua", &url, "", secs, conns, &[]).await
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_result_line() {
        let out = "# wrk ...\nRESULT requests=100 seconds=10.00 rps=10.5 p50_ms=1.0 p90_ms=2 p99_ms=3.25 p999_ms=4 max_ms=5 non2xx=2 connect_err=0\n";
        let r = parse_result(out).unwrap();
        assert_eq!((r.rps, r.p99_ms, r.non2xx), (10.5, 3.25, 2));
        assert!(parse_result("nothing").is_err());
    }
}
