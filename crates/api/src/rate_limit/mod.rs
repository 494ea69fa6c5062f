//! Requests per minute per key (a project; or a client address and route for the
//! unauthenticated account routes), in fixed one-minute windows of the node's clock (the
//! database's on PostgreSQL, `herald_engine::db_clock`).
//!
//! SQLite is one node: the windows are counted in this process ([`local`]), with no round
//! trip. On PostgreSQL every node counts in one shared window per key ([`shared`]), so the
//! limit holds across the nodes of a cluster (docs/deploy.md "Limits across nodes").

mod local;
mod shared;

use std::hash::Hash;
use std::net::IpAddr;

use herald_core::ids::Uuid;
use herald_store::{Dialect, Store};

pub use local::RateLimiter;
pub use shared::SharedRateLimiter;

/// The outcome for one request, with what the `RateLimit-*` headers say.
#[derive(Clone, Copy, Debug)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset: u64,
}

/// A key's name in the shared windows (one namespace for every limiter).
pub trait LimitKey: Hash + Eq + Clone {
    fn shared_name(&self) -> String;
}

impl LimitKey for Uuid {
    fn shared_name(&self) -> String {
        format!("p:{self}")
    }
}

impl LimitKey for (IpAddr, &'static str) {
    fn shared_name(&self) -> String {
        format!("a:{} {}", self.0, self.1)
    }
}

/// The limiter for the store's engine: in memory on SQLite, shared on PostgreSQL.
pub enum Limiter<K = Uuid> {
    Local(RateLimiter<K>),
    Shared(SharedRateLimiter<K>),
}

impl<K: LimitKey> Limiter<K> {
    pub fn for_store(store: &Store, limit_per_minute: u32) -> Self {
        match store.dialect() {
            Dialect::Sqlite => Limiter::Local(RateLimiter::new(limit_per_minute)),
            Dialect::Postgres => {
                Limiter::Shared(SharedRateLimiter::new(store.clone(), limit_per_minute))
            }
        }
    }

    /// Counts one request of `key` at `now_secs` (epoch seconds).
    pub async fn check(&self, key: K, now_secs: u64) -> Decision {
        match self {
            Limiter::Local(l) => l.check(key, now_secs),
            Limiter::Shared(s) => s.check(key, now_secs).await,
        }
    }
}
