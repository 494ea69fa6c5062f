//! The campaign stats page of `herald-bench dashboard`: a campaign created through the API is
//! given, in SQL, one SENT message per contact (the whole seeded table, 1,000,000 by default),
//! each with its `email.sent` event, about 45 % an `email.open` and 12 % an `email.click`
//! (one of five links) over the two days after the send, then marked SENT as a finished
//! fan-out leaves it. The report page (`/app/p/{id}/campaigns/{id}`: stats with rates, the
//! opens and clicks chart, top links, the first page of recipients) and its progress fragment
//! are then timed like the other pages: target p95 under 50 ms (issue 31).

use anyhow::Context as _;
use sqlx::Connection as _;

const HOUR_MS: i64 = 3_600_000;

/// Writes the sent campaign `campaign` of `project` to every contact, sent at `sent_at`.
pub async fn seed_sent_campaign(
    conn: &mut sqlx::SqliteConnection,
    project: uuid::Uuid,
    campaign: uuid::Uuid,
    sent_at: i64,
) -> anyhow::Result<i64> {
    let mut tx = conn.begin().await?;
    sqlx::query(
        "INSERT INTO messages (id, project_id, contact_id, campaign_id, source, status, from_email, \
           to_email, subject, html, message_id_header, template_type, sent_at, created_at, updated_at) \
         SELECT randomblob(16), project_id, id, $2, 'campaign', \
           CASE WHEN rowid % 100 < 12 THEN 'CLICKED' WHEN rowid % 100 < 45 THEN 'OPENED' ELSE 'SENT' END, \
           'news@bench.test', email, 'Bench', '', '<bench@bench.test>', 'MARKETING', $3, $3, $3 \
         FROM contacts WHERE project_id = $1",
    )
    .bind(project)
    .bind(campaign)
    .bind(sent_at)
    .execute(&mut *tx)
    .await
    .context("seeding the campaign's messages")?;
    sqlx::query(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at, message_id, campaign_id) \
         SELECT randomblob(16), project_id, contact_id, 'email.sent', '{}', $2, id, campaign_id \
         FROM messages WHERE campaign_id = $1",
    )
    .bind(campaign)
    .bind(sent_at)
    .execute(&mut *tx)
    .await
    .context("seeding email.sent")?;
    sqlx::query(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at, message_id, campaign_id) \
         SELECT randomblob(16), project_id, contact_id, 'email.open', '{}', \
           $2 + (abs(random()) % 48) * $3, id, campaign_id \
         FROM messages WHERE campaign_id = $1 AND status IN ('OPENED', 'CLICKED')",
    )
    .bind(campaign)
    .bind(sent_at)
    .bind(HOUR_MS)
    .execute(&mut *tx)
    .await
    .context("seeding email.open")?;
    sqlx::query(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at, message_id, campaign_id) \
         SELECT randomblob(16), project_id, contact_id, 'email.click', \
           json_object('url', 'https://example.com/link' || (rowid % 5)), \
           $2 + (abs(random()) % 48) * $3, id, campaign_id \
         FROM messages WHERE campaign_id = $1 AND status = 'CLICKED'",
    )
    .bind(campaign)
    .bind(sent_at)
    .bind(HOUR_MS)
    .execute(&mut *tx)
    .await
    .context("seeding email.click")?;
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM messages WHERE campaign_id = $1")
        .bind(campaign)
        .fetch_one(&mut *tx)
        .await?;
    sqlx::query(
        "UPDATE campaigns SET status = 'SENT', started_at = $2, finished_at = $3, \
         fanout_done = 1, total_recipients = $4 WHERE id = $1",
    )
    .bind(campaign)
    .bind(sent_at)
    .bind(sent_at + HOUR_MS)
    .bind(n)
    .execute(&mut *tx)
    .await
    .context("marking the campaign SENT")?;
    tx.commit().await?;
    Ok(n)
}
