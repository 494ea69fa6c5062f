//! Re-sealing every DKIM private key under a new server secret (`herald rotate-secret`).
//!
//! Invariants:
//! - All keys change in one transaction or none does; a key that opens with neither secret
//!   stops the rotation before anything is written.
//! - Re-running after an interruption is safe: a key that already opens with the new secret is
//!   counted and left as it is.
//! - Servers should be stopped while it runs: one still on the old secret cannot sign with the
//!   re-sealed keys (its sends are retried and succeed once it restarts with the new secret).

use anyhow::Context;
use herald_mail::seal::Sealer;
use herald_store::Store;
use herald_store::dkim_keys::ResealedDkimKey;

/// What a rotation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// Keys re-sealed from the old secret to the new one.
    pub resealed: usize,
    /// Keys that were already sealed under the new secret (an interrupted earlier run).
    pub already_new: usize,
}

/// Re-seals every domain's DKIM key from `old_secret` to `new_secret`.
pub async fn reseal_dkim_keys(
    store: &Store,
    old_secret: &[u8],
    new_secret: &[u8],
) -> anyhow::Result<Rotation> {
    anyhow::ensure!(
        old_secret != new_secret,
        "the new secret is the same as the current one"
    );
    let (old, new) = (Sealer::for_dkim(old_secret), Sealer::for_dkim(new_secret));
    let keys = store
        .all_sealed_dkim_keys()
        .await
        .context("reading the DKIM keys")?;
    let mut replaced = Vec::with_capacity(keys.len());
    let mut already_new = 0;
    for k in &keys {
        match old.open(&k.sealed) {
            Ok(der) => replaced.push(ResealedDkimKey {
                id: k.id,
                old: &k.sealed,
                new: new.seal(&der),
            }),
            Err(_) if new.open(&k.sealed).is_ok() => already_new += 1,
            Err(_) => anyhow::bail!(
                "the DKIM key of domain row {} opens with neither the current nor the new \
                 secret; nothing was changed",
                k.id
            ),
        }
    }
    store
        .replace_sealed_dkim_keys(&replaced)
        .await
        .context("writing the re-sealed DKIM keys")?;
    Ok(Rotation {
        resealed: replaced.len(),
        already_new,
    })
}
