//! Accounts of OAuth providers linked to users (`oauth_identities`): the provider's stable
//! user id (`subject`) names the identity, never the email.
//!
//! Invariants: one identity belongs to one user ((provider, subject) is the key); linking
//! also marks the user's email verified, since only a provider-verified address is linked.

use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::accounts::User;
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

    /// Links an identity to `user` (a no-op if that identity is already linked) and marks the
    /// user's email verified, in one transaction.
    pub async fn link_oauth_identity(
        &self,
        provider: &str,
        subject: &str,
        user: Uuid,
        email: &str,
        now: Millis,
    ) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
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
        });
        tx.commit().await?;
        Ok(())
    }
}
