//! The DNS records a sender domain needs, and checking them through a resolver.
//!
//! [`required_records`] is pure: it says what to publish. [`DnsChecker`] looks the records up
//! and [`DnsChecker::check_domain`] compares them with what is expected.
//!
//! Invariants:
//! - The checker never caches: every check asks the nameserver again, so a record created or
//!   removed is seen by the next check.
//! - A name that does not exist (NXDOMAIN) or has no record of the asked type is an empty
//!   answer, not an error; only a resolver that does not answer in time is
//!   [`DnsError::Timeout`], and any other failure is [`DnsError::Failed`].
//! - A domain is verified when its DKIM key and its SPF mechanism are both published; DMARC and
//!   the return-path MX are suggestions and never block verification.

mod domain_facts;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use hickory_resolver::config::{NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;
use hickory_resolver::{Resolver, TokioResolver};

/// Why a record is asked for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordPurpose {
    Dkim,
    Spf,
    Dmarc,
    ReturnPath,
}

/// One record the domain's owner should publish.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DnsRecord {
    pub purpose: RecordPurpose,
    /// `"TXT"` or `"MX"`.
    #[serde(rename = "type")]
    pub record_type: &'static str,
    /// The owner name, without a trailing dot.
    pub name: String,
    /// The record data as written in a zone file (`"10 host"` for MX).
    pub value: String,
    /// Whether verification depends on it (false for suggestions).
    pub required: bool,
}

/// The label under which the return-path (bounce) MX is published.
pub const RETURN_PATH_LABEL: &str = "bounces";
/// The MX preference suggested for the return-path record.
const RETURN_PATH_PREFERENCE: u16 = 10;

/// The name of the DKIM key record.
pub fn dkim_record_name(domain: &str, selector: &str) -> String {
    format!("{selector}._domainkey.{}", normalize(domain))
}

/// The name of the DMARC policy record.
pub fn dmarc_record_name(domain: &str) -> String {
    format!("_dmarc.{}", normalize(domain))
}

/// The name of the return-path MX record.
pub fn return_path_name(domain: &str) -> String {
    format!("{RETURN_PATH_LABEL}.{}", normalize(domain))
}

/// The records to publish for `domain`: DKIM and SPF (required), a DMARC suggestion and, when
/// a return-path host is configured, an MX for `bounces.<domain>` pointing at it.
pub fn required_records(
    domain: &str,
    selector: &str,
    dkim_public_key_b64: &str,
    spf_mechanism: &str,
    return_path_mx: Option<&str>,
) -> Vec<DnsRecord> {
    let domain = normalize(domain);
    let mut records = vec![
        DnsRecord {
            purpose: RecordPurpose::Dkim,
            record_type: "TXT",
            name: dkim_record_name(&domain, selector),
            value: format!(
                "v=DKIM1; k=rsa; p={}",
                strip_whitespace(dkim_public_key_b64)
            ),
            required: true,
        },
        DnsRecord {
            purpose: RecordPurpose::Spf,
            record_type: "TXT",
            name: domain.clone(),
            value: format!("v=spf1 {} ~all", spf_mechanism.trim()),
            required: true,
        },
        DnsRecord {
            purpose: RecordPurpose::Dmarc,
            record_type: "TXT",
            name: dmarc_record_name(&domain),
            value: "v=DMARC1; p=none;".to_owned(),
            required: false,
        },
    ];
    if let Some(host) = return_path_mx {
        records.push(DnsRecord {
            purpose: RecordPurpose::ReturnPath,
            record_type: "MX",
            name: return_path_name(&domain),
            value: format!("{RETURN_PATH_PREFERENCE} {}", normalize(host)),
            required: false,
        });
    }
    records
}

/// What was found for one expected record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum RecordState {
    Found,
    Missing,
    /// A record is there but does not say what is expected; `found` is what it says.
    WrongValue {
        found: String,
    },
}

/// The result of checking a domain's records.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DomainCheck {
    pub dkim: RecordState,
    pub spf: RecordState,
    pub dmarc: RecordState,
    /// `None` when no return-path host is configured.
    pub return_path: Option<RecordState>,
}

impl DomainCheck {
    /// True when both required records (DKIM and SPF) are published as expected.
    pub fn verified(&self) -> bool {
        self.dkim == RecordState::Found && self.spf == RecordState::Found
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("the DNS resolver did not answer in time")]
    Timeout,
    #[error("DNS lookup failed: {0}")]
    Failed(String),
}

