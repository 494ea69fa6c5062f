//! Password hashing with argon2id (PHC strings), run off the async threads.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use rand::RngCore;

pub async fn hash(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        rand::rng().fill_bytes(&mut salt);
        Argon2::default()
            .hash_password_with_salt(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))
    })
    .await?
}

/// False for a wrong password or an unreadable hash. With `None` (no such user) a dummy hash
/// is checked, so the answer takes as long either way.
pub async fn verify(password: String, phc: Option<String>) -> bool {
    const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$6c1hDBM1CbJb2tbuNvmQ5zKYUgxsmKVtYaXoWbWQyvA";
    let known = phc.is_some();
    let phc = phc.unwrap_or_else(|| DUMMY.to_owned());
    tokio::task::spawn_blocking(move || {
        let ok = PasswordHash::new(&phc)
            .map(|h| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &h)
                    .is_ok()
            })
            .unwrap_or(false);
        ok && known
    })
    .await
    .unwrap_or(false)
}
