//! Precedence of request writes over background writes at SQLite's one writer.
//!
//! Acceptance (`/v1/send`, `/v1/track`) and the delivery workers (claims, records) share one
//! writer connection, queued first come, first served. While a node delivered, an acceptance
//! batch waited behind the workers' claims and records, and accepted about a third of what it
//! accepts with the workers off. Here a request write announces itself ([`Store::urgent`]) for
//! as long as it is waiting for and holding the writer; a background write first waits
//! ([`Store::yield_to_urgent`]) until no request write is announced. Between two request
//! batches the count falls to zero and the background writes go ahead, so delivery slows
//! under a flood of requests but never stops. PostgreSQL has many connections: there the
//! count is kept but nobody waits.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use crate::Store;
use crate::engine::Db;

#[derive(Debug, Default)]
pub(crate) struct Precedence {
    urgent: AtomicUsize,
    idle: Notify,
}

/// Held by a request write from before it asks for the writer until its commit.
#[derive(Debug)]
pub struct UrgentWrite(Arc<Precedence>);

impl Drop for UrgentWrite {
    fn drop(&mut self) {
        if self.0.urgent.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Store {
    /// Announces a request write until the returned value is dropped.
    pub fn urgent(&self) -> UrgentWrite {
        self.precedence.urgent.fetch_add(1, Ordering::AcqRel);
        UrgentWrite(self.precedence.clone())
    }

    /// Waits (SQLite) until no request write is announced.
    pub async fn yield_to_urgent(&self) {
        if !matches!(self.db, Db::Sqlite { .. }) {
            return;
        }
        loop {
            let idle = self.precedence.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.precedence.urgent.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use crate::{Store, StoreOptions};

    async fn sqlite_store(dir: &tempfile::TempDir) -> Store {
        let url = format!("sqlite://{}", dir.path().join("p.db").display());
        Store::connect(&url, &StoreOptions::default())
            .await
            .unwrap()
    }

    /// Lets every other task of this single-threaded runtime run until it waits.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn background_writes_wait_while_a_request_write_is_announced() {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite_store(&dir).await;
        // Nothing announced: no wait.
        tokio::time::timeout(Duration::from_secs(5), store.yield_to_urgent())
            .await
            .unwrap();

        let (first, second) = (store.urgent(), store.urgent());
        let waiting = {
            let store = store.clone();
            tokio::spawn(async move { store.yield_to_urgent().await })
        };
        settle().await;
        assert!(!waiting.is_finished(), "went ahead of two request writes");
        drop(first);
        settle().await;
        assert!(
            !waiting.is_finished(),
            "went ahead of the second request write"
        );
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("still waiting once no request write is announced")
            .unwrap();
    }

    /// A request write given up before its commit (its future dropped) stops being announced.
    #[tokio::test]
    async fn a_dropped_request_write_releases_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite_store(&dir).await;
        let request = {
            let store = store.clone();
            tokio::spawn(async move {
                let _urgent = store.urgent();
                std::future::pending::<()>().await;
            })
        };
        settle().await;
        let waiting = {
            let store = store.clone();
            tokio::spawn(async move { store.yield_to_urgent().await })
        };
        settle().await;
        assert!(!waiting.is_finished());
        request.abort();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("still waiting after the request write was dropped")
            .unwrap();
    }
}
