//! Keeps SQLite's trigram index of contact emails caught up with the contacts
//! (`herald_store::contact_search`, migration 0034): every [`INDEX_EVERY`], the contacts past
//! the index's mark are indexed in batches, each its own short transaction that first lets any
//! announced request write go ahead (`Store::yield_to_urgent`, as the delivery workers do), so
//! a request write waits at most one small batch. A search never waits for it: it reads the
//! contacts past the mark directly. PostgreSQL has no such index and the task ends at once.

use std::time::Duration;

use herald_store::Dialect;
use herald_store::contact_search::INDEX_BATCH;
use tokio::sync::watch;

use crate::{Engine, sleep_or_shutdown};

/// How often the task looks for contacts to index.
pub const INDEX_EVERY: Duration = Duration::from_secs(2);

/// Runs until shutdown.
pub async fn run_email_index(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    if engine.store.dialect() != Dialect::Sqlite {
        return;
    }
    loop {
        engine.store.yield_to_urgent().await;
        let full = match engine.store.index_contact_emails(INDEX_BATCH).await {
            Ok(n) => i64::try_from(n).unwrap_or(i64::MAX) >= INDEX_BATCH,
            Err(e) => {
                tracing::warn!(error = %e, "indexing contact emails failed; retrying later");
                false
            }
        };
        let pause = if full { Duration::ZERO } else { INDEX_EVERY };
        if sleep_or_shutdown(&mut shutdown, pause).await {
            return;
        }
    }
}
