//! Segments: the record (name, type, filter tree as given, tracking flag, cached count) and the
//! membership rows of static segments and of tracked dynamic ones. Membership changes record
//! `segment.<slug>.entry` / `.exit` events in the same transaction.

use std::collections::HashSet;

use herald_core::ids::{Uuid, new_id};
use herald_core::segments::{SegmentType, entry_event, exit_event};
use herald_core::time::Millis;
use serde_json::{Value, json};
use sqlx::FromRow;
use sqlx::types::Json;

use crate::events::insert_event;
use crate::{Store, StoreResult, Tx};

#[derive(Clone, Debug)]
pub struct Segment {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub segment_type: SegmentType,
    pub filters: Option<Value>,
    pub track_membership: bool,
    pub member_count: i64,
    pub created_at: Millis,
    pub updated_at: Millis,
}

#[derive(FromRow)]
struct SegmentRow {
    id: Uuid,
    name: String,
    description: Option<String>,
    #[sqlx(rename = "type")]
    segment_type: String,
    filters: Option<Json<Value>>,
    track_membership: bool,
    member_count: i64,
    created_at: Millis,
    updated_at: Millis,
}

impl From<SegmentRow> for Segment {
    fn from(r: SegmentRow) -> Self {
        Segment {
            id: r.id,
            name: r.name,
            description: r.description,
            segment_type: SegmentType::parse(&r.segment_type).unwrap_or(SegmentType::Static),
            filters: r.filters.map(|j| j.0),
            track_membership: r.track_membership,
            member_count: r.member_count,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

const COLUMNS: &str = "id, name, description, type, filters, track_membership, member_count, \
                       created_at, updated_at";

pub struct NewSegment<'a> {
    pub project_id: Uuid,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub segment_type: SegmentType,
    pub filters: Option<&'a Value>,
    pub track_membership: bool,
    pub member_count: i64,
    pub now: Millis,
}

/// The fields a PATCH changes (`None`: unchanged; `Some(None)`: cleared).
#[derive(Default)]
pub struct SegmentUpdate<'a> {
    pub name: Option<&'a str>,
    pub description: Option<Option<&'a str>>,
    pub filters: Option<&'a Value>,
    pub track_membership: Option<bool>,
    pub member_count: Option<i64>,
}

/// Adds membership rows (ignoring existing ones) and records the entry events; returns the
/// contacts that entered.
pub async fn add_members(
    tx: &mut Tx,
    project_id: Uuid,
    segment: &Segment,
    contacts: &[Uuid],
    now: Millis,
) -> StoreResult<Vec<Uuid>> {
    let mut entered = Vec::new();
    for &contact_id in contacts {
        let n = db_tx!(tx, |conn| {
            sqlx::query(
                "INSERT INTO segment_members (segment_id, contact_id, project_id, created_at) \
                 SELECT $1, $2, $3, $4 WHERE EXISTS \
                 (SELECT 1 FROM contacts WHERE id = $2 AND project_id = $3) \
                 ON CONFLICT (segment_id, contact_id) DO NOTHING",
            )
            .bind(segment.id)
            .bind(contact_id)
            .bind(project_id)
            .bind(now)
            .execute(&mut *conn)
            .await?
            .rows_affected()
        });
        if n > 0 {
            entered.push(contact_id);
            insert_event(
                tx,
                project_id,
                Some(contact_id),
                &entry_event(&segment.name),
                &event_data(segment),
                now,
            )
            .await?;
        }
    }
    Ok(entered)
}

/// Deletes membership rows and records the exit events; returns the contacts that left.
pub async fn remove_members(
    tx: &mut Tx,
    project_id: Uuid,
    segment: &Segment,
    contacts: &[Uuid],
    now: Millis,
) -> StoreResult<Vec<Uuid>> {
    let mut left = Vec::new();
    for &contact_id in contacts {
        let n = db_tx!(tx, |conn| {
            sqlx::query(
                "DELETE FROM segment_members \
                 WHERE segment_id = $1 AND contact_id = $2 AND project_id = $3",
            )
            .bind(segment.id)
            .bind(contact_id)
            .bind(project_id)
            .execute(&mut *conn)
            .await?
            .rows_affected()
        });
        if n > 0 {
            left.push(contact_id);
            insert_event(
                tx,
                project_id,
                Some(contact_id),
                &exit_event(&segment.name),
                &event_data(segment),
                now,
            )
            .await?;
        }
    }
    Ok(left)
}

fn event_data(segment: &Segment) -> Value {
    json!({"segmentId": segment.id.to_string(), "segmentName": segment.name})
}

/// Sets the cached count to the number of membership rows.
pub async fn recount_members(
    tx: &mut Tx,
    project_id: Uuid,
    segment_id: Uuid,
    now: Millis,
) -> StoreResult<i64> {
    let (n,): (i64,) = db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT COUNT(*) FROM segment_members WHERE segment_id = $1 AND project_id = $2",
        )
        .bind(segment_id)
        .bind(project_id)
        .fetch_one(&mut *conn)
        .await?
    });
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE segments SET member_count = $1, updated_at = $2 \
             WHERE id = $3 AND project_id = $4",
        )
        .bind(n)
        .bind(now)
        .bind(segment_id)
        .bind(project_id)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n)
}

