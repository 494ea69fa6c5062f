//! What DNS says about a recipient domain, for email verification: whether the name exists,
//! takes mail (MX, or the implicit MX of an address record) and publishes a web server.
//!
//! Invariants:
//! - Six lookups run at once (A, AAAA, MX and NS of the domain; A and AAAA of `www.<domain>`),
//!   each bounded by the checker's deadline; one timeout makes the whole answer a timeout, so
//!   a slow resolver is never reported as "no such domain".
//! - NXDOMAIN and "no records of this type" both count as no records; the domain exists when
//!   any of A, AAAA, MX or NS answers.
//! - Only records of the asked type count, so a CNAME alone (without its target's address) is
//!   no address.

use hickory_resolver::proto::rr::{RData, RecordType};

use herald_core::verify::DomainFacts;

use super::{DnsChecker, DnsError, fully_qualified};

/// The records of one type at one name, as their data; empty when there are none.
type Answers = Result<Vec<RData>, DnsError>;

impl DnsChecker {
    /// Looks up the facts of `domain` (ASCII, as DNS names it).
    pub async fn domain_facts(&self, domain: &str) -> Result<DomainFacts, DnsError> {
        let www = format!("www.{domain}");
        let (a, aaaa, mx, ns, www_a, www_aaaa) = tokio::join!(
            self.records(domain, RecordType::A),
            self.records(domain, RecordType::AAAA),
            self.records(domain, RecordType::MX),
            self.records(domain, RecordType::NS),
            self.records(&www, RecordType::A),
            self.records(&www, RecordType::AAAA),
        );
        let all = [&a, &aaaa, &mx, &ns, &www_a, &www_aaaa];
        if all
            .iter()
            .any(|answer| matches!(answer, Err(DnsError::Timeout)))
        {
            return Err(DnsError::Timeout);
        }
        let (a, aaaa, mx, ns, www_a, www_aaaa) = (a?, aaaa?, mx?, ns?, www_a?, www_aaaa?);
        let null_mx = is_null_mx(&mx);
        Ok(DomainFacts {
            exists: !(a.is_empty() && aaaa.is_empty() && mx.is_empty() && ns.is_empty()),
            has_mx: !mx.is_empty() && !null_mx,
            null_mx,
            has_address: !(a.is_empty() && aaaa.is_empty()),
            www_has_address: !(www_a.is_empty() && www_aaaa.is_empty()),
        })
    }

    /// The records of `record_type` at `name` (CNAMEs followed by the resolver).
    async fn records(&self, name: &str, record_type: RecordType) -> Answers {
        let fqdn = fully_qualified(name);
        let lookup = self
            .bounded(self.resolver.lookup(fqdn.as_str(), record_type))
            .await?;
        Ok(lookup
            .map(|lookup| {
                lookup
                    .answers()
                    .iter()
                    .filter(|record| record.record_type() == record_type)
                    .map(|record| record.data.clone())
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// RFC 7505: a single MX with preference 0 and the root as exchange means "no mail here".
fn is_null_mx(mx: &[RData]) -> bool {
    match mx {
        [RData::MX(only)] => only.exchange.is_root(),
        _ => false,
    }
}
