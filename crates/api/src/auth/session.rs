//! The dashboard session: an HS256 JWT in an HttpOnly, SameSite=Lax cookie, valid 7 days.

use herald_core::clock::SharedClock;
use herald_core::ids::Uuid;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};

pub const COOKIE_NAME: &str = "herald_session";
pub const LIFETIME_SECS: i64 = 7 * 24 * 3600;

#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
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
    pub fn new(secret: &[u8], secure_cookies: bool, clock: SharedClock) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            secure: secure_cookies,
            clock,
        }
    }

    pub fn issue(&self, user: Uuid) -> anyhow::Result<String> {
        let now = self.clock.now() / 1000;
        let claims = Claims {
            sub: user.to_string(),
            iat: now,
            exp: now + LIFETIME_SECS,
        };
        Ok(encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// The user of a valid, unexpired token.
    pub fn verify(&self, token: &str) -> Option<Uuid> {
        let mut v = Validation::new(Algorithm::HS256);
        v.leeway = 0;
        // Expiry is checked against the service's clock, not the library's.
        v.validate_exp = false;
        v.set_required_spec_claims(&["exp", "sub"]);
        let data = decode::<Claims>(token, &self.decoding, &v).ok()?;
        if data.claims.exp <= self.clock.now() / 1000 {
            return None;
        }
        Uuid::parse_str(&data.claims.sub).ok()
    }

    pub fn set_cookie(&self, token: &str) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={LIFETIME_SECS}{secure}"
        )
    }

    pub fn clear_cookie(&self) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!("{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}")
    }
}

/// The session token from a `Cookie` header value.
pub fn token_from_cookie(cookie_header: &str) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE_NAME)
        .map(|(_, v)| v)
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
        let t = keys.issue(user).unwrap();
        assert_eq!(keys.verify(&t), Some(user));
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
    }
}