impl Store {
    pub async fn create_segment(&self, s: &NewSegment<'_>) -> StoreResult<Segment> {
        let id = new_id();
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO segments (id, project_id, name, description, type, filters, \
                 track_membership, member_count, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
            )
            .bind(id)
            .bind(s.project_id)
            .bind(s.name)
            .bind(s.description)
            .bind(s.segment_type.as_str())
            .bind(s.filters.map(Json))
            .bind(s.track_membership)
            .bind(s.member_count)
            .bind(s.now)
            .execute(pool)
            .await?
            .rows_affected()
        });
        self.tracked_segments.clear();
        self.segment(s.project_id, id)
            .await?
            .ok_or(crate::StoreError::NotFound)
    }

    pub async fn segment(&self, project_id: Uuid, id: Uuid) -> StoreResult<Option<Segment>> {
        let row: Option<SegmentRow> = self
            .project_row("segments", COLUMNS, project_id, id)
            .await?;
        Ok(row.map(Segment::from))
    }

    /// All segments of the project, oldest first.
    pub async fn list_segments(&self, project_id: Uuid) -> StoreResult<Vec<Segment>> {
        let q = format!("SELECT {COLUMNS} FROM segments WHERE project_id = $1 ORDER BY id");
        let rows: Vec<SegmentRow> = db_read!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(Segment::from).collect())
    }

    /// Tracked dynamic segments of the project (re-evaluated when a contact changes).
    pub async fn tracked_segments(&self, project_id: Uuid) -> StoreResult<Vec<Segment>> {
        Ok(self
            .list_segments(project_id)
            .await?
            .into_iter()
            .filter(|s| s.track_membership && s.segment_type == SegmentType::Dynamic)
            .collect())
    }

    /// Every project with at least one tracked dynamic segment (for the periodic recompute).
    pub async fn projects_with_tracked_segments(&self) -> StoreResult<Vec<Uuid>> {
        let rows: Vec<(Uuid,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT DISTINCT project_id FROM segments \
                 WHERE track_membership = TRUE AND type = 'DYNAMIC'",
            )
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    pub async fn update_segment(
        &self,
        project_id: Uuid,
        id: Uuid,
        u: &SegmentUpdate<'_>,
        now: Millis,
    ) -> StoreResult<Option<Segment>> {
        let Some(cur) = self.segment(project_id, id).await? else {
            return Ok(None);
        };
        let name = u.name.unwrap_or(&cur.name);
        let description = match u.description {
            Some(d) => d,
            None => cur.description.as_deref(),
        };
        let filters = u.filters.or(cur.filters.as_ref());
        let track = u.track_membership.unwrap_or(cur.track_membership);
        let count = u.member_count.unwrap_or(cur.member_count);
        db_write!(self, |pool| {
            sqlx::query(
                "UPDATE segments SET name = $1, description = $2, filters = $3, \
                 track_membership = $4, member_count = $5, updated_at = $6 \
                 WHERE id = $7 AND project_id = $8",
            )
            .bind(name)
            .bind(description)
            .bind(filters.map(Json))
            .bind(track)
            .bind(count)
            .bind(now)
            .bind(id)
            .bind(project_id)
            .execute(pool)
            .await?
            .rows_affected()
        });
        self.tracked_segments.clear();
        self.segment(project_id, id).await
    }

    pub async fn set_member_count(
        &self,
        project_id: Uuid,
        id: Uuid,
        count: i64,
    ) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query("UPDATE segments SET member_count = $1 WHERE id = $2 AND project_id = $3")
                .bind(count)
                .bind(id)
                .bind(project_id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(())
    }

    pub async fn delete_segment(&self, project_id: Uuid, id: Uuid) -> StoreResult<bool> {
        let n = db_write!(self, |pool| {
            sqlx::query("DELETE FROM segments WHERE project_id = $1 AND id = $2")
                .bind(project_id)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        self.tracked_segments.clear();
        Ok(n > 0)
    }

    /// The contacts with a membership row in the segment.
    pub async fn member_ids(
        &self,
        project_id: Uuid,
        segment_id: Uuid,
    ) -> StoreResult<HashSet<Uuid>> {
        let rows: Vec<(Uuid,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT contact_id FROM segment_members WHERE segment_id = $1 AND project_id = $2",
            )
            .bind(segment_id)
            .bind(project_id)
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    /// Whether the contact has a membership row in the segment.
    pub async fn is_member(
        &self,
        project_id: Uuid,
        segment_id: Uuid,
        contact_id: Uuid,
    ) -> StoreResult<bool> {
        let row: Option<(Uuid,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT contact_id FROM segment_members \
                 WHERE segment_id = $1 AND contact_id = $2 AND project_id = $3",
            )
            .bind(segment_id)
            .bind(contact_id)
            .bind(project_id)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.is_some())
    }
}
