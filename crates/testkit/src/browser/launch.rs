//! Finding and starting a headless Chromium, or joining the one the test command started.
//!
//! `scripts/test` starts one Chromium for the whole run (`scripts/chromium`) and passes its
//! DevTools address in `HERALD_TEST_CHROMIUM_WS`; every test process connects to it and works
//! in a browser context of its own (its own cookies and storage). Run outside the script, a
//! test process starts a private Chromium and kills it when done.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::process::{Child, Command};

/// `scripts/chromium`, which holds the flags that work on these machines.
fn script() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/chromium"
    ))
}

/// The Chromium binary: `HERALD_TEST_CHROMIUM`, else `chromium` or `chromium-browser` or
/// `google-chrome` on the PATH (the order `scripts/chromium` tries them in).
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HERALD_TEST_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// A Chromium this process started; killed on drop.
pub struct OwnedChromium {
    child: Child,
    _profile: tempfile::TempDir,
    pub ws_url: String,
}

impl Drop for OwnedChromium {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// Starts Chromium headless (through `scripts/chromium`, with `binary` in
/// `HERALD_TEST_CHROMIUM`) with a fresh profile, and waits for its DevTools address.
pub async fn start(binary: &std::path::Path) -> anyhow::Result<OwnedChromium> {
    let profile = tempfile::tempdir().context("a profile directory for Chromium")?;
    let child = Command::new(script())
        .arg(profile.path())
        .env("HERALD_TEST_CHROMIUM", binary)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} through scripts/chromium", binary.display()))?;
    let ws_url = devtools_address(profile.path(), Duration::from_secs(20)).await?;
    Ok(OwnedChromium {
        child,
        _profile: profile,
        ws_url,
    })
}

/// Chromium writes its port and browser path into `DevToolsActivePort` in the profile once
/// it listens.
async fn devtools_address(profile: &std::path::Path, within: Duration) -> anyhow::Result<String> {
    let file = profile.join("DevToolsActivePort");
    let start = Instant::now();
    loop {
        if let Ok(text) = tokio::fs::read_to_string(&file).await {
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                return Ok(format!("ws://127.0.0.1:{}{}", port.trim(), path.trim()));
            }
        }
        if start.elapsed() > within {
            bail!("Chromium did not open its DevTools port within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
