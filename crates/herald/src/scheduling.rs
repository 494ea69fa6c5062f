//! The CPU scheduling policy of a serving process: Linux's `SCHED_BATCH` for every thread
//! while the node delivers, the normal policy otherwise.
//!
//! Why: while a node delivers, its signing threads (`herald_engine::cpu_pool`, one per core)
//! are busy, and each time a Tokio worker or SQLite's thread woke up (an SMTP reply, a
//! channel, a finished statement: thousands of times a second) the kernel preempted a signing
//! thread for it. A batch thread that wakes up does not preempt the thread running; it runs
//! when that thread's time slice ends (a few milliseconds at most), together with whatever
//! else became ready meanwhile. Where signing is slow enough for the signing threads to be
//! preempted more than once per message, their involuntary switches fell by four fifths, the
//! Tokio workers' wake-ups by three quarters, a campaign's delivery gained 8-15% per second,
//! and `/v1/send` accepted about a third more requests per second while the workers delivered
//! (docs/benchmarks.md, `send`).
//!
//! Why not always: with nothing to sign, batch threads gain nothing, and a request's thread no
//! longer preempts other programs on the machine when it wakes up: with the load generator on
//! the same two cores, `/v1/send` on an idle node accepted less (0.72-0.89 of the perf
//! baseline's `/sqlite` against 0.86-1.17). So the [`Governor`] looks at the signing pool
//! every [`LOOK_EVERY`], turns the process batch once the pool was busy at least
//! [`BATCH_FROM`] of its threads' time (a node delivering more than a few dozen messages a
//! second), and normal again under [`NORMAL_UNDER`].
//!
//! Invariants:
//! - A change applies to every thread the process has at that moment; threads created later
//!   inherit the policy of the thread creating them, so the whole process has one policy.
//! - Unprivileged: a process may always move its own threads between the normal and the batch
//!   policy. Elsewhere than Linux nothing changes.
//! - `batch_scheduling = false` (`HERALD_BATCH_SCHEDULING=false`) keeps the normal policy.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use herald_engine::cpu_pool;

/// How often the governor looks at the signing pool's load.
pub const LOOK_EVERY: Duration = Duration::from_millis(250);
/// The pool's busy share (of all its threads' time) from which the process turns batch: with
/// two threads, 5% is about 40 signatures a second on a slow machine (0.8 ms each) and 130 on
/// a fast one (0.26 ms).
pub const BATCH_FROM: f64 = 0.05;
/// The busy share under which it turns normal again.
pub const NORMAL_UNDER: f64 = 0.01;

/// A scheduling policy of the whole process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER`: a thread waking up may preempt the one running.
    Normal,
    /// `SCHED_BATCH`: it waits for the running thread's time slice to end.
    Batch,
}

impl Policy {
    /// The policy after an interval in which the pool was busy `busy_share` of its threads'
    /// time (0 to 1), starting from `self`; between the two thresholds it stays.
    pub fn next(self, busy_share: f64) -> Policy {
        match self {
            Policy::Normal if busy_share >= BATCH_FROM => Policy::Batch,
            Policy::Batch if busy_share < NORMAL_UNDER => Policy::Normal,
            same => same,
        }
    }
}

/// Follows the signing pool's load and sets the process's policy; at most one per process.
pub struct Governor;

impl Governor {
    /// Starts the governor when the configuration asks for it (`batch_scheduling`), as
    /// `herald serve` and the benchmark's in-process servers do.
    pub fn start_if_enabled(config: &crate::Config) {
        if config.batch_scheduling {
            Governor::start();
        }
    }

    /// Starts the governor on the current Tokio runtime, unless one runs already.
    fn start() {
        static STARTED: OnceLock<()> = OnceLock::new();
        if STARTED.set(()).is_ok() {
            tokio::spawn(govern());
        }
    }
}

async fn govern() {
    let mut policy = Policy::Normal;
    let (mut last, mut at) = (cpu_pool::load(), Instant::now());
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        let (now, now_at) = (cpu_pool::load(), Instant::now());
        let capacity = (now_at - at).as_secs_f64() * now.threads.max(1) as f64;
        let share = (now.busy.saturating_sub(last.busy)).as_secs_f64() / capacity.max(1e-9);
        (last, at) = (now, now_at);
        let next = policy.next(share);
        if next == policy {
            continue;
        }
        match set_policy(next) {
            Ok(threads) => {
                tracing::debug!(
                    ?next,
                    threads,
                    busy_share = share,
                    "scheduling policy changed"
                );
                policy = next;
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not change the scheduling policy; keeping it");
                return;
            }
        }
    }
}

/// Puts every thread of this process under `policy`; the number of threads changed.
#[cfg(target_os = "linux")]
pub fn set_policy(policy: Policy) -> std::io::Result<usize> {
    let raw = match policy {
        Policy::Normal => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
    };
    let mut changed = 0;
    for entry in std::fs::read_dir("/proc/self/task")? {
        let Some(tid) = entry?
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param` for the call's duration; the call only
        // changes the scheduling policy of one of this process's threads (a thread that has
        // ended meanwhile answers ESRCH, which is skipped).
        #[allow(unsafe_code)]
        let rc = unsafe { libc::sched_setscheduler(tid, raw, &param) };
        if rc == 0 {
            changed += 1;
        } else {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::ESRCH) {
                return Err(error);
            }
        }
    }
    Ok(changed)
}

#[cfg(not(target_os = "linux"))]
pub fn set_policy(_policy: Policy) -> std::io::Result<usize> {
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_batch_when_the_pool_is_busy_and_back_when_it_idles() {
        assert_eq!(Policy::Normal.next(0.0), Policy::Normal);
        assert_eq!(Policy::Normal.next(BATCH_FROM / 2.0), Policy::Normal);
        assert_eq!(Policy::Normal.next(BATCH_FROM), Policy::Batch);
        let between = (BATCH_FROM + NORMAL_UNDER) / 2.0;
        assert_eq!(
            Policy::Batch.next(between),
            Policy::Batch,
            "between the thresholds it stays"
        );
        assert_eq!(Policy::Batch.next(1.0), Policy::Batch);
        assert_eq!(Policy::Batch.next(NORMAL_UNDER - 0.01), Policy::Normal);
    }

    /// The calling thread's policy (`libc::SCHED_*`).
    #[cfg(target_os = "linux")]
    fn current() -> i32 {
        // SAFETY: reads the calling thread's policy (thread id 0) only.
        #[allow(unsafe_code)]
        unsafe {
            libc::sched_getscheduler(0)
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn every_thread_and_every_later_one_takes_the_policy() {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let before = std::thread::spawn(move || {
            let _ = wait.recv();
            current()
        });
        let changed = set_policy(Policy::Batch).expect("setting the policy");
        assert!(
            changed >= 2,
            "the test thread and the waiting one: {changed}"
        );
        assert_eq!(current(), libc::SCHED_BATCH);
        go.send(()).expect("the waiting thread");
        assert_eq!(before.join().expect("thread"), libc::SCHED_BATCH);
        let later = std::thread::spawn(current).join().expect("thread");
        assert_eq!(
            later,
            libc::SCHED_BATCH,
            "inherited by a thread created after"
        );
        set_policy(Policy::Normal).expect("setting the policy back");
        assert_eq!(current(), libc::SCHED_OTHER);
    }
}
