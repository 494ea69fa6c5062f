//! HMAC-SHA256: the one implementation every MAC Herald computes goes through (aws-lc-rs, the
//! crypto library already used for DKIM, sealing and TLS): link tokens, the timestamped
//! signatures of the generic feedback format, Stripe and workflow WEBHOOK calls, each
//! project's webhook secret, and the OAuth state.
//!
//! Invariants: keys never show in `Debug`; tags are compared in constant time
//! ([`equal`]), never with `==`.

use aws_lc_rs::{constant_time, hmac};

/// Length of an HMAC-SHA256 tag.
pub const TAG_LEN: usize = 32;

/// An HMAC-SHA256 key, prepared once and used for many messages.
#[derive(Clone)]
pub struct MacKey(hmac::Key);

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(<redacted>)")
    }
}

impl MacKey {
    /// A key of any length (HMAC hashes a key longer than the block).
    pub fn new(key: &[u8]) -> Self {
        MacKey(hmac::Key::new(hmac::HMAC_SHA256, key))
    }

    /// The tag of the concatenation of `parts`.
    pub fn sign(&self, parts: &[&[u8]]) -> [u8; TAG_LEN] {
        let mut ctx = hmac::Context::with_key(&self.0);
        for p in parts {
            ctx.update(p);
        }
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }
}

/// The HMAC-SHA256 of the concatenation of `parts` under `key`.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; TAG_LEN] {
    MacKey::new(key).sign(parts)
}

/// Whether `a` and `b` are equal, in time independent of where they differ.
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    constant_time::verify_slices_are_equal(a, b).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_test_case_2() {
        // Checks the construction itself (RFC 4231 4.3), with the message in two parts.
        let tag = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            hex::encode(tag),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn equal_compares_whole_slices() {
        assert!(equal(b"abc", b"abc"));
        assert!(!equal(b"abc", b"abd"));
        assert!(!equal(b"abc", b"ab"));
        assert!(!format!("{:?}", MacKey::new(b"k")).contains('k'));
    }
}
