//! Account use cases (DECISIONS.md "Accounts"), one service function each, shared by the API
//! and the dashboard: creating a user and the invitations it joins ([`users`]), signing in
//! with an OAuth provider ([`oauth`]), and the owner rules of members and projects
//! ([`members`]). Handlers parse the request, call one of these, and render the answer.
//!
//! Invariants:
//! - A pending invitation becomes a membership only for a user whose address is proven: by
//!   the invitation's token, by a verification or reset mail, or by an OAuth provider.
//! - An OAuth identity links to an existing account only as its proven owner: an account whose
//!   address was never verified is taken over (password cleared, sessions ended).
//! - Only an OWNER deletes or resets a project and grants, changes or removes the OWNER role;
//!   a project always keeps one OWNER.

pub mod members;
pub mod oauth;
pub mod users;

pub use members::{MemberAddition, MemberError};
pub use oauth::{OAuthSignInError, ProviderIdentity};
pub use users::{AddressProof, CreatedUser, NewUser, SignUpError};