/// Looks records up through one resolver, without caching.
#[derive(Clone)]
pub struct DnsChecker {
    resolver: TokioResolver,
    /// A bound on one lookup as a whole, whatever the resolver's own retries do.
    deadline: Duration,
}

impl DnsChecker {
    /// A checker asking `nameserver` (UDP, then TCP for truncated answers), or the system's
    /// resolvers from `/etc/resolv.conf` when `None`. `timeout` bounds each query.
    pub fn new(nameserver: Option<SocketAddr>, timeout: Duration) -> anyhow::Result<Self> {
        let mut builder = match nameserver {
            Some(addr) => {
                let mut server = NameServerConfig::udp_and_tcp(addr.ip());
                for connection in &mut server.connections {
                    connection.port = addr.port();
                }
                Resolver::builder_with_config(
                    ResolverConfig::from_name_servers(vec![server]),
                    TokioRuntimeProvider::default(),
                )
            }
            None => {
                TokioResolver::builder_tokio().context("reading the system DNS configuration")?
            }
        };
        let options = builder.options_mut();
        options.timeout = timeout;
        options.attempts = 1;
        // Verification must see a change at once: no cache, and zero TTLs if anything is kept.
        options.cache_size = 0;
        options.positive_max_ttl = Some(Duration::ZERO);
        options.negative_max_ttl = Some(Duration::ZERO);
        options.use_hosts_file = ResolveHosts::Never;
        let resolver = builder.build().context("building the DNS resolver")?;
        Ok(DnsChecker {
            resolver,
            // UDP, a retry and a TCP fallback each get `timeout`; past this we give up.
            deadline: timeout.saturating_mul(3) + Duration::from_millis(100),
        })
    }

    /// The TXT records of `name`, each record's character-strings concatenated. A name that
    /// does not exist or has no TXT record gives an empty list.
    pub async fn txt(&self, name: &str) -> Result<Vec<String>, DnsError> {
        let fqdn = fully_qualified(name);
        let lookup = self
            .bounded(self.resolver.txt_lookup(fqdn.as_str()))
            .await?;
        let Some(lookup) = lookup else {
            return Ok(Vec::new());
        };
        Ok(lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                RData::TXT(txt) => Some(
                    txt.txt_data
                        .iter()
                        .map(|part| String::from_utf8_lossy(part))
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect())
    }

    /// The MX records of `name` as `(preference, exchange)`, exchanges without the trailing
    /// dot, sorted by preference. A name that does not exist or has no MX gives an empty list.
    pub async fn mx(&self, name: &str) -> Result<Vec<(u16, String)>, DnsError> {
        let fqdn = fully_qualified(name);
        let lookup = self.bounded(self.resolver.mx_lookup(fqdn.as_str())).await?;
        let Some(lookup) = lookup else {
            return Ok(Vec::new());
        };
        let mut exchanges: Vec<(u16, String)> = lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                RData::MX(mx) => Some((mx.preference, normalize(&mx.exchange.to_ascii()))),
                _ => None,
            })
            .collect();
        exchanges.sort();
        Ok(exchanges)
    }

    /// Looks up every record of [`required_records`] and says which are published.
    pub async fn check_domain(
        &self,
        domain: &str,
        selector: &str,
        dkim_public_key_b64: &str,
        spf_mechanism: &str,
        return_path_mx: Option<&str>,
    ) -> Result<DomainCheck, DnsError> {
        let domain = normalize(domain);
        let dkim_name = dkim_record_name(&domain, selector);
        let dmarc_name = dmarc_record_name(&domain);
        let return_path = return_path_name(&domain);
        let return_path_lookup = async {
            match return_path_mx {
                Some(_) => self.mx(&return_path).await.map(Some),
                None => Ok(None),
            }
        };
        let (dkim, spf, dmarc, return_path_found) = tokio::join!(
            self.txt(&dkim_name),
            self.txt(&domain),
            self.txt(&dmarc_name),
            return_path_lookup,
        );
        // A timeout anywhere is the answer: the zone may be fine, we just could not tell.
        let errors = [
            dkim.as_ref().err(),
            spf.as_ref().err(),
            dmarc.as_ref().err(),
            return_path_found.as_ref().err(),
        ];
        if errors
            .into_iter()
            .flatten()
            .any(|error| matches!(error, DnsError::Timeout))
        {
            return Err(DnsError::Timeout);
        }
        let return_path = match (return_path_mx, return_path_found?) {
            (Some(host), Some(found)) => Some(return_path_state(&found, host)),
            _ => None,
        };
        Ok(DomainCheck {
            dkim: dkim_state(&dkim?, dkim_public_key_b64),
            spf: spf_state(&spf?, spf_mechanism),
            dmarc: dmarc_state(&dmarc?),
            return_path,
        })
    }

    /// Runs one lookup under the overall deadline; `Ok(None)` means "no such records".
    async fn bounded<T>(
        &self,
        lookup: impl Future<Output = Result<T, NetError>>,
    ) -> Result<Option<T>, DnsError> {
        match tokio::time::timeout(self.deadline, lookup).await {
            Err(_) => Err(DnsError::Timeout),
            Ok(Ok(found)) => Ok(Some(found)),
            Ok(Err(error)) if error.is_no_records_found() => Ok(None),
            Ok(Err(NetError::Timeout)) => Err(DnsError::Timeout),
            Ok(Err(error)) => Err(DnsError::Failed(error.to_string())),
        }
    }
}

