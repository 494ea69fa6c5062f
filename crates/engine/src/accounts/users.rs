//! Creating a user: what sign-up, the invitation page and OAuth sign-in share. What the new
//! user joins depends on how its address was proven ([`AddressProof`]).

use herald_core::email::EmailAddress;
use herald_core::ids::{Uuid, new_id};
use herald_store::StoreError;
use herald_store::accounts::User;

/// How a new user's address is known to be theirs.
#[derive(Clone, Copy, Debug)]
pub enum AddressProof<'a> {
    /// Nothing yet (a plain sign-up): the user joins no project until the address is verified
    /// (then its pending invitations become memberships).
    Unproven,
    /// The SHA-256 of an invitation token from the invitation mail: it proves the mailbox, so
    /// the address is verified and the user joins that project (and the address's other
    /// pending invitations) at once.
    Invitation { token_hash: &'a str },
    /// An OAuth provider verified the address: verified, and its invitations joined.
    Provider,
}

/// A user to create.
pub struct NewUser<'a> {
    pub email: &'a EmailAddress,
    /// A PHC string, or [`User::NO_PASSWORD`].
    pub password_hash: String,
    pub proof: AddressProof<'a>,
}

/// The created user and the projects it joined through invitations.
#[derive(Debug)]
pub struct CreatedUser {
    pub user: User,
    pub joined: Vec<Uuid>,
}

/// Why a user was not created.
#[derive(Debug, thiserror::Error)]
pub enum SignUpError {
    #[error("an account with this email already exists")]
    EmailTaken,
    /// Unknown, used, expired, or not an invitation.
    #[error("this invitation is invalid, was already used, or has expired")]
    InvalidInvitation,
    #[error("this invitation is for another email address")]
    InvitationForAnotherAddress,
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for SignUpError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(_) => SignUpError::EmailTaken,
            e => SignUpError::Store(e),
        }
    }
}

impl crate::Engine {
    /// Creates a user; its address is verified, and its pending invitations joined, exactly
    /// when `new.proof` proves the address.
    pub async fn create_user(&self, new: NewUser<'_>) -> Result<CreatedUser, SignUpError> {
        let now = self.now();
        let mut user = User {
            id: new_id(),
            email: new.email.as_str().to_owned(),
            password_hash: new.password_hash,
            created_at: now,
            email_verified_at: None,
        };
        let joined = match new.proof {
            AddressProof::Unproven => {
                self.store.create_user(&user).await?;
                Vec::new()
            }
            AddressProof::Provider => {
                user.email_verified_at = Some(now);
                self.store.create_verified_user(&user, now).await?
            }
            AddressProof::Invitation { token_hash } => {
                let invitation = self
                    .store
                    .invitation_by_token(token_hash, now)
                    .await?
                    .ok_or(SignUpError::InvalidInvitation)?;
                if invitation.email != user.email {
                    return Err(SignUpError::InvitationForAnotherAddress);
                }
                user.email_verified_at = Some(now);
                // `None`: the token was spent by a concurrent sign-up since it was read.
                self.store
                    .create_invited_user(&user, token_hash, now)
                    .await?
                    .ok_or(SignUpError::InvalidInvitation)?
            }
        };
        Ok(CreatedUser { user, joined })
    }
}
