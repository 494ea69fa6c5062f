//! A fixed pool of threads, one per core, for the CPU-bound step of delivery (composing and
//! DKIM signing a message).
//!
//! Why not `spawn_blocking`: with 32 deliveries in flight it grew to 32 threads contending for
//! 2 cores, each signature a thread wake-up and a switch. Here a queue feeds as many threads
//! as there are cores, and under a backlog they take the next job without sleeping.

use std::sync::LazyLock;
use std::thread;

use tokio::sync::oneshot;

type Task = Box<dyn FnOnce() + Send + 'static>;

struct CpuPool {
    queue: crossbeam_channel::Sender<Task>,
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
        if let Err(e) = spawned {
            tracing::error!(error = %e, "starting a CPU pool thread failed");
        }
    }
    CpuPool { queue }
});

/// Runs `f` on the pool; `None` if it panicked (or no pool thread could start).
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = oneshot::channel();
    let task: Task = Box::new(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
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
}
