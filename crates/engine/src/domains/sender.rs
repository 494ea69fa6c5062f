//! The sender rules: which `from` addresses a project may use, and the DKIM signer of a
//! sending domain.
//!
//! Invariants:
//! - A `from` is allowed only when its domain (exact match, no parent or subdomain) is a
//!   verified domain of the same project; a reserved domain counts only while the transport is
//!   the local outbox.
//! - Signers are built once per domain row (the private key unsealed once) and cached in
//!   memory by domain id. The cache is consulted only after the database confirmed the domain
//!   is still verified, so an unverified or deleted domain never signs; a domain row's key
//!   never changes, so a cached signer is never stale.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use anyhow::Context as _;
use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;
use herald_mail::dkim::DkimSigner;
use herald_store::domains::Domain;

use super::is_reserved;

/// A verified sending domain of a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedDomain {
    pub id: Uuid,
    pub domain: String,
    pub selector: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SenderDomainError {
    #[error("the domain {domain} is not verified for this project")]
    NotVerified { domain: String },
    #[error(transparent)]
    Store(#[from] herald_store::StoreError),
}

/// Signers by domain id. Ids are unique across databases (UUID v7), so one process-wide map
/// serves every engine.
static SIGNERS: LazyLock<Mutex<HashMap<Uuid, DkimSigner>>> = LazyLock::new(Default::default);

fn cached_signer(id: Uuid) -> Option<DkimSigner> {
    SIGNERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .cloned()
}

fn cache_signer(id: Uuid, signer: DkimSigner) {
    SIGNERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, signer);
}

/// Drops the cached signer of a deleted domain.
pub(crate) fn forget_signer(id: Uuid) {
    SIGNERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
}

impl crate::Engine {
    /// The verified domain row of exactly `domain` (compared in its lower-case `xn--` form, as
    /// domains are stored) in the project, under the reserved rule.
    async fn usable_domain(
        &self,
        project_id: Uuid,
        domain: &str,
    ) -> Result<Option<Domain>, herald_store::StoreError> {
        let Ok(domain) = crate::domains::normalize_domain(domain) else {
            return Ok(None);
        };
        let domain = domain.as_str();
        if is_reserved(domain) && !self.transport.is_local_outbox() {
            return Ok(None);
        }
        if project_id == herald_core::account::SYSTEM_PROJECT_ID {
            // Herald's own mail signs with the key of whichever project verified the domain.
            return self.store.verified_domain_in_any_project(domain).await;
        }
        self.store.verified_domain(project_id, domain).await
    }

    /// The verified domain of `from` (exact domain match) in this project.
    pub async fn require_verified_sender(
        &self,
        project_id: Uuid,
        from: &EmailAddress,
    ) -> Result<VerifiedDomain, SenderDomainError> {
        match self.usable_domain(project_id, from.domain()).await? {
            Some(d) => Ok(VerifiedDomain {
                id: d.id,
                domain: d.domain,
                selector: d.selector,
            }),
            None => Err(SenderDomainError::NotVerified {
                domain: from.domain().to_owned(),
            }),
        }
    }

    /// The DKIM signer of a verified domain of the project (private key unsealed once, then
    /// cached in memory by domain id). `None` when the domain is not a verified one.
    pub async fn dkim_signer(
        &self,
        project_id: Uuid,
        domain: &str,
    ) -> anyhow::Result<Option<DkimSigner>> {
        let Some(row) = self.usable_domain(project_id, domain).await? else {
            return Ok(None);
        };
        if let Some(signer) = cached_signer(row.id) {
            return Ok(Some(signer));
        }
        let Some(sealed) = self.store.sealed_dkim_key(row.id).await? else {
            return Ok(None); // deleted meanwhile
        };
        let der = self.sealer.open(&sealed).with_context(|| {
            format!("unsealing the DKIM key of {domain} (was the server secret changed?)")
        })?;
        let signer = DkimSigner::new(&row.domain, &row.selector, &der)
            .with_context(|| format!("loading the DKIM key of {domain}"))?;
        cache_signer(row.id, signer.clone());
        Ok(Some(signer))
    }
}
