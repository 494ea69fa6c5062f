//! Per-project send throttle: messages are spaced to at most `rate` per second per project, so
//! a relay with a quota is never overrun, and 4xx replies from the relay push the project's
//! next send back on this node (doubling per consecutive refusal, at most a minute) until one
//! succeeds.
//!
//! SQLite is one node: the slots are spaced in this process. On PostgreSQL the rate holds
//! across the nodes of a cluster (docs/deploy.md "Limits across nodes"): a node reserves a
//! run of [`run_for`] slots of the project at once in the database (one statement,
//! `Store::reserve_send_slots`, on the database's clock) and sends on them; slots it leaves
//! unspent are lost, so the cluster may send a little slower than the rate, never faster over
//! any second but by one run. A node slower than the rate sends on its slots late; slots
//! more than a run in the past are dropped (the node was idle): sending on them then would
//! bunch with the other nodes' slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herald_core::ids::Uuid;
use herald_store::{Dialect, Store};
use tokio::time::Instant;

/// A run of slots lasts this long at the rate (at least one slot).
const RUN: Duration = Duration::from_millis(50);

/// Slots one round trip reserves at `rate_per_second`.
pub fn run_for(rate_per_second: u32) -> u32 {
    let per_run = f64::from(rate_per_second) * RUN.as_secs_f64();
    (per_run as u32).max(1)
}

/// Slots this node reserved in the database and has not spent.
#[derive(Default)]
struct Reserved {
    next: Option<Instant>,
    left: u32,
}

struct Shared {
    store: Store,
    run: u32,
    reserved: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Reserved>>>>,
}

#[derive(Default)]
struct ProjectState {
    next_slot: Option<Instant>,
    penalty_until: Option<Instant>,
    strikes: u32,
}

pub struct Throttle {
    /// Spacing between two sends of one project; zero means unlimited.
    interval: Duration,
    state: Mutex<HashMap<Uuid, ProjectState>>,
    /// PostgreSQL: the slots come from the database.
    shared: Option<Shared>,
}

impl Throttle {
    pub fn new(rate_per_second: u32) -> Self {
        let interval = if rate_per_second == 0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(1.0 / f64::from(rate_per_second))
        };
        Self {
            interval,
            state: Mutex::new(HashMap::new()),
            shared: None,
        }
    }

    /// The throttle for the store's engine: in this process on SQLite, shared through the
    /// database on PostgreSQL.
    pub fn for_store(store: &Store, rate_per_second: u32) -> Self {
        let mut t = Self::new(rate_per_second);
        if store.dialect() == Dialect::Postgres && !t.interval.is_zero() {
            t.shared = Some(Shared {
                store: store.clone(),
                run: run_for(rate_per_second),
                reserved: Mutex::new(HashMap::new()),
            });
        }
        t
    }

    /// Waits for the project's next send slot.
    pub async fn acquire(&self, project: Uuid) {
        let shared_slot = match &self.shared {
            Some(shared) => self.shared_slot(shared, project).await,
            None => None,
        };
        let slot = {
            let mut map = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let st = map.entry(project).or_default();
            let now = Instant::now();
            let mut slot = now;
            for t in [shared_slot, st.next_slot, st.penalty_until]
                .into_iter()
                .flatten()
            {
                slot = slot.max(t);
            }
            st.next_slot = Some(slot + self.interval);
            slot
        };
        // Unlimited and unpenalised: go now (a sleep until now still waits for the timer's
        // next tick).
        if slot > Instant::now() {
            tokio::time::sleep_until(slot).await;
        }
    }

    /// The project's next slot from the database (reserving a run when this node has none
    /// left); `None` when the database could not be reached, and the node spaces on its own.
    async fn shared_slot(&self, shared: &Shared, project: Uuid) -> Option<Instant> {
        let entry = {
            let mut map = shared.reserved.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(project).or_default().clone()
        };
        let mut r = entry.lock().await;
        let now = Instant::now();
        if r.next.is_some_and(|next| next + RUN < now) {
            r.left = 0;
        }
        if r.left == 0 {
            let interval_us = i64::try_from(self.interval.as_micros()).unwrap_or(i64::MAX);
            match shared
                .store
                .reserve_send_slots(project, shared.run, interval_us)
                .await
            {
                Ok(Some(slots)) => {
                    let wait = u64::try_from(slots.first_us - slots.now_us).unwrap_or(0);
                    r.next = Some(now + Duration::from_micros(wait));
                    r.left = shared.run;
                }
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!(error = %e, project = %project, "send slots unreadable; spacing on this node alone");
                    return None;
                }
            }
        }
        let slot = r.next?;
        r.next = Some(slot + self.interval);
        r.left -= 1;
        Some(slot)
    }

    /// The relay refused for now (4xx): back off this project.
    pub fn penalize(&self, project: Uuid) {
        let mut map = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let st = map.entry(project).or_default();
        st.strikes = (st.strikes + 1).min(8);
        let pause = Duration::from_millis(250 * (1u64 << st.strikes)).min(Duration::from_secs(60));
        st.penalty_until = Some(Instant::now() + pause);
    }

    /// A send went through: forget earlier refusals.
    pub fn reward(&self, project: Uuid) {
        let mut map = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(st) = map.get_mut(&project) {
            st.strikes = 0;
            st.penalty_until = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spaces_sends_to_the_rate() {
        let t = Throttle::new(10);
        let p = Uuid::now_v7();
        let start = Instant::now();
        for _ in 0..11 {
            t.acquire(p).await;
        }
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(999) && took < Duration::from_millis(1100),
            "{took:?}"
        );
        let other = Instant::now();
        t.acquire(Uuid::now_v7()).await;
        assert!(
            other.elapsed() < Duration::from_millis(1),
            "projects are independent"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_back_off_until_a_success() {
        let t = Throttle::new(0);
        let p = Uuid::now_v7();
        t.penalize(p);
        let start = Instant::now();
        t.acquire(p).await;
        assert!(start.elapsed() >= Duration::from_millis(500));
        t.reward(p);
        let start = Instant::now();
        t.acquire(p).await;
        assert!(start.elapsed() < Duration::from_millis(1));
    }
}
