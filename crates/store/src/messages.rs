//! Messages: one row per recipient of a send, with its status history.
//!
//! Invariant: a message's status only moves forward ([`MessageStatus::can_move_to`]); every
//! status change here carries that rule in its SQL (`... AND status IN (allowed before)`), so
//! an update that would move a message backwards, or out of FAILED or SUPPRESSED, changes
//! nothing and says so.

use herald_core::ids::{Uuid, new_id};
use herald_core::kinds::TemplateType;
pub use herald_core::message_status::MessageStatus;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::engine::{column, value_rows};
use crate::workflows::run::{EventRef, enqueue_dispatch};
use crate::{Store, StoreResult, Tx};

/// A message to insert.
pub struct NewMessage<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub template_id: Option<Uuid>,
    /// The campaign that queued it, if any.
    pub campaign_id: Option<Uuid>,
    pub source: &'a str,
    /// The kind of mail (its template's type; TRANSACTIONAL without a template).
    pub template_type: TemplateType,
    pub status: MessageStatus,
    pub from_email: &'a str,
    pub from_name: Option<&'a str>,
    pub reply_to: Option<&'a str>,
    pub to_email: &'a str,
    pub to_name: Option<&'a str>,
    pub subject: &'a str,
    pub html: &'a str,
    /// Object of custom header name to value.
    pub headers: &'a Value,
    /// Array of `{filename, contentType, contentId?, disposition, size, sha256}`; the bytes
    /// are blobs (see [`crate::blobs`]).
    pub attachments: &'a Value,
    pub message_id_header: &'a str,
    /// Why the message was created in its status (history detail).
    pub detail: Option<&'a str>,
    /// A mailbox-simulator message: never handed to a transport, never counted in rates.
    pub simulated: bool,
    pub now: Millis,
}

#[derive(Clone, Debug, FromRow)]
pub struct Message {
    pub id: Uuid,
    pub project_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub template_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub source: String,
    /// The kind of mail: decides tracking, the footer and List-Unsubscribe at delivery.
    #[sqlx(try_from = "String")]
    pub template_type: TemplateType,
    #[sqlx(try_from = "String")]
    pub status: MessageStatus,
    pub from_email: String,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub to_email: String,
    pub to_name: Option<String>,
    pub subject: String,
    pub html: String,
    pub headers: Json<Value>,
    pub attachments: Json<Value>,
    pub message_id_header: String,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub sent_at: Option<Millis>,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// When retention removed the body and attachments (`html` is then empty).
    pub body_purged_at: Option<Millis>,
    /// A mailbox-simulator message (see `herald_core::feedback`).
    pub simulated: bool,
    /// The relay's own id from its 250 reply (what Amazon SES notifications name).
    pub relay_message_id: Option<String>,
    /// The attachments' bytes, in order: filled by [`Store::message`], empty elsewhere
    /// (delivery reads them with [`Store::message_blobs`] when it composes).
    #[sqlx(skip)]
    pub blobs: Vec<crate::blobs::Blob>,
}

/// The list view of a message (no bodies).
#[derive(Clone, Debug, FromRow)]
pub struct MessageSummary {
    pub id: Uuid,
    pub contact_id: Option<Uuid>,
    pub template_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub source: String,
    #[sqlx(try_from = "String")]
    pub status: MessageStatus,
    pub from_email: String,
    pub to_email: String,
    pub subject: String,
    pub sent_at: Option<Millis>,
    pub created_at: Millis,
}

#[derive(Clone, Debug, FromRow)]
pub struct HistoryEntry {
    #[sqlx(try_from = "String")]
    pub status: MessageStatus,
    pub detail: Option<String>,
    pub created_at: Millis,
}

#[derive(Clone, Debug, Default)]
pub struct MessageFilter {
    pub status: Option<MessageStatus>,
    pub contact_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub source: Option<String>,
}

/// The SQL condition `status IN (...)` on the statuses that went out
/// ([`MessageStatus::went_out`]), for every query that counts or marks sent mail.
pub(crate) static WENT_OUT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let names: Vec<String> = MessageStatus::ALL
        .into_iter()
        .filter(|s| s.went_out())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!("status IN ({})", names.join(", "))
});

