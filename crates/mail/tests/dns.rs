//! Domain checks against a real DNS server on loopback (the testkit's), through the resolver.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use herald_mail::dns::{DnsChecker, DnsError, RecordState, required_records};
use herald_testkit::dns_server::DnsServer;

const DOMAIN: &str = "example.com";
const SELECTOR: &str = "herald";
const SPF_MECHANISM: &str = "include:_spf.herald.test";
const RETURN_PATH_HOST: &str = "mx.herald.test";

/// A realistic RSA-2048 public key length, so the DKIM TXT needs several character-strings.
fn dkim_key() -> String {
    format!(
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{}IDAQAB",
        "q".repeat(340)
    )
}

async fn start() -> (DnsServer, DnsChecker) {
    let dns = DnsServer::start().await.unwrap();
    let checker = DnsChecker::new(Some(dns.addr()), Duration::from_millis(500)).unwrap();
    (dns, checker)
}

/// Publishes exactly what `required_records` asks for.
fn publish_all(dns: &DnsServer) {
    for record in required_records(
        DOMAIN,
        SELECTOR,
        &dkim_key(),
        SPF_MECHANISM,
        Some(RETURN_PATH_HOST),
    ) {
        match record.record_type {
            "TXT" => dns.set_txt(&record.name, vec![record.value]),
            "MX" => {
                let (preference, host) = record.value.split_once(' ').unwrap();
                dns.set_mx(
                    &record.name,
                    vec![(preference.parse().unwrap(), host.to_owned())],
                );
            }
            other => panic!("unexpected record type {other}"),
        }
    }
}

async fn check(checker: &DnsChecker) -> Result<herald_mail::dns::DomainCheck, DnsError> {
    checker
        .check_domain(
            DOMAIN,
            SELECTOR,
            &dkim_key(),
            SPF_MECHANISM,
            Some(RETURN_PATH_HOST),
        )
        .await
}

#[tokio::test]
async fn a_zone_with_the_required_records_is_verified() {
    let (dns, checker) = start().await;
    publish_all(&dns);
    let check = check(&checker).await.unwrap();
    assert_eq!(check.dkim, RecordState::Found);
    assert_eq!(check.spf, RecordState::Found);
    assert_eq!(check.dmarc, RecordState::Found);
    assert_eq!(check.return_path, Some(RecordState::Found));
    assert!(check.verified());

    let without_return_path = checker
        .check_domain(DOMAIN, SELECTOR, &dkim_key(), SPF_MECHANISM, None)
        .await
        .unwrap();
    assert_eq!(without_return_path.return_path, None);
    assert!(without_return_path.verified());
}

#[tokio::test]
async fn txt_concatenates_the_strings_of_a_long_record() {
    let (dns, checker) = start().await;
    publish_all(&dns);
    let found = checker
        .txt(&format!("{SELECTOR}._domainkey.{DOMAIN}"))
        .await
        .unwrap();
    assert_eq!(found, [format!("v=DKIM1; k=rsa; p={}", dkim_key())]);
    assert!(found[0].len() > 255);
    let mx = checker.mx(&format!("BOUNCES.{DOMAIN}.")).await.unwrap();
    assert_eq!(mx, [(10, RETURN_PATH_HOST.to_owned())]);
}

#[tokio::test]
async fn missing_dkim_is_not_verified() {
    let (dns, checker) = start().await;
    publish_all(&dns);
    dns.remove(&format!("{SELECTOR}._domainkey.{DOMAIN}"));
    let check = check(&checker).await.unwrap();
    assert_eq!(check.dkim, RecordState::Missing);
    assert_eq!(check.spf, RecordState::Found);
    assert!(!check.verified());
}

#[tokio::test]
async fn a_dkim_record_with_another_key_is_a_wrong_value() {
    let (dns, checker) = start().await;
    publish_all(&dns);
    let other = "v=DKIM1; k=rsa; p=MIIBIjANBgkqOTHERKEY";
    dns.set_txt(
        &format!("{SELECTOR}._domainkey.{DOMAIN}"),
        vec![other.to_owned()],
    );
    let check = check(&checker).await.unwrap();
    assert_eq!(
        check.dkim,
        RecordState::WrongValue {
            found: other.to_owned()
        }
    );
    assert!(!check.verified());
}

