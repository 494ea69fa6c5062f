//! The `state` parameter of OAuth sign-in: it goes to the provider with the browser and must
//! come back unchanged to the callback.
//!
//! Format: `<provider>.<nonce>.<expires ms>.<base64url HMAC-SHA256 of the first three parts>`
//! under the key derived for [`crate::secret::KeyPurpose::OAuthState`].
//!
//! Invariants:
//! - Only this server can make a state (the MAC); a state names its provider, so one issued
//!   for GitHub is refused on Google's callback.
//! - A state lives [`LIFETIME_MS`] (checked against the caller's clock).
//! - A state is bound to the browser that started the flow: its nonce is also in that
//!   browser's `herald_oauth_state` cookie, and the callback requires both to be equal. A
//!   state made for another browser (login CSRF: an attacker's own code sent to a victim) is
//!   refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::mac::{MacKey, equal};
use crate::secret::DerivedKey;
use crate::time::Millis;

/// How long a sign-in may take at the provider.
pub const LIFETIME_MS: Millis = 10 * 60 * 1000;

/// Why a state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("the state is malformed or its signature is wrong")]
    Invalid,
    #[error("the state has expired")]
    Expired,
    #[error("the state was issued to another browser")]
    OtherBrowser,
    #[error("the state was issued for another provider")]
    OtherProvider,
}

/// Signs and checks states.
pub struct StateKey(MacKey);

impl StateKey {
    pub fn new(key: &DerivedKey) -> Self {
        StateKey(MacKey::new(&key.0))
    }

    /// A state for `provider` bound to `nonce` (hex, from the cookie), issued at `now`.
    pub fn issue(&self, provider: &str, nonce: &str, now: Millis) -> String {
        let payload = format!("{provider}.{nonce}.{}", now + LIFETIME_MS);
        let tag = self.0.sign(&[payload.as_bytes()]);
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// Checks `state` for `provider` against the browser's cookie `nonce` at `now`.
    pub fn check(
        &self,
        state: &str,
        provider: &str,
        cookie_nonce: Option<&str>,
        now: Millis,
    ) -> Result<(), StateError> {
        let (payload, tag) = state.rsplit_once('.').ok_or(StateError::Invalid)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| StateError::Invalid)?;
        if !equal(&self.0.sign(&[payload.as_bytes()]), &tag) {
            return Err(StateError::Invalid);
        }
        let mut parts = payload.split('.');
        let (Some(p), Some(nonce), Some(expires), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(StateError::Invalid);
        };
        let expires: Millis = expires.parse().map_err(|_| StateError::Invalid)?;
        if p != provider {
            return Err(StateError::OtherProvider);
        }
        if now >= expires {
            return Err(StateError::Expired);
        }
        let same_browser =
            cookie_nonce.is_some_and(|c| !c.is_empty() && equal(c.as_bytes(), nonce.as_bytes()));
        if !same_browser {
            return Err(StateError::OtherBrowser);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::{KeyPurpose, derive};

    fn key(secret: &[u8]) -> StateKey {
        StateKey::new(&derive(secret, KeyPurpose::OAuthState))
    }

    #[test]
    fn a_state_checks_only_in_its_browser_provider_and_time() {
        let k = key(b"a server secret a server secret 0");
        let s = k.issue("github", "abcd", 1_000);
        assert_eq!(k.check(&s, "github", Some("abcd"), 2_000), Ok(()));
        assert_eq!(
            k.check(&s, "github", Some("abce"), 2_000),
            Err(StateError::OtherBrowser)
        );
        assert_eq!(
            k.check(&s, "github", None, 2_000),
            Err(StateError::OtherBrowser)
        );
        assert_eq!(
            k.check(&s, "google", Some("abcd"), 2_000),
            Err(StateError::OtherProvider)
        );
        assert_eq!(
            k.check(&s, "github", Some("abcd"), 1_000 + LIFETIME_MS),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn a_tampered_or_foreign_state_is_invalid() {
        let k = key(b"a server secret a server secret 0");
        let s = k.issue("github", "abcd", 1_000);
        let longer = s.replacen(".601000.", ".999999999.", 1);
        assert_ne!(longer, s);
        assert_eq!(
            k.check(&longer, "github", Some("abcd"), 2_000),
            Err(StateError::Invalid)
        );
        let other = key(b"another secret another secret 00");
        assert_eq!(
            other.check(&s, "github", Some("abcd"), 2_000),
            Err(StateError::Invalid)
        );
        for junk in ["", ".", "a.b.c.d", "github.abcd.x.!!"] {
            assert_eq!(
                k.check(junk, "github", Some("abcd"), 2_000),
                Err(StateError::Invalid)
            );
        }
    }
}
