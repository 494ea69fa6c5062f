//! SQLite is one node. `herald serve` on SQLite holds an exclusive lock on a file beside the
//! database (`<database>.lock`, so `herald.db.lock` in the data directory by default) for the
//! life of the process, and a second `herald serve` on the same database refuses to start and
//! says why. The kernel drops the lock when the process ends, however it ends (`kill -9`
//! included), so a stale lock file never blocks a restart.
//!
//! Only `serve` takes it: `herald migrate`, `demo` or `outbox` beside a running server are
//! fine (SQLite serialises their writes), and a test runs several in-process nodes on one
//! database on purpose.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::config::Config;

/// The lock, held until dropped (the process's life).
#[derive(Debug)]
pub struct SingleNodeLock {
    _file: File,
    pub path: PathBuf,
}

/// The SQLite database file `database_url` names, or `None` for PostgreSQL.
fn sqlite_file(database_url: &str) -> Option<PathBuf> {
    let rest = database_url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// Takes the lock for a SQLite database; `None` on PostgreSQL (any number of nodes).
pub fn lock(config: &Config) -> anyhow::Result<Option<SingleNodeLock>> {
    let Some(db) = sqlite_file(&config.database_url) else {
        return Ok(None);
    };
    let mut path = db.into_os_string();
    path.push(".lock");
    lock_file(Path::new(&path)).map(Some)
}

fn lock_file(path: &Path) -> anyhow::Result<SingleNodeLock> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the data directory {}", dir.display()))?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("opening the lock file {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => String::new(),
                pid => format!(" (process {pid})"),
            };
            bail!(
                "another herald process{holder} is serving this SQLite database (lock {}). \
                 SQLite runs as one node: stop the other process first, or use PostgreSQL \
                 (HERALD_DATABASE_URL=postgres://...) to run several nodes",
                path.display()
            );
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    }
    // Who holds it, for the message a second process prints.
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    write!(file, "{}", std::process::id())?;
    file.flush()?;
    Ok(SingleNodeLock {
        _file: file,
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_the_sqlite_file_only() {
        assert_eq!(
            sqlite_file("sqlite:///data/herald.db"),
            Some(PathBuf::from("/data/herald.db"))
        );
        assert_eq!(
            sqlite_file("sqlite://rel/h.db?mode=rwc"),
            Some(PathBuf::from("rel/h.db"))
        );
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
        assert_eq!(sqlite_file("sqlite::memory:"), None);
    }

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("herald.db.lock");
        let first = lock_file(&path).unwrap();
        // Another open file description, as another process would have.
        let err = lock_file(&path).unwrap_err().to_string();
        assert!(err.contains("SQLite runs as one node"), "{err}");
        assert!(
            err.contains(&format!("process {}", std::process::id())),
            "{err}"
        );
        drop(first);
        lock_file(&path).unwrap();
    }
}