#[tokio::test]
async fn missing_spf_is_not_verified() {
    let (dns, checker) = start().await;
    publish_all(&dns);
    dns.set_txt(DOMAIN, vec!["google-site-verification=abc".to_owned()]);
    let check = check(&checker).await.unwrap();
    assert_eq!(check.spf, RecordState::Missing);
    assert_eq!(check.dkim, RecordState::Found);
    assert!(!check.verified());
}

#[tokio::test]
async fn spf_without_the_mechanism_is_a_wrong_value() {
    let (dns, checker) = start().await;
    publish_all(&dns);
    let spf = "v=spf1 include:_spf.google.com ~all";
    dns.set_txt(
        DOMAIN,
        vec!["some-verification=1".to_owned(), spf.to_owned()],
    );
    let check = check(&checker).await.unwrap();
    assert_eq!(
        check.spf,
        RecordState::WrongValue {
            found: spf.to_owned()
        }
    );
    assert!(!check.verified());

    // Adding the mechanism to the existing record fixes it.
    dns.set_txt(
        DOMAIN,
        vec![format!(
            "v=spf1 include:_spf.google.com {SPF_MECHANISM} ~all"
        )],
    );
    assert!(check_verified(&checker).await);
}

async fn check_verified(checker: &DnsChecker) -> bool {
    check(checker).await.unwrap().verified()
}

#[tokio::test]
async fn removing_records_later_flips_the_check_at_once() {
    let (dns, checker) = start().await;
    assert!(!check_verified(&checker).await);
    publish_all(&dns);
    assert!(check_verified(&checker).await);
    dns.remove(DOMAIN);
    assert!(!check_verified(&checker).await);
    publish_all(&dns);
    assert!(check_verified(&checker).await);
    dns.remove(&format!("_dmarc.{DOMAIN}"));
    let check = check(&checker).await.unwrap();
    assert_eq!(check.dmarc, RecordState::Missing);
    assert!(check.verified(), "DMARC is only a suggestion");
}

#[tokio::test]
async fn an_unknown_domain_is_all_missing() {
    let (_dns, checker) = start().await;
    assert!(checker.txt("nothing.example.net").await.unwrap().is_empty());
    assert!(checker.mx("nothing.example.net").await.unwrap().is_empty());
    let check = check(&checker).await.unwrap();
    assert_eq!(check.dkim, RecordState::Missing);
    assert_eq!(check.spf, RecordState::Missing);
    assert_eq!(check.dmarc, RecordState::Missing);
    assert_eq!(check.return_path, Some(RecordState::Missing));
    assert!(!check.verified());
}

#[tokio::test]
async fn a_known_name_without_txt_records_is_empty() {
    let (dns, checker) = start().await;
    dns.set_a(DOMAIN, vec![std::net::Ipv4Addr::new(192, 0, 2, 7)]);
    assert!(checker.txt(DOMAIN).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_unresponsive_server_times_out_quickly() {
    let dns = DnsServer::start().await.unwrap();
    publish_all(&dns);
    dns.set_unresponsive(true);
    let checker = DnsChecker::new(Some(dns.addr()), Duration::from_millis(200)).unwrap();
    let started = Instant::now();
    let result = check(&checker).await;
    assert!(matches!(result, Err(DnsError::Timeout)), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(checker.txt(DOMAIN).await, Err(DnsError::Timeout)));

    dns.set_unresponsive(false);
    assert!(check_verified(&checker).await);
}

#[test]
fn the_system_configuration_builds_a_checker_outside_a_runtime() {
    if std::path::Path::new("/etc/resolv.conf").exists() {
        DnsChecker::new(None, Duration::from_secs(2)).unwrap();
    }
}
