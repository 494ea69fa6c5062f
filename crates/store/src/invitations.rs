//! Invitations of an address to a project (account tokens of kind `INVITATION`) and the
//! memberships they become.
//!
//! Invariants (DECISIONS.md "Accounts"):
//! - An invitation becomes a membership only for a user whose address is proven: by the
//!   invitation's own token ([`Store::create_invited_user`]), or, once the address is verified
//!   (verification or reset mail, an OAuth provider), with [`join_invitations`]. A sign-up that
//!   proved nothing joins nothing.
//! - Each write that proves the address joins the invitations in its own transaction, so an
//!   address is never verified with its invitations left behind.
//! - An invitation is used once; joining a project the user is already in changes nothing.

use herald_core::ids::Uuid;
use herald_core::kinds::{Role, TokenKind};
use herald_core::time::Millis;
use sqlx::FromRow;

use crate::accounts::{User, insert_user};
use crate::{Store, StoreError, StoreResult, Tx};

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

    /// Joins `user` to every project with a valid invitation for `email` and uses those
    /// invitations up; returns the projects joined. Only for a user whose address is verified.
    pub async fn accept_invitations(
        &self,
        user: Uuid,
        email: &str,
        now: Millis,
    ) -> StoreResult<Vec<Uuid>> {
        let mut tx = self.begin().await?;
        let joined = join_invitations(&mut tx, user, email, now).await?;
        tx.commit().await?;
        Ok(joined)
    }

    /// Creates `user`, whose address is already proven (`email_verified_at` set: an OAuth
    /// provider verified it), and joins the address's pending invitations, in one
    /// transaction. A taken address is `StoreError::Conflict`. Returns the projects joined.
    pub async fn create_verified_user(&self, user: &User, now: Millis) -> StoreResult<Vec<Uuid>> {
        let verified = User {
            email_verified_at: Some(user.email_verified_at.unwrap_or(now)),
            ..user.clone()
        };
        let mut tx = self.begin().await?;
        insert_user(&mut tx, &verified).await?;
        let joined = join_invitations(&mut tx, user.id, &user.email, now).await?;
        tx.commit().await?;
        Ok(joined)
    }

    /// Creates `user` (its address marked verified at `now`: the token proved the mailbox)
    /// with the invitation `token_hash` for the same address, which is used up, and joins every
    /// other pending invitation of the address, in one transaction. `Ok(None)` (nothing
    /// written) when the token is not a valid invitation for `user.email`; a taken address is
    /// `StoreError::Conflict`. Returns the projects joined.
    pub async fn create_invited_user(
        &self,
        user: &User,
        token_hash: &str,
        now: Millis,
    ) -> StoreResult<Option<Vec<Uuid>>> {
        let mut tx = self.begin().await?;
        let spent: Option<(Uuid, String)> = db_tx!(&mut tx, |conn| {
            sqlx::query_as(
                "UPDATE account_tokens SET used_at = $4 WHERE token_hash = $1 AND kind = $2 \
                 AND email = $3 AND used_at IS NULL AND expires_at > $4 \
                 AND project_id IS NOT NULL AND role IS NOT NULL RETURNING project_id, role",
            )
            .bind(token_hash)
            .bind(TokenKind::Invitation.as_str())
            .bind(&user.email)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?
        });
        // Dropping the transaction rolls back: an invalid token leaves nothing behind.
        let Some((project, role)) = spent else {
            return Ok(None);
        };
        let verified = User {
            email_verified_at: Some(now),
            ..user.clone()
        };
        insert_user(&mut tx, &verified).await?;
        let mut joined = Vec::new();
        if insert_membership(&mut tx, project, user.id, parse_role(&role)?, now).await? {
            joined.push(project);
        }
        joined.extend(join_invitations(&mut tx, user.id, &user.email, now).await?);
        tx.commit().await?;
        Ok(Some(joined))
    }
}

fn parse_role(raw: &str) -> StoreResult<Role> {
    Role::parse(raw).map_err(|e| StoreError::Other(e.into()))
}

/// Adds a membership unless `user` is in the project already; true when added.
async fn insert_membership(
    tx: &mut Tx,
    project: Uuid,
    user: Uuid,
    role: Role,
    now: Millis,
) -> StoreResult<bool> {
    let added = db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO project_members (project_id, user_id, role, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, user_id) DO NOTHING",
        )
        .bind(project)
        .bind(user)
        .bind(role.as_str())
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(added > 0)
}

/// Inside `tx`: joins `user` (whose address `email` was just proven) to every project with a
/// valid invitation for the address and uses those invitations up; the projects joined.
pub(crate) async fn join_invitations(
    tx: &mut Tx,
    user: Uuid,
    email: &str,
    now: Millis,
) -> StoreResult<Vec<Uuid>> {
    let rows: Vec<(Uuid, String)> = db_tx!(tx, |conn| {
        sqlx::query_as(
            "UPDATE account_tokens SET used_at = $3 WHERE email = $1 AND kind = $2 \
             AND used_at IS NULL AND expires_at > $3 AND project_id IS NOT NULL \
             AND role IS NOT NULL RETURNING project_id, role",
        )
        .bind(email)
        .bind(TokenKind::Invitation.as_str())
        .bind(now)
        .fetch_all(&mut *conn)
        .await?
    });
    let mut joined = Vec::new();
    for (project, role) in rows {
        if insert_membership(tx, project, user, parse_role(&role)?, now).await? {
            joined.push(project);
        }
    }
    Ok(joined)
}
