//! Sealing secrets at rest (DKIM private keys) with a key derived from the server secret.
//!
//! Invariants:
//! - The AES-256-GCM key is HKDF-SHA256(salt = [`HKDF_SALT`], ikm = server secret,
//!   info = purpose). Different purposes give unrelated keys, so a blob sealed for one purpose
//!   never opens under another.
//! - Sealed format: `nonce (12 bytes) || ciphertext || tag (16 bytes)`, the nonce fresh from the
//!   system RNG for every call, so sealing the same plaintext twice gives different bytes.
//! - [`Sealer::open`] returns an error (never panics) on short input, tampering or a wrong
//!   key; it reveals nothing more than "cannot open".
//! - Changing the server secret makes every sealed value unreadable: keys must be re-sealed.

use std::fmt;
use std::sync::Arc;

use anyhow::anyhow;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hkdf::{HKDF_SHA256, Salt};

/// Fixed HKDF salt: domain separation from any other use of the server secret.
pub const HKDF_SALT: &[u8] = b"herald/seal/v1";
const TAG_LEN: usize = 16;

/// Seals and opens secrets with one derived key. Cheap to clone.
#[derive(Clone)]
pub struct Sealer {
    key: Arc<LessSafeKey>,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer(<redacted>)")
    }
}

impl Sealer {
    /// Derives the AES-256-GCM key for `purpose` from the server secret with HKDF-SHA256.
    pub fn from_secret(server_secret: &[u8], purpose: &str) -> Self {
        let info = [purpose.as_bytes()];
        let prk = Salt::new(HKDF_SHA256, HKDF_SALT).extract(server_secret);
        // `expand` only fails when the requested length exceeds 255 * 32 bytes; 32 never does.
        #[allow(clippy::expect_used)]
        let okm = prk
            .expand(&info, &AES_256_GCM)
            .expect("HKDF-SHA256 can always produce 32 bytes");
        let key = UnboundKey::from(okm);
        Self {
            key: Arc::new(LessSafeKey::new(key)),
        }
    }

    /// Encrypts `plaintext`: returns `nonce || ciphertext+tag`.
    ///
    /// # Panics
    /// Only if the system random generator fails, which aws-lc treats as fatal anyway.
    pub fn seal(&self, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        #[allow(clippy::expect_used)]
        aws_lc_rs::rand::fill(&mut nonce).expect("system random generator failed");
        let mut out = Vec::with_capacity(NONCE_LEN + plaintext.len() + TAG_LEN);
        out.extend_from_slice(&nonce);
        let mut in_out = plaintext.to_vec();
        // Sealing fails only for inputs beyond GCM's 64 GiB limit.
        #[allow(clippy::expect_used)]
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::empty(),
                &mut in_out,
            )
            .expect("AES-256-GCM seal of an in-memory secret");
        out.extend_from_slice(&in_out);
        out
    }

    /// Decrypts a value produced by [`Sealer::seal`] with the same secret and purpose.
    pub fn open(&self, sealed: &[u8]) -> anyhow::Result<Vec<u8>> {
        if sealed.len() < NONCE_LEN + TAG_LEN {
            return Err(anyhow!("sealed value too short ({} bytes)", sealed.len()));
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| anyhow!("cannot open sealed value: bad nonce"))?;
        let mut in_out = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::empty(), &mut in_out)
            .map_err(|_| anyhow!("cannot open sealed value: wrong key or corrupted data"))?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_fresh_nonce() {
        let s = Sealer::from_secret(b"server secret of some length", "dkim");
        let a = s.seal(b"private key bytes");
        let b = s.seal(b"private key bytes");
        assert_ne!(a, b, "nonce must differ");
        assert_eq!(a.len(), NONCE_LEN + 17 + TAG_LEN);
        assert_eq!(s.open(&a).unwrap(), b"private key bytes");
        assert_eq!(s.open(&b).unwrap(), b"private key bytes");
        // Same secret and purpose, new instance: same key.
        let s2 = Sealer::from_secret(b"server secret of some length", "dkim");
        assert_eq!(s2.open(&a).unwrap(), b"private key bytes");
        // Empty plaintext works.
        assert_eq!(s.open(&s.seal(b"")).unwrap(), b"");
    }

    #[test]
    fn wrong_key_tamper_and_short_input_fail() {
        let s = Sealer::from_secret(b"secret-1", "dkim");
        let sealed = s.seal(b"hello");
        assert!(
            Sealer::from_secret(b"secret-2", "dkim")
                .open(&sealed)
                .is_err()
        );
        assert!(
            Sealer::from_secret(b"secret-1", "other")
                .open(&sealed)
                .is_err()
        );
        for i in 0..sealed.len() {
            let mut t = sealed.clone();
            t[i] ^= 0x01;
            assert!(s.open(&t).is_err(), "flipped byte {i} accepted");
        }
        for n in 0..sealed.len() {
            assert!(s.open(&sealed[..n]).is_err(), "truncated to {n} accepted");
        }
        let mut longer = sealed.clone();
        longer.push(0);
        assert!(s.open(&longer).is_err());
        assert!(format!("{s:?}").contains("redacted"));
    }
}
