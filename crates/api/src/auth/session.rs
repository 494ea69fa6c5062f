//! The dashboard session: an HS256 JWT in an HttpOnly, SameSite=Lax cookie, valid 7 days.
//!
//! Invariants:
//! - Every token names a server-side session row (`sid`); a token whose row is gone (logout,
//!   password reset or change) is refused even before it expires (see `auth::resolve`).
//! - Tokens are signed with a key derived from the server secret for this purpose only
//!   ([`KeyPurpose::SessionSigning`]), never with the secret itself; changing the secret (or
//!   the derivation) signs everyone out.
//! - Cookies are written and read with the `cookie` crate (quoting, attributes, splitting).

use cookie::{Cookie, SameSite};
use herald_core::clock::SharedClock;
use herald_core::ids::Uuid;
use herald_core::secret::{KeyPurpose, derive};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};

pub const COOKIE_NAME: &str = "herald_session";
pub const LIFETIME_SECS: i64 = 7 * 24 * 3600;

#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
    sid: String,
    iat: i64,
    exp: i64,
}

#[derive(Clone)]
pub struct SessionKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    secure: bool,
    clock: SharedClock,
}

impl SessionKeys {
    /// Keys for sessions under the server `secret`.
    pub fn new(secret: &[u8], secure_cookies: bool, clock: SharedClock) -> Self {
        let key = derive(secret, KeyPurpose::SessionSigning);
        Self {
            encoding: EncodingKey::from_secret(&key.0),
            decoding: DecodingKey::from_secret(&key.0),
            secure: secure_cookies,
            clock,
        }
    }

    /// A new session id (the server-side row's key).
    pub fn new_sid() -> String {
        super::keys::random_hex(16)
    }

    /// The token of session `sid` of `user`, and when it expires (epoch ms).
    pub fn issue(&self, user: Uuid, sid: &str) -> anyhow::Result<(String, i64)> {
        let now = self.clock.now() / 1000;
        let claims = Claims {
            sid: sid.to_owned(),
            sub: user.to_string(),
            iat: now,
            exp: now + LIFETIME_SECS,
        };
        let exp = claims.exp * 1000;
        Ok((
            encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?,
            exp,
        ))
    }

    /// The user and session id of a validly signed, unexpired token (whether the session is
    /// still live is the store's answer).
    pub fn verify(&self, token: &str) -> Option<(Uuid, String)> {
        let mut v = Validation::new(Algorithm::HS256);
        v.leeway = 0;
        // Expiry is checked against the service's clock, not the library's.
        v.validate_exp = false;
        v.set_required_spec_claims(&["exp", "sub"]);
        let data = decode::<Claims>(token, &self.decoding, &v).ok()?;
        if data.claims.exp <= self.clock.now() / 1000 {
            return None;
        }
        let user = Uuid::parse_str(&data.claims.sub).ok()?;
        Some((user, data.claims.sid))
    }

    /// The `Set-Cookie` value carrying `token`.
    pub fn set_cookie(&self, token: &str) -> String {
        self.cookie(token.to_owned(), LIFETIME_SECS)
    }

    /// The `Set-Cookie` value that removes the session cookie.
    pub fn clear_cookie(&self) -> String {
        self.cookie(String::new(), 0)
    }

    fn cookie(&self, value: String, max_age_secs: i64) -> String {
        Cookie::build((COOKIE_NAME, value))
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .max_age(cookie::time::Duration::seconds(max_age_secs))
            .secure(self.secure)
            .build()
            .to_string()
    }
}

/// The session token from a `Cookie` header value.
pub fn token_from_cookie(cookie_header: &str) -> Option<&str> {
    Cookie::split_parse(cookie_header)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE_NAME)
        .and_then(|c| c.value_raw())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_tampering() {
        let keys = SessionKeys::new(
            b"0123456789abcdef0123456789abcdef",
            false,
            herald_core::clock::system(),
        );
        let user = Uuid::now_v7();
        let (t, _) = keys.issue(user, "s1").unwrap();
        assert_eq!(keys.verify(&t), Some((user, "s1".to_owned())));
        let other = SessionKeys::new(
            b"another secret, another signature",
            false,
            herald_core::clock::system(),
        );
        assert_eq!(other.verify(&t), None);
        assert_eq!(
            token_from_cookie(&format!("a=b; {COOKIE_NAME}={t}")),
            Some(t.as_str())
        );
        assert_eq!(token_from_cookie(&format!("{COOKIE_NAME}=; a=b")), None);
        assert_eq!(token_from_cookie("other=1"), None);
    }

    #[test]
    fn tokens_are_not_signed_with_the_raw_secret() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let keys = SessionKeys::new(secret, false, herald_core::clock::system());
        let (t, _) = keys.issue(Uuid::now_v7(), "s1").unwrap();
        let raw = DecodingKey::from_secret(secret);
        let mut v = Validation::new(Algorithm::HS256);
        v.validate_exp = false;
        assert!(decode::<Claims>(&t, &raw, &v).is_err());
    }

    #[test]
    fn cookies_carry_the_attributes() {
        let keys = SessionKeys::new(b"k", true, herald_core::clock::system());
        let c = keys.set_cookie("abc");
        for part in [
            "herald_session=abc",
            "HttpOnly",
            "SameSite=Lax",
            "Path=/",
            "Secure",
            "Max-Age=604800",
        ] {
            assert!(c.contains(part), "{c}");
        }
        let cleared = keys.clear_cookie();
        assert!(cleared.starts_with("herald_session=;") || cleared.starts_with("herald_session="));
        assert!(cleared.contains("Max-Age=0"), "{cleared}");
    }
}
