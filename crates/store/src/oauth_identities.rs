//! Accounts of OAuth providers linked to users (`oauth_identities`): the provider's stable
//! user id (`subject`) names the identity, never the email.
//!
//! Invariants: one identity belongs to one user ((provider, subject) is the key); linking
//! also marks the user's email verified, since only a provider-verified address is linked, and
//! an account whose address was not verified is taken over by the link (password cleared,
//! sessions ended) rather than shared with whoever registered the address first.

use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::accounts::User;
use crate::invitations::join_invitations;
use crate::{Store, StoreResult};

impl Store {
    /// The user an identity is linked to, its last sign-in set to `now`.
    pub async fn sign_in_oauth_identity(
        &self,
        provider: &str,
        subject: &str,
        now: Millis,
    ) -> StoreResult<Option<User>> {
        let user: Option<(Uuid,)> = db_write!(self, |pool| {
            sqlx::query_as(
                "UPDATE oauth_identities SET last_login_at = $3 \
                 WHERE provider = $1 AND subject = $2 RETURNING user_id",
            )
            .bind(provider)
            .bind(subject)
            .bind(now)
            .fetch_optional(pool)
            .await?
        });
        match user {
            Some((id,)) => self.user_by_id(id).await,
            None => Ok(None),
        }
    }

    /// Links an identity to `user`, found by the provider-verified address `email` (a no-op
    /// if that identity is already linked), marks the address verified and joins its pending
    /// invitations, in one transaction. If the user's address was not verified yet, the account
    /// is taken over first, in the same transaction: its password is cleared and every session
    /// ends (DECISIONS.md "Accounts": whoever registered the address without proving it keeps
    /// nothing). The check is in the write itself, so a verification racing with the link
    /// cannot slip between them.
    pub async fn link_oauth_identity(
        &self,
        provider: &str,
        subject: &str,
        user: Uuid,
        email: &str,
        now: Millis,
    ) -> StoreResult<OAuthLink> {
        let mut tx = self.begin().await?;
        let taken_over = db_tx!(&mut tx, |conn| {
            let taken: Option<(Uuid,)> = sqlx::query_as(
                "UPDATE users SET password_hash = $2, updated_at = $3 \
                 WHERE id = $1 AND email_verified_at IS NULL RETURNING id",
            )
            .bind(user)
            .bind(User::NO_PASSWORD)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
            if taken.is_some() {
                sqlx::query("DELETE FROM sessions WHERE user_id = $1")
                    .bind(user)
                    .execute(&mut *conn)
                    .await?;
            }
            sqlx::query(
                "INSERT INTO oauth_identities (provider, subject, user_id, email, created_at, \
                 last_login_at) VALUES ($1, $2, $3, $4, $5, $5) \
                 ON CONFLICT (provider, subject) DO NOTHING",
            )
            .bind(provider)
            .bind(subject)
            .bind(user)
            .bind(email)
            .bind(now)
            .execute(&mut *conn)
            .await?;
            sqlx::query(
                "UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2), \
                 updated_at = $2 WHERE id = $1",
            )
            .bind(user)
            .bind(now)
            .execute(&mut *conn)
            .await?;
            taken.is_some()
        });
        let joined = join_invitations(&mut tx, user, email, now).await?;
        tx.commit().await?;
        Ok(OAuthLink { taken_over, joined })
    }
}

/// What linking an identity did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthLink {
    /// The account's address was unverified: its password was cleared and its sessions ended.
    pub taken_over: bool,
    /// Projects joined through pending invitations of the address.
    pub joined: Vec<Uuid>,
}
