//! The live activity feed behind the Activity page's server-sent events: one poller per
//! project with open streams, whose new entries every stream of that project receives.
//!
//! Invariants:
//! - A project has at most [`STREAMS_PER_PROJECT`] open streams; past that [`LiveFeeds::open`]
//!   refuses and the page polls instead. A poller runs only while its project has a stream,
//!   so idle projects cost nothing; 500 open streams are 500 small tasks and one poller per
//!   project, never one query per stream per tick.
//! - A poller reads only its project's feed (`Store::feed_page` scoped by project id), so a
//!   stream never carries another project's entry.
//! - Entries are found by id (UUID v7, time-ordered), re-reading the last [`LOOKBACK`] of ids
//!   on every tick: an entry whose transaction committed after a later one is still found,
//!   and the set of ids already sent keeps each entry to one delivery.
//! - [`LiveFeeds::close`] (on shutdown) ends every stream, so open streams never hold the
//!   server's graceful stop; browsers reconnect to the next server with `Last-Event-ID`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use herald_api::AppState;
use herald_core::ids::Uuid;
use herald_store::feed::{FeedEntry, FeedFilter, Keyset};
use tokio::sync::{broadcast, watch};

/// Most open streams per project.
pub const STREAMS_PER_PROJECT: usize = 20;
/// How often a project's poller reads its feed.
pub const TICK: Duration = Duration::from_secs(1);
/// How far back each tick re-reads ids, for entries committed out of id order.
const LOOKBACK_MS: u64 = 5_000;
/// Most entries a tick reads; past it the poller skips ahead and says so (a gap).
const TICK_LIMIT: u32 = 500;

/// What a poller hands its streams.
#[derive(Clone, Debug)]
pub enum Update {
    /// New entries, oldest first.
    Entries(Arc<[FeedEntry]>),
    /// More arrived in one tick than are sent: the page should reload to see them all.
    Gap,
}

struct Channel {
    tx: broadcast::Sender<Update>,
    open: usize,
}

struct Inner {
    projects: Mutex<HashMap<Uuid, Arc<Mutex<Channel>>>>,
    closed: watch::Sender<bool>,
}

/// The live feeds of one server (one per router).
#[derive(Clone)]
pub struct LiveFeeds(Arc<Inner>);

impl Default for LiveFeeds {
    fn default() -> Self {
        Self::new()
    }
}

/// A stream's place among its project's: its updates, and its count released on drop.
pub struct Subscription {
    pub updates: broadcast::Receiver<Update>,
    pub closed: watch::Receiver<bool>,
    _slot: Slot,
}

struct Slot {
    feeds: LiveFeeds,
    project: Uuid,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut projects = self
            .feeds
            .0
            .projects
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let last = match projects.get(&self.project) {
            Some(ch) => {
                let mut ch = ch.lock().unwrap_or_else(PoisonError::into_inner);
                ch.open = ch.open.saturating_sub(1);
                ch.open == 0
            }
            None => false,
        };
        if last {
            // The poller holds a weak reference: it stops at its next tick.
            projects.remove(&self.project);
        }
    }
}

/// Why a stream was not opened.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The project has [`STREAMS_PER_PROJECT`] open streams.
    Full,
    /// The server is stopping.
    Closing,
}

impl LiveFeeds {
    pub fn new() -> Self {
        let (closed, _) = watch::channel(false);
        Self(Arc::new(Inner {
            projects: Mutex::new(HashMap::new()),
            closed,
        }))
    }

    /// Ends every open stream and refuses new ones (the server is stopping).
    pub fn close(&self) {
        self.0.closed.send_replace(true);
    }

    /// How many streams `project` has open.
    pub fn open_count(&self, project: Uuid) -> usize {
        let projects = self
            .0
            .projects
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        projects.get(&project).map_or(0, |ch| {
            ch.lock().unwrap_or_else(PoisonError::into_inner).open
        })
    }

