//! Events recorded for contacts: system events (`contact.subscribed`, later `email.*`) and,
//! in a later issue, tracked ones. Written in the transaction of the change that caused them.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::FromRow;
use sqlx::types::Json;

use crate::{Store, StoreResult, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Event {
    pub id: Uuid,
    pub contact_id: Option<Uuid>,
    pub name: String,
    pub data: Json<Value>,
    pub created_at: Millis,
}

pub async fn insert_event(
    tx: &mut Tx,
    project_id: Uuid,
    contact_id: Option<Uuid>,
    name: &str,
    data: &Value,
    now: Millis,
) -> StoreResult<Uuid> {
    let id = new_id();
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO events (id, project_id, contact_id, name, data, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(project_id)
        .bind(contact_id)
        .bind(name)
        .bind(Json(data))
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
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
        let q = "SELECT id, contact_id, name, data, created_at FROM events \
                 WHERE project_id = $1 AND contact_id = $2 ORDER BY id DESC LIMIT $3";
        Ok(db_read!(self, |pool| {
            sqlx::query_as(q)
                .bind(project_id)
                .bind(contact_id)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        }))
    }
}
