//! Sender domains: adding one (validated name, fresh RSA-2048 DKIM key sealed at rest), the DNS
//! records to publish with the state each had at the last check (`view`), verification
//! ([`check`]: on demand and by a periodic job) and the sender rules ([`sender`]).
//!
//! Invariants:
//! - The DKIM private key leaves this module only sealed (to the store) or as a signer; no view
//!   type carries it.
//! - A domain is verified when its DKIM TXT carries the generated public key and its SPF TXT
//!   contains the configured mechanism. Among projects, the first to verify a domain owns it
//!   (enforced by the store's partial unique index); adding a domain another project has
//!   verified is refused.
//! - Domains under the reserved trees `.test`, `.example`, `.invalid`, `.localhost` are
//!   verified without DNS only while the transport is the local outbox (mail to them can never
//!   leave the machine); with a real transport they cannot be added and do not count as
//!   verified senders.

pub mod check;
pub mod sender;
mod view;

use herald_core::email::valid_domain;
use herald_core::ids::{Uuid, new_id};
use herald_store::StoreError;
use herald_store::domains::{
    CONFLICT_ALREADY_ADDED, CONFLICT_VERIFIED_ELSEWHERE, DomainDeletion, DomainUsers, NewDomain,
};

pub use check::run_periodic_checks;
pub use sender::{SenderDomainError, VerifiedDomain};
pub use view::{DomainView, RecordStatus, RecordView};

/// Top-level names reserved by RFC 2606 / RFC 6761 that never resolve on the internet.
pub const RESERVED_TLDS: [&str; 4] = ["test", "example", "invalid", "localhost"];

/// True for `localhost` and names under a reserved top-level name.
pub fn is_reserved(domain: &str) -> bool {
    let tld = domain
        .trim_end_matches('.')
        .rsplit('.')
        .next()
        .unwrap_or("");
    RESERVED_TLDS.iter().any(|r| tld.eq_ignore_ascii_case(r))
}

