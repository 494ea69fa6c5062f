//! Membership of tracked dynamic segments: a full recompute (the API's `compute` and the
//! periodic job) and the re-evaluation of one contact after it changed (the `event.dispatch`
//! consumer). Both write the membership rows, the entry/exit events and the cached count in
//! one transaction; running either twice changes nothing the second time (idempotent).

use std::collections::HashSet;

use herald_core::filter::Filter;
use herald_core::ids::Uuid;
use herald_core::segments::SegmentType;
use herald_core::time::Millis;

use crate::audience::{Audience, member_of};
use crate::segments::{Segment, add_members, recount_members, remove_members};
use serde_json::json;

use crate::{Store, StoreResult, Tx};

/// Contacts read per keyset page while computing a segment.
const PAGE: u32 = 5000;

/// What a recompute changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComputeOutcome {
    pub entered: u64,
    pub exited: u64,
    pub member_count: i64,
}

impl Store {
    /// The audience tree of a segment: its own tree (dynamic; `None` if it no longer parses)
    /// or "member of it" (static).
    pub async fn segment_filter(
        &self,
        project_id: Uuid,
        segment: &Segment,
    ) -> StoreResult<Option<Filter>> {
        if segment.segment_type == SegmentType::Static {
            return Ok(Some(member_of(segment.id)));
        }
        let Some(raw) = &segment.filters else {
            return Ok(None);
        };
        let types = self.field_types(project_id).await?;
        Ok(Filter::parse_with_types(raw, &|k| types.get(k).copied()).ok())
    }

    /// Recomputes the membership rows of a dynamic segment from its tree.
    pub async fn compute_segment(
        &self,
        project_id: Uuid,
        segment: &Segment,
        now: Millis,
    ) -> StoreResult<ComputeOutcome> {
        let filter = self.segment_filter(project_id, segment).await?;
        let mut matching = HashSet::new();
        if let Some(filter) = &filter {
            let mut after = None;
            loop {
                let page = self
                    .matching_ids_page(
                        project_id,
                        Audience::new(Some(filter), false),
                        after,
                        PAGE,
                        now,
                    )
                    .await?;
                after = page.last().copied();
                let done = page.len() < PAGE as usize;
                matching.extend(page);
                if done {
                    break;
                }
            }
        }
        let current = self.member_ids(project_id, segment.id).await?;
        let mut entering: Vec<Uuid> = matching.difference(&current).copied().collect();
        let mut leaving: Vec<Uuid> = current.difference(&matching).copied().collect();
        entering.sort();
        leaving.sort();
        let mut tx = self.begin().await?;
        let entered = add_members(&mut tx, project_id, segment, &entering, now).await?;
        let exited = remove_members(&mut tx, project_id, segment, &leaving, now).await?;
        let member_count = recount_members(&mut tx, project_id, segment.id, now).await?;
        tx.commit().await?;
        Ok(ComputeOutcome {
            entered: entered.len() as u64,
            exited: exited.len() as u64,
            member_count,
        })
    }

    /// Re-evaluates one contact against every tracked dynamic segment of its project.
    pub async fn reevaluate_contact_segments(
        &self,
        project_id: Uuid,
        contact_id: Uuid,
        now: Millis,
    ) -> StoreResult<()> {
        for segment in self.tracked_segments(project_id).await? {
            let Some(filter) = self.segment_filter(project_id, &segment).await? else {
                continue;
            };
            let matches = self
                .contact_matches(
                    project_id,
                    contact_id,
                    Audience::new(Some(&filter), false),
                    now,
                )
                .await?;
            let member = self.is_member(project_id, segment.id, contact_id).await?;
            if matches == member {
                continue;
            }
            let mut tx = self.begin().await?;
            if matches {
                add_members(&mut tx, project_id, &segment, &[contact_id], now).await?;
            } else {
                remove_members(&mut tx, project_id, &segment, &[contact_id], now).await?;
            }
            recount_members(&mut tx, project_id, segment.id, now).await?;
            tx.commit().await?;
        }
        Ok(())
    }
}

/// Job kind re-evaluating one contact's tracked segments: payload `{contactId}`. Enqueued in
/// the transaction of a contact change (create, update, tracked event) when the project has a
/// tracked dynamic segment.
pub const REEVALUATE_JOB: &str = "segment.reevaluate";

/// True when the project has at least one tracked dynamic segment.
pub async fn has_tracked_segments(tx: &mut Tx, project_id: Uuid) -> StoreResult<bool> {
    if let Some(known) = tx.tracked_segments.get(&project_id) {
        return Ok(known);
    }
    let row: Option<(Uuid,)> = db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT id FROM segments WHERE project_id = $1 AND track_membership = TRUE \
             AND type = 'DYNAMIC' LIMIT 1",
        )
        .bind(project_id)
        .fetch_optional(&mut *conn)
        .await?
    });
    tx.tracked_segments.put(project_id, row.is_some());
    Ok(row.is_some())
}

/// [`enqueue_reevaluate`] for (project, contact) pairs of any projects: one call per project.
pub async fn enqueue_reevaluate_each(
    tx: &mut Tx,
    pairs: impl IntoIterator<Item = (Uuid, Uuid)>,
    now: Millis,
) -> StoreResult<()> {
    let mut by_project: std::collections::BTreeMap<Uuid, Vec<Uuid>> = Default::default();
    for (project, contact) in pairs {
        by_project.entry(project).or_default().push(contact);
    }
    for (project, contacts) in by_project {
        enqueue_reevaluate(tx, project, &contacts, now).await?;
    }
    Ok(())
}

/// Enqueues [`REEVALUATE_JOB`] for the contacts (in `tx`, the outbox of their change) when the
/// project tracks a segment; nothing otherwise.
pub async fn enqueue_reevaluate(
    tx: &mut Tx,
    project_id: Uuid,
    contact_ids: &[Uuid],
    now: Millis,
) -> StoreResult<()> {
    if contact_ids.is_empty() || !has_tracked_segments(tx, project_id).await? {
        return Ok(());
    }
    let jobs: Vec<(Option<Uuid>, serde_json::Value)> = contact_ids
        .iter()
        .map(|id| (Some(project_id), json!({"contactId": id.to_string()})))
        .collect();
    crate::jobs::enqueue_many(tx, REEVALUATE_JOB, &jobs, now, 10).await?;
    Ok(())
}
