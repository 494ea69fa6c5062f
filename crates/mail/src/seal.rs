//! Sealing secrets at rest (DKIM private keys) with a key derived from the server secret.
//!
//! Invariants:
//! - The AES-256-GCM key is derived from the server secret by
//!   [`herald_core::secret::derive`] for [`KeyPurpose::DkimSealing`] (HKDF-SHA256, its own salt
//!   and label, unchanged since the first release), never the secret itself.
//! - Sealed format: `nonce (12 bytes) || ciphertext || tag (16 bytes)`, the nonce fresh from the
//!   system RNG for every call, so sealing the same plaintext twice gives different bytes.
//! - [`Sealer::open`] returns an error (never panics) on short input, tampering or a wrong
//!   key; it reveals nothing more than "cannot open".
//! - Changing the server secret makes every sealed value unreadable: keys must be re-sealed
//!   (`herald rotate-secret` does it).

use std::fmt;
use std::sync::Arc;

use anyhow::anyhow;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use herald_core::secret::{DerivedKey, KeyPurpose, derive};
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
    /// The sealer of DKIM private keys under `server_secret`.
    pub fn for_dkim(server_secret: &[u8]) -> Self {
        Self::new(&derive(server_secret, KeyPurpose::DkimSealing))
    }

    /// A sealer with an already derived AES-256-GCM key.
    pub fn new(key: &DerivedKey) -> Self {
        // Only a key of the wrong length is refused; a DerivedKey is always 32 bytes.
        #[allow(clippy::expect_used)]
        let key = UnboundKey::new(&AES_256_GCM, &key.0).expect("a 32-byte AES-256 key");
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
        let s = Sealer::for_dkim(b"server secret of some length");
        let a = s.seal(b"private key bytes");
        let b = s.seal(b"private key bytes");
        assert_ne!(a, b, "nonce must differ");
        assert_eq!(a.len(), NONCE_LEN + 17 + TAG_LEN);
        assert_eq!(s.open(&a).unwrap(), b"private key bytes");
        assert_eq!(s.open(&b).unwrap(), b"private key bytes");
        // Same secret and purpose, new instance: same key.
        let s2 = Sealer::for_dkim(b"server secret of some length");
        assert_eq!(s2.open(&a).unwrap(), b"private key bytes");
        // Empty plaintext works.
        assert_eq!(s.open(&s.seal(b"")).unwrap(), b"");
    }

    #[test]
    fn wrong_key_tamper_and_short_input_fail() {
        let s = Sealer::for_dkim(b"secret-1");
        let sealed = s.seal(b"hello");
        assert!(Sealer::for_dkim(b"secret-2").open(&sealed).is_err());
        let session_key = derive(b"secret-1", KeyPurpose::SessionSigning);
        assert!(Sealer::new(&session_key).open(&sealed).is_err());
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

    /// Keys sealed before the derivation moved to `herald_core::secret` (aws-lc's HKDF, salt
    /// `herald/seal/v1`, info `dkim-private-keys`) still open: no migration is needed.
    #[test]
    fn values_sealed_by_the_first_release_derivation_still_open() {
        use aws_lc_rs::hkdf::{HKDF_SHA256, Salt};
        let secret = b"test-secret-test-secret-test-secret-0123";
        let info = [b"dkim-private-keys".as_slice()];
        let prk = Salt::new(HKDF_SHA256, b"herald/seal/v1").extract(secret);
        let okm = prk.expand(&info, &AES_256_GCM).unwrap();
        let old = Sealer {
            key: Arc::new(LessSafeKey::new(UnboundKey::from(okm))),
        };
        let sealed = old.seal(b"a PKCS#8 key");
        assert_eq!(
            Sealer::for_dkim(secret).open(&sealed).unwrap(),
            b"a PKCS#8 key"
        );
    }
}
