//! Which Herald user an OAuth provider's account signs in as.
//!
//! In order: the user its identity `(provider, subject)` is linked to (a later change of
//! address at the provider does not matter); else the user with the provider-verified address,
//! the identity linked to it; else a new user without a password, created by
//! [`crate::Engine::create_user`] with the provider as proof of the address.
//!
//! Linking to an account whose address was never verified takes it over (DECISIONS.md
//! "Accounts"): anybody can register an address without owning it, so its password is cleared
//! and its sessions end before the provider's user gets in (`Store::link_oauth_identity`). A
//! verified account keeps its password and sessions. Either way the address is then verified
//! and its pending invitations are joined.

use herald_core::email::EmailAddress;
use herald_store::StoreError;
use herald_store::accounts::User;

use super::users::{AddressProof, NewUser, SignUpError};

/// A provider's account, as its API described it.
#[derive(Clone, Copy, Debug)]
pub struct ProviderIdentity<'a> {
    /// `github`, `google`.
    pub provider: &'a str,
    /// The provider's stable user id.
    pub subject: &'a str,
    /// The account's primary address, only if the provider verified it.
    pub verified_email: Option<&'a EmailAddress>,
}

/// Why an OAuth sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum OAuthSignInError {
    /// Not linked yet, and the provider vouches for no address.
    #[error("the provider reports no verified email address")]
    NoVerifiedEmail,
    /// A new user would be created, and sign-ups are disabled.
    #[error("sign-ups are disabled on this server")]
    SignUpsDisabled,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl crate::Engine {
    /// The user `identity` signs in as, linked or created if need be; `signups_open` false
    /// refuses to create one.
    pub async fn oauth_sign_in(
        &self,
        identity: ProviderIdentity<'_>,
        signups_open: bool,
    ) -> Result<User, OAuthSignInError> {
        let now = self.now();
        if let Some(user) = self
            .store
            .sign_in_oauth_identity(identity.provider, identity.subject, now)
            .await?
        {
            return Ok(user);
        }
        let email = identity
            .verified_email
            .ok_or(OAuthSignInError::NoVerifiedEmail)?;
        let user = match self.store.user_by_email(email.as_str()).await? {
            Some(u) => u,
            None if !signups_open => return Err(OAuthSignInError::SignUpsDisabled),
            None => {
                let new = NewUser {
                    email,
                    password_hash: User::NO_PASSWORD.to_owned(),
                    proof: AddressProof::Provider,
                };
                match self.create_user(new).await {
                    Ok(created) => created.user,
                    // Created by a concurrent sign-in or sign-up meanwhile: link to that one
                    // (taking it over if its address is unverified).
                    Err(SignUpError::EmailTaken) => self
                        .store
                        .user_by_email(email.as_str())
                        .await?
                        .ok_or(StoreError::NotFound)?,
                    Err(SignUpError::Store(e)) => return Err(e.into()),
                    // Invitation errors: no invitation is involved here.
                    Err(e) => return Err(StoreError::Other(e.into()).into()),
                }
            }
        };
        let link = self
            .store
            .link_oauth_identity(
                identity.provider,
                identity.subject,
                user.id,
                email.as_str(),
                now,
            )
            .await?;
        if link.taken_over {
            tracing::info!(
                provider = identity.provider,
                "OAuth sign-in took over an account whose address was not verified"
            );
        }
        // Reread: a takeover cleared the password, the link verified the address.
        Ok(self.store.user_by_id(user.id).await?.unwrap_or(user))
    }
}
