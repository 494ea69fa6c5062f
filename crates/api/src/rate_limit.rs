//! Requests per minute per project, in fixed one-minute windows (single node; a later issue
//! makes it cluster-wide through the database).

use std::collections::HashMap;
use std::sync::Mutex;

use herald_core::ids::Uuid;

pub struct RateLimiter {
    limit: u32,
    windows: Mutex<HashMap<Uuid, (u64, u32)>>,
}

/// The outcome for one request, with what the `RateLimit-*` headers say.
#[derive(Clone, Copy, Debug)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset: u64,
}

impl RateLimiter {
    pub fn new(limit_per_minute: u32) -> Self {
        Self {
            limit: limit_per_minute.max(1),
            windows: Mutex::new(HashMap::new()),
        }
    }

    pub fn check(&self, project: Uuid, now_secs: u64) -> Decision {
        let window = now_secs / 60;
        let reset = 60 - now_secs % 60;
        let mut map = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry(project).or_insert((window, 0));
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
        let rl = RateLimiter::new(2);
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