/// Why adding, checking or removing a domain failed.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("{0}")]
    InvalidName(String),
    #[error(
        "{domain} is under a reserved name (.test, .example, .invalid, .localhost) and can only be used with the local outbox transport"
    )]
    ReservedNeedsOutbox { domain: String },
    #[error("this project has already added {domain}")]
    AlreadyAdded { domain: String },
    #[error("{domain} is already verified by another project")]
    VerifiedElsewhere { domain: String },
    #[error("domain not found")]
    NotFound,
    #[error("{domain} is in use by {}; cancel those campaigns or disable those workflows first", users_text(.users))]
    InUse { domain: String, users: DomainUsers },
    #[error("the DNS resolver did not answer in time; nothing was changed")]
    DnsTimeout,
    #[error("DNS lookup failed: {0}; nothing was changed")]
    Dns(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// `campaign "Spring" (id), workflow "Welcome" (id)`: what holds a domain, for people.
fn users_text(users: &DomainUsers) -> String {
    let campaigns = users
        .campaigns
        .iter()
        .map(|(id, name)| format!("campaign {name:?} ({id})"));
    let workflows = users
        .workflows
        .iter()
        .map(|(id, name)| format!("workflow {name:?} ({id})"));
    campaigns.chain(workflows).collect::<Vec<_>>().join(", ")
}

/// Lower-cases, strips one trailing dot, turns an internationalised name into its `xn--`
/// form (IDNA), and checks that the result is a host name of at least two labels.
pub fn normalize_domain(raw: &str) -> Result<String, DomainError> {
    let trimmed = raw.trim();
    let name = trimmed
        .strip_suffix('.')
        .unwrap_or(trimmed)
        .to_ascii_lowercase();
    if name.is_empty() {
        return Err(DomainError::InvalidName("domain is required".into()));
    }
    let name = if name.is_ascii() {
        name
    } else {
        herald_core::email::domain_to_ascii(&name).map_err(|_| {
            DomainError::InvalidName(format!(
                "{name:?} is not a valid internationalised host name"
            ))
        })?
    };
    if !valid_domain(&name) {
        return Err(DomainError::InvalidName(format!(
            "{name:?} is not a valid host name (like mail.example.com)"
        )));
    }
    Ok(name)
}

fn new_selector(prefix: &str) -> String {
    format!("{prefix}{}", hex::encode(rand::random::<[u8; 4]>()))
}

impl crate::Engine {
    /// Adds `raw` to the project with a new DKIM key. Reserved domains are verified at once
    /// when the transport is the local outbox and refused otherwise.
    pub async fn add_domain(&self, project_id: Uuid, raw: &str) -> Result<DomainView, DomainError> {
        let domain = normalize_domain(raw)?;
        let reserved = is_reserved(&domain);
        if reserved && !self.transport.is_local_outbox() {
            return Err(DomainError::ReservedNeedsOutbox { domain });
        }
        // RSA key generation takes tens of milliseconds of CPU: keep it off the async workers.
        let keys = tokio::task::spawn_blocking(herald_mail::dkim::generate_rsa_2048)
            .await
            .map_err(|e| anyhow::anyhow!("DKIM key generation task failed: {e}"))??;
        let sealed = self.sealer.seal(&keys.private_pkcs8_der);
        let selector = new_selector(&self.settings.dkim_selector_prefix);
        let now = self.now();
        let new = NewDomain {
            id: new_id(),
            project_id,
            domain: &domain,
            selector: &selector,
            dkim_public_key: &keys.public_key_b64,
            sealed_private_key: &sealed,
            verified: reserved.then_some(check::RESERVED_VERIFIED_REASON),
            next_check_at: now + check::interval_millis(self),
            now,
        };
        match self.store.insert_domain(&new).await {
            Ok(d) => Ok(self.domain_view(d)),
            Err(StoreError::Conflict(what)) if what == CONFLICT_VERIFIED_ELSEWHERE => {
                Err(DomainError::VerifiedElsewhere { domain })
            }
            Err(StoreError::Conflict(what)) if what == CONFLICT_ALREADY_ADDED => {
                Err(DomainError::AlreadyAdded { domain })
            }
            // A race lost to a concurrent add or verification of the same name.
            Err(StoreError::Conflict(_)) => Err(DomainError::VerifiedElsewhere { domain }),
            Err(e) => Err(e.into()),
        }
    }

    /// The project's domains, verified and pending, oldest first.
    pub async fn project_domains(&self, project_id: Uuid) -> Result<Vec<DomainView>, DomainError> {
        let domains = self.store.domains_of_project(project_id).await?;
        Ok(domains.into_iter().map(|d| self.domain_view(d)).collect())
    }

    /// Removes a domain (refused while an active campaign or an enabled workflow sends from it).
    pub async fn delete_domain(&self, project_id: Uuid, id: Uuid) -> Result<(), DomainError> {
        let Some(domain) = self.store.domain(project_id, id).await? else {
            return Err(DomainError::NotFound);
        };
        match self.store.delete_domain(project_id, id).await? {
            DomainDeletion::Deleted => {
                sender::forget_signer(id);
                Ok(())
            }
            DomainDeletion::NotFound => Err(DomainError::NotFound),
            DomainDeletion::InUse(users) => Err(DomainError::InUse {
                domain: domain.domain,
                users,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_trees_are_recognised() {
        for name in [
            "acme.test",
            "a.b.example",
            "x.invalid",
            "localhost",
            "app.localhost.",
            "A.TEST",
        ] {
            assert!(is_reserved(name), "{name}");
        }
        for name in ["example.com", "test.com", "testing", "mytest"] {
            assert!(!is_reserved(name), "{name}");
        }
    }

    #[test]
    fn names_are_normalised_or_refused() {
        assert_eq!(
            normalize_domain(" Mail.Example.COM. ").ok().as_deref(),
            Some("mail.example.com")
        );
        assert_eq!(
            normalize_domain("Bücher.de").ok().as_deref(),
            Some("xn--bcher-kva.de")
        );
        for bad in [
            "",
            "example",
            "-a.com",
            "a..com",
            "a_b.com",
            "user@example.com",
            "bü cher.de",
            "1.2.3.4",
        ] {
            assert!(normalize_domain(bad).is_err(), "{bad:?} accepted");
        }
    }
}
