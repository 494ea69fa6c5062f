//! Recording a tracked event (`POST /v1/track`): upsert the contact (custom-field rules; new
//! contacts subscribed unless told otherwise; a `subscribed` flip records its
//! `contact.subscribed` / `contact.unsubscribed` through the contacts' one update path), insert
//! the event and, when a workflow of the project reacts to its name, its outbox row (a job of
//! kind [`EVENT_DISPATCH_JOB`]); segment re-evaluation has its own outbox row.
//!
//! Guarantees:
//! - Contact, event and outbox row commit in one transaction, shared with the other requests
//!   waiting at the same time (the acceptance group commit, [`crate::send::batch`]); the
//!   answer comes after that commit. Consumers (workflows, segments) work from the outbox,
//!   never inside the request.
//! - An `Idempotency-Key` is claimed first, in the same transaction: a key already used in the
//!   project within 24 h (by `/v1/send` or `/v1/track`) writes nothing and answers
//!   [`AcceptError::IdempotencyKeyReused`].

use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use std::collections::{HashMap, HashSet};

use herald_store::contacts::{ContactUpsert, upsert_contact, upsert_existing_contact};
use herald_store::segment_membership::enqueue_reevaluate_each;
use herald_store::tracked::{NewTrackedEvent, insert_tracked_many};
use herald_store::{StoreResult, Tx, messages};
use serde_json::{Map, Value};

use crate::Engine;
use crate::send::AcceptError;
use crate::send::accept::IDEMPOTENCY_WINDOW_MS;
use crate::send::batch::{Done, Work};

/// Job kind of the outbox rows of events a workflow reacts to (`herald_store::workflows::run`),
/// queued with the event when an enabled workflow's trigger or a WAIT_FOR_EVENT step names it.
pub const EVENT_DISPATCH_JOB: &str = herald_store::workflows::run::EVENT_JOB;

/// A validated track request.
#[derive(Clone, Debug)]
pub struct TrackPlan {
    pub project_id: Uuid,
    pub email: EmailAddress,
    /// Passed `herald_core::events::tracked_name`.
    pub event: String,
    pub subscribed: Option<bool>,
    pub data: DataPatch,
    pub idempotency_key: Option<String>,
}

/// What a recorded event answers.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub contact_id: Uuid,
    pub event_id: Uuid,
    pub created_at: Millis,
}

impl TrackPlan {
    /// The event's own data: what the request's `data` said, its one-request values included
    /// (`{value, persistent: false}` gives `value`); deletions and empty strings are not data.
    pub(crate) fn event_data(&self) -> Value {
        let mut data: Map<String, Value> = self.data.set.clone();
        for (k, v) in &self.data.transient {
            data.insert(k.clone(), v.clone());
        }
        Value::Object(data)
    }

    /// Claims the key and upserts the contact; the event and its job go to `rows`.
    pub(crate) async fn stage(
        &self,
        tx: &mut Tx,
        rows: &mut TrackRows,
        now: Millis,
    ) -> Result<Tracked, AcceptError> {
        if let Some(key) = &self.idempotency_key
            && !messages::claim_idempotency_key(
                tx,
                self.project_id,
                key,
                now,
                IDEMPOTENCY_WINDOW_MS,
            )
            .await?
        {
            return Err(AcceptError::IdempotencyKeyReused);
        }
        let key = (self.project_id, self.email.as_str().to_owned());
        let contact_id = if let Some(id) = rows.created.remove(&key) {
            // Inserted ahead by the batch (`send::batch_contacts`); its outbox row for segments is the
            // event's (`flush`).
            herald_store::fields::record_types(tx, self.project_id, &self.data, now).await?;
            id
        } else {
            let upsert = ContactUpsert {
                project_id: self.project_id,
                email: self.email.as_str(),
                subscribed: self.subscribed,
                default_subscribed: true,
                patch: &self.data,
                now,
            };
            let outcome = match rows.existed.contains(&key) {
                true => upsert_existing_contact(tx, &upsert).await?,
                false => upsert_contact(tx, &upsert).await?,
            };
            outcome.contact.id
        };
        let event_id = new_id();
        rows.events.push(NewTrackedEvent {
            id: event_id,
            project_id: self.project_id,
            contact_id,
            name: self.event.clone(),
            data: self.event_data(),
            created_at: now,
        });
        Ok(Tracked {
            contact_id,
            event_id,
            created_at: now,
        })
    }
}

/// The event and job rows of the track requests of one batch.
#[derive(Default)]
pub(crate) struct TrackRows {
    events: Vec<NewTrackedEvent>,
    /// Contacts inserted before the requests are staged, by (project, email)
    /// (`crate::send::batch_contacts`).
    pub(crate) created: HashMap<(Uuid, String), Uuid>,
    /// Contacts that batch's insert found existing: updated without trying the insert again.
    pub(crate) existed: HashSet<(Uuid, String)>,
}

impl TrackRows {
    /// Inserts the staged events and the outbox rows of those a workflow reacts to
    /// (multi-row statements).
    pub(crate) async fn flush(&self, tx: &mut Tx, now: Millis) -> StoreResult<()> {
        if self.events.is_empty() {
            return Ok(());
        }
        insert_tracked_many(tx, &self.events).await?;
        // Event conditions of tracked segments may change with the event: their outbox rows.
        let pairs = self.events.iter().map(|e| (e.project_id, e.contact_id));
        enqueue_reevaluate_each(tx, pairs, now).await
    }
}

impl Engine {
    /// Records a tracked event: answers once the contact, the event and its outbox row are
    /// committed (with those of the other requests of the same batch).
    pub async fn track(&self, plan: TrackPlan) -> Result<Tracked, AcceptError> {
        match self.acceptor.submit_work(Work::Track(plan)).await? {
            Done::Tracked(t) => Ok(t),
            _ => Err(crate::send::batch::mismatch()),
        }
    }

    /// Records several tracked events in one transaction, as the batcher does with requests
    /// that wait together: one answer per plan, in order.
    pub async fn track_batch(&self, plans: Vec<TrackPlan>) -> Vec<Result<Tracked, AcceptError>> {
        let work: Vec<Work> = plans.into_iter().map(Work::Track).collect();
        let refs: Vec<&Work> = work.iter().collect();
        self.acceptor
            .write_now(&refs)
            .await
            .into_iter()
            .map(|answer| match answer? {
                Done::Tracked(t) => Ok(t),
                _ => Err(crate::send::batch::mismatch()),
            })
            .collect()
    }
}
