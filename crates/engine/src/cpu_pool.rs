//! A fixed pool of threads, one per core, for the CPU-bound step of delivery (composing and
//! DKIM signing a message).
//!
//! Why not `spawn_blocking`: with 32 deliveries in flight it grew to 32 threads contending for
//! 2 cores, each signature a thread wake-up and a switch. Here a queue feeds as many threads
//! as there are cores, and under a backlog they take the next job without sleeping.
//!
//! [`load`] reports how busy the threads have been (the time spent in tasks), so the process
//! can tell when delivery keeps its cores busy (the `herald` binary's scheduling.rs).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

type Task = Box<dyn FnOnce() + Send + 'static>;

struct CpuPool {
    queue: crossbeam_channel::Sender<Task>,
}

/// Nanoseconds the pool's threads have spent in tasks, all threads together.
static BUSY_NANOS: AtomicU64 = AtomicU64::new(0);
/// Threads the pool started (0 until its first task).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// How much work the pool has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolLoad {
    /// Time spent in tasks since the process started, all threads together.
    pub busy: Duration,
    /// Threads of the pool (0 while it has not started).
    pub threads: usize,
}

/// The pool's load so far; starts no thread.
pub fn load() -> PoolLoad {
    PoolLoad {
        busy: Duration::from_nanos(BUSY_NANOS.load(Ordering::Relaxed)),
        threads: THREADS.load(Ordering::Relaxed),
    }
}

static POOL: LazyLock<CpuPool> = LazyLock::new(|| {
    let (queue, tasks) = crossbeam_channel::unbounded::<Task>();
    let threads = thread::available_parallelism().map_or(2, |n| n.get());
    for i in 0..threads {
        let tasks = tasks.clone();
        let spawned = thread::Builder::new()
            .name(format!("herald-cpu-{i}"))
            .spawn(move || {
                for task in tasks {
                    task();
                }
            });
        match spawned {
            Ok(_) => {
                THREADS.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::error!(error = %e, "starting a CPU pool thread failed"),
        }
    }
    CpuPool { queue }
});

/// Runs `f` on the pool; `None` if it panicked (or no pool thread could start).
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = oneshot::channel();
    let task: Task = Box::new(move || {
        let started = Instant::now();
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        // Counted before the result is sent, so a caller that has the result sees the time.
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        BUSY_NANOS.fetch_add(nanos, Ordering::Relaxed);
        if let Ok(out) = out {
            let _ = tx.send(out);
        }
    });
    POOL.queue.send(task).ok()?;
    rx.await.ok()
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn runs_work_and_survives_a_panic() {
        assert_eq!(super::run(|| 2 + 2).await, Some(4));
        assert_eq!(super::run(|| -> i32 { panic!("boom") }).await, None);
        assert_eq!(super::run(|| 5).await, Some(5));
    }

    #[tokio::test]
    async fn counts_the_time_spent_in_tasks() {
        let before = super::load();
        let pause = std::time::Duration::from_millis(30);
        super::run(move || std::thread::sleep(pause)).await;
        let after = super::load();
        assert!(after.threads >= 1, "{after:?}");
        assert!(after.busy - before.busy >= pause, "{before:?} {after:?}");
    }
}
