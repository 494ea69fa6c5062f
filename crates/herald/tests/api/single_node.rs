//! SQLite is one node: a second `herald serve` on the same database refuses to start and says
//! why, while the first keeps serving; once the first is killed (-9), a new one starts. On
//! PostgreSQL any number of nodes run side by side.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::both_engines;
use crate::crash::{kill, worker_command};
use crate::helpers::Engine;

both_engines!(a_second_serve_on_one_sqlite_database_refuses_to_start);

const LEASE: Duration = Duration::from_secs(10);

fn spawn(config: &herald::Config) -> Child {
    worker_command(config, LEASE, &[])
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn herald")
}

/// Waits up to `within` for the child to exit; its status, or `None` while it runs.
fn exited(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if start.elapsed() > within {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr_of(child: Child) -> String {
    let out = child.wait_with_output().expect("output");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn a_second_serve_on_one_sqlite_database_refuses_to_start(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let lock = app.config.data_dir.join("herald.db.lock");
    let mut first = spawn(&app.config);
    if engine == Engine::Sqlite {
        // The first holds the lock once its pid is in the file.
        let start = Instant::now();
        while std::fs::read_to_string(&lock).unwrap_or_default() != first.id().to_string() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the first node never locked"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    } else {
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let mut second = spawn(&app.config);
    match engine {
        Engine::Sqlite => {
            let status = exited(&mut second, Duration::from_secs(30)).expect("the second exits");
            assert!(!status.success());
            let err = stderr_of(second);
            assert!(err.contains("SQLite runs as one node"), "{err}");
            assert!(err.contains(&format!("process {}", first.id())), "{err}");
            assert!(
                exited(&mut first, Duration::ZERO).is_none(),
                "the first still serves"
            );
            // kill -9 frees the lock: a new node starts and keeps running.
            let first_id = first.id();
            kill(first);
            let mut third = spawn(&app.config);
            assert!(
                exited(&mut third, Duration::from_secs(3)).is_none(),
                "the restart runs"
            );
            assert_ne!(
                std::fs::read_to_string(&lock).unwrap(),
                first_id.to_string()
            );
            kill(third);
        }
        Engine::Postgres => {
            assert!(
                exited(&mut second, Duration::from_secs(3)).is_none(),
                "a second PostgreSQL node runs"
            );
            assert!(exited(&mut first, Duration::ZERO).is_none());
            assert!(!lock.exists(), "no lock on PostgreSQL");
            kill(second);
            kill(first);
        }
    }
}
