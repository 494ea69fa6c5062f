//! Account rules shared by the API and the store (DECISIONS.md "Accounts"): how long each
//! mailed token lives, how many account mails an address may receive, and the sign-in
//! slow-down.

use crate::kinds::TokenKind;
use crate::time::Millis;

const HOUR_MS: Millis = 3600 * 1000;

/// How long a token of `kind` stays valid after it was mailed.
pub fn token_lifetime(kind: TokenKind) -> Millis {
    match kind {
        TokenKind::VerifyEmail => 24 * HOUR_MS,
        TokenKind::PasswordReset => HOUR_MS,
        TokenKind::Invitation => 7 * 24 * HOUR_MS,
    }
}

/// At most this many account mails per address within [`MAIL_WINDOW_MS`].
pub const MAILS_PER_WINDOW: i64 = 3;
pub const MAIL_WINDOW_MS: Millis = HOUR_MS;

/// After this many failed sign-ins within [`LOGIN_FAILURE_WINDOW_MS`], the account's sign-in
/// answers 429 until the oldest of them leaves the window.
pub const LOGIN_FAILURES_ALLOWED: i64 = 5;
pub const LOGIN_FAILURE_WINDOW_MS: Millis = 15 * 60 * 1000;

/// The id of the system project that owns the mail Herald sends itself (created by migration
/// 0013; no members, no usable keys).
pub const SYSTEM_PROJECT_ID: crate::ids::Uuid = crate::ids::Uuid::nil();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_follow_the_decisions() {
        assert_eq!(token_lifetime(TokenKind::VerifyEmail), 86_400_000);
        assert_eq!(token_lifetime(TokenKind::PasswordReset), 3_600_000);
        assert_eq!(token_lifetime(TokenKind::Invitation), 604_800_000);
    }
}
