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

    /// The reading of the machine's clock this one stands on, without the jumps a test makes
    /// ([`TestClock::advance`]): what a [`CorrectedClock`] compares with the database's clock.
    /// A test's jump stands for time passing for the whole cluster, so no correction undoes it.
    fn wall(&self) -> Millis {
        self.now()
    }
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
/// pass, while `advance` jumps hours or weeks at once; [`TestClock::freeze`] stops it between
/// moves, for tests that count what happens per period of time.
#[derive(Debug)]
pub struct TestClock {
    offset: AtomicI64,
    /// The wall time at which it was frozen; `RUNNING` while it follows real time.
    frozen_at: AtomicI64,
}

const RUNNING: Millis = Millis::MIN;

impl TestClock {
    pub fn new() -> Arc<TestClock> {
        Arc::new(TestClock {
            offset: AtomicI64::new(0),
            frozen_at: AtomicI64::new(RUNNING),
        })
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.offset.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock so that `now()` reads `at` at this instant.
    pub fn set(&self, at: Millis) {
        self.offset.store(at - self.base(), Ordering::SeqCst);
    }

    /// Stops the clock where it is: from now on only `advance` and `set` move it.
    pub fn freeze(&self) {
        let at = self.now();
        let _ = self.frozen_at.compare_exchange(
            RUNNING,
            SystemClock.now(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        self.set(at);
    }

    /// What the offset is added to: the wall time, or the wall time when frozen.
    fn base(&self) -> Millis {
        match self.frozen_at.load(Ordering::SeqCst) {
            RUNNING => SystemClock.now(),
            at => at,
        }
    }
}

impl Clock for TestClock {
    fn now(&self) -> Millis {
        self.base() + self.offset.load(Ordering::SeqCst)
    }

    fn wall(&self) -> Millis {
        SystemClock.now()
    }
}

/// TEST ONLY: a node whose clock is off by a fixed amount (`skew`, ahead when positive), for
/// the tests that prove a node's wrong clock changes nothing on PostgreSQL (docs/deploy.md).
#[derive(Debug)]
pub struct SkewedClock {
    inner: SharedClock,
    skew: Millis,
}

impl SkewedClock {
    pub fn new(inner: SharedClock, skew: Millis) -> Arc<SkewedClock> {
        Arc::new(SkewedClock { inner, skew })
    }
}

impl Clock for SkewedClock {
    fn now(&self) -> Millis {
        self.inner.now() + self.skew
    }

    fn wall(&self) -> Millis {
        self.inner.wall() + self.skew
    }
}

/// A node's clock corrected by the offset of the database's clock from the node's (set by
/// whoever measures it; `herald_engine::db_clock` on PostgreSQL): several nodes reading it
/// agree on "now" to within the measurement's error, however wrong their own clocks are.
#[derive(Debug)]
pub struct CorrectedClock {
    inner: SharedClock,
    offset: AtomicI64,
}

impl CorrectedClock {
    pub fn new(inner: SharedClock) -> Arc<CorrectedClock> {
        Arc::new(CorrectedClock {
            inner,
            offset: AtomicI64::new(0),
        })
    }

    /// The clock being corrected.
    pub fn inner(&self) -> &SharedClock {
        &self.inner
    }

    /// Milliseconds added to the inner clock (the reference's time minus the inner wall time).
    pub fn offset(&self) -> Millis {
        self.offset.load(Ordering::SeqCst)
    }

    pub fn set_offset(&self, offset: Millis) {
        self.offset.store(offset, Ordering::SeqCst);
    }
}

impl Clock for CorrectedClock {
    fn now(&self) -> Millis {
        self.inner.now() + self.offset()
    }

    fn wall(&self) -> Millis {
        self.inner.wall() + self.offset()
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

    #[test]
    fn a_frozen_test_clock_moves_only_when_told() {
        let c = TestClock::new();
        c.freeze();
        let at = c.now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(c.now(), at);
        c.advance(Duration::from_secs(1));
        assert_eq!(c.now(), at + 1_000);
        c.set(42);
        assert_eq!(c.now(), 42);
        assert!((c.wall() - SystemClock.now()).abs() < 1_000);
    }

    #[test]
    fn a_correction_cancels_a_skew_but_keeps_a_test_clock_jump() {
        let test = TestClock::new();
        let ten_minutes = 10 * 60 * 1000;
        let skewed = SkewedClock::new(test.clone(), ten_minutes);
        let corrected = CorrectedClock::new(skewed.clone());
        // What a measurement against a reference on the true wall clock finds.
        corrected.set_offset(SystemClock.now() - skewed.wall());
        assert!((corrected.now() - SystemClock.now()).abs() < 1_000);
        test.advance(Duration::from_secs(3600));
        assert!((corrected.now() - SystemClock.now() - 3_600_000).abs() < 1_000);
        assert!((corrected.wall() - SystemClock.now()).abs() < 1_000);
    }
}
