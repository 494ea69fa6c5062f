//! A Herald node in a process of its own: the `herald` binary built beside this one, started
//! with `serve` on a configuration file written from a [`Config`].
//!
//! A benchmark whose target is Herald's memory measures this process: in-process, the RSS
//! also held the benchmark's own store (the one that seeded a million contacts), its client
//! and the SMTP sink, none of which a deployed node carries. The kernel keeps the peak
//! (`VmHWM`), so no sample can miss it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use herald::Config;

pub struct ChildNode {
    child: Child,
    _config_file: tempfile::NamedTempFile,
}

impl ChildNode {
    /// Starts `herald serve` with `config`. Its logs go to this process's stderr, at the level
    /// of `HERALD_LOG` (default `warn`).
    pub fn start(config: &Config) -> anyhow::Result<ChildNode> {
        let exe = herald_binary()?;
        let mut file = tempfile::NamedTempFile::new().context("creating the node's config")?;
        let toml = toml::to_string(config).context("writing the node's config")?;
        file.write_all(toml.as_bytes())?;
        file.flush()?;
        let log = std::env::var("HERALD_LOG").unwrap_or_else(|_| "warn".into());
        let child = Command::new(&exe)
            .arg("--config")
            .arg(file.path())
            .arg("serve")
            .env("HERALD_LOG", log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        Ok(ChildNode {
            child,
            _config_file: file,
        })
    }

    /// Fails if the node exited (it must run until [`ChildNode::stop`]).
    pub fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the Herald node exited early: {status}");
        }
        Ok(())
    }

    /// Its resident memory now, in MB.
    pub fn rss_mb(&self) -> anyhow::Result<f64> {
        self.status_mb("VmRSS:")
    }

    /// Its highest resident memory so far, in MB.
    pub fn peak_rss_mb(&self) -> anyhow::Result<f64> {
        self.status_mb("VmHWM:")
    }

    fn status_mb(&self, field: &str) -> anyhow::Result<f64> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse().ok())
            .with_context(|| format!("{path} has no {field}"))?;
        Ok(kb / 1024.0)
    }

    /// Stops the node as an operator would (SIGTERM, a graceful shutdown), killing it if it
    /// has not exited within 30 s.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status()?;
        ensure!(sent.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill()?;
        self.child.wait()?;
        bail!("the Herald node did not stop within 30 s of SIGTERM")
    }
}

impl Drop for ChildNode {
    fn drop(&mut self) {
        // A benchmark that failed midway leaves no node running.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `herald` beside the running benchmark binary (both in `target/release`).
pub fn herald_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?.with_file_name("herald");
    ensure!(
        exe.is_file(),
        "{} is missing: build it with `cargo build --release -p herald -p herald-bench`",
        exe.display()
    );
    Ok(exe)
}
