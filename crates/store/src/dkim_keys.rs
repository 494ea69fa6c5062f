//! Every domain's sealed DKIM key at once: what `herald rotate-secret` reads and rewrites.
//!
//! Invariants:
//! - [`Store::replace_sealed_dkim_keys`] writes all replacements in one transaction, each a
//!   compare-and-set on the sealed bytes read before: if any row changed (or vanished) in
//!   between, nothing is written and the call answers `Conflict`.

use herald_core::ids::Uuid;

use crate::{Store, StoreError, StoreResult};

/// One domain row's sealed key.
#[derive(Clone)]
pub struct SealedDkimKey {
    pub id: Uuid,
    pub sealed: Vec<u8>,
}

/// A replacement: `id`'s key sealed as `old` becomes `new`.
pub struct ResealedDkimKey<'a> {
    pub id: Uuid,
    pub old: &'a [u8],
    pub new: Vec<u8>,
}

impl Store {
    /// The sealed DKIM keys of every domain row of every project.
    pub async fn all_sealed_dkim_keys(&self) -> StoreResult<Vec<SealedDkimKey>> {
        let rows: Vec<(Uuid, Vec<u8>)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT id, dkim_private_key FROM domains ORDER BY id")
                .fetch_all(pool)
                .await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, sealed)| SealedDkimKey { id, sealed })
            .collect())
    }

    /// Replaces the sealed keys, all or none.
    pub async fn replace_sealed_dkim_keys(&self, keys: &[ResealedDkimKey<'_>]) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        for k in keys {
            let done = db_tx!(&mut tx, |conn| {
                sqlx::query(
                    "UPDATE domains SET dkim_private_key = $1 \
                     WHERE id = $2 AND dkim_private_key = $3",
                )
                .bind(&k.new)
                .bind(k.id)
                .bind(k.old)
                .execute(&mut *conn)
                .await?
                .rows_affected()
            });
            if done != 1 {
                return Err(StoreError::Conflict(format!(
                    "the DKIM key of domain row {} changed during the rotation",
                    k.id
                )));
            }
        }
        tx.commit().await
    }
}