pub(crate) const ALL: &str = "id, project_id, contact_id, template_id, campaign_id, source, template_type, status, from_email, from_name, \
     reply_to, to_email, to_name, subject, html, headers, attachments, message_id_header, attempts, last_error, \
     sent_at, created_at, updated_at, body_purged_at, simulated, relay_message_id";
const SUMMARY: &str = "id, contact_id, template_id, campaign_id, source, status, from_email, to_email, subject, sent_at, created_at";

/// Columns of an insert, in the order [`bind_new!`] binds them.
const INSERT_COLUMNS: &str = "id, project_id, contact_id, template_id, campaign_id, source, status, from_email, from_name, \
     reply_to, to_email, to_name, subject, html, headers, attachments, message_id_header, simulated, created_at, updated_at, \
     template_type";

/// Binds the values of one [`NewMessage`] for [`INSERT_COLUMNS`].
macro_rules! bind_new {
    ($query:expr, $m:expr) => {
        $query
            .bind($m.id)
            .bind($m.project_id)
            .bind($m.contact_id)
            .bind($m.template_id)
            .bind($m.campaign_id)
            .bind($m.source)
            .bind($m.status.as_str())
            .bind($m.from_email)
            .bind($m.from_name)
            .bind($m.reply_to)
            .bind($m.to_email)
            .bind($m.to_name)
            .bind($m.subject)
            .bind($m.html)
            .bind(Json($m.headers))
            .bind(Json($m.attachments))
            .bind($m.message_id_header)
            .bind($m.simulated)
            .bind($m.now)
            .bind($m.now)
            .bind($m.template_type.as_str())
    };
}

/// Inserts many messages in multi-row statements (the group commit of acceptance), with the
/// history of those not created PENDING.
///
/// On PostgreSQL the rows travel as one array per column through `UNNEST`: one statement text
/// whatever the number of messages, so the connection keeps it prepared (multi-row `VALUES`
/// had a text per row count, parsed and planned again once out of the connection's statement
/// cache; `contacts_batch::insert_chunk`).
pub async fn insert_many(tx: &mut Tx, all: &[NewMessage<'_>]) -> StoreResult<()> {
    if all.is_empty() {
        return Ok(());
    }
    db_tx_each!(
        tx,
        sqlite | conn | {
            for chunk in all.chunks(100) {
                let q = format!(
                    "INSERT INTO messages ({INSERT_COLUMNS}) VALUES {}",
                    value_rows(chunk.len(), 21, 1)
                );
                let q = crate::engine::binds_for(crate::Dialect::Sqlite, &q).into_owned();
                let mut query = sqlx::query(AssertSqlSafe(q));
                for m in chunk {
                    query = bind_new!(query, m);
                }
                query.execute(&mut *conn).await?;
            }
        },
        postgres
            | conn
            | {
                sqlx::query(
                "INSERT INTO messages (id, project_id, contact_id, template_id, campaign_id, \
                   source, status, from_email, from_name, reply_to, to_email, to_name, subject, \
                   html, headers, attachments, message_id_header, simulated, created_at, \
                   updated_at, template_type) \
                 SELECT id, project_id, contact_id, template_id, campaign_id, source, status, \
                   from_email, from_name, reply_to, to_email, to_name, subject, html, headers, \
                   attachments, message_id_header, simulated, created_at, created_at, template_type \
                 FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], \
                   $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], \
                   $12::text[], $13::text[], $14::text[], $15::jsonb[], $16::jsonb[], $17::text[], \
                   $18::bool[], $19::int8[], $20::text[]) \
                   AS r(id, project_id, contact_id, template_id, campaign_id, source, status, \
                   from_email, from_name, reply_to, to_email, to_name, subject, html, headers, \
                   attachments, message_id_header, simulated, created_at, template_type)",
            )
            .bind(column(all, |m| m.id))
            .bind(column(all, |m| m.project_id))
            .bind(column(all, |m| m.contact_id))
            .bind(column(all, |m| m.template_id))
            .bind(column(all, |m| m.campaign_id))
            .bind(column(all, |m| m.source))
            .bind(column(all, |m| m.status.as_str()))
            .bind(column(all, |m| m.from_email))
            .bind(column(all, |m| m.from_name))
            .bind(column(all, |m| m.reply_to))
            .bind(column(all, |m| m.to_email))
            .bind(column(all, |m| m.to_name))
            .bind(column(all, |m| m.subject))
            .bind(column(all, |m| m.html))
            .bind(column(all, |m| Json(m.headers)))
            .bind(column(all, |m| Json(m.attachments)))
            .bind(column(all, |m| m.message_id_header))
            .bind(column(all, |m| m.simulated))
            .bind(column(all, |m| m.now))
            .bind(column(all, |m| m.template_type.as_str()))
            .execute(&mut *conn)
            .await?;
            },
    );
    for m in all.iter().filter(|m| m.status != MessageStatus::Pending) {
        add_history(tx, m.id, m.status, m.detail, m.now).await?;
    }
    Ok(())
}

/// Inserts one message. The PENDING step is implied by `created_at` (one statement less on
/// the accept path); any other initial status is recorded with its reason.
pub async fn insert(tx: &mut Tx, m: &NewMessage<'_>) -> StoreResult<()> {
    insert_many(tx, std::slice::from_ref(m)).await
}

pub async fn add_history(
    tx: &mut Tx,
    message_id: Uuid,
    status: MessageStatus,
    detail: Option<&str>,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query("INSERT INTO message_history (id, message_id, status, detail, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(new_id())
            .bind(message_id)
            .bind(status.as_str())
            .bind(detail)
            .bind(now)
            .execute(&mut *conn)
            .await?;
    });
    Ok(())
}

