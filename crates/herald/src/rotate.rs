//! `herald rotate-secret`: replaces the server secret and re-seals every DKIM key under it.
//!
//! Invariants:
//! - When the secret lives in the data directory (`data_dir/secret`, no `HERALD_SECRET`), the
//!   new one is generated (or taken from `HERALD_NEW_SECRET`) and written to
//!   `data_dir/secret.next` before the database changes, and moved over `data_dir/secret` only
//!   after the re-sealed keys are committed. An interrupted run is finished by running it
//!   again: it reuses `secret.next`, and keys already sealed under it are left as they are.
//! - When the secret is configured (`HERALD_SECRET` or the file), the new one must be given in
//!   `HERALD_NEW_SECRET` (never on the command line, where `ps` would show it) and the operator
//!   configures it afterwards; nothing is written to the data directory.
//! - The links in mail already sent (open pixel, clicks, list pages) carry tokens made with the
//!   old secret: it is kept as retired, so they keep working (a key ring: the newest secret
//!   signs, every kept one verifies) until the operator runs `herald rotate-secret
//!   --drop-retired`. With the secret in the data directory the old one is appended to
//!   `data_dir/secret.retired` (mode 0600) after the keys are committed and before the new
//!   secret replaces the old; with a configured secret the operator lists it in
//!   `HERALD_RETIRED_SECRETS`.
//! - The database's fingerprint of the nodes' shared secret (`crate::node_secret`) becomes the
//!   new secret's once the keys are re-sealed: nodes then start with the new secret only.
//! - Sessions are signed with a key derived from the secret and do not follow the ring:
//!   everyone signs in again (a rotation is what an operator does after a suspected leak).

use std::path::{Path, PathBuf};

use anyhow::Context;
use herald_engine::secret_rotation::{Rotation, reseal_dkim_keys};

use crate::app::open_store;
use crate::config::{Config, MIN_SECRET_LEN, generate_secret};

/// What `rotate-secret` did.
#[derive(Debug)]
pub struct RotateOutcome {
    pub rotation: Rotation,
    /// The secret file written in the data directory, when the secret lives there.
    pub written: Option<PathBuf>,
    /// The file of retired secrets the old one was added to, when the secret lives in the data
    /// directory (a configured one goes in `HERALD_RETIRED_SECRETS`, by the operator).
    pub retired: Option<PathBuf>,
}

/// Rotates the secret of `config` to `new_secret` (generated when `None` and the secret lives
/// in the data directory).
pub async fn rotate_secret(
    config: &Config,
    new_secret: Option<String>,
) -> anyhow::Result<RotateOutcome> {
    let in_data_dir = config.secret.is_none();
    let current = config.data_dir.join("secret");
    let next = config.data_dir.join("secret.next");
    if in_data_dir {
        anyhow::ensure!(
            current.exists(),
            "no secret to rotate: {} does not exist and HERALD_SECRET is not set",
            current.display()
        );
    }
    let old = config.load_or_create_secret()?;
    let new = match (new_secret.filter(|s| !s.trim().is_empty()), in_data_dir) {
        (Some(s), _) => {
            let s = s.trim().to_owned();
            anyhow::ensure!(
                s.len() >= MIN_SECRET_LEN,
                "the new secret must be at least {MIN_SECRET_LEN} characters"
            );
            s
        }
        (None, true) => match std::fs::read_to_string(&next) {
            // An interrupted earlier run: finish it with the same secret.
            Ok(s) if s.trim().len() >= MIN_SECRET_LEN => s.trim().to_owned(),
            _ => generate_secret(),
        },
        (None, false) => anyhow::bail!(
            "the secret is configured (HERALD_SECRET or the configuration file): put the new \
             one in HERALD_NEW_SECRET, run again, then configure it in place of the old one"
        ),
    };
    if in_data_dir {
        replace_private(&next, &new).with_context(|| format!("writing {}", next.display()))?;
    }
    let store = open_store(config).await?;
    let rotation = reseal_dkim_keys(&store, &old, new.as_bytes()).await;
    // The nodes' shared secret is the new one from now on (node_secret.rs); a run interrupted
    // before this line is finished by running it again.
    let recorded = match &rotation {
        Ok(_) => store
            .set_node_secret_fingerprint(&crate::node_secret::fingerprint(new.as_bytes()))
            .await
            .context("recording the new secret's fingerprint"),
        Err(_) => Ok(()),
    };
    store.close().await;
    let rotation = rotation?;
    recorded?;
    let retired = if in_data_dir {
        let path = config.retired_secrets_file();
        let old = String::from_utf8_lossy(&old).into_owned();
        // Only the file's own lines: secrets of HERALD_RETIRED_SECRETS stay in the configuration.
        let before = match std::fs::read_to_string(&path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let mut kept: Vec<&str> = before.lines().map(str::trim).collect();
        kept.push(&old);
        let mut text = String::new();
        for (i, k) in kept.iter().enumerate() {
            if !k.is_empty() && *k != new && !kept[..i].contains(k) {
                text.push_str(k);
                text.push('\n');
            }
        }
        replace_private(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        Some(path)
    } else {
        None
    };
    let written = if in_data_dir {
        std::fs::rename(&next, &current)
            .with_context(|| format!("moving {} to {}", next.display(), current.display()))?;
        sync_dir(&config.data_dir);
        Some(current)
    } else {
        None
    };
    Ok(RotateOutcome {
        rotation,
        written,
        retired,
    })
}

/// What `rotate-secret --drop-retired` did.
#[derive(Debug)]
pub struct DropOutcome {
    /// Retired secrets removed from the data directory's file.
    pub dropped: usize,
    /// `HERALD_RETIRED_SECRETS` still lists secrets: the operator removes them.
    pub configured_left: usize,
}

/// Forgets the retired secrets kept in the data directory: links made with them stop working
/// at the servers' next start. Those listed in `HERALD_RETIRED_SECRETS` are the operator's to
/// remove.
pub fn drop_retired(config: &Config) -> anyhow::Result<DropOutcome> {
    let path = config.retired_secrets_file();
    let dropped = match std::fs::read_to_string(&path) {
        Ok(s) => s.lines().filter(|l| !l.trim().is_empty()).count(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    match std::fs::remove_file(&path) {
        Ok(()) => sync_dir(&config.data_dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
    }
    Ok(DropOutcome {
        dropped,
        configured_left: config.retired_secrets.len(),
    })
}

/// Writes `contents` to `path` (mode 0600 on Unix) through a temporary file and a rename.
fn replace_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(&tmp)?;
    f.write_all(contents.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// Makes a rename durable where the platform allows it (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}
