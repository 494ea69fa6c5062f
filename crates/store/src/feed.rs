//! The activity feed: one newest-first stream over a project's contact events (`events`:
//! system events such as `email.open`, and tracked events) and its project entries
//! (`activity`: `domain.*`, `campaign.*`).
//!
//! Invariants:
//! - Both tables have UUID v7 ids, so one keyset over `id` pages through both in order; each
//!   branch is limited before the union, so a page reads at most `2 * (limit + 1)` rows.
//! - A feed entry's `type` is the event's name for a system event, `event` for a tracked one
//!   (the `tracked` column, set by `/v1/track`), and the entry's kind for a project entry.
//! - Counts over time windows use `created_at` (the `Clock`'s time), through the index
//!   `events_project_created_name` (project, time, name).

use std::collections::BTreeMap;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::activity::is_project_kind;
use crate::engine::Dialect;
use crate::{Store, StoreResult};

/// The feed type of tracked (caller-named) events.
pub const TRACKED_TYPE: &str = "event";

/// One entry of the feed.
#[derive(Clone, Debug, FromRow)]
pub struct FeedEntry {
    pub id: Uuid,
    /// `email.open`, `contact.subscribed`, `domain.verified`, or `event` for a tracked event.
    #[sqlx(rename = "type")]
    pub kind: String,
    pub contact_id: Option<Uuid>,
    /// The contact's address (None for project entries or a deleted contact).
    pub email: Option<String>,
    pub message_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    /// The event's own name (equal to `kind` except for tracked events).
    pub name: String,
    pub data: Json<Value>,
    pub created_at: Millis,
}

/// What a page of the feed is restricted to.
#[derive(Clone, Copy, Debug, Default)]
pub struct FeedFilter<'a> {
    /// Only entries of this feed type.
    pub kind: Option<&'a str>,
    /// Only events of this contact (project entries have none).
    pub contact_id: Option<Uuid>,
    /// Only entries created at or after this time (`created_at`, the `Clock`'s).
    pub since: Option<Millis>,
    /// Only entries created before this time.
    pub until: Option<Millis>,
}

/// Where a page of the feed starts: below an id (newest first, the next page of a list), or
/// above one (oldest first, what came after the entry a live stream last showed).
#[derive(Clone, Copy, Debug)]
pub enum Keyset {
    Before(Option<Uuid>),
    After(Uuid),
}

pub struct FeedPage {
    pub entries: Vec<FeedEntry>,
    pub has_more: bool,
}

fn type_sql() -> String {
    format!("CASE WHEN e.tracked THEN '{TRACKED_TYPE}' ELSE e.name END")
}

/// Which of the two tables a filter can match.
fn branches(filter: &FeedFilter<'_>) -> (bool, bool) {
    let project_entry = filter.kind.is_none_or(is_project_kind);
    let events = filter.kind.is_none_or(|k| !is_project_kind(k));
    (events, project_entry && filter.contact_id.is_none())
}

impl Store {
    /// A page of the feed: entries with ids below `before`, newest first, at most `limit`.
    pub async fn feed(
        &self,
        project_id: Uuid,
        limit: u32,
        before: Option<Uuid>,
        filter: FeedFilter<'_>,
    ) -> StoreResult<FeedPage> {
        self.feed_page(project_id, limit, Keyset::Before(before), filter)
            .await
    }

