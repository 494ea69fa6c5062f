//! Single-use, expiring tokens mailed for email verification, password reset and
//! invitations (only their SHA-256 is stored), the sign-in failure log, and the writes a
//! consumed token causes, each in one transaction with the consumption.

use herald_core::ids::Uuid;
use herald_core::kinds::{Role, TokenKind};
use herald_core::time::Millis;
use sqlx::FromRow;

use crate::{Store, StoreError, StoreResult};

#[derive(Clone, Debug)]
pub struct NewToken {
    pub token_hash: String,
    pub kind: TokenKind,
    pub email: String,
    pub user_id: Option<Uuid>,
    pub project_id: Option<Uuid>,
    pub role: Option<Role>,
    pub created_at: Millis,
    pub expires_at: Millis,
}

/// A pending invitation of an address to a project.
#[derive(Clone, Debug, FromRow)]
pub struct Invitation {
    pub project_id: Uuid,
    pub email: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub created_at: Millis,
    pub expires_at: Millis,
}

impl Store {
    pub async fn insert_account_token(&self, t: &NewToken) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO account_tokens (token_hash, kind, email, user_id, project_id, role, \
                 created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&t.token_hash)
            .bind(t.kind.as_str())
            .bind(&t.email)
            .bind(t.user_id)
            .bind(t.project_id)
            .bind(t.role.map(Role::as_str))
            .bind(t.created_at)
            .bind(t.expires_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// How many account mails went to `email` since `since` (each mail made one token).
    pub async fn account_mails_since(&self, email: &str, since: Millis) -> StoreResult<i64> {
        let q = "SELECT COUNT(*) FROM account_tokens WHERE email = $1 AND created_at > $2";
        let (n,): (i64,) = db_read!(self, |pool| sqlx::query_as(q)
            .bind(email)
            .bind(since)
            .fetch_one(pool)
            .await?);
        Ok(n)
    }

    /// Marks the email of the user named by a valid verification token verified; the token is
    /// used up. `None` when the token is unknown, used, expired or of another kind.
    pub async fn verify_email_with_token(
        &self,
        token_hash: &str,
        now: Millis,
    ) -> StoreResult<Option<Uuid>> {
        let mut tx = self.begin().await?;
        let user: Option<Uuid> = db_tx!(&mut tx, |conn| {
            let row: Option<(Option<Uuid>,)> = sqlx::query_as(
                "UPDATE account_tokens SET used_at = $3 WHERE token_hash = $1 AND kind = $2 \
                 AND used_at IS NULL AND expires_at > $3 RETURNING user_id",
            )
            .bind(token_hash)
            .bind(TokenKind::VerifyEmail.as_str())
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            let user = row.and_then(|(u,)| u);
            if let Some(u) = user {
                sqlx::query(
                    "UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2), \
                     updated_at = $2 WHERE id = $1",
                )
                .bind(u)
                .bind(now)
                .execute(&mut *conn)
                .await?;
            }
            user
        });
        tx.commit().await?;
        Ok(user)
    }

    /// Sets a new password with a valid reset token, uses the token up and ends every session
    /// of the user, in one transaction. `None` when the token is not valid.
    pub async fn reset_password_with_token(
        &self,
        token_hash: &str,
        password_hash: &str,
        now: Millis,
    ) -> StoreResult<Option<Uuid>> {
        let mut tx = self.begin().await?;
        let user: Option<Uuid> = db_tx!(&mut tx, |conn| {
            let row: Option<(Option<Uuid>,)> = sqlx::query_as(
                "UPDATE account_tokens SET used_at = $3 WHERE token_hash = $1 AND kind = $2 \
                 AND used_at IS NULL AND expires_at > $3 RETURNING user_id",
            )
            .bind(token_hash)
            .bind(TokenKind::PasswordReset.as_str())
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            let user = row.and_then(|(u,)| u);
            if let Some(u) = user {
                // The mail proved the address: a reset verifies it too.
                sqlx::query(
                    "UPDATE users SET password_hash = $2, updated_at = $3, \
                     email_verified_at = COALESCE(email_verified_at, $3) WHERE id = $1",
                )
                .bind(u)
                .bind(password_hash)
                .bind(now)
                .execute(&mut *conn)
                .await?;
                sqlx::query("DELETE FROM sessions WHERE user_id = $1")
                    .bind(u)
                    .execute(&mut *conn)
                    .await?;
            }
            user
        });
        tx.commit().await?;
        Ok(user)
    }

    /// The invitation a token names, if valid (not used, not expired).
    pub async fn invitation_by_token(
        &self,
        token_hash: &str,
        now: Millis,
    ) -> StoreResult<Option<Invitation>> {
        let q = "SELECT project_id, email, role, created_at, expires_at FROM account_tokens \
                 WHERE token_hash = $1 AND kind = $2 AND used_at IS NULL AND expires_at > $3 \
                 AND project_id IS NOT NULL AND role IS NOT NULL";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(token_hash)
            .bind(TokenKind::Invitation.as_str())
            .bind(now)
            .fetch_optional(pool)
            .await?))
    }

    /// Joins `user` to every project with a valid invitation for `email` (on sign-up with
    /// that address) and uses those invitations up; returns the projects joined.
    pub async fn accept_invitations(
        &self,
        user: Uuid,
        email: &str,
        now: Millis,
    ) -> StoreResult<Vec<Uuid>> {
        let mut tx = self.begin().await?;
        let joined = db_tx!(&mut tx, |conn| {
            let rows: Vec<(Uuid, String)> = sqlx::query_as(
                "UPDATE account_tokens SET used_at = $3 WHERE email = $1 AND kind = $2 \
                 AND used_at IS NULL AND expires_at > $3 AND project_id IS NOT NULL \
                 AND role IS NOT NULL RETURNING project_id, role",
            )
            .bind(email)
            .bind(TokenKind::Invitation.as_str())
            .bind(now)
            .fetch_all(&mut *conn)
            .await?;
            let mut joined = Vec::new();
            for (project, role) in rows {
                let role = Role::parse(&role).map_err(|e| StoreError::Other(e.into()))?;
                let done = sqlx::query(
                    "INSERT INTO project_members (project_id, user_id, role, created_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, user_id) DO NOTHING",
                )
                .bind(project)
                .bind(user)
                .bind(role.as_str())
                .bind(now)
                .execute(&mut *conn)
                .await?
                .rows_affected();
                if done > 0 {
                    joined.push(project);
                }
            }
            joined
        });
        tx.commit().await?;
        Ok(joined)
    }

    /// Records a failed sign-in for `email`.
    pub async fn record_login_failure(&self, email: &str, now: Millis) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query("INSERT INTO login_failures (email, failed_at) VALUES ($1, $2)")
                .bind(email)
                .bind(now)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// The failed sign-ins of `email` since `since`: their count and the oldest one's time.
    pub async fn login_failures_since(
        &self,
        email: &str,
        since: Millis,
    ) -> StoreResult<(i64, Option<Millis>)> {
        let q = "SELECT COUNT(*), MIN(failed_at) FROM login_failures \
                 WHERE email = $1 AND failed_at > $2";
        Ok(db_read!(self, |pool| sqlx::query_as(q)
            .bind(email)
            .bind(since)
            .fetch_one(pool)
            .await?))
    }

    /// A successful sign-in forgets the failures.
    pub async fn clear_login_failures(&self, email: &str) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query("DELETE FROM login_failures WHERE email = $1")
                .bind(email)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
