//! `POST /v1/verify` over HTTP, resolving through the testkit's DNS server on loopback (the
//! server's configured resolver): every field true and false, typos, disposable and role
//! addresses, NXDOMAIN, the MX fallback to A, the null MX, the per-domain cache driven by the
//! clock, resolver timeouts, authentication and bad bodies.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use herald_testkit::dns_server::DnsServer;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    a_person_at_a_mail_domain_is_valid_with_no_reasons,
    plus_addresses_and_alias_forms_are_flagged,
    a_mistyped_provider_or_tld_suggests_the_meant_address,
    a_disposable_domain_is_not_valid,
    a_role_address_is_valid_with_a_reason,
    a_domain_that_does_not_exist_answers_every_dns_field_false,
    a_domain_without_mx_falls_back_to_its_a_record,
    a_null_mx_means_no_mail_and_ns_alone_means_it_exists,
    a_website_is_an_address_for_the_domain_or_its_www_name,
    bad_syntax_is_a_result_without_dns,
    domain_answers_are_cached_until_the_clock_passes_the_ttl,
    a_resolver_timeout_is_a_504_and_is_not_cached,
    only_the_secret_key_may_verify,
    bodies_without_an_email_string_are_422_with_the_field,
    a_cached_domain_answers_in_under_a_millisecond,
);

const MX_HOST: &str = "mx.mail-host.test";
const WEB: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 80);

/// An app resolving through `dns`, with a short DNS timeout, and a project's secret key.
async fn start(engine: Engine, dns: &DnsServer) -> (TestApp, String) {
    let addr = dns.addr();
    let app = engine
        .app_with(|c| {
            c.dns_resolver = Some(addr);
            c.dns_timeout_secs = 0.3;
        })
        .await;
    let key = app.project().await.secret_key;
    (app, key)
}

/// Publishes a domain that takes mail (MX) and has a website (A on the apex).
fn mail_domain(dns: &DnsServer, domain: &str) {
    dns.set_mx(domain, vec![(10, MX_HOST.into())]);
    dns.set_a(domain, vec![WEB]);
}

/// `POST /v1/verify`, asserting 200 and the envelope; returns `data`.
async fn verify(app: &TestApp, key: &str, email: &str) -> Value {
    let body = expect_json(
        app.post("/v1/verify", key, &json!({ "email": email }))
            .await,
        200,
    )
    .await;
    assert_eq!(body["success"], true, "{body}");
    body["data"].clone()
}

/// The boolean fields of a result, in SPEC.md order, as `(name, value)` pairs.
fn flags(v: &Value) -> Vec<(&'static str, bool)> {
    [
        "valid",
        "isDisposable",
        "isAlias",
        "isTypo",
        "isPlusAddressed",
        "isPersonalEmail",
        "domainExists",
        "hasWebsite",
        "hasMxRecords",
    ]
    .into_iter()
    .map(|name| {
        let value = v[name]
            .as_bool()
            .unwrap_or_else(|| panic!("{name} is not a boolean in {v}"));
        (name, value)
    })
    .collect()
}

/// Asserts the named flags are true and every other flag false.
fn assert_true_flags(v: &Value, expected_true: &[&str]) {
    let truthy: Vec<&str> = flags(v)
        .into_iter()
        .filter(|(_, value)| *value)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(truthy, expected_true, "{v}");
}

fn reasons(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("reasons is not an array in {v}"))
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

async fn a_person_at_a_mail_domain_is_valid_with_no_reasons(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "gmail.com");
    let v = verify(&app, &key, "  Ada.Lovelace@GMail.com ").await;
    assert_eq!(v["email"], "ada.lovelace@gmail.com");
    // Dots in a Gmail address are an alias form (Gmail ignores them).
    assert_true_flags(
        &v,
        &[
            "valid",
            "isAlias",
            "isPersonalEmail",
            "domainExists",
            "hasWebsite",
            "hasMxRecords",
        ],
    );
    assert_eq!(reasons(&v), Vec::<String>::new());
    assert_eq!(v["suggestedEmail"], Value::Null);

    mail_domain(&dns, "example.com");
    let v = verify(&app, &key, "ada@example.com").await;
    assert_true_flags(&v, &["valid", "domainExists", "hasWebsite", "hasMxRecords"]);
    assert!(reasons(&v).is_empty(), "{v}");
}

async fn plus_addresses_and_alias_forms_are_flagged(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "example.com");
    let v = verify(&app, &key, "ada+newsletter@example.com").await;
    assert_true_flags(
        &v,
        &[
            "valid",
            "isAlias",
            "isPlusAddressed",
            "domainExists",
            "hasWebsite",
            "hasMxRecords",
        ],
    );
    assert!(reasons(&v).is_empty(), "{v}");

    // A relay service's address is an alias without a plus.
    dns.set_mx("privaterelay.appleid.com", vec![(10, MX_HOST.into())]);
    let v = verify(&app, &key, "x7c2@privaterelay.appleid.com").await;
    assert_eq!(v["isAlias"], true, "{v}");
    assert_eq!(v["isPlusAddressed"], false, "{v}");
    assert_eq!(v["hasWebsite"], false, "{v}");
}

