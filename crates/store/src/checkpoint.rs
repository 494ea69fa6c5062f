//! SQLite WAL checkpoints, copied mostly on a connection of their own, off the writer.
//!
//! With only SQLite's automatic checkpoint, the commit that takes the WAL past 1,000 pages
//! copies all of them into the database file and syncs it, on the one writer connection:
//! every request waiting for the next commit waits for that copy too. Under `/v1/track` load
//! (about 16 KiB of WAL per request) that was a stall of several milliseconds every few
//! dozen commits, and most of the p99.
//!
//! Invariants:
//! - A task copies the WAL into the database (`PASSIVE`: it never waits for the writer or the
//!   readers, and they never wait for it) every [`BUSY_INTERVAL`] while the WAL grows, every
//!   [`IDLE_INTERVAL`] otherwise, on its own connection.
//! - The writer keeps SQLite's automatic checkpoint (1,000 pages): by the time it runs, the
//!   task has copied most pages, so it copies the few left, and the WAL starts over at the
//!   writer's next transaction (only a checkpoint the writer itself completes between two of
//!   its transactions lets the WAL restart under steady writes).
//! - The task ends when the last clone of its `Store` is dropped, or when the store is closed.

use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, SqliteConnection, SqlitePool};
use tokio::sync::oneshot;

/// The pause between checkpoints while the WAL grows.
const BUSY_INTERVAL: Duration = Duration::from_millis(10);
/// The pause between checkpoints while it does not.
const IDLE_INTERVAL: Duration = Duration::from_millis(250);

/// Owned by every clone of a SQLite `Store`; dropping the last one stops the task.
pub(crate) struct Checkpointer {
    _stop: oneshot::Sender<()>,
}

impl Checkpointer {
    /// Opens the checkpoint connection and starts the task.
    pub(crate) async fn start(
        options: &SqliteConnectOptions,
        write: SqlitePool,
    ) -> sqlx::Result<Checkpointer> {
        let mut conn = options.connect().await?;
        let (stop, mut stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let mut last = (0, 0);
            let mut pause = IDLE_INTERVAL;
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = tokio::time::sleep(pause) => {}
                }
                if write.is_closed() {
                    break;
                }
                match checkpoint(&mut conn).await {
                    Ok(now) => {
                        pause = if now == last {
                            IDLE_INTERVAL
                        } else {
                            BUSY_INTERVAL
                        };
                        last = now;
                    }
                    Err(e) => tracing::warn!(error = %e, "a WAL checkpoint failed; retrying"),
                }
            }
            let _ = conn.close().await;
        });
        Ok(Checkpointer { _stop: stop })
    }
}

/// Copies what the WAL holds into the database (`PASSIVE`); the WAL's pages and how many of
/// them are copied.
async fn checkpoint(conn: &mut SqliteConnection) -> sqlx::Result<(i64, i64)> {
    let (_, pages, copied): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(&mut *conn)
        .await?;
    Ok((pages, copied))
}