/// `status IN ('PENDING', ...)`: the statuses a message may be in to move to `to`. The
/// names come from the enum, never from input.
fn movable_to(to: MessageStatus) -> String {
    let names: Vec<String> = to
        .allowed_before()
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    if names.is_empty() {
        return "1 = 0".to_owned();
    }
    format!("status IN ({})", names.join(", "))
}

/// Moves a message to `status`, counting an attempt when `attempt` is set. Only forward moves
/// apply: false (and nothing changed) when the message is gone or its status may not move
/// to `status`.
pub async fn set_status(
    tx: &mut Tx,
    id: Uuid,
    status: MessageStatus,
    last_error: Option<&str>,
    attempt: bool,
    now: Millis,
) -> StoreResult<bool> {
    let sent_at = (status == MessageStatus::Sent).then_some(now);
    let q = format!(
        "UPDATE messages SET status = $2, last_error = COALESCE($3, last_error), \
         attempts = attempts + $4, sent_at = COALESCE($5, sent_at), updated_at = $6 WHERE id = $1 AND {}",
        movable_to(status)
    );
    let n = db_tx!(tx, |conn| {
        sqlx::query(AssertSqlSafe(q.as_str()))
            .bind(id)
            .bind(status.as_str())
            .bind(last_error)
            .bind(i32::from(attempt))
            .bind(sent_at)
            .bind(now)
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    Ok(n == 1)
}

/// Records an `Idempotency-Key`; false when the project used it within the window.
pub async fn claim_idempotency_key(
    tx: &mut Tx,
    project_id: Uuid,
    key: &str,
    now: Millis,
    window_ms: i64,
) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO idempotency_keys (project_id, key, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (project_id, key) DO UPDATE SET created_at = excluded.created_at \
             WHERE idempotency_keys.created_at < $4",
        )
        .bind(project_id)
        .bind(key)
        .bind(now)
        .bind(now - window_ms)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

enum Arg {
    Id(Uuid),
    Text(String),
    Int(i64),
}

/// Binds a list of [`Arg`]s in order (expanded per engine by the pool macros).
macro_rules! bind_args {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for a in $args {
            query = match a {
                Arg::Id(u) => query.bind(*u),
                Arg::Text(t) => query.bind(t.clone()),
                Arg::Int(i) => query.bind(*i),
            };
        }
        query
    }};
}

impl Store {
    /// A message with its attachments' bytes.
    pub async fn message(&self, id: Uuid) -> StoreResult<Option<Message>> {
        let q = format!("SELECT {ALL} FROM messages WHERE id = $1");
        let found: Option<Message> =
            db_read!(self, |pool| sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(id)
                .fetch_optional(pool)
                .await?);
        let Some(mut m) = found else {
            return Ok(None);
        };
        if m.body_purged_at.is_none() && m.attachments.0.as_array().is_some_and(|a| !a.is_empty()) {
            m.blobs = self.message_blobs(m.id).await?;
        }
        Ok(Some(m))
    }

    pub async fn project_message(
        &self,
        project_id: Uuid,
        id: Uuid,
    ) -> StoreResult<Option<Message>> {
        self.project_row::<Message>("messages", ALL, project_id, id)
            .await
    }

