//! A batch of plain `/v1/track` requests on PostgreSQL, written by one statement committed on
//! its own (`herald_store::tracked_fresh`): one round trip where the usual batch
//! ([`super::batch`]) takes four.
//!
//! A batch goes this way only when every request is a track that the usual path would also
//! write without reading anything first: no `Idempotency-Key` (its claim is a statement of its
//! own), no other request of the batch naming the same contact, every key's type recorded and
//! the project known to track no segment. Requests whose contact existed wrote nothing and
//! are left to the usual path, as is the whole batch when the server refuses the statement (it
//! committed nothing). A lost connection fails the batch's requests, as a failed commit does:
//! the statement may have committed, and writing it again could record its events twice.

use std::collections::HashSet;

use herald_core::ids::new_id;
use herald_store::contacts_batch::NewContact;
use herald_store::tracked_fresh::FreshTrack;

use super::AcceptError;
use super::batch::{Answer, BatchContext, Done, Work};
use crate::track::{TrackPlan, Tracked};

/// Writes `reqs` if they may go this way: one answer per request, `None` for a request left
/// to the usual path. `None` when the batch does not go this way at all.
pub(super) async fn write(ctx: &BatchContext, reqs: &[&Work]) -> Option<Vec<Option<Answer>>> {
    let plans = eligible(ctx, reqs)?;
    let now = ctx.clock.now();
    let mut rows: Vec<(usize, FreshTrack<'_>)> = Vec::with_capacity(plans.len());
    for (i, plan) in plans.iter().enumerate() {
        let subscribed = plan.subscribed.unwrap_or(true);
        let contact =
            NewContact::new(plan.project_id, plan.email.as_str(), subscribed, &plan.data).ok()?;
        rows.push((
            i,
            FreshTrack {
                contact,
                event_id: new_id(),
                name: &plan.event,
                data: plan.event_data(),
                job_id: new_id(),
            },
        ));
    }
    rows.sort_by(|(_, a), (_, b)| {
        (a.contact.project_id, a.contact.email).cmp(&(b.contact.project_id, b.contact.email))
    });
    let (order, rows): (Vec<usize>, Vec<FreshTrack<'_>>) = rows.into_iter().unzip();
    let inserted = match ctx.store.insert_fresh_tracks(&rows, now).await {
        Ok(inserted) => inserted,
        Err(e) if e.is_refused_statement() => {
            tracing::debug!(error = %e, "the one-statement track write was refused; the usual path writes the batch");
            return None;
        }
        // The connection was lost: the statement may have committed, so writing the batch
        // again could record its events twice. Answered as a failed commit is.
        Err(e) => {
            let failed = |_| Some(Err(AcceptError::Store(e.for_each_request())));
            return Some(reqs.iter().map(failed).collect());
        }
    };
    let mut answers: Vec<Option<Answer>> = (0..reqs.len()).map(|_| None).collect();
    for (i, row) in order.into_iter().zip(&rows) {
        if inserted.contains(&row.contact.id) {
            answers[i] = Some(Ok(Done::Tracked(Tracked {
                contact_id: row.contact.id,
                event_id: row.event_id,
                created_at: now,
            })));
        }
    }
    Some(answers)
}

/// The batch's track plans, when every request may go this way.
fn eligible<'a>(ctx: &BatchContext, reqs: &[&'a Work]) -> Option<Vec<&'a TrackPlan>> {
    let mut seen = HashSet::with_capacity(reqs.len());
    let mut plans = Vec::with_capacity(reqs.len());
    for work in reqs {
        let Work::Track(plan) = work else { return None };
        let first = seen.insert((plan.project_id, plan.email.as_str()));
        if !first
            || plan.idempotency_key.is_some()
            || !ctx.store.fresh_track_ready(plan.project_id, &plan.data)
        {
            return None;
        }
        plans.push(plan);
    }
    Some(plans)
}