    /// Opens a stream of `project`'s new entries, starting its poller if it is the first.
    pub fn open(&self, state: &AppState, project: Uuid) -> Result<Subscription, Refused> {
        if *self.0.closed.borrow() {
            return Err(Refused::Closing);
        }
        let mut projects = self
            .0
            .projects
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let channel = projects.entry(project).or_insert_with(|| {
            let (tx, _) = broadcast::channel(64);
            let ch = Arc::new(Mutex::new(Channel { tx, open: 0 }));
            tokio::spawn(poll(
                state.clone(),
                project,
                Arc::downgrade(&ch),
                self.0.closed.subscribe(),
            ));
            ch
        });
        let mut ch = channel.lock().unwrap_or_else(PoisonError::into_inner);
        if ch.open >= STREAMS_PER_PROJECT {
            return Err(Refused::Full);
        }
        ch.open += 1;
        Ok(Subscription {
            updates: ch.tx.subscribe(),
            closed: self.0.closed.subscribe(),
            _slot: Slot {
                feeds: self.clone(),
                project,
            },
        })
    }
}

/// The smallest UUID v7 of millisecond `ms`: every id made at or after `ms` is above it.
pub fn id_floor(ms: u64) -> Uuid {
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6] = 0x70;
    b[8] = 0x80;
    Uuid::from_bytes(b)
}

/// The millisecond a UUID v7 was made.
pub fn id_millis(id: Uuid) -> u64 {
    let b = id.as_bytes();
    let mut ms = [0u8; 8];
    ms[2..].copy_from_slice(&b[..6]);
    u64::from_be_bytes(ms)
}

/// Ids already sent, kept while they are inside the lookback window.
#[derive(Default)]
struct Seen {
    ids: HashSet<Uuid>,
    newest: Option<Uuid>,
}

impl Seen {
    fn floor(&self) -> Option<Uuid> {
        self.newest
            .map(|n| id_floor(id_millis(n).saturating_sub(LOOKBACK_MS)))
    }

    fn add(&mut self, id: Uuid) {
        self.ids.insert(id);
        if self.newest.is_none_or(|n| id > n) {
            self.newest = Some(id);
        }
    }

    fn prune(&mut self) {
        if let Some(floor) = self.floor() {
            self.ids.retain(|id| *id >= floor);
        }
    }
}

async fn poll(
    state: AppState,
    project: Uuid,
    channel: Weak<Mutex<Channel>>,
    mut closed: watch::Receiver<bool>,
) {
    // Ids are UUID v7 of the system's time (not the `Clock`'s), so the window starts at the
    // system's now. Entries of the first window go out too: each stream and page drops those
    // it already shows.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut seen = Seen {
        newest: Some(id_floor(now_ms)),
        ..Seen::default()
    };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = closed.changed() => return,
        }
        let Some(ch) = channel.upgrade() else { return };
        let tx = ch.lock().unwrap_or_else(PoisonError::into_inner).tx.clone();
        drop(ch);
        let floor = seen.floor().unwrap_or_else(|| id_floor(0));
        let page = match state
            .store
            .feed_page(
                project,
                TICK_LIMIT,
                Keyset::After(floor),
                FeedFilter::default(),
            )
            .await
        {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "the live feed could not read the project's feed");
                continue;
            }
        };
        let fresh: Vec<FeedEntry> = page
            .entries
            .into_iter()
            .filter(|e| !seen.ids.contains(&e.id))
            .collect();
        for e in &fresh {
            seen.add(e.id);
        }
        if page.has_more {
            // Fell behind: skip to the newest entry and tell the pages.
            if let Ok(newest) = state
                .store
                .feed(project, 1, None, FeedFilter::default())
                .await
                && let Some(e) = newest.entries.first()
            {
                seen.add(e.id);
            }
            let _ = tx.send(Update::Gap);
        }
        seen.prune();
        if !fresh.is_empty() {
            let _ = tx.send(Update::Entries(fresh.into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_floor_orders_below_every_id_of_its_millisecond() {
        let id = Uuid::now_v7();
        let ms = id_millis(id);
        assert!(id_floor(ms) <= id);
        assert!(id_floor(ms + 1) > id);
        assert_eq!(id_millis(id_floor(ms)), ms);
    }

    #[test]
    fn seen_ids_leave_once_outside_the_lookback() {
        let mut seen = Seen::default();
        let old = id_floor(1_000_000);
        let new = id_floor(1_000_000 + LOOKBACK_MS + 1);
        seen.add(old);
        seen.add(new);
        seen.prune();
        assert!(!seen.ids.contains(&old));
        assert!(seen.ids.contains(&new));
        assert_eq!(seen.newest, Some(new));
    }
}
