//! The local outbox: messages kept on disk as `<dir>/<key>.eml`; nothing leaves the machine.
//!
//! Invariants:
//! - A message is written atomically: a temporary file in the same directory, fsync, rename,
//!   fsync of the directory. [`OutboxTransport::send`] answers only after the directory's
//!   fsync, so a reader sees either no file or the whole message, and a message answered as
//!   kept survives a crash. Keys are restricted to `[A-Za-z0-9._-]` (no leading dot), so they
//!   cannot leave the directory. Sending the same key again replaces the file (idempotent
//!   retries).
//! - One writer thread per outbox writes every message, by group commit: it takes the
//!   messages waiting (at most [`MAX_BATCH`]), writes their temporary files, fsyncs them,
//!   renames them, and fsyncs the directory once for the batch. One message's failure fails
//!   that message alone; a failed directory fsync fails every message of its batch (their
//!   retries write them again). Why one thread: with a blocking task per delivery, 32
//!   deliveries created files in one directory at once, and the kernel's directory lock and
//!   inode allocation took about a fifth of both cores, more than the DKIM signatures
//!   (`perf`; docs/benchmarks.md, `send --concurrent`).
//! - Temporary files are named `.<key>.eml.<random>.tmp`, never a key's own name (keys cannot
//!   start with a dot), so [`OutboxTransport::list`] and readers never see one. A process killed
//!   between a temporary file's creation and its rename leaves it behind;
//!   [`OutboxTransport::remove_stale_temps`] removes those at startup, before this process
//!   writes anything (a data directory belongs to one running server, so at that moment no
//!   writer can own one).

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, mpsc};
use std::time::SystemTime;

use tokio::sync::oneshot;

use crate::transport::TransportError;

/// Most messages the writer takes into one group commit.
pub const MAX_BATCH: usize = 256;

const EML: &str = ".eml";

const TMP: &str = ".tmp";

/// Whether `name` is one of the writer's temporary files (`.<key>.eml.<random>.tmp`).
fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TMP) && name.contains(EML)
}

/// Messages kept on disk as `<dir>/<key>.eml`; nothing leaves the machine.
#[derive(Debug, Clone)]
pub struct OutboxTransport {
    dir: PathBuf,
    /// The writer thread's queue, started on the first send; the thread ends when the last
    /// clone of this outbox is dropped.
    writer: OnceLock<mpsc::Sender<Pending>>,
}

/// A message waiting for the writer.
#[derive(Debug)]
struct Pending {
    path: PathBuf,
    data: Vec<u8>,
    done: oneshot::Sender<io::Result<()>>,
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn invalid_key(key: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("invalid outbox key {key:?}"),
    )
}

