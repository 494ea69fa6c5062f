//! Project members: list, add, change role, remove. The last OWNER of a project can be
//! neither demoted nor removed; the check and the write share one transaction that first
//! locks the project row, so two concurrent demotions cannot both pass.

use herald_core::ids::Uuid;
use herald_core::kinds::Role;
use herald_core::time::Millis;
use sqlx::FromRow;

use crate::{Store, StoreError, StoreResult};

#[derive(Clone, Debug, FromRow)]
pub struct Member {
    pub user_id: Uuid,
    pub email: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub created_at: Millis,
}

/// Why a membership change was refused.
#[derive(Debug, thiserror::Error)]
pub enum MemberChangeError {
    #[error("not a member")]
    NotFound,
    #[error("the last owner of a project can be neither removed nor demoted")]
    LastOwner,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for MemberChangeError {
    fn from(e: sqlx::Error) -> Self {
        MemberChangeError::Store(e.into())
    }
}

const MEMBER_SELECT: &str = "SELECT m.user_id, u.email, m.role, m.created_at \
     FROM project_members m JOIN users u ON u.id = m.user_id";

impl Store {
    pub async fn list_members(&self, project: Uuid) -> StoreResult<Vec<Member>> {
        let q = format!("{MEMBER_SELECT} WHERE m.project_id = $1 ORDER BY m.created_at, u.email");
        Ok(db_read!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            q.as_str()
        ))
        .bind(project)
        .fetch_all(pool)
        .await?))
    }

    pub async fn member(&self, project: Uuid, user: Uuid) -> StoreResult<Option<Member>> {
        let q = format!("{MEMBER_SELECT} WHERE m.project_id = $1 AND m.user_id = $2");
        Ok(db_read!(self, |pool| sqlx::query_as(sqlx::AssertSqlSafe(
            q.as_str()
        ))
        .bind(project)
        .bind(user)
        .fetch_optional(pool)
        .await?))
    }

    /// Adds `user` with `role`; `Conflict` when already a member.
    pub async fn add_member(
        &self,
        project: Uuid,
        user: Uuid,
        role: Role,
        now: Millis,
    ) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO project_members (project_id, user_id, role, created_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(project)
            .bind(user)
            .bind(role.as_str())
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Sets a member's role (`Some`) or removes the member (`None`), refusing to leave the
    /// project without an OWNER.
    pub async fn change_member(
        &self,
        project: Uuid,
        user: Uuid,
        role: Option<Role>,
    ) -> Result<(), MemberChangeError> {
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            // Locks the project row (PostgreSQL; SQLite has one writer) for the owner count.
            sqlx::query("UPDATE projects SET updated_at = updated_at WHERE id = $1")
                .bind(project)
                .execute(&mut *conn)
                .await?;
            let current: Option<(String,)> = sqlx::query_as(
                "SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2",
            )
            .bind(project)
            .bind(user)
            .fetch_optional(&mut *conn)
            .await?;
            let Some((current,)) = current else {
                return Err(MemberChangeError::NotFound);
            };
            let loses_owner = current == Role::Owner.as_str() && role != Some(Role::Owner);
            if loses_owner {
                let (owners,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM project_members WHERE project_id = $1 AND role = $2",
                )
                .bind(project)
                .bind(Role::Owner.as_str())
                .fetch_one(&mut *conn)
                .await?;
                if owners <= 1 {
                    return Err(MemberChangeError::LastOwner);
                }
            }
            match role {
                Some(r) => {
                    sqlx::query(
                        "UPDATE project_members SET role = $3 WHERE project_id = $1 AND user_id = $2",
                    )
                    .bind(project)
                    .bind(user)
                    .bind(r.as_str())
                    .execute(&mut *conn)
                    .await?;
                }
                None => {
                    sqlx::query(
                        "DELETE FROM project_members WHERE project_id = $1 AND user_id = $2",
                    )
                    .bind(project)
                    .bind(user)
                    .execute(&mut *conn)
                    .await?;
                }
            }
        });
        tx.commit().await?;
        Ok(())
    }
}
