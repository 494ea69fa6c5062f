//! Single-use, expiring tokens mailed for email verification, password reset and
//! invitations (only their SHA-256 is stored), and the writes a consumed token causes, each in
//! one transaction with the consumption.
//!
//! Invariant: a token that proves the address (verification, reset) also turns the address's
//! pending invitations into memberships, in the same transaction ([`crate::invitations`]).

use herald_core::ids::Uuid;
use herald_core::kinds::{Role, TokenKind};
use herald_core::time::Millis;

use crate::invitations::join_invitations;
use crate::{Store, StoreResult};

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

    /// Marks the email of the user named by a valid verification token verified and turns the
    /// address's pending invitations into memberships; the token is used up. `None` when the
    /// token is unknown, used, expired or of another kind.
    pub async fn verify_email_with_token(
        &self,
        token_hash: &str,
        now: Millis,
    ) -> StoreResult<Option<Uuid>> {
        let mut tx = self.begin().await?;
        let user: Option<(Uuid, String)> = db_tx!(&mut tx, |conn| {
            let row: Option<(Option<Uuid>,)> = sqlx::query_as(
                "UPDATE account_tokens SET used_at = $3 WHERE token_hash = $1 AND kind = $2 \
                 AND used_at IS NULL AND expires_at > $3 RETURNING user_id",
            )
            .bind(token_hash)
            .bind(TokenKind::VerifyEmail.as_str())
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            match row.and_then(|(u,)| u) {
                Some(u) => {
                    let (email,): (String,) = sqlx::query_as(
                        "UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2), \
                         updated_at = $2 WHERE id = $1 RETURNING email",
                    )
                    .bind(u)
                    .bind(now)
                    .fetch_one(&mut *conn)
                    .await?;
                    Some((u, email))
                }
                None => None,
            }
        });
        if let Some((u, email)) = &user {
            join_invitations(&mut tx, *u, email, now).await?;
        }
        tx.commit().await?;
        Ok(user.map(|(u, _)| u))
    }

    /// Sets a new password with a valid reset token, uses the token up, ends every session of
    /// the user and (the mail proved the address) turns its pending invitations into
    /// memberships, in one transaction. `None` when the token is not valid.
    pub async fn reset_password_with_token(
        &self,
        token_hash: &str,
        password_hash: &str,
        now: Millis,
    ) -> StoreResult<Option<Uuid>> {
        let mut tx = self.begin().await?;
        let user: Option<(Uuid, String)> = db_tx!(&mut tx, |conn| {
            let row: Option<(Option<Uuid>,)> = sqlx::query_as(
                "UPDATE account_tokens SET used_at = $3 WHERE token_hash = $1 AND kind = $2 \
                 AND used_at IS NULL AND expires_at > $3 RETURNING user_id",
            )
            .bind(token_hash)
            .bind(TokenKind::PasswordReset.as_str())
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            match row.and_then(|(u,)| u) {
                Some(u) => {
                    // The mail proved the address: a reset verifies it too.
                    let (email,): (String,) = sqlx::query_as(
                        "UPDATE users SET password_hash = $2, updated_at = $3, \
                         email_verified_at = COALESCE(email_verified_at, $3) WHERE id = $1 \
                         RETURNING email",
                    )
                    .bind(u)
                    .bind(password_hash)
                    .bind(now)
                    .fetch_one(&mut *conn)
                    .await?;
                    sqlx::query("DELETE FROM sessions WHERE user_id = $1")
                        .bind(u)
                        .execute(&mut *conn)
                        .await?;
                    Some((u, email))
                }
                None => None,
            }
        });
        if let Some((u, email)) = &user {
            join_invitations(&mut tx, *u, email, now).await?;
        }
        tx.commit().await?;
        Ok(user.map(|(u, _)| u))
    }
}
