//! One window per key shared by every node on PostgreSQL (docs/deploy.md "Limits across
//! nodes"), counted in slices so a request rarely waits for the database.
//!
//! A node takes a slice of [`slice_for`] requests of a key's window with one statement
//! (`Store::take_rate_slice`) and counts it down in memory; the key's next request after the
//! slice is spent takes the next one. The database never grants past the limit, so the
//! cluster never lets more through than the limit; it can let fewer through by what the other
//! nodes hold unspent when the window runs out (less than a slice each: 2 % of the limit per
//! node, within 10 % up to six nodes). Once a slice comes back short, the window is spent and
//! this node refuses the key until the next window without asking again.
//!
//! When the database cannot be reached the request is let through (with a warning): the
//! limiter protects the service, and a request that needs the database fails on its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use herald_core::ids::Uuid;
use herald_store::Store;

use super::local::PRUNE_AT;
use super::{Decision, LimitKey};

/// Each slice is this fraction of the limit (at least one request).
const SLICES_PER_WINDOW: u32 = 50;

/// The requests one round trip takes ahead for a limit of `limit` per minute.
pub fn slice_for(limit: u32) -> u32 {
    (limit / SLICES_PER_WINDOW).max(1)
}

/// This node's share of one key's window.
#[derive(Default)]
struct Bucket {
    window: u64,
    /// Requests taken from the shared window and not yet spent here.
    tokens: u32,
    /// The shared window granted short: nothing left in it for anyone.
    spent: bool,
    /// The shared count at the last slice (every node's grants).
    used: u32,
}

pub struct SharedRateLimiter<K = Uuid> {
    store: Store,
    limit: u32,
    slice: u32,
    buckets: Mutex<HashMap<K, Arc<tokio::sync::Mutex<Bucket>>>>,
}

impl<K: LimitKey> SharedRateLimiter<K> {
    pub fn new(store: Store, limit_per_minute: u32) -> Self {
        let limit = limit_per_minute.max(1);
        Self {
            store,
            limit,
            slice: slice_for(limit),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    pub async fn check(&self, key: K, now_secs: u64) -> Decision {
        let window = now_secs / 60;
        let reset = 60 - now_secs % 60;
        let bucket = self.bucket(&key, window);
        // One slice at a time per key on this node: requests arriving meanwhile wait for it
        // and spend it, instead of each taking one.
        let mut b = bucket.lock().await;
        if b.window != window {
            *b = Bucket {
                window,
                ..Bucket::default()
            };
        }
        if b.tokens == 0 && !b.spent {
            // The window is the key's under this node's configured limit: a cluster's nodes
            // share one configuration, and a node configured otherwise (mid-way through a
            // rolling change of the limit, or a test's child process) keeps a window of its
            // own instead of spending another's by its larger slices.
            let name = format!("{}/{}", key.shared_name(), self.limit);
            let w = i64::try_from(window).unwrap_or(i64::MAX);
            match self
                .store
                .take_rate_slice(&name, w, self.slice, self.limit)
                .await
            {
                Ok(Some(s)) => {
                    b.tokens = s.granted;
                    b.used = s.used;
                    b.spent = s.granted < self.slice;
                }
                other => {
                    if let Err(e) = other {
                        tracing::warn!(error = %e, "rate limit window unreadable; request let through");
                    }
                    return Decision {
                        allowed: true,
                        limit: self.limit,
                        remaining: self.limit.saturating_sub(b.used),
                        reset,
                    };
                }
            }
        }
        let allowed = b.tokens > 0;
        if allowed {
            b.tokens -= 1;
        }
        Decision {
            allowed,
            limit: self.limit,
            remaining: self.limit.saturating_sub(b.used).saturating_add(b.tokens),
            reset,
        }
    }

    /// The key's bucket (made on first use); past [`PRUNE_AT`] keys, idle ones of past
    /// windows are dropped.
    fn bucket(&self, key: &K, window: u64) -> Arc<tokio::sync::Mutex<Bucket>> {
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= PRUNE_AT {
            map.retain(|_, b| b.try_lock().map_or(true, |b| b.window == window));
        }
        map.entry(key.clone()).or_default().clone()
    }
}
