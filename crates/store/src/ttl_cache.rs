//! Small in-memory caches of what nearly every request reads and rarely changes, each entry
//! kept at most [`TTL`]:
//! - projects by API key (public key, or SHA-256 of the secret key): every `/v1/track` and
//!   `/v1/send` names its project by key, and a read per request was a round trip to a database
//!   thread per request. Only keys that name a project are kept.
//! - whether a project has a tracked dynamic segment: asked on every contact write, to decide
//!   whether the write enqueues a membership re-evaluation.
//! - whether a campaign was cancelled: asked before each of its messages is handed over, so a
//!   cancel stops messages already claimed and waiting in the throttle.
//! - a project's verified sender domain by name: asked on every `/v1/send` (only verified
//!   rows are kept, so a domain verified just now is found at once).
//!
//! Guarantees: every write of this process that changes a cached answer clears that cache at
//! once (project settings, new keys, deletion, disabling and enabling, the disabling on commit;
//! segment create, update, delete; campaign cancel; a domain check's result, a domain's
//! deletion), so on this node
//! a regenerated key stops working with its commit. Another node may still answer from its
//! cache for up to [`TTL`]: accept an old key, see old project settings, or skip the
//! re-evaluation of a contact changed in the second after a tracked segment was created (the
//! periodic recompute catches that up). At most [`CAPACITY`] entries: past that a cache starts
//! over.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub const TTL: Duration = Duration::from_secs(1);
const CAPACITY: usize = 10_000;

pub(crate) struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K, V> Default for TtlCache<K, V> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    fn lock(&self) -> MutexGuard<'_, HashMap<K, (Instant, V)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let entries = self.lock();
        let (read_at, value) = entries.get(key)?;
        (read_at.elapsed() < TTL).then(|| value.clone())
    }

    pub(crate) fn put(&self, key: K, value: V) {
        let mut entries = self.lock();
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(key, (Instant::now(), value));
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

/// Projects by API key.
pub(crate) type KeyCache = TtlCache<String, crate::accounts::Project>;
/// Whether a project has a tracked dynamic segment.
pub(crate) type TrackedSegments = TtlCache<herald_core::ids::Uuid, bool>;
/// Whether a campaign was cancelled (asked before each of its messages is handed over).
pub(crate) type CancelledCampaigns = TtlCache<herald_core::ids::Uuid, bool>;
/// Verified domain rows by (project, domain).
pub(crate) type VerifiedDomains =
    TtlCache<(herald_core::ids::Uuid, String), crate::domains::Domain>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_clear() {
        let c: TtlCache<u8, u8> = TtlCache::default();
        c.put(1, 2);
        assert_eq!(c.get(&1), Some(2));
        c.clear();
        assert_eq!(c.get(&1), None);
        c.put(1, 3);
        std::thread::sleep(TTL + Duration::from_millis(20));
        assert_eq!(c.get(&1), None, "expired");
    }
}