    pub async fn message_history(&self, message_id: Uuid) -> StoreResult<Vec<HistoryEntry>> {
        let q = "SELECT status, detail, created_at FROM message_history WHERE message_id = $1 ORDER BY id";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(message_id)
            .fetch_all(pool)
            .await?))
    }

    fn message_conditions(project_id: Uuid, f: &MessageFilter) -> (String, Vec<Arg>) {
        let mut cond = String::from("project_id = $1");
        let mut args = vec![Arg::Id(project_id)];
        let mut add = |c: &str, a: Arg| {
            args.push(a);
            cond.push_str(&format!(" AND {c} = ${}", args.len()));
        };
        if let Some(s) = f.status {
            add("status", Arg::Text(s.as_str().to_owned()));
        }
        if let Some(c) = f.contact_id {
            add("contact_id", Arg::Id(c));
        }
        if let Some(c) = f.campaign_id {
            add("campaign_id", Arg::Id(c));
        }
        if let Some(s) = &f.source {
            add("source", Arg::Text(s.clone()));
        }
        (cond, args)
    }

    /// Messages newest first, below the `before` id.
    pub async fn list_messages(
        &self,
        project_id: Uuid,
        filter: &MessageFilter,
        limit: u32,
        before: Option<Uuid>,
    ) -> StoreResult<(Vec<MessageSummary>, bool)> {
        let (mut cond, mut args) = Self::message_conditions(project_id, filter);
        if let Some(b) = before {
            args.push(Arg::Id(b));
            cond.push_str(&format!(" AND id < ${}", args.len()));
        }
        args.push(Arg::Int(i64::from(limit) + 1));
        let q = format!(
            "SELECT {SUMMARY} FROM messages WHERE {cond} ORDER BY id DESC LIMIT ${}",
            args.len()
        );
        let rows: Vec<MessageSummary> = db_read!(self, |pool| {
            bind_args!(sqlx::query_as(AssertSqlSafe(q.as_str())), &args)
                .fetch_all(pool)
                .await?
        });
        let more = rows.len() > limit as usize;
        Ok((rows.into_iter().take(limit as usize).collect(), more))
    }

    pub async fn count_messages(
        &self,
        project_id: Uuid,
        filter: &MessageFilter,
    ) -> StoreResult<i64> {
        let (cond, args) = Self::message_conditions(project_id, filter);
        let q = format!("SELECT count(*) FROM messages WHERE {cond}");
        let (n,): (i64,) = db_read!(self, |pool| {
            bind_args!(sqlx::query_as(AssertSqlSafe(q.as_str())), &args)
                .fetch_one(pool)
                .await?
        });
        Ok(n)
    }
}

/// A delivery the relay accepted, recorded with others in one transaction.
pub struct SentRecord<'a> {
    pub job_id: Uuid,
    /// The owner token of the worker's claim: a record whose lease was taken over is skipped.
    pub lease_token: Uuid,
    pub message_id: Uuid,
    pub template_id: Option<Uuid>,
    pub subject: &'a str,
    pub reply: &'a str,
    /// When the attempt started; recorded as the SENDING step of a first attempt.
    pub started_at: Millis,
    pub first_attempt: bool,
    /// The relay's own id for the message, from its 250 reply, when it gave one.
    pub relay_message_id: Option<&'a str>,
}

