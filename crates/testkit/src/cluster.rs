//! Several `herald serve` processes on one database, for the tests of a cluster
//! (docs/deploy.md "Several nodes"): each node is the real binary in a process of its own,
//! with a role, a name (`HERALD_NODE_NAME`) and a port of its own, and can be stopped
//! (SIGTERM), killed (SIGKILL) and started again on the same port.
//!
//! The harness knows nothing of the binary's path or settings: the caller gives both (the
//! binary is `CARGO_BIN_EXE_herald` in the herald crate's tests).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// One node: its settings and, while it runs, its process.
pub struct Node {
    pub name: String,
    pub role: String,
    pub port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Node {
    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// The nodes of one cluster, sharing the settings given to [`Cluster::new`].
pub struct Cluster {
    bin: PathBuf,
    common: Vec<(String, String)>,
    show_logs: bool,
    pub nodes: Vec<Node>,
}

impl Cluster {
    /// A cluster of `bin serve` processes, each with the `common` settings (`HERALD_*`
    /// variables: the database, the secret, the relay...). The nodes' logs are dropped unless
    /// `HERALD_TEST_NODE_STDERR=inherit`.
    pub fn new<K: Into<String>, V: Into<String>>(
        bin: impl Into<PathBuf>,
        common: impl IntoIterator<Item = (K, V)>,
    ) -> Cluster {
        Cluster {
            bin: bin.into(),
            common: common
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            show_logs: std::env::var("HERALD_TEST_NODE_STDERR").as_deref() == Ok("inherit"),
            nodes: Vec::new(),
        }
    }

    /// Starts a node with `role` (`all`, `api`, `worker`) and `extra` settings on top of the
    /// common ones, and waits until its `/health` answers; returns its index.
    pub async fn start(&mut self, role: &str, extra: &[(&str, &str)]) -> anyhow::Result<usize> {
        let port = free_port()?;
        let i = self.nodes.len();
        let mut env = self.common.clone();
        env.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        self.nodes.push(Node {
            name: format!("node-{i}-{role}"),
            role: role.to_owned(),
            port,
            env,
            child: None,
        });
        self.restart(i).await?;
        Ok(i)
    }

    /// Starts node `i` again (it must not be running), on its port, and waits for `/health`.
    pub async fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        let node = &mut self.nodes[i];
        if node.child.is_some() {
            bail!("{} is running", node.name);
        }
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve")
            .arg("--role")
            .arg(&node.role)
            .env("HERALD_LISTEN", format!("127.0.0.1:{}", node.port))
            .env("HERALD_NODE_NAME", &node.name)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if self.show_logs {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        for (k, v) in &node.env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        node.child = Some(child);
        self.wait_healthy(i, Duration::from_secs(30)).await
    }

    /// Waits until node `i` answers `GET /health` with 200 (failing if it exited).
    pub async fn wait_healthy(&mut self, i: usize, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let node = &mut self.nodes[i];
            if let Some(child) = node.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                node.child = None;
                bail!("{} exited while starting: {status}", node.name);
            }
            if let Ok((200, _)) = http_get(node.port, "/health", None).await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{} did not answer /health within {within:?}", node.name);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills node `i` with SIGKILL (no hand-over) and reaps it.
    pub fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(mut child) = self.nodes[i].child.take() {
            child.kill().context("kill -9")?;
            child.wait().context("reaping a killed node")?;
        }
        Ok(())
    }

    /// Stops node `i` with SIGTERM (a graceful hand-over) and waits up to `within` for it to
    /// exit, killing it after that; fails when it had to be killed or exited with an error.
    pub async fn stop(&mut self, i: usize, within: Duration) -> anyhow::Result<()> {
        let Some(mut child) = self.nodes[i].child.take() else {
            return Ok(());
        };
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .context("running kill -TERM")?;
        if !status.success() {
            bail!("kill -TERM {} failed", child.id());
        }
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait()? {
                if !status.success() {
                    bail!("{} exited with {status}", self.nodes[i].name);
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{} did not stop within {within:?}", self.nodes[i].name);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether node `i`'s process is still running (reaping it if it exited).
    pub fn running(&mut self, i: usize) -> bool {
        let node = &mut self.nodes[i];
        match node.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(_) => {
                node.child = None;
                false
            }
            None => false,
        }
    }

    /// The value of a counter or gauge line `name{labels} value` of node `i`'s `/metrics`
    /// (0 when absent), read with the bearer `token`.
    pub async fn metric(&self, i: usize, token: &str, line_prefix: &str) -> anyhow::Result<f64> {
        let (status, body) = http_get(self.nodes[i].port, "/metrics", Some(token)).await?;
        if status != 200 {
            bail!("/metrics of {} answered {status}", self.nodes[i].name);
        }
        Ok(body
            .lines()
            .filter(|l| l.starts_with(line_prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            let _ = self.kill(i);
        }
    }
}

/// A port free on loopback now (the kernel's choice; a node binds it right after).
pub fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

/// `GET path` on loopback `port` (HTTP/1.0, so the body is neither chunked nor kept alive):
/// the status and the body.
pub async fn http_get(
    port: u16,
    path: &str,
    bearer: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    let path = path.to_owned();
    let auth = bearer
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || -> anyhow::Result<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{auth}\r\n")?;
        let mut raw = String::new();
        s.read_to_string(&mut raw)?;
        let status = raw
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .context("no status line")?;
        let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        Ok((status, body.to_owned()))
    })
    .await?
}
