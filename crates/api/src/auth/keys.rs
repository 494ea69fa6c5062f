//! Project API keys: `pk_` / `sk_` + 48 lowercase hex characters. The secret key is stored only
//! as its SHA-256 and shown once; `secretKeyPrefix` (10 characters) tells keys apart.

pub use herald_core::api_keys::{hash_secret, looks_like_key};
use herald_store::accounts::StoredKeys;
use rand::RngCore;

pub struct NewKeys {
    pub public_key: String,
    pub secret_key: String,
}

impl NewKeys {
    pub fn generate() -> Self {
        Self {
            public_key: format!("pk_{}", random_hex(24)),
            secret_key: format!("sk_{}", random_hex(24)),
        }
    }

    pub fn stored(&self) -> StoredKeys {
        StoredKeys {
            public_key: self.public_key.clone(),
            secret_key_hash: hash_secret(&self.secret_key),
            secret_key_prefix: self.secret_key.chars().take(10).collect(),
        }
    }
}

pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shape() {
        let k = NewKeys::generate();
        assert!(looks_like_key(&k.public_key, "pk_"));
        assert!(looks_like_key(&k.secret_key, "sk_"));
        let s = k.stored();
        assert_eq!(s.secret_key_prefix.len(), 10);
        assert_eq!(s.secret_key_hash, hash_secret(&k.secret_key));
        assert_ne!(s.secret_key_hash, k.secret_key);
    }
}
