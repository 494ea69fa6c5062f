//! What the delivery worker reads for a claimed batch of send jobs: each message with what
//! decorating it needs (the project's tracking mode and language, the contact's `locale`), in
//! one query per claim instead of two reads per message. Attachments' bytes are not part of it
//! (see [`Store::messages_for_delivery`]).

use std::collections::HashMap;

use herald_core::ids::Uuid;
use herald_core::kinds::TrackingMode;
use sqlx::{AssertSqlSafe, FromRow};

use crate::engine::sql;
use crate::messages::{self, Message};
use crate::{Store, StoreResult};

/// What delivery needs to decorate a message: the project's tracking mode and language, and
/// the contact's `locale` (a string data key), if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryContext {
    pub tracking: TrackingMode,
    pub language: String,
    pub locale: Option<String>,
}

/// A message about to be delivered; `context` is `None` when its project is gone.
#[derive(Clone, Debug)]
pub struct DeliveryRead {
    pub message: Message,
    pub context: Option<DeliveryContext>,
}

#[derive(FromRow)]
struct Row {
    #[sqlx(flatten)]
    message: Message,
    ctx_tracking: Option<String>,
    ctx_language: Option<String>,
    ctx_locale: Option<String>,
}

impl Store {
    /// The messages of `ids` (missing ones are absent from the map), with their delivery
    /// context. Not their attachments' bytes (`Message::blobs` stays empty): delivery reads
    /// those with [`Store::message_blobs`] once the message's turn in the node's memory
    /// budget has come, not for every job claimed ahead.
    pub async fn messages_for_delivery(
        &self,
        ids: &[Uuid],
    ) -> StoreResult<HashMap<Uuid, DeliveryRead>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let columns = messages::ALL
            .split(',')
            .map(|c| format!("m.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        let locale = sql(
            self.dialect(),
            "CASE WHEN json_type(c.data, '$.locale') = 'text' THEN json_extract(c.data, '$.locale') END",
            "CASE WHEN jsonb_typeof(c.data -> 'locale') = 'string' THEN c.data ->> 'locale' END",
        );
        let select = format!(
            "SELECT {columns}, p.tracking AS ctx_tracking, p.language AS ctx_language, \
             {locale} AS ctx_locale \
             FROM messages m LEFT JOIN projects p ON p.id = m.project_id \
             LEFT JOIN contacts c ON c.project_id = m.project_id AND c.id = m.contact_id"
        );
        let rows: Vec<Row> = db_read_each!(
            self,
            sqlite | pool | {
                let q = format!(
                    "{select} WHERE m.id IN ({})",
                    crate::engine::placeholder_list(ids.len(), 1)
                );
                let mut query = sqlx::query_as(AssertSqlSafe(q));
                for id in ids {
                    query = query.bind(*id);
                }
                query.fetch_all(pool).await?
            },
            // The ids as one array: one statement text whatever their number (kept prepared).
            postgres | pool | {
                sqlx::query_as(AssertSqlSafe(format!(
                    "{select} WHERE m.id = ANY($1::uuid[])"
                )))
                .bind(ids)
                .fetch_all(pool)
                .await?
            },
        );
        let mut out = HashMap::with_capacity(rows.len());
        for row in rows {
            let message = row.message;
            let context = match (row.ctx_tracking, row.ctx_language) {
                (Some(tracking), Some(language)) => Some(DeliveryContext {
                    // A value the API never writes: no tracking rather than a failed delivery.
                    tracking: TrackingMode::parse(&tracking).unwrap_or(TrackingMode::Disabled),
                    language,
                    locale: row.ctx_locale,
                }),
                _ => None,
            };
            out.insert(message.id, DeliveryRead { message, context });
        }
        Ok(out)
    }
}
