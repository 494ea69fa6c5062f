//! Wiping a project's data (`POST /users/@me/projects/{id}/reset`) and reading its onboarding
//! state (`GET /projects/{id}/setup-state`).
//!
//! A reset deletes, in one transaction, the project's messages (their history and attachment
//! references cascade), queued jobs, import and bulk jobs, events and their analytics rollups,
//! segments and their members, contacts, custom-field types, templates, suppressions,
//! activity, idempotency keys and attachment blobs. It keeps the project, its members, keys
//! and domains. Tables added by later features (campaigns, workflows) must add their `DELETE`
//! here.

use herald_core::ids::Uuid;

use crate::{Store, StoreResult};

/// Deleted in this order (children before parents where no cascade applies).
const WIPED: &[&str] = &[
    // Every queued job of the project works on the data wiped here (sends, event dispatch,
    // segment re-evaluation, imports and bulk changes).
    "DELETE FROM jobs WHERE project_id = $1",
    "DELETE FROM contact_jobs WHERE project_id = $1",
    "DELETE FROM messages WHERE project_id = $1",
    "DELETE FROM message_attachments WHERE project_id = $1",
    "DELETE FROM blobs WHERE project_id = $1",
    "DELETE FROM idempotency_keys WHERE project_id = $1",
    "DELETE FROM events WHERE project_id = $1",
    "DELETE FROM link_clicks WHERE project_id = $1",
    "DELETE FROM analytics_slots WHERE project_id = $1",
    "DELETE FROM analytics_watermarks WHERE project_id = $1",
    "DELETE FROM campaigns WHERE project_id = $1",
    "DELETE FROM workflows WHERE project_id = $1",
    "DELETE FROM segment_members WHERE project_id = $1",
    "DELETE FROM segments WHERE project_id = $1",
    "DELETE FROM contacts WHERE project_id = $1",
    "DELETE FROM contact_fields WHERE project_id = $1",
    "DELETE FROM templates WHERE project_id = $1",
    "DELETE FROM suppressions WHERE project_id = $1",
    "DELETE FROM activity WHERE project_id = $1",
];

/// What a new project has done so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetupState {
    pub domains: i64,
    pub verified_domains: i64,
    pub contacts: i64,
    pub templates: i64,
    pub messages: i64,
    pub members: i64,
}

impl Store {
    pub async fn reset_project(&self, project: Uuid) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            for q in WIPED {
                sqlx::query(sqlx::AssertSqlSafe(*q))
                    .bind(project)
                    .execute(&mut *conn)
                    .await?;
            }
        });
        tx.commit().await?;
        Ok(())
    }

    pub async fn setup_state(&self, project: Uuid) -> StoreResult<SetupState> {
        let q = "SELECT \
            (SELECT COUNT(*) FROM domains WHERE project_id = $1), \
            (SELECT COUNT(*) FROM domains WHERE project_id = $1 AND verified), \
            (SELECT CAST(coalesce(sum(total), 0) AS BIGINT) FROM contact_counts WHERE project_id = $1), \
            (SELECT COUNT(*) FROM templates WHERE project_id = $1), \
            (SELECT COUNT(*) FROM messages WHERE project_id = $1), \
            (SELECT COUNT(*) FROM project_members WHERE project_id = $1)";
        let (domains, verified_domains, contacts, templates, messages, members): (
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
        ) = db_read!(self, |pool| sqlx::query_as(q)
            .bind(project)
            .fetch_one(pool)
            .await?);
        Ok(SetupState {
            domains,
            verified_domains,
            contacts,
            templates,
            messages,
            members,
        })
    }
}
