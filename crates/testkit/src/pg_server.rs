//! A PostgreSQL server of a test's own, in a temporary directory on a free loopback port, for
//! tests that restart or stop the database (the shared test server must stay up for the other
//! tests). Made with the `initdb` and `pg_ctl` of the highest version under
//! `/usr/lib/postgresql/*/bin` (Debian's layout) or on the PATH; run as the `postgres` user
//! (through `runuser`) when this process is root, since PostgreSQL refuses to run as root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

pub struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    as_postgres: bool,
}

impl PgServer {
    /// Creates and starts a server; `Ok(None)` when no PostgreSQL server binaries are
    /// installed (the caller skips, or fails in CI).
    pub fn start() -> anyhow::Result<Option<PgServer>> {
        let Some(bin) = server_binaries() else {
            return Ok(None);
        };
        let as_postgres = running_as_root();
        let dir = tempfile::tempdir().context("a directory for the PostgreSQL server")?;
        if as_postgres {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:")
                .arg(dir.path()))?;
        }
        let port = crate::cluster::free_port()?;
        let server = PgServer {
            bin,
            dir,
            port,
            as_postgres,
        };
        server.pg(
            "initdb",
            &[
                "-D",
                &server.data(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        server.pg_ctl(&["start", "-w", "-t", "30"])?;
        Ok(Some(server))
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server (fast: connections are closed) and starts it again, waiting until it
    /// accepts connections.
    pub fn restart(&self) -> anyhow::Result<()> {
        self.pg_ctl(&["restart", "-m", "fast", "-w", "-t", "30"])
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn pg_ctl(&self, args: &[&str]) -> anyhow::Result<()> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log").display().to_string();
        let data = self.data();
        let mut all = vec!["-D", &data, "-l", &log, "-o", &options];
        all.extend_from_slice(args);
        self.pg("pg_ctl", &all)
    }

    fn pg(&self, tool: &str, args: &[&str]) -> anyhow::Result<()> {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.arg("-u").arg("postgres").arg("--").arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(self.dir.path());
        run(&mut cmd).with_context(|| format!("{tool} {}", args.join(" ")))
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w"]);
    }
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{:?} failed ({}): {}{}",
            cmd.get_program(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The directory holding `initdb`, `pg_ctl` and `postgres`: the highest version under
/// `/usr/lib/postgresql`, else the PATH's.
fn server_binaries() -> Option<PathBuf> {
    let has_all = |d: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|t| d.join(t).is_file())
    };
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_all(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Some(d);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|d| has_all(d))
}

/// Whether this process runs as root (PostgreSQL will not; `runuser` drops to `postgres`).
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
