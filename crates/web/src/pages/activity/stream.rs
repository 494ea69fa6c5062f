//! New entries of the Activity page without a reload: `GET activity/stream` (server-sent
//! events, one `entry` event per new entry, its `id:` the entry's id, its data the table row)
//! and `GET activity/live?after=` (the same rows, for the page's polling fallback).
//!
//! Invariants:
//! - A stream starts after `Last-Event-ID` (the browser's reconnect, e.g. after a server
//!   restart) or else `?after=` (the newest row the page showed), and first sends what came
//!   after it, so a reconnecting page misses nothing; the page drops rows it already shows.
//! - At most `live::STREAMS_PER_PROJECT` streams per project: past it, 429 (the page polls).
//! - A stream ends after [`LIFETIME`] (the browser reconnects where it was) and when the
//!   server stops.

use std::collections::HashSet;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use askama::Template;
use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use herald_api::AppState;
use herald_core::ids::{Uuid, parse_id};
use herald_store::feed::{FeedEntry, FeedFilter, Keyset};
use tokio::sync::broadcast::error::RecvError;

use super::query;
use super::rows::{Rows, rows_of_entries};
use crate::live::{LiveFeeds, Refused, Subscription, Update};
use crate::pages::not_found;
use crate::render::html;
use crate::session::ProjectPage;

/// Most entries sent on (re)connecting, and answered by one poll.
pub const CATCH_UP: u32 = 100;
/// How long one stream stays open before the browser reconnects.
const LIFETIME: Duration = Duration::from_secs(30 * 60);
/// How soon a browser reconnects after the stream drops.
const RETRY: Duration = Duration::from_secs(2);

/// The `type` filter of the page, if any.
fn kind_of(raw: &crate::form::FormData) -> Option<String> {
    raw.opt("type")
        .map(|k| k.trim().to_owned())
        .filter(|k| k.len() <= 100)
}

/// Entries after `after` (oldest first, at most [`CATCH_UP`]) and whether more came.
async fn after(
    state: &AppState,
    project: Uuid,
    after: Uuid,
    kind: Option<&str>,
) -> herald_store::StoreResult<(Vec<FeedEntry>, bool)> {
    let filter = FeedFilter {
        kind,
        ..FeedFilter::default()
    };
    let page = state
        .store
        .feed_page(project, CATCH_UP, Keyset::After(after), filter)
        .await?;
    Ok((page.entries, page.has_more))
}

struct Stream {
    state: AppState,
    project: Uuid,
    base: String,
    kind: Option<String>,
    sub: Subscription,
    pending: VecDeque<Event>,
    /// Ids sent by the catch-up (the poller may hand them out again).
    sent: HashSet<Uuid>,
    deadline: tokio::time::Instant,
}

impl Stream {
    async fn queue(&mut self, entries: Vec<FeedEntry>) {
        let entries: Vec<FeedEntry> = entries
            .into_iter()
            .filter(|e| self.kind.as_deref().is_none_or(|k| k == e.kind))
            .filter(|e| !self.sent.contains(&e.id))
            .collect();
        if entries.is_empty() {
            return;
        }
        let rows = match rows_of_entries(&self.state, self.project, &self.base, entries).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "the live feed could not render its rows");
                return;
            }
        };
        for row in rows {
            let id = row.id.clone();
            match (Rows { rows: vec![row] }).render() {
                Ok(html) => self
                    .pending
                    .push_back(Event::default().id(id).event("entry").data(html)),
                Err(e) => tracing::warn!(error = %e, "rendering a live activity row failed"),
            }
        }
    }

    fn gap(&mut self) {
        self.pending
            .push_back(Event::default().event("gap").data("more"));
    }

    /// The next event, or None when the stream ends.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Some(ev);
            }
            tokio::select! {
                r = self.sub.updates.recv() => match r {
                    Ok(Update::Entries(es)) => self.queue(es.to_vec()).await,
                    Ok(Update::Gap) | Err(RecvError::Lagged(_)) => self.gap(),
                    Err(RecvError::Closed) => return None,
                },
                _ = self.sub.closed.changed() => return None,
                _ = tokio::time::sleep_until(self.deadline) => return None,
            }
        }
    }
}

/// `GET /app/p/{id}/activity/stream?type&after` (`Last-Event-ID` wins over `after`).
pub async fn events(
    State(state): State<AppState>,
    Extension(live): Extension<LiveFeeds>,
    page: ProjectPage,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = query(raw);
    let kind = kind_of(&q);
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_id(v.trim()))
        .or_else(|| q.opt("after").and_then(|a| parse_id(a.trim())));
    let sub = match live.open(&state, page.id()) {
        Ok(s) => s,
        Err(Refused::Full) => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, HeaderValue::from_static("30"))],
                "This project has too many live activity streams open; the page checks for new entries every few seconds instead.",
            )
                .into_response();
        }
        Err(Refused::Closing) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, HeaderValue::from_static("2"))],
                "The server is restarting.",
            )
                .into_response();
        }
    };
    let mut stream = Stream {
        state: state.clone(),
        project: page.id(),
        base: page.href(""),
        kind,
        sub,
        pending: VecDeque::from([Event::default().retry(RETRY).comment("live")]),
        sent: HashSet::new(),
        deadline: tokio::time::Instant::now() + LIFETIME,
    };
    // Subscribed first, then the catch-up: nothing falls between the two.
    if let Some(last) = last {
        match after(&state, page.id(), last, stream.kind.as_deref()).await {
            Ok((entries, more)) => {
                let ids = entries.iter().map(|e| e.id).collect();
                stream.queue(entries).await;
                stream.sent = ids;
                if more {
                    stream.gap();
                }
            }
            Err(e) => return not_found::server_error(&e.to_string()),
        }
    }
    let events = futures_util::stream::unfold(stream, |mut s| async move {
        s.next().await.map(|ev| (Ok::<Event, Infallible>(ev), s))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// `GET /app/p/{id}/activity/live?after&type`: the rows after `after`, oldest first (the
/// polling fallback); `X-Activity-More: true` when more came than one answer holds.
pub async fn poll(
    State(state): State<AppState>,
    page: ProjectPage,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = query(raw);
    let kind = kind_of(&q);
    let Some(last) = q.opt("after").and_then(|a| parse_id(a.trim())) else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            "after must be the id of an activity entry",
        )
            .into_response();
    };
    let (entries, more) = match after(&state, page.id(), last, kind.as_deref()).await {
        Ok(r) => r,
        Err(e) => return not_found::server_error(&e.to_string()),
    };
    let rows = match rows_of_entries(&state, page.id(), &page.href(""), entries).await {
        Ok(r) => r,
        Err(e) => return not_found::server_error(&e.to_string()),
    };
    let mut res = html(StatusCode::OK, &Rows { rows });
    if more {
        res.headers_mut()
            .insert("x-activity-more", HeaderValue::from_static("true"));
    }
    res
}
