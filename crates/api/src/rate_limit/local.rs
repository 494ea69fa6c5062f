//! The windows of one node, counted in this process (SQLite: one node).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use herald_core::ids::Uuid;

use super::Decision;

/// Past this many keys, the entries of past windows are dropped (client addresses are many).
pub(super) const PRUNE_AT: usize = 10_000;

pub struct RateLimiter<K = Uuid> {
    limit: u32,
    windows: Mutex<HashMap<K, (u64, u32)>>,
}

impl<K: Hash + Eq> RateLimiter<K> {
    pub fn new(limit_per_minute: u32) -> Self {
        Self {
            limit: limit_per_minute.max(1),
            windows: Mutex::new(HashMap::new()),
        }
    }

    pub fn check(&self, key: K, now_secs: u64) -> Decision {
        let window = now_secs / 60;
        let reset = 60 - now_secs % 60;
        let mut map = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= PRUNE_AT {
            map.retain(|_, (w, _)| *w == window);
        }
        let entry = map.entry(key).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        let allowed = entry.1 < self.limit;
        if allowed {
            entry.1 += 1;
        }
        Decision {
            allowed,
            limit: self.limit,
            remaining: self.limit - entry.1,
            reset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_limit_until_the_next_window() {
        let rl: RateLimiter = RateLimiter::new(2);
        let p = Uuid::now_v7();
        assert!(rl.check(p, 120).allowed);
        let d = rl.check(p, 121);
        assert!(d.allowed);
        assert_eq!(d.remaining, 0);
        let d = rl.check(p, 150);
        assert!(!d.allowed);
        assert_eq!(d.reset, 30);
        assert!(
            rl.check(Uuid::now_v7(), 150).allowed,
            "other projects are not affected"
        );
        assert!(rl.check(p, 180).allowed);
    }
}
