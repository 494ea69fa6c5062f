//! Events recorded for contacts: system events (`contact.subscribed`, `email.*`) and tracked
//! ones. Written in the transaction of the change that caused them. An event may name the
//! message (and campaign) that caused it ([`Links`]), which the activity feed shows. Tracked
//! events are written and read by [`crate::tracked`]. Every contact event a workflow reacts to
//! gets its outbox row in the same transaction ([`crate::workflows::run::enqueue_dispatch`]).

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::{Store, StoreResult, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Event {
    pub id: Uuid,
    pub contact_id: Option<Uuid>,
    pub message_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub name: String,
    pub data: Json<Value>,
    pub created_at: Millis,
    /// Recorded through `/v1/track` (false for system events).
    pub tracked: bool,
}

/// What caused an event, when it was a message (and maybe a campaign).
#[derive(Clone, Copy, Debug, Default)]
pub struct Links {
    pub message_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
}

impl Links {
    pub fn message(message_id: Uuid, campaign_id: Option<Uuid>) -> Self {
        Self {
            message_id: Some(message_id),
            campaign_id,
        }
    }
}

/// The columns every event read selects (matching [`Event`]).
pub const EVENT_COLUMNS: &str =
    "id, contact_id, message_id, campaign_id, name, data, created_at, tracked";

pub async fn insert_event(
    tx: &mut Tx,
    project_id: Uuid,
    contact_id: Option<Uuid>,
    name: &str,
    data: &Value,
    now: Millis,
) -> StoreResult<Uuid> {
    insert_linked_event(
        tx,
        project_id,
        contact_id,
        Links::default(),
        name,
        data,
        now,
    )
    .await
}

/// [`insert_event`] for an event caused by a message.
pub async fn insert_linked_event(
    tx: &mut Tx,
    project_id: Uuid,
    contact_id: Option<Uuid>,
    links: Links,
    name: &str,
    data: &Value,
    now: Millis,
) -> StoreResult<Uuid> {
    let id = new_id();
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO events (id, project_id, contact_id, message_id, campaign_id, name, data, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(id)
        .bind(project_id)
        .bind(contact_id)
        .bind(links.message_id)
        .bind(links.campaign_id)
        .bind(name)
        .bind(Json(data))
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    if contact_id.is_some() {
        let event = crate::workflows::run::EventRef { id, name };
        crate::workflows::run::enqueue_dispatch(tx, project_id, &[event], now).await?;
    }
    Ok(id)
}

impl Store {
    /// The events of one contact, newest first.
    pub async fn events_of_contact(
        &self,
        project_id: Uuid,
        contact_id: Uuid,
        limit: u32,
    ) -> StoreResult<Vec<Event>> {
        let q = format!(
            "SELECT {EVENT_COLUMNS} FROM events \
             WHERE project_id = $1 AND contact_id = $2 ORDER BY id DESC LIMIT $3"
        );
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(contact_id)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        }))
    }
}