/// DKIM: a record whose tags parse and whose `p=` is the expected key.
fn dkim_state(records: &[String], expected_key: &str) -> RecordState {
    let expected = strip_whitespace(expected_key);
    let matches = |record: &String| {
        parse_tags(record).is_some_and(|tags| {
            let version_ok = tags
                .iter()
                .find(|(name, _)| *name == "v")
                .is_none_or(|(_, value)| value == "DKIM1");
            let key = tags.iter().find(|(name, _)| *name == "p");
            version_ok && key.is_some_and(|(_, key)| !key.is_empty() && *key == expected)
        })
    };
    if records.iter().any(matches) {
        return RecordState::Found;
    }
    match records.first() {
        Some(found) => RecordState::WrongValue {
            found: found.clone(),
        },
        None => RecordState::Missing,
    }
}

/// Parses `tag=value; tag=value` (RFC 6376 §3.2), values with whitespace removed.
fn parse_tags(record: &str) -> Option<Vec<(&str, String)>> {
    record
        .split(';')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let (name, value) = item.split_once('=')?;
            let name = name.trim();
            let mut chars = name.chars();
            let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            valid.then(|| (name, strip_whitespace(value)))
        })
        .collect()
}

/// SPF: a `v=spf1` record containing every token of the mechanism.
fn spf_state(records: &[String], mechanism: &str) -> RecordState {
    let spf: Vec<&String> = records.iter().filter(|record| is_spf(record)).collect();
    let wanted: Vec<String> = mechanism.split_whitespace().map(spf_token).collect();
    let has_all = |record: &&String| {
        let tokens: Vec<String> = record.split_whitespace().skip(1).map(spf_token).collect();
        wanted.iter().all(|token| tokens.contains(token))
    };
    if spf.iter().any(has_all) {
        return RecordState::Found;
    }
    match spf.first() {
        Some(found) => RecordState::WrongValue {
            found: (*found).clone(),
        },
        None => RecordState::Missing,
    }
}

fn is_spf(record: &str) -> bool {
    let mut tokens = record.split_whitespace();
    tokens
        .next()
        .is_some_and(|version| version.eq_ignore_ascii_case("v=spf1"))
}

/// An SPF term compared case-insensitively, the default `+` qualifier made implicit.
fn spf_token(token: &str) -> String {
    token
        .strip_prefix('+')
        .unwrap_or(token)
        .to_ascii_lowercase()
}

/// DMARC: any record starting `v=DMARC1`.
fn dmarc_state(records: &[String]) -> RecordState {
    let is_dmarc = |record: &&String| {
        parse_tags(record).is_some_and(|tags| {
            tags.first()
                .is_some_and(|(name, value)| *name == "v" && value == "DMARC1")
        })
    };
    if records.iter().any(|record| is_dmarc(&record)) {
        return RecordState::Found;
    }
    match records.first() {
        Some(found) => RecordState::WrongValue {
            found: found.clone(),
        },
        None => RecordState::Missing,
    }
}

/// Return path: an MX of `bounces.<domain>` whose exchange is the configured host.
fn return_path_state(found: &[(u16, String)], host: &str) -> RecordState {
    let host = normalize(host);
    if found.iter().any(|(_, exchange)| *exchange == host) {
        return RecordState::Found;
    }
    match found.first() {
        Some((preference, exchange)) => RecordState::WrongValue {
            found: format!("{preference} {exchange}"),
        },
        None => RecordState::Missing,
    }
}

