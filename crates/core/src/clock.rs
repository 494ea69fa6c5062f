//! Where "now" comes from. Every time-dependent rule (leases, retries, schedules, timers, token
//! expiry) asks a [`Clock`], never the system directly, so tests drive time with a
//! [`TestClock`] instead of sleeping.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::time::Millis;

/// A source of the current time in epoch milliseconds.
pub trait Clock: Send + Sync + Debug {
    fn now(&self) -> Millis;
}

/// Shared handle to the process's clock.
pub type SharedClock = Arc<dyn Clock>;

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        chrono::Utc::now().timestamp_millis()
    }
}

/// The system clock as a shared handle (the default of every service).
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// A clock that starts at the wall time (or a given instant) plus an offset the test moves.
/// It follows real time between moves, so code that waits a few milliseconds still sees time
/// pass, while `advance` jumps hours or weeks at once.
#[derive(Debug)]
pub struct TestClock {
    offset: AtomicI64,
}

impl TestClock {
    pub fn new() -> Arc<TestClock> {
        Arc::new(TestClock {
            offset: AtomicI64::new(0),
        })
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.offset.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock so that `now()` reads `at` at this instant.
    pub fn set(&self, at: Millis) {
        let wall = SystemClock.now();
        self.offset.store(at - wall, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Millis {
        SystemClock.now() + self.offset.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_clock_jumps_forward_and_can_be_set() {
        let c = TestClock::new();
        let before = c.now();
        c.advance(Duration::from_secs(7 * 24 * 3600));
        assert!(c.now() - before >= 7 * 24 * 3600 * 1000);
        c.set(1_000);
        assert!((c.now() - 1_000).abs() < 1_000);
    }
}
