//! Verifying on demand through the loopback DNS server: each record's state, NXDOMAIN, timeouts.

use super::*;

both_engines!(
    a_correct_zone_verifies_the_domain,
    verification_reports_each_missing_or_wrong_record,
    a_domain_that_does_not_exist_stays_pending,
    a_resolver_timeout_is_a_504_and_changes_nothing,
);

async fn a_correct_zone_verifies_the_domain(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let p = app.project().await;
    let d = add(&app, &p, "example.com").await;
    publish(&dns, &d);
    let v = verify(&app, &p, &d).await;
    assert_eq!(
        (v["status"].as_str(), v["verified"].as_bool()),
        (Some("VERIFIED"), Some(true)),
        "{v}"
    );
    assert_eq!(
        states(&v),
        pairs(&[("dkim", "found"), ("spf", "found"), ("dmarc", "found")])
    );
    assert!(
        v["verifiedAt"].is_string() && v["lastCheckedAt"].is_string() && v["lastError"].is_null(),
        "{v}"
    );
    assert_eq!(
        list(&app, &p).await,
        std::slice::from_ref(&v),
        "the list shows the stored state"
    );
    let feed = activity(&app, &p, "").await;
    assert_eq!(feed["data"][0]["type"], "domain.verified");
    assert_eq!(feed["data"][0]["data"]["domainId"], d["id"]);
    // Verifying again keeps the original verification time.
    let again = verify(&app, &p, &d).await;
    assert_eq!(again["verifiedAt"], v["verifiedAt"]);
}

async fn verification_reports_each_missing_or_wrong_record(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let p = app.project().await;
    let d = add(&app, &p, "example.com").await;
    let dkim = record(&d, "dkim").clone();
    let dkim_name = dkim["name"].as_str().unwrap();
    publish(&dns, &d);

    // DKIM missing.
    dns.remove(dkim_name);
    let v = verify(&app, &p, &d).await;
    assert_eq!(v["status"], "PENDING");
    assert_eq!(
        states(&v),
        pairs(&[("dkim", "missing"), ("spf", "found"), ("dmarc", "found")])
    );
    assert!(v["lastError"].as_str().unwrap().contains("DKIM"), "{v}");

    // DKIM with another key: a wrong value, and what was found is shown.
    let other = add(&app, &p, "other.example.com").await;
    let wrong = record(&other, "dkim")["value"].as_str().unwrap().to_owned();
    dns.set_txt(dkim_name, vec![wrong.clone()]);
    let v = verify(&app, &p, &d).await;
    assert_eq!(v["status"], "PENDING");
    assert_eq!(record(&v, "dkim")["state"], "wrongValue");
    assert_eq!(record(&v, "dkim")["found"], wrong.as_str());

    // SPF missing (another TXT at the apex is not SPF), then SPF without the mechanism.
    dns.set_txt(dkim_name, vec![dkim["value"].as_str().unwrap().to_owned()]);
    dns.set_txt("example.com", vec!["google-site-verification=abc".into()]);
    let v = verify(&app, &p, &d).await;
    assert_eq!(v["status"], "PENDING");
    assert_eq!(
        states(&v),
        pairs(&[("dkim", "found"), ("spf", "missing"), ("dmarc", "found")])
    );
    assert!(v["lastError"].as_str().unwrap().contains("SPF"), "{v}");
    dns.set_txt(
        "example.com",
        vec!["v=spf1 include:elsewhere.example ~all".into()],
    );
    let v = verify(&app, &p, &d).await;
    assert_eq!(record(&v, "spf")["state"], "wrongValue");

    // DMARC is a suggestion: without it the domain still verifies.
    dns.set_txt(
        "example.com",
        vec![record(&d, "spf")["value"].as_str().unwrap().to_owned()],
    );
    dns.remove("_dmarc.example.com");
    let v = verify(&app, &p, &d).await;
    assert_eq!(v["status"], "VERIFIED", "{v}");
    assert_eq!(record(&v, "dmarc")["state"], "missing");
}

async fn a_domain_that_does_not_exist_stays_pending(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let p = app.project().await;
    let d = add(&app, &p, "nowhere.example.com").await;
    let v = verify(&app, &p, &d).await;
    assert_eq!(v["status"], "PENDING");
    assert_eq!(
        states(&v),
        pairs(&[
            ("dkim", "missing"),
            ("spf", "missing"),
            ("dmarc", "missing")
        ])
    );
    assert!(
        v["lastCheckedAt"].is_string(),
        "NXDOMAIN is an answer, so the check is recorded"
    );
}

async fn a_resolver_timeout_is_a_504_and_changes_nothing(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let p = app.project().await;
    let d = add(&app, &p, "example.com").await;
    publish(&dns, &d);
    verify(&app, &p, &d).await;
    let before = list(&app, &p).await;
    let feed_before = activity(&app, &p, "").await;

    dns.set_unresponsive(true);
    let id = d["id"].as_str().unwrap();
    let started = std::time::Instant::now();
    let err = expect_error(
        app.get(&format!("/domains/{id}/verify"), &p.secret_key)
            .await,
        504,
        "DNS_TIMEOUT",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the configured timeout"
    );
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("did not answer") && message.contains("nothing was changed"),
        "{message}"
    );
    assert_eq!(
        list(&app, &p).await,
        before,
        "the stored state is unchanged"
    );
    assert_eq!(activity(&app, &p, "").await, feed_before);

    dns.set_unresponsive(false);
    assert_eq!(verify(&app, &p, &d).await["status"], "VERIFIED");
}
