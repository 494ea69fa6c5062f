//! Email verification (`POST /v1/verify`): the address rules of `herald_core::verify` plus the
//! recipient domain's DNS facts, looked up through the configured resolver and cached per
//! domain.
//!
//! Invariants:
//! - A domain's facts are reused for [`DOMAIN_CACHE_TTL`] after they were looked up, by the
//!   engine's clock; after that the next request asks DNS again. Failed lookups (timeouts,
//!   resolver errors) are never cached.
//! - The cache holds at most [`DOMAIN_CACHE_CAPACITY`] domains: when full, expired entries go
//!   first, then the entry closest to expiry, so memory stays bounded whatever callers send.
//! - An address with invalid syntax causes no DNS lookup.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use herald_core::time::Millis;
use herald_core::verify::{DomainFacts, Verification, check_address, verdict};
use herald_mail::dns::DnsError;

use crate::Engine;

/// How long a domain's DNS facts are reused.
pub const DOMAIN_CACHE_TTL: Duration = Duration::from_secs(5 * 60);
/// The most domains kept.
pub const DOMAIN_CACHE_CAPACITY: usize = 10_000;

/// Why an address could not be verified (the address itself is never an error).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("the DNS resolver did not answer in time")]
    DnsTimeout,
    #[error("DNS lookup failed: {0}")]
    Dns(String),
}

impl From<DnsError> for VerifyError {
    fn from(e: DnsError) -> Self {
        match e {
            DnsError::Timeout => VerifyError::DnsTimeout,
            DnsError::Failed(message) => VerifyError::Dns(message),
        }
    }
}

/// Domain facts with their expiry, bounded in size.
#[derive(Debug, Default)]
pub struct DomainCache {
    entries: Mutex<HashMap<String, (DomainFacts, Millis)>>,
}

impl DomainCache {
    /// The facts of `domain` if looked up less than the TTL before `now`.
    fn get(&self, domain: &str, now: Millis) -> Option<DomainFacts> {
        let entries = self.lock();
        entries
            .get(domain)
            .filter(|(_, expires_at)| *expires_at > now)
            .map(|(facts, _)| *facts)
    }

    fn put(&self, domain: &str, facts: DomainFacts, now: Millis) {
        let ttl = i64::try_from(DOMAIN_CACHE_TTL.as_millis()).unwrap_or(i64::MAX);
        let mut entries = self.lock();
        if entries.len() >= DOMAIN_CACHE_CAPACITY && !entries.contains_key(domain) {
            entries.retain(|_, (_, expires_at)| *expires_at > now);
            if entries.len() >= DOMAIN_CACHE_CAPACITY {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, (_, expires_at))| *expires_at)
                    .map(|(name, _)| name.clone());
                if let Some(name) = soonest {
                    entries.remove(&name);
                }
            }
        }
        entries.insert(domain.to_owned(), (facts, now.saturating_add(ttl)));
    }

    /// The number of domains held (expired ones included until they are pushed out).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (DomainFacts, Millis)>> {
        // The map is valid after any panic (each change is one insert or remove).
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Engine {
    /// Verifies one address: syntax, lists, typo, then the domain's DNS facts (cached).
    pub async fn verify_email(&self, raw: &str) -> Result<Verification, VerifyError> {
        let checks = check_address(raw);
        let Some(domain) = checks.ascii_domain.as_deref() else {
            return Ok(verdict(&checks, None));
        };
        let facts = self.domain_facts(domain).await?;
        Ok(verdict(&checks, Some(&facts)))
    }

    async fn domain_facts(&self, domain: &str) -> Result<DomainFacts, VerifyError> {
        if let Some(facts) = self.verify_cache.get(domain, self.now()) {
            return Ok(facts);
        }
        let facts = self.dns.domain_facts(domain).await?;
        // The time of the answer, not of the question: a slow lookup still gets its full TTL.
        self.verify_cache.put(domain, facts, self.now());
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FACTS: DomainFacts = DomainFacts {
        exists: true,
        has_mx: true,
        null_mx: false,
        has_address: false,
        www_has_address: false,
    };

    #[test]
    fn entries_expire_after_the_ttl() {
        let cache = DomainCache::default();
        cache.put("example.com", FACTS, 1_000);
        assert_eq!(cache.get("example.com", 1_000), Some(FACTS));
        let ttl = i64::try_from(DOMAIN_CACHE_TTL.as_millis()).unwrap_or(i64::MAX);
        assert_eq!(cache.get("example.com", 1_000 + ttl - 1), Some(FACTS));
        assert_eq!(cache.get("example.com", 1_000 + ttl), None);
        assert_eq!(cache.get("other.com", 1_000), None);
    }

    #[test]
    fn the_cache_never_grows_past_its_capacity() {
        let cache = DomainCache::default();
        for i in 0..DOMAIN_CACHE_CAPACITY {
            cache.put(&format!("d{i}.com"), FACTS, i64::try_from(i).unwrap_or(0));
        }
        assert_eq!(cache.len(), DOMAIN_CACHE_CAPACITY);
        cache.put("new.com", FACTS, 0);
        assert_eq!(cache.len(), DOMAIN_CACHE_CAPACITY);
        // The entry closest to expiry made room.
        assert_eq!(cache.get("d0.com", 0), None);
        assert_eq!(cache.get("new.com", 0), Some(FACTS));
        assert_eq!(cache.get("d1.com", 1), Some(FACTS));
    }
}
