//! Keys derived from the server secret (`HERALD_SECRET` or the generated `data_dir/secret`).
//!
//! Invariants:
//! - The secret itself never signs or encrypts anything: every use gets its own 32-byte key,
//!   HKDF-SHA256(salt, ikm = secret, info = label) with a distinct (salt, label) per
//!   [`KeyPurpose`], so a key leaked or misused in one place reveals nothing about another.
//! - [`KeyPurpose::DkimSealing`] keeps the exact derivation DKIM keys were sealed with since the
//!   first release (salt `herald/seal/v1`, label `dkim-private-keys`), so sealed keys stay
//!   readable without a migration.
//! - Changing a purpose's salt or label invalidates everything made with it (sessions: users
//!   sign in again; sealed keys: must be re-sealed, see `herald rotate-secret`).

use hkdf::Hkdf;
use sha2::Sha256;

/// What a derived key is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPurpose {
    /// HS256 signing of dashboard session tokens.
    SessionSigning,
    /// AES-256-GCM sealing of DKIM private keys at rest.
    DkimSealing,
    /// HMAC-SHA256 of the tokens in tracking and list-page links ([`crate::link_token`]).
    LinkSigning,
    /// AES-256-CTR encryption of those tokens' payload, so no id is readable in a link.
    LinkEncryption,
    /// The base of each project's signing secret for workflow WEBHOOK calls
    /// ([`crate::workflow_run::webhook_secret`]).
    WebhookSigning,
    /// HMAC-SHA256 of the `state` of OAuth sign-in ([`crate::oauth_state`]).
    OAuthState,
}

impl KeyPurpose {
    fn salt_and_label(self) -> (&'static [u8], &'static [u8]) {
        match self {
            KeyPurpose::SessionSigning => (b"herald/keys/v1", b"session-signing"),
            KeyPurpose::DkimSealing => (b"herald/seal/v1", b"dkim-private-keys"),
            KeyPurpose::LinkSigning => (b"herald/links/v1", b"link-token-mac"),
            KeyPurpose::LinkEncryption => (b"herald/links/v1", b"link-token-cipher"),
            KeyPurpose::WebhookSigning => (b"herald/webhooks/v1", b"workflow-webhook-signing"),
            KeyPurpose::OAuthState => (b"herald/oauth/v1", b"oauth-state-mac"),
        }
    }
}

/// A derived key. Its `Debug` shows no key material.
#[derive(Clone, PartialEq, Eq)]
pub struct DerivedKey(pub [u8; 32]);

impl std::fmt::Debug for DerivedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DerivedKey(<redacted>)")
    }
}

/// The key for `purpose` from the server secret.
pub fn derive(secret: &[u8], purpose: KeyPurpose) -> DerivedKey {
    let (salt, label) = purpose.salt_and_label();
    let hk = Hkdf::<Sha256>::new(Some(salt), secret);
    let mut okm = [0u8; 32];
    // HKDF-SHA256 can produce up to 255 * 32 bytes; 32 always succeeds.
    if hk.expand(label, &mut okm).is_err() {
        unreachable!("HKDF-SHA256 expands to 32 bytes");
    }
    DerivedKey(okm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purposes_get_unrelated_keys_and_never_the_secret() {
        let secret = b"test-secret-test-secret-test-secret-0123";
        let session = derive(secret, KeyPurpose::SessionSigning);
        let dkim = derive(secret, KeyPurpose::DkimSealing);
        assert_ne!(session, dkim);
        let mac = derive(secret, KeyPurpose::LinkSigning);
        let enc = derive(secret, KeyPurpose::LinkEncryption);
        assert!(mac != enc && mac != session && enc != dkim);
        let oauth = derive(secret, KeyPurpose::OAuthState);
        assert!(oauth != mac && oauth != session);
        assert_ne!(&session.0[..], &secret[..32]);
        assert_eq!(session, derive(secret, KeyPurpose::SessionSigning));
        assert_ne!(
            session,
            derive(b"another secret", KeyPurpose::SessionSigning)
        );
        assert!(!format!("{session:?}").contains(&format!("{}", session.0[0])));
    }

    #[test]
    fn rfc5869_test_case_1() {
        // Checks the construction itself (RFC 5869 A.1), not just self-consistency.
        let ikm = [0x0bu8; 22];
        let salt: Vec<u8> = (0x00..=0x0c).collect();
        let info: Vec<u8> = (0xf0..=0xf9).collect();
        let mut okm = [0u8; 42];
        Hkdf::<Sha256>::new(Some(&salt), &ikm)
            .expand(&info, &mut okm)
            .ok();
        assert_eq!(okm[..4], [0x3c, 0xb2, 0x5f, 0x25]);
    }
}
