//! Time from the database's clock on PostgreSQL (docs/deploy.md "Time"): every lease, timer,
//! retry and schedule a node writes or compares is read from one [`CorrectedClock`], the
//! node's clock corrected by its measured offset from PostgreSQL's, so the nodes of a cluster
//! agree on "now" however wrong their own clocks are. SQLite is one node: its clock stays.
//!
//! A measurement reads `clock_timestamp()` between two readings of the node's clock and takes
//! the database's time to be halfway (half the round trip is its error); the best of
//! [`SAMPLES`] is kept. The offset is measured when the node starts, before it serves or
//! works, and again every [`REFRESH_EVERY`]; a new one replaces the one in use (at first
//! zero) only when it differs by more than its error plus [`DEADBAND_MS`]: a difference that
//! small is the measurement's noise, and taking it would step time back and forth by a
//! millisecond at each refresh (a node on the database's host keeps its clock as it is).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use herald_core::clock::{Clock, CorrectedClock, SharedClock};
use herald_core::time::Millis;
use herald_store::{Store, StoreResult};
use tokio::sync::watch;

/// How often the offset is measured again.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);
/// Round trips per measurement; the shortest wins.
const SAMPLES: usize = 3;
/// Change of the offset below which the one in use is kept (beyond the measurement's error).
const DEADBAND_MS: Millis = 10;
/// An offset past this is worth a warning: the node's clock is wrong (times still agree).
const WARN_BEYOND_MS: Millis = 1_000;

/// The offset of the database's clock from a node's, and its error (half the round trip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measurement {
    pub offset: Millis,
    pub error: Millis,
}

/// Measures the database's clock against `clock`'s wall time; `None` on SQLite.
pub async fn measure(store: &Store, clock: &dyn Clock) -> StoreResult<Option<Measurement>> {
    let mut best: Option<Measurement> = None;
    for _ in 0..SAMPLES {
        let before = clock.wall();
        let Some(db) = store.database_time().await? else {
            return Ok(None);
        };
        let after = clock.wall();
        let half = (after - before).max(0) / 2;
        let m = Measurement {
            offset: db - (before + half),
            error: half + 1,
        };
        if best.is_none_or(|b| m.error < b.error) {
            best = Some(m);
        }
    }
    Ok(best)
}

/// The clock a node uses for its store: on PostgreSQL `clock` corrected by the database's
/// clock (measured now) and the handle [`run_refresh`] keeps measuring; on SQLite `clock`.
pub async fn for_store(
    store: &Store,
    clock: SharedClock,
) -> anyhow::Result<(SharedClock, Option<Arc<CorrectedClock>>)> {
    let corrected = CorrectedClock::new(clock.clone());
    let Some(m) = measure(store, corrected.inner().as_ref())
        .await
        .context("reading the database's clock")?
    else {
        return Ok((clock, None));
    };
    apply(&corrected, m);
    log_offset(m);
    Ok((corrected.clone(), Some(corrected)))
}

/// Measures the offset again every [`REFRESH_EVERY`] until shutdown.
pub async fn run_refresh(
    store: Store,
    clock: Arc<CorrectedClock>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        if crate::sleep_or_shutdown(&mut shutdown, REFRESH_EVERY).await {
            return;
        }
        match measure(&store, clock.inner().as_ref()).await {
            Ok(Some(m)) => {
                if apply(&clock, m) {
                    log_offset(m);
                }
            }
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "reading the database's clock failed; keeping the last offset")
            }
        }
    }
}

/// Takes `m` when it moved the offset by more than its error and the dead band; whether it did.
fn apply(clock: &CorrectedClock, m: Measurement) -> bool {
    if (m.offset - clock.offset()).abs() <= m.error + DEADBAND_MS {
        return false;
    }
    clock.set_offset(m.offset);
    true
}

fn log_offset(m: Measurement) {
    if m.offset.abs() > WARN_BEYOND_MS {
        tracing::warn!(
            offset_ms = m.offset,
            error_ms = m.error,
            "this node's clock is off from the database's; lease, timer and schedule times \
             come from the database's clock, but check the node's time synchronisation (NTP)"
        );
    } else {
        tracing::debug!(
            offset_ms = m.offset,
            error_ms = m.error,
            "database clock offset"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_core::clock::SystemClock;

    #[test]
    fn small_changes_keep_the_offset_in_use() {
        let c = CorrectedClock::new(Arc::new(SystemClock));
        c.set_offset(100);
        assert!(!apply(
            &c,
            Measurement {
                offset: 105,
                error: 2
            }
        ));
        assert_eq!(c.offset(), 100);
        assert!(apply(
            &c,
            Measurement {
                offset: 600_100,
                error: 2
            }
        ));
        assert_eq!(c.offset(), 600_100);
    }
}
