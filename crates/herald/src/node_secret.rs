//! Every node on one database shares one secret: API keys, sessions, signed links and the
//! sealed DKIM keys all depend on it, so a node started with another one would answer with
//! keys and tokens the others do not accept. The database keeps the secret's fingerprint
//! (an HMAC of a fixed text under the secret, which reveals nothing of it): the first node
//! writes it, `herald rotate-secret` replaces it, and a node whose secret gives another
//! fingerprint refuses to start, saying why.

use anyhow::bail;
use herald_core::mac;
use herald_store::Store;

/// The fingerprint of `secret` (hex).
pub fn fingerprint(secret: &[u8]) -> String {
    hex::encode(mac::hmac_sha256(
        secret,
        &[b"herald node secret fingerprint v1"],
    ))
}

/// Refuses a secret other than the one the database's nodes share (recording it when this is
/// the first node).
pub async fn check(store: &Store, secret: &[u8]) -> anyhow::Result<()> {
    let mine = fingerprint(secret);
    let stored = store.node_secret_fingerprint(&mine).await?;
    if !mac::equal(stored.as_bytes(), mine.as_bytes()) {
        bail!(
            "this node's secret (HERALD_SECRET, or the secret file in its data directory) is not \
             the one the other nodes of this database use: API keys, sessions, signed links and \
             the sealed DKIM keys would not agree. Give every node the same HERALD_SECRET (to \
             change it, run `herald rotate-secret`)"
        );
    }
    Ok(())
}