/// Acks the send jobs and marks their messages SENT with history and `email.sent` events, in a
/// few multi-row statements (group commit of the delivery worker). Returns the message ids
/// recorded.
///
/// Written so that no row can make the others fail: a job whose lease was taken over is not
/// acked and its message not touched (fencing); a message that is gone (its project was
/// deleted) or already past SENT is left alone; history is written only for messages moved
/// here; an event only when its contact still exists (a contact deleted meanwhile gets
/// none). Callers still fall back to one record per transaction if a batch fails (e.g. a
/// PostgreSQL deadlock with a concurrent deletion).
pub async fn record_sent(
    tx: &mut Tx,
    sent: &[SentRecord<'_>],
    now: Millis,
) -> StoreResult<Vec<Uuid>> {
    let mut recorded = Vec::with_capacity(sent.len());
    for chunk in sent.chunks(100) {
        let held: Vec<(Uuid, Uuid)> = chunk.iter().map(|s| (s.job_id, s.lease_token)).collect();
        let acked = crate::jobs::complete_many(tx, &held).await?;
        let acked: Vec<&SentRecord<'_>> =
            chunk.iter().filter(|s| acked.contains(&s.job_id)).collect();
        recorded.extend(mark_sent(tx, &acked, now).await?);
    }
    Ok(recorded)
}

/// Marks messages SENT at `now` with the history and `email.sent` events of [`record_sent`],
/// for messages no send job delivers: the history of a past campaign written after the fact
/// (`herald demo`), whose messages were never handed to a transport. `job_id` and
/// `lease_token` of the records are not read. Returns the message ids recorded.
pub async fn record_sent_without_job(
    tx: &mut Tx,
    sent: &[SentRecord<'_>],
    now: Millis,
) -> StoreResult<Vec<Uuid>> {
    let mut recorded = Vec::with_capacity(sent.len());
    for chunk in sent.chunks(100) {
        let chunk: Vec<&SentRecord<'_>> = chunk.iter().collect();
        recorded.extend(mark_sent(tx, &chunk, now).await?);
    }
    Ok(recorded)
}

/// The status move, history, events and relay ids of [`record_sent`] for records whose job
/// was acked (or that have none); returns the message ids moved.
async fn mark_sent(tx: &mut Tx, acked: &[&SentRecord<'_>], now: Millis) -> StoreResult<Vec<Uuid>> {
    if acked.is_empty() {
        return Ok(Vec::new());
    }
    let set = "UPDATE messages SET status = 'SENT', sent_at = $1, updated_at = $1, \
               attempts = attempts + 1";
    let movable = movable_to(MessageStatus::Sent);
    let moved: Vec<(Uuid, Uuid)> = db_tx_each!(
        &mut *tx,
        sqlite | conn | {
            let q = format!(
                "{set} WHERE id IN ({}) AND {movable} RETURNING id, project_id",
                crate::engine::placeholder_list(acked.len(), 2),
            );
            let mut query = sqlx::query_as(AssertSqlSafe(q)).bind(now);
            for s in acked {
                query = query.bind(s.message_id);
            }
            query.fetch_all(&mut *conn).await?
        },
        // The ids as one array: one statement text whatever their number (kept prepared).
        postgres | conn | {
            let q =
                format!("{set} WHERE id = ANY($2::uuid[]) AND {movable} RETURNING id, project_id");
            sqlx::query_as(AssertSqlSafe(q))
                .bind(now)
                .bind(column(acked, |s| s.message_id))
                .fetch_all(&mut *conn)
                .await?
        },
    );
    let projects: std::collections::HashMap<Uuid, Uuid> = moved.into_iter().collect();
    let moved: Vec<&SentRecord<'_>> = acked
        .iter()
        .copied()
        .filter(|s| projects.contains_key(&s.message_id))
        .collect();
    if moved.is_empty() {
        return Ok(Vec::new());
    }
    insert_sent_history(tx, &moved, now).await?;
    insert_sent_events(tx, &moved, &projects, now).await?;
    set_relay_ids(tx, &moved).await?;
    Ok(moved.iter().map(|s| s.message_id).collect())
}

async fn insert_sent_history(
    tx: &mut Tx,
    moved: &[&SentRecord<'_>],
    now: Millis,
) -> StoreResult<()> {
    let mut history: Vec<(Uuid, MessageStatus, Option<&str>, Millis)> =
        Vec::with_capacity(moved.len() * 2);
    for s in moved {
        if s.first_attempt {
            history.push((s.message_id, MessageStatus::Sending, None, s.started_at));
        }
        history.push((s.message_id, MessageStatus::Sent, Some(s.reply), now));
    }
    db_tx_each!(
        &mut *tx,
        sqlite
            | conn
            | {
                let q = format!(
                    "INSERT INTO message_history (id, message_id, status, detail, created_at) VALUES {}",
                    value_rows(history.len(), 5, 1)
                );
                let q = crate::engine::binds_for(crate::Dialect::Sqlite, &q).into_owned();
                let mut query = sqlx::query(AssertSqlSafe(q));
                for (message_id, status, detail, at) in &history {
                    query = query
                        .bind(new_id())
                        .bind(*message_id)
                        .bind(status.as_str())
                        .bind(*detail)
                        .bind(*at);
                }
                query.execute(&mut *conn).await?;
            },
        // One array per column: one statement text whatever the number of rows.
        postgres | conn | {
            sqlx::query(
                "INSERT INTO message_history (id, message_id, status, detail, created_at) \
                 SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int8[])",
            )
            .bind(column(&history, |_| new_id()))
            .bind(column(&history, |h| h.0))
            .bind(column(&history, |h| h.1.as_str()))
            .bind(column(&history, |h| h.2))
            .bind(column(&history, |h| h.3))
            .execute(&mut *conn)
            .await?;
        },
    );
    Ok(())
}

/// `email.sent` events (contact events) of moved messages whose contact still exists: the
/// contact is read from the message row, which the deletion of a contact sets to NULL, so a
/// contact deleted meanwhile gets no event instead of failing the insert.
async fn insert_sent_events(
    tx: &mut Tx,
    moved: &[&SentRecord<'_>],
    projects: &std::collections::HashMap<Uuid, Uuid>,
    now: Millis,
) -> StoreResult<()> {
    let ids: Vec<Uuid> = moved.iter().map(|_| new_id()).collect();
    let data: Vec<Value> = moved
        .iter()
        .map(|s| {
            serde_json::json!({"messageId": s.message_id.to_string(), "subject": s.subject,
                "templateId": s.template_id.map(|t| t.to_string())})
        })
        .collect();
    let insert = "INSERT INTO events (id, project_id, contact_id, message_id, campaign_id, name, data, created_at) \
         SELECT v.id, m.project_id, m.contact_id, m.id, m.campaign_id, 'email.sent', v.data, $1";
    let join = "JOIN messages m ON m.id = v.message_id WHERE m.contact_id IS NOT NULL";
    db_tx_each!(
        &mut *tx,
        sqlite | conn | {
            let q = format!(
                "WITH v(id, message_id, data) AS (VALUES {}) {insert} FROM v {join}",
                value_rows(moved.len(), 3, 2)
            );
            let mut query = sqlx::query(AssertSqlSafe(q)).bind(now);
            for ((s, id), data) in moved.iter().zip(&ids).zip(&data) {
                query = query.bind(*id).bind(s.message_id).bind(Json(data));
            }
            query.execute(&mut *conn).await?;
        },
        // One array per column: one statement text whatever the number of rows.
        postgres
            | conn
            | {
                let q = format!(
                    "{insert} FROM UNNEST($2::uuid[], $3::uuid[], $4::jsonb[]) AS v(id, message_id, data) {join}"
                );
                sqlx::query(AssertSqlSafe(q))
                    .bind(now)
                    .bind(&ids)
                    .bind(column(moved, |s| s.message_id))
                    .bind(column(&data, Json))
                    .execute(&mut *conn)
                    .await?;
            },
    );
    // Workflows reacting to `email.sent` get their outbox rows (an event not inserted, its
    // contact gone, is skipped by the dispatch).
    let mut by_project: std::collections::BTreeMap<Uuid, Vec<EventRef<'_>>> = Default::default();
    for (s, id) in moved.iter().zip(&ids) {
        if let Some(project) = projects.get(&s.message_id) {
            by_project.entry(*project).or_default().push(EventRef {
                id: *id,
                name: "email.sent",
            });
        }
    }
    for (project, refs) in by_project {
        enqueue_dispatch(tx, project, &refs, now).await?;
    }
    Ok(())
}

/// Keeps the relay's ids of moved messages (one statement for the group).
async fn set_relay_ids(tx: &mut Tx, moved: &[&SentRecord<'_>]) -> StoreResult<()> {
    let with_id: Vec<(Uuid, &str)> = moved
        .iter()
        .filter_map(|s| s.relay_message_id.map(|r| (s.message_id, r)))
        .collect();
    if with_id.is_empty() {
        return Ok(());
    }
    let q = format!(
        "WITH v(id, rid) AS (VALUES {}) \
         UPDATE messages SET relay_message_id = (SELECT v.rid FROM v WHERE v.id = messages.id) \
         WHERE id IN (SELECT v.id FROM v)",
        value_rows(with_id.len(), 2, 1)
    );
    let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
    db_tx!(&mut *tx, |conn| {
        let mut query = sqlx::query(AssertSqlSafe(q.as_str()));
        for (id, rid) in &with_id {
            query = query.bind(*id).bind(*rid);
        }
        query.execute(&mut *conn).await?;
    });
    Ok(())
}
