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
//! - Sessions are signed with a key derived from the secret, so everyone signs in again.

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
    store.close().await;
    let rotation = rotation?;
    let written = if in_data_dir {
        std::fs::rename(&next, &current)
            .with_context(|| format!("moving {} to {}", next.display(), current.display()))?;
        sync_dir(&config.data_dir);
        Some(current)
    } else {
        None
    };
    Ok(RotateOutcome { rotation, written })
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