async fn a_mistyped_provider_or_tld_suggests_the_meant_address(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    // Typo domains are often registered (with MX) by someone else: still a typo.
    mail_domain(&dns, "gamil.com");
    let v = verify(&app, &key, "ada@gamil.com").await;
    assert_eq!(v["isTypo"], true, "{v}");
    assert_eq!(v["suggestedEmail"], "ada@gmail.com");
    assert_eq!(
        v["valid"], true,
        "a typo alone does not make it invalid: {v}"
    );
    assert_eq!(
        reasons(&v),
        ["The domain looks like a typo: did you mean ada@gmail.com?"]
    );

    // `.con` is no top-level domain: NXDOMAIN, and the suggestion fixes the TLD.
    let v = verify(&app, &key, "ada@gmail.con").await;
    assert_eq!(v["suggestedEmail"], "ada@gmail.com", "{v}");
    assert_true_flags(&v, &["isTypo"]);
    assert_eq!(
        reasons(&v),
        [
            "The domain looks like a typo: did you mean ada@gmail.com?",
            "The domain gmail.con does not exist",
        ]
    );
    let v = verify(&app, &key, "bob@example.con").await;
    assert_eq!(v["suggestedEmail"], "bob@example.com", "{v}");
}

async fn a_disposable_domain_is_not_valid(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "mailinator.com");
    let v = verify(&app, &key, "throwaway@mailinator.com").await;
    assert_true_flags(
        &v,
        &["isDisposable", "domainExists", "hasWebsite", "hasMxRecords"],
    );
    assert_eq!(
        reasons(&v),
        ["mailinator.com is a disposable (throwaway) email provider"]
    );
    // A subdomain of a listed domain counts too.
    mail_domain(&dns, "inbox.yopmail.com");
    let v = verify(&app, &key, "a@inbox.yopmail.com").await;
    assert_eq!(v["isDisposable"], true, "{v}");
}

async fn a_role_address_is_valid_with_a_reason(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "example.com");
    for role in [
        "admin@example.com",
        "Support@example.com",
        "noreply@example.com",
    ] {
        let v = verify(&app, &key, role).await;
        assert_eq!(v["valid"], true, "{v}");
        assert_eq!(
            reasons(&v),
            ["This is a role address (a team or system mailbox, not a person)"]
        );
    }
}

async fn a_domain_that_does_not_exist_answers_every_dns_field_false(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    let v = verify(&app, &key, "ada@nowhere.example").await;
    assert_true_flags(&v, &[]);
    assert_eq!(reasons(&v), ["The domain nowhere.example does not exist"]);
}

async fn a_domain_without_mx_falls_back_to_its_a_record(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    dns.set_a("a-only.test", vec![WEB]);
    let v = verify(&app, &key, "ada@a-only.test").await;
    assert_true_flags(&v, &["valid", "domainExists", "hasWebsite", "hasMxRecords"]);
    assert!(reasons(&v).is_empty(), "{v}");
    // MX alone: takes mail, no website.
    dns.set_mx("mx-only.test", vec![(10, MX_HOST.into())]);
    let v = verify(&app, &key, "ada@mx-only.test").await;
    assert_true_flags(&v, &["valid", "domainExists", "hasMxRecords"]);
}

async fn a_null_mx_means_no_mail_and_ns_alone_means_it_exists(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    dns.set_mx("no-mail.test", vec![(0, ".".into())]);
    dns.set_a("no-mail.test", vec![WEB]);
    let v = verify(&app, &key, "ada@no-mail.test").await;
    assert_true_flags(&v, &["domainExists", "hasWebsite"]);
    assert_eq!(
        reasons(&v),
        ["The domain no-mail.test publishes a null MX record: it accepts no email"]
    );
    dns.set_ns("parked.test", vec!["ns1.registrar.test".into()]);
    let v = verify(&app, &key, "ada@parked.test").await;
    assert_true_flags(&v, &["domainExists"]);
    assert_eq!(
        reasons(&v),
        ["The domain parked.test has no MX or A record, so it cannot receive email"]
    );
}

async fn a_website_is_an_address_for_the_domain_or_its_www_name(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    dns.set_mx("shop.test", vec![(10, MX_HOST.into())]);
    dns.set_cname("www.shop.test", Some("shop.cdn.test"));
    dns.set_a("shop.cdn.test", vec![WEB]);
    let v = verify(&app, &key, "ada@shop.test").await;
    assert_eq!(v["hasWebsite"], true, "www through a CNAME: {v}");
    dns.set_mx("v6.test", vec![(10, MX_HOST.into())]);
    dns.set_aaaa("www.v6.test", vec!["2001:db8::80".parse().unwrap()]);
    let v = verify(&app, &key, "ada@v6.test").await;
    assert_eq!(v["hasWebsite"], true, "www over IPv6: {v}");
    // A CNAME whose target has no address is no website.
    dns.set_mx("dangling.test", vec![(10, MX_HOST.into())]);
    dns.set_cname("www.dangling.test", Some("gone.cdn.test"));
    let v = verify(&app, &key, "ada@dangling.test").await;
    assert_eq!(v["hasWebsite"], false, "{v}");
}