/// A domain name lower-cased, without surrounding whitespace or the trailing dot.
fn normalize(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// The name with a trailing dot, so the resolver never appends search domains.
fn fully_qualified(name: &str) -> String {
    format!("{}.", normalize(name))
}

fn strip_whitespace(value: &str) -> String {
    value.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn required_records_name_and_value_every_record() {
        let records = required_records(
            "Example.com.",
            "herald",
            "MIIB AAAA",
            "include:_spf.herald.test",
            Some("mx.herald.test"),
        );
        let summary: Vec<_> = records
            .iter()
            .map(|r| (r.record_type, r.name.as_str(), r.value.as_str(), r.required))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "TXT",
                    "herald._domainkey.example.com",
                    "v=DKIM1; k=rsa; p=MIIBAAAA",
                    true
                ),
                (
                    "TXT",
                    "example.com",
                    "v=spf1 include:_spf.herald.test ~all",
                    true
                ),
                ("TXT", "_dmarc.example.com", "v=DMARC1; p=none;", false),
                ("MX", "bounces.example.com", "10 mx.herald.test", false),
            ]
        );
        assert_eq!(
            serde_json::to_value(&records[3]).unwrap(),
            serde_json::json!({
                "purpose": "returnpath", "type": "MX", "name": "bounces.example.com",
                "value": "10 mx.herald.test", "required": false
            })
        );
        assert_eq!(required_records("a.test", "s", "k", "a", None).len(), 3);
    }

    #[test]
    fn record_states_serialize_with_a_state_tag() {
        assert_eq!(
            serde_json::to_value(RecordState::WrongValue { found: "x".into() }).unwrap(),
            serde_json::json!({"state": "wrongValue", "found": "x"})
        );
        assert_eq!(
            serde_json::to_value(RecordState::Found).unwrap(),
            serde_json::json!({"state": "found"})
        );
    }

    #[test]
    fn dkim_key_comparison_ignores_whitespace_and_tag_order() {
        let records = strings(&["k=rsa; p=AB CD\t EF ; v=DKIM1"]);
        assert_eq!(dkim_state(&records, "ABCDEF"), RecordState::Found);
        assert_eq!(
            dkim_state(&records, "OTHER"),
            RecordState::WrongValue {
                found: records[0].clone()
            }
        );
        assert_eq!(dkim_state(&[], "ABCDEF"), RecordState::Missing);
        // Unparseable tags, a revoked key and a wrong version do not count.
        assert!(matches!(
            dkim_state(&strings(&["p=ABCDEF; garbage"]), "ABCDEF"),
            RecordState::WrongValue { .. }
        ));
        assert!(matches!(
            dkim_state(&strings(&["v=DKIM1; p="]), ""),
            RecordState::WrongValue { .. }
        ));
        assert!(matches!(
            dkim_state(&strings(&["v=DKIM2; p=ABCDEF"]), "ABCDEF"),
            RecordState::WrongValue { .. }
        ));
    }

    #[test]
    fn spf_mechanism_must_be_a_whole_token() {
        let mechanism = "include:_spf.herald.test";
        let found = strings(&["v=spf1 +include:_SPF.herald.test ~all"]);
        assert_eq!(spf_state(&found, mechanism), RecordState::Found);
        let partial = strings(&["v=spf1 include:_spf.herald.test.evil ~all"]);
        assert!(matches!(
            spf_state(&partial, mechanism),
            RecordState::WrongValue { .. }
        ));
        let unrelated = strings(&["google-site-verification=abc"]);
        assert_eq!(spf_state(&unrelated, mechanism), RecordState::Missing);
        let two = "ip4:192.0.2.1 include:_spf.herald.test";
        let both = strings(&["v=spf1 ip4:192.0.2.1 include:_spf.herald.test -all"]);
        assert_eq!(spf_state(&both, two), RecordState::Found);
        assert!(matches!(
            spf_state(&found, two),
            RecordState::WrongValue { .. }
        ));
    }

    #[test]
    fn dmarc_needs_a_version_tag_first() {
        assert_eq!(
            dmarc_state(&strings(&["v=DMARC1; p=reject; rua=mailto:a@b.test"])),
            RecordState::Found
        );
        assert_eq!(dmarc_state(&[]), RecordState::Missing);
        assert!(matches!(
            dmarc_state(&strings(&["p=none; v=DMARC1"])),
            RecordState::WrongValue { .. }
        ));
    }

    #[test]
    fn return_path_matches_the_exchange_case_insensitively() {
        let found = vec![(10, "mx.herald.test".to_owned())];
        assert_eq!(
            return_path_state(&found, "MX.herald.test."),
            RecordState::Found
        );
        assert_eq!(
            return_path_state(&found, "other.test"),
            RecordState::WrongValue {
                found: "10 mx.herald.test".into()
            }
        );
        assert_eq!(
            return_path_state(&[], "mx.herald.test"),
            RecordState::Missing
        );
    }
}
