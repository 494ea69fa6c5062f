//! Password hashing with argon2id (PHC strings) on a small, fixed pool of threads.
//!
//! Invariants: argon2 is memory-hard (about 19 MiB per hash with the default parameters), so
//! at most `threads` hashes run at once, each on a thread of the pool (never on the async
//! runtime's threads, and never on a growing set of blocking threads whose allocator arenas
//! would keep the memory); at most `queue` more wait in a bounded queue, and a request past
//! that is refused at once with [`HashError::Busy`] (429 `RATE_LIMIT_EXCEEDED` with
//! `Retry-After` at the edge). Memory in use for hashing is thus bounded by
//! `threads × 19 MiB`, whatever the number of logins in flight.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use axum::http::StatusCode;
use rand::RngCore;

use crate::error::ApiError;

type Job = Box<dyn FnOnce() + Send>;

/// Seconds a client refused with [`HashError::Busy`] is told to wait.
pub const BUSY_RETRY_AFTER_SECS: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("too many password checks are waiting")]
    Busy,
    #[error("the password hashing thread failed")]
    Failed,
}

impl From<HashError> for ApiError {
    fn from(e: HashError) -> Self {
        match e {
            HashError::Busy => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMIT_EXCEEDED",
                "Too many sign-ins are being checked right now",
            )
            .with_suggestion(format!("Retry after {BUSY_RETRY_AFTER_SECS} second"))
            .with_retry_after(BUSY_RETRY_AFTER_SECS),
            HashError::Failed => ApiError::internal(e),
        }
    }
}

/// The hashing threads and their bounded queue. Dropping the pool stops its threads once
/// the queued work is done.
pub struct PasswordPool {
    queue: SyncSender<Job>,
}

impl PasswordPool {
    /// `threads` hashing threads and room for `queue` waiting requests (each at least 1).
    pub fn new(threads: usize, queue: usize) -> std::io::Result<PasswordPool> {
        let (tx, rx) = sync_channel::<Job>(queue.max(1));
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("herald-argon2-{i}"))
                .spawn(move || work(&rx))?;
        }
        Ok(PasswordPool { queue: tx })
    }

    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(f());
        });
        match self.queue.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(HashError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(HashError::Failed),
        }
        result.await.map_err(|_| HashError::Failed)
    }

    /// A new PHC string for `password`.
    pub async fn hash(&self, password: String) -> Result<String, ApiError> {
        let phc = self
            .run(move || {
                let mut salt = [0u8; 16];
                rand::rng().fill_bytes(&mut salt);
                Argon2::default()
                    .hash_password_with_salt(password.as_bytes(), &salt)
                    .map(|h| h.to_string())
                    .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))
            })
            .await??;
        Ok(phc)
    }

    /// False for a wrong password or an unreadable hash. With `None` (no such user) a dummy
    /// hash is checked, so the answer takes as long either way.
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, HashError> {
        const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$6c1hDBM1CbJb2tbuNvmQ5zKYUgxsmKVtYaXoWbWQyvA";
        let known = phc.is_some();
        let phc = phc.unwrap_or_else(|| DUMMY.to_owned());
        self.run(move || {
            let ok = PasswordHash::new(&phc)
                .map(|h| {
                    Argon2::default()
                        .verify_password(password.as_bytes(), &h)
                        .is_ok()
                })
                .unwrap_or(false);
            ok && known
        })
        .await
    }
}

fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv()
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_a_full_queue_is_busy() {
        let pool = PasswordPool::new(1, 1).expect("pool");
        let phc = pool.hash("a password".into()).await.expect("hash");
        let check = |pw: &str, phc: Option<&str>| pool.verify(pw.into(), phc.map(str::to_owned));
        assert!(check("a password", Some(&phc)).await.expect("verify"));
        assert!(!check("wrong", Some(&phc)).await.expect("verify"));
        assert!(!check("a password", None).await.expect("verify"));
        // join! polls each once before awaiting: one runs, one waits, the others are refused.
        let p = Some(phc.as_str());
        let (a, b, c, d) = tokio::join!(
            check("a password", p),
            check("a password", p),
            check("a password", p),
            check("a password", p)
        );
        let results = [a, b, c, d];
        assert!(
            results.iter().any(|r| matches!(r, Err(HashError::Busy))),
            "{results:?}"
        );
        assert!(matches!(results[0], Ok(true)), "{results:?}");
    }
}
