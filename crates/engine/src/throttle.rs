//! Per-project send throttle: messages are spaced to at most `rate` per second per project, so
//! a relay with a quota is never overrun, and 4xx replies from the relay push the project's
//! next send back (doubling per consecutive refusal, at most a minute) until one succeeds.
//! Single node; a later version coordinates nodes through the database.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use herald_core::ids::Uuid;
use tokio::time::Instant;

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
        }
    }

    /// Waits for the project's next send slot.
    pub async fn acquire(&self, project: Uuid) {
        let slot = {
            let mut map = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let st = map.entry(project).or_default();
            let now = Instant::now();
            let mut slot = now;
            for t in [st.next_slot, st.penalty_until].into_iter().flatten() {
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