async fn bad_syntax_is_a_result_without_dns(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    // Unresponsive: any lookup would be a 504, so a 200 proves none was made.
    dns.set_unresponsive(true);
    for bad in ["not-an-email", "a@b", "two@@example.com", "a b@example.com"] {
        let v = verify(&app, &key, bad).await;
        assert_eq!(v["email"], bad, "{v}");
        assert_true_flags(&v, &[]);
        let r = reasons(&v);
        assert_eq!(r.len(), 1, "{v}");
        assert!(r[0].starts_with("The address is not valid"), "{v}");
    }
}

async fn domain_answers_are_cached_until_the_clock_passes_the_ttl(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "cached.test");
    assert_eq!(verify(&app, &key, "a@cached.test").await["valid"], true);
    dns.remove("cached.test");
    // Another address at the same domain is answered from the cache.
    app.clock.advance(Duration::from_secs(4 * 60));
    let v = verify(&app, &key, "b@cached.test").await;
    assert_eq!(v["valid"], true, "still cached: {v}");
    assert_eq!(v["domainExists"], true, "{v}");
    app.clock.advance(Duration::from_secs(61));
    let v = verify(&app, &key, "b@cached.test").await;
    assert_true_flags(&v, &[]);
    // The new (negative) answer is cached as well.
    mail_domain(&dns, "cached.test");
    assert_eq!(verify(&app, &key, "c@cached.test").await["valid"], false);
    app.clock.advance(Duration::from_secs(5 * 60));
    assert_eq!(verify(&app, &key, "c@cached.test").await["valid"], true);
}

async fn a_resolver_timeout_is_a_504_and_is_not_cached(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "slow.test");
    dns.set_unresponsive(true);
    let res = app
        .post("/v1/verify", &key, &json!({"email": "a@slow.test"}))
        .await;
    let body = expect_error(res, 504, "DNS_TIMEOUT").await;
    assert!(body["error"]["suggestion"].is_string(), "{body}");
    dns.set_unresponsive(false);
    assert_eq!(verify(&app, &key, "a@slow.test").await["valid"], true);
}

async fn only_the_secret_key_may_verify(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let addr = dns.addr();
    let app = engine
        .app_with(|c| {
            c.dns_resolver = Some(addr);
            c.dns_timeout_secs = 0.3;
        })
        .await;
    let p = app.project().await;
    let body = json!({"email": "ada@example.com"});
    let res = app.post("/v1/verify", &p.public_key, &body).await;
    expect_error(res, 401, "INVALID_API_KEY").await;
    let res = app
        .call(reqwest::Method::POST, "/v1/verify", None, Some(&body))
        .await;
    expect_error(res, 401, "MISSING_AUTH").await;
    let res = app.post("/v1/verify", "sk_not_a_real_key", &body).await;
    expect_error(res, 401, "INVALID_API_KEY").await;
    // A dashboard session is not the secret key either.
    let res = p
        .owner
        .post(app.url("/v1/verify"))
        .header("x-project-id", &p.id)
        .json(&body)
        .send()
        .await
        .unwrap();
    expect_error(res, 401, "INVALID_API_KEY").await;
    mail_domain(&dns, "example.com");
    assert_eq!(
        verify(&app, &p.secret_key, "ada@example.com").await["valid"],
        true
    );
}

async fn bodies_without_an_email_string_are_422_with_the_field(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    for body in [
        json!({}),
        json!({"email": null}),
        json!({"email": 42}),
        json!({"email": ["a@b.com"]}),
        json!({"email": "   "}),
        json!({"email": "a".repeat(2_000)}),
    ] {
        let res = app.post("/v1/verify", &key, &body).await;
        let err = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), ["email"], "{body}: {err}");
    }
    let res = app
        .client
        .post(app.url("/v1/verify"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{\"email\":")
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "BAD_REQUEST").await;
}

/// Prints the server time of a cached domain (the engine call, no HTTP) and the loopback HTTP
/// round trip; the engine call must stay under 1 ms (median of 200).
async fn a_cached_domain_answers_in_under_a_millisecond(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let (app, key) = start(engine, &dns).await;
    mail_domain(&dns, "fast.test");
    verify(&app, &key, "warm@fast.test").await;
    dns.set_unresponsive(true);
    let mut server = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        let v = app
            .engine
            .verify_email(&format!("user{i}+tag@fast.test"))
            .await
            .unwrap();
        server.push(started.elapsed());
        assert!(v.valid);
    }
    let mut http = Vec::new();
    for i in 0..50 {
        let started = Instant::now();
        let v = verify(&app, &key, &format!("user{i}@fast.test")).await;
        http.push(started.elapsed());
        assert_eq!(v["valid"], true);
    }
    server.sort();
    http.sort();
    let median = server[server.len() / 2];
    println!(
        "verify, cached domain: engine median {:?}, p99 {:?}; HTTP round trip median {:?}",
        median,
        server[server.len() * 99 / 100],
        http[http.len() / 2],
    );
    assert!(median < Duration::from_millis(1), "median {median:?}");
}
