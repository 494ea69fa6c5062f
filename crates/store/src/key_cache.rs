//! Projects by API key, remembered for a second: every `/v1/track` and `/v1/send` names its
//! project by key, and one read per request was a round trip to a database thread per request.
//!
//! Guarantees:
//! - An entry lives at most [`TTL`]; every project write of this process (update, new keys,
//!   delete) clears the cache at once, so on this node a regenerated key stops working with its
//!   commit. Another node may still accept the old key, or see the old settings (tracking,
//!   language, disabled), for up to [`TTL`].
//! - Only keys that name a project are remembered (an unknown key is read every time), and at
//!   most [`CAPACITY`] of them: past that the cache starts over.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::accounts::Project;

pub const TTL: Duration = Duration::from_secs(1);
const CAPACITY: usize = 10_000;

#[derive(Default)]
pub(crate) struct KeyCache {
    /// Public key, or SHA-256 of the secret key, to the project and when it was read.
    entries: Mutex<HashMap<String, (Instant, Project)>>,
}

impl KeyCache {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (Instant, Project)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, key: &str) -> Option<Project> {
        let entries = self.lock();
        let (read_at, project) = entries.get(key)?;
        (read_at.elapsed() < TTL).then(|| project.clone())
    }

    pub(crate) fn put(&self, key: &str, project: &Project) {
        let mut entries = self.lock();
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(key.to_owned(), (Instant::now(), project.clone()));
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}
