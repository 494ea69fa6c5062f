//! The shape and stored form of project API keys (`pk_` / `sk_` + 48 lowercase hex
//! characters; the secret key is stored only as its SHA-256): the one rule the HTTP API and
//! the SMTP submission listener both look keys up with.

use sha2::{Digest, Sha256};

/// The stored form of a secret key: its SHA-256 in lowercase hex.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// True for a string of the documented key shape with the given prefix.
pub fn looks_like_key(token: &str, prefix: &str) -> bool {
    token.len() == 51
        && token.starts_with(prefix)
        && token[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