    /// A page of the feed from `keyset`: below an id newest first, or above one oldest first;
    /// at most `limit`, `has_more` when more entries are that way.
    pub async fn feed_page(
        &self,
        project_id: Uuid,
        limit: u32,
        keyset: Keyset,
        filter: FeedFilter<'_>,
    ) -> StoreResult<FeedPage> {
        let (before, cmp, order) = match keyset {
            Keyset::Before(b) => (b, "<", "DESC"),
            Keyset::After(a) => (Some(a), ">", "ASC"),
        };
        let dialect = self.dialect();
        let take = i64::from(limit) + 1;
        let null_id = match dialect {
            Dialect::Sqlite => "NULL",
            Dialect::Postgres => "CAST(NULL AS uuid)",
        };
        let (with_events, with_project) = branches(&filter);
        if !with_events && !with_project {
            return Ok(FeedPage {
                entries: Vec::new(),
                has_more: false,
            });
        }
        // Placeholders are numbered in the order their values are bound below.
        let mut n = 1;
        let mut next = || {
            n += 1;
            format!("${n}")
        };
        let before_p = before.map(|_| next());
        let kind_p = filter.kind.filter(|k| *k != TRACKED_TYPE).map(|_| next());
        let contact_p = filter.contact_id.map(|_| next());
        let since_p = filter.since.map(|_| next());
        let until_p = filter.until.map(|_| next());
        let cursor = |t: &str| {
            let mut c = before_p
                .as_ref()
                .map(|p| format!(" AND {t}.id {cmp} {p}"))
                .unwrap_or_default();
            if let Some(p) = &since_p {
                c += &format!(" AND {t}.created_at >= {p}");
            }
            if let Some(p) = &until_p {
                c += &format!(" AND {t}.created_at < {p}");
            }
            c
        };
        let mut parts = Vec::new();
        if with_events {
            let mut cond = format!("e.project_id = $1{}", cursor("e"));
            if filter.kind == Some(TRACKED_TYPE) {
                cond += " AND e.tracked";
            }
            if let Some(p) = &kind_p {
                cond += &format!(" AND e.name = {p} AND NOT e.tracked");
            }
            if let Some(p) = &contact_p {
                cond += &format!(" AND e.contact_id = {p}");
            }
            parts.push(format!(
                "SELECT * FROM (SELECT e.id, {ty} AS type, e.contact_id, c.email, e.message_id, \
                 e.campaign_id, e.name, e.data, e.created_at \
                 FROM events e LEFT JOIN contacts c ON c.id = e.contact_id \
                 WHERE {cond} ORDER BY e.id {order} LIMIT {take}) ev",
                ty = type_sql()
            ));
        }
        if with_project {
            let mut cond = format!("a.project_id = $1{}", cursor("a"));
            if let Some(p) = &kind_p {
                cond += &format!(" AND a.kind = {p}");
            }
            parts.push(format!(
                "SELECT * FROM (SELECT a.id, a.kind AS type, {null_id} AS contact_id, \
                 CAST(NULL AS TEXT) AS email, {null_id} AS message_id, {null_id} AS campaign_id, \
                 a.kind AS name, a.data, a.created_at \
                 FROM activity a WHERE {cond} ORDER BY a.id {order} LIMIT {take}) ac"
            ));
        }
        let q = format!(
            "SELECT * FROM ({}) f ORDER BY id {order} LIMIT {take}",
            parts.join(" UNION ALL ")
        );
        let kind = kind_p.and(filter.kind);
        let rows: Vec<FeedEntry> = db_read!(self, |pool| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str())).bind(project_id);
            if let Some(b) = before {
                query = query.bind(b);
            }
            if let Some(k) = kind {
                query = query.bind(k);
            }
            if let Some(c) = filter.contact_id {
                query = query.bind(c);
            }
            if let Some(t) = filter.since {
                query = query.bind(t);
            }
            if let Some(t) = filter.until {
                query = query.bind(t);
            }
            query.fetch_all(pool).await?
        });
        let has_more = rows.len() > limit as usize;
        let entries = rows.into_iter().take(limit as usize).collect();
        Ok(FeedPage { entries, has_more })
    }

    /// Entries per feed type created at or after `since`.
    pub async fn feed_counts(
        &self,
        project_id: Uuid,
        since: Millis,
    ) -> StoreResult<BTreeMap<String, i64>> {
        let q = format!(
            "SELECT {ty} AS t, COUNT(*) FROM events e WHERE e.project_id = $1 AND e.created_at >= $2 \
             GROUP BY 1 UNION ALL \
             SELECT a.kind, COUNT(*) FROM activity a WHERE a.project_id = $1 AND a.created_at >= $2 \
             GROUP BY 1",
            ty = type_sql()
        );
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(since)
                .fetch_all(pool)
                .await?
        });
        let mut counts = BTreeMap::new();
        for (t, n) in rows {
            *counts.entry(t).or_insert(0) += n;
        }
        Ok(counts)
    }

    /// How many entries were created at or after `since`.
    pub async fn feed_count_since(&self, project_id: Uuid, since: Millis) -> StoreResult<i64> {
        Ok(self.feed_counts(project_id, since).await?.values().sum())
    }

    /// The distinct feed types present in the project, sorted.
    pub async fn feed_types(&self, project_id: Uuid) -> StoreResult<Vec<String>> {
        let q = format!(
            "SELECT DISTINCT {ty} FROM events e WHERE e.project_id = $1 \
             UNION SELECT DISTINCT a.kind FROM activity a WHERE a.project_id = $1",
            ty = type_sql()
        );
        let rows: Vec<(String,)> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        let mut types: Vec<String> = rows.into_iter().map(|r| r.0).collect();
        types.sort();
        Ok(types)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_entries_only_for_domain_types_without_contact() {
        assert_eq!(branches(&FeedFilter::default()), (true, true));
        let domain = FeedFilter {
            kind: Some("domain.verified"),
            ..FeedFilter::default()
        };
        assert_eq!(branches(&domain), (false, true));
        let open = FeedFilter {
            kind: Some("email.open"),
            ..FeedFilter::default()
        };
        assert_eq!(branches(&open), (true, false));
        let contact = FeedFilter {
            contact_id: Some(Uuid::nil()),
            ..FeedFilter::default()
        };
        assert_eq!(branches(&contact), (true, false));
    }
}