impl OutboxTransport {
    /// An outbox in `dir`. No I/O; the directory is created on first write if missing.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            writer: OnceLock::new(),
        }
    }

    /// The directory holding the messages.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file a key is stored in.
    pub fn path_for(&self, key: &str) -> io::Result<PathBuf> {
        if !valid_key(key) {
            return Err(invalid_key(key));
        }
        Ok(self.dir.join(format!("{key}{EML}")))
    }

    /// Writes `<dir>/<key>.eml` atomically and durably; returns a reply naming the file, not
    /// its directory (the reply ends up in message histories that API clients read).
    pub async fn send(&self, key: &str, raw: &[u8]) -> Result<String, TransportError> {
        self.send_owned(key, raw.to_vec()).await
    }

    /// [`Self::send`] taking the bytes over: the writer thread writes them from this buffer
    /// (no copy) and drops it once written.
    pub async fn send_owned(&self, key: &str, raw: Vec<u8>) -> Result<String, TransportError> {
        let path = self
            .path_for(key)
            .map_err(|e| TransportError::Permanent(e.to_string()))?;
        let (done, written) = oneshot::channel();
        let stopped = || TransportError::Transient("the outbox writer stopped".to_owned());
        let pending = Pending {
            path,
            data: raw,
            done,
        };
        self.writer().send(pending).map_err(|_| stopped())?;
        written
            .await
            .map_err(|_| stopped())?
            .map_err(|e| TransportError::Transient(format!("writing {key}{EML}: {e}")))?;
        Ok(format!("250 kept as {key}{EML}"))
    }

    /// The writer's queue, starting the thread on first use. If the thread cannot start, the
    /// queue has no receiver and every send answers that the writer stopped.
    fn writer(&self) -> &mpsc::Sender<Pending> {
        self.writer.get_or_init(|| {
            let (queue, pending) = mpsc::channel();
            let dir = self.dir.clone();
            let started = std::thread::Builder::new()
                .name("herald-outbox".into())
                .spawn(move || run_writer(&dir, &pending));
            if let Err(e) = started {
                tracing::error!(error = %e, "starting the outbox writer failed");
            }
            queue
        })
    }

    /// Removes the temporary files a killed process left in the outbox directory (only those,
    /// only there; `.eml` files are untouched); returns how many. Call it at startup, before
    /// the first send of this process: a temporary file being written would be removed too.
    /// A missing directory has none.
    pub fn remove_stale_temps(&self) -> io::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            let is_temp = entry.file_name().to_str().is_some_and(is_temp_name);
            if !is_temp || !entry.file_type()?.is_file() {
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(removed)
    }

    /// The bytes stored under `key`.
    pub fn read(&self, key: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.path_for(key)?)
    }

    /// Every stored message as `(key, size in bytes, modification time)`, oldest first.
    /// A missing directory is an empty outbox; unreadable entries are skipped.
    pub fn list(&self) -> Vec<(String, u64, SystemTime)> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "cannot list the outbox");
                }
                return Vec::new();
            }
        };
        let mut out: Vec<(String, u64, SystemTime)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let key = name.strip_suffix(EML)?;
                if !valid_key(key) {
                    return None;
                }
                let meta = entry.metadata().ok()?;
                if !meta.is_file() {
                    return None;
                }
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                Some((key.to_owned(), meta.len(), modified))
            })
            .collect();
        out.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
        out
    }
}

/// The writer thread: one group commit per round of waiting messages, until every sender is
/// gone.
fn run_writer(dir: &Path, pending: &mpsc::Receiver<Pending>) {
    while let Ok(first) = pending.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match pending.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let results = write_batch(dir, &batch);
        for (p, result) in batch.into_iter().zip(results) {
            // The sender may have gone (shutdown); the file is written anyway.
            let _ = p.done.send(result);
        }
    }
}

/// Writes every message of `batch` (temporary file, fsync, rename), then fsyncs the directory
/// once; one result per message, in order.
fn write_batch(dir: &Path, batch: &[Pending]) -> Vec<io::Result<()>> {
    // All files first, then their fsyncs: the kernel can write them out together.
    let staged: Vec<io::Result<(PathBuf, File)>> = batch
        .iter()
        .map(|p| write_temp(dir, &p.path, &p.data))
        .collect();
    let mut results: Vec<io::Result<()>> = batch
        .iter()
        .zip(staged)
        .map(|(p, staged)| {
            let (tmp, file) = staged?;
            let result = file.sync_all().and_then(|()| {
                drop(file);
                std::fs::rename(&tmp, &p.path)
            });
            if result.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            result
        })
        .collect();
    if results.iter().any(Result::is_ok)
        && let Err(e) = sync_dir(dir)
    {
        for r in results.iter_mut().filter(|r| r.is_ok()) {
            *r = Err(io::Error::new(e.kind(), format!("syncing the outbox: {e}")));
        }
    }
    results
}

/// A new temporary file beside `path` holding `data`, not yet synced.
fn write_temp(dir: &Path, path: &Path, data: &[u8]) -> io::Result<(PathBuf, File)> {
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let tmp = dir.join(format!(
        ".{file_name}.{}{TMP}",
        uuid::Uuid::new_v4().simple()
    ));
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
    };
    let mut file = match open() {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            open()?
        }
        Err(e) => return Err(e),
    };
    if let Err(e) = file.write_all(data) {
        drop(file);
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok((tmp, file))
}

/// Makes the renames durable. Directories cannot be opened for sync on every platform.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Temporary files left by a killed writer go; messages, other files and directories stay.
    #[test]
    fn stale_temporary_files_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = OutboxTransport::new(dir.path().join("outbox"));
        assert_eq!(outbox.remove_stale_temps().unwrap(), 0, "no directory yet");
        let d = outbox.dir().to_owned();
        std::fs::create_dir_all(&d).unwrap();
        let stale = [
            ".m1.eml.0123456789abcdef0123456789abcdef.tmp",
            ".m2.eml.fedcba9876543210fedcba9876543210.tmp",
        ];
        for name in stale {
            std::fs::write(d.join(name), b"half a message").unwrap();
        }
        let kept = ["m1.eml", "m3.eml", "notes.tmp", "README"];
        for name in kept {
            std::fs::write(d.join(name), b"whole").unwrap();
        }
        std::fs::create_dir(d.join(".sub.eml.x.tmp")).unwrap();
        assert_eq!(outbox.remove_stale_temps().unwrap(), 2);
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [".sub.eml.x.tmp", "README", "m1.eml", "m3.eml", "notes.tmp"]
        );
        assert_eq!(outbox.read("m1").unwrap(), b"whole");
    }

    /// Concurrent messages share group commits; one that cannot be written (its name is taken
    /// by a directory) fails alone, and no temporary file is left.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_messages_land_whole_and_a_failure_stays_alone() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = OutboxTransport::new(dir.path().join("outbox"));
        std::fs::create_dir_all(dir.path().join("outbox/blocked.eml")).unwrap();
        let mut sends = tokio::task::JoinSet::new();
        for i in 0..300 {
            let outbox = outbox.clone();
            sends.spawn(async move {
                let key = if i == 150 {
                    "blocked".to_owned()
                } else {
                    format!("m{i:04}")
                };
                let body = format!("message {i}\r\n").repeat(i + 1);
                (
                    key.clone(),
                    body.clone(),
                    outbox.send(&key, body.as_bytes()).await,
                )
            });
        }
        let mut failed = Vec::new();
        while let Some(joined) = sends.join_next().await {
            let (key, body, result) = joined.unwrap();
            match result {
                Ok(reply) => {
                    assert_eq!(reply, format!("250 kept as {key}.eml"));
                    assert_eq!(outbox.read(&key).unwrap(), body.as_bytes());
                }
                Err(e) => failed.push((key, e)),
            }
        }
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].0, "blocked");
        assert!(failed[0].1.is_transient(), "{:?}", failed[0].1);
        assert_eq!(outbox.list().len(), 299);
        let temps: Vec<String> = std::fs::read_dir(outbox.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(temps.is_empty(), "{temps:?}");
    }

    #[test]
    fn key_validation() {
        for good in ["0192f00d-1111-7000-8000-000000000042", "a.b_c-d", "x"] {
            assert!(valid_key(good), "{good}");
        }
        for bad in ["", ".hidden", "../etc/passwd", "a/b", "a\\b", "a b", "é"] {
            assert!(!valid_key(bad), "{bad}");
        }
    }

    #[test]
    fn a_batch_reports_each_message_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let pending = |name: &str| {
            let (done, _) = oneshot::channel();
            Pending {
                path: dir.path().join(name),
                data: name.as_bytes().to_vec(),
                done,
            }
        };
        std::fs::create_dir(dir.path().join("b.eml")).unwrap();
        let batch = [pending("a.eml"), pending("b.eml"), pending("c.eml")];
        let results = write_batch(dir.path(), &batch);
        let ok: Vec<bool> = results.iter().map(Result::is_ok).collect();
        assert_eq!(ok, [true, false, true]);
        assert_eq!(std::fs::read(dir.path().join("c.eml")).unwrap(), b"c.eml");
    }
}
