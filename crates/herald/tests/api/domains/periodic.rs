//! The background re-check: flips in both directions with activity, claims, timeouts, shutdown.

use super::*;

both_engines!(
    the_periodic_check_verifies_and_unverifies_with_activity,
    due_domains_are_claimed_by_one_node_only,
    the_periodic_job_survives_timeouts_and_stops_promptly,
);

async fn the_periodic_check_verifies_and_unverifies_with_activity(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |c| c.domain_check_interval_secs = 0.2).await;
    let p = app.project().await;
    let d = add(&app, &p, "example.com").await;
    publish(&dns, &d);
    // No call to /verify: the background job finds the records...
    wait_status(&app, &p, &d["id"], "VERIFIED").await;
    // ...and notices when they disappear.
    dns.remove(record(&d, "dkim")["name"].as_str().unwrap());
    let v = wait_status(&app, &p, &d["id"], "PENDING").await;
    assert_eq!(record(&v, "dkim")["state"], "missing");
    assert!(v["verifiedAt"].is_null(), "{v}");

    let feed = activity(&app, &p, "").await;
    let kinds: Vec<&str> = feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["domain.unverified", "domain.verified"],
        "newest first, each flip once"
    );
    let entry = &feed["data"][0];
    assert_eq!(entry["data"]["domainId"], d["id"]);
    assert_eq!(entry["data"]["domain"], "example.com");
    assert!(
        entry["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("DKIM record missing"),
        "{entry}"
    );
    assert!(entry["createdAt"].is_string() && entry["id"].is_string());

    // The feed filters by type, pages by cursor, and lists its types.
    let only = activity(&app, &p, "?type=domain.verified").await;
    assert_eq!(only["data"].as_array().unwrap().len(), 1);
    assert_eq!(only["data"][0]["type"], "domain.verified");
    let first = activity(&app, &p, "?limit=1").await;
    assert_eq!(
        (
            first["hasMore"].as_bool(),
            first["data"][0]["type"].as_str()
        ),
        (Some(true), Some("domain.unverified"))
    );
    let cursor = first["cursor"].as_str().unwrap();
    let second = activity(&app, &p, &format!("?limit=1&cursor={cursor}")).await;
    assert_eq!(
        (
            second["hasMore"].as_bool(),
            second["data"][0]["type"].as_str()
        ),
        (Some(false), Some("domain.verified"))
    );
    assert!(second["cursor"].is_null());
    let types = expect_json(app.get("/activity/types", &p.secret_key).await, 200).await;
    assert_eq!(
        types,
        json!({"types": ["domain.unverified", "domain.verified"]})
    );
    expect_error(
        app.get("/activity?limit=0", &p.secret_key).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let other = app.project().await;
    let err = expect_error(
        app.get(&format!("/activity?cursor={cursor}"), &other.secret_key)
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), ["cursor"]);
    assert_eq!(
        activity(&app, &other, "").await["data"],
        json!([]),
        "feeds are per project"
    );
}

async fn due_domains_are_claimed_by_one_node_only(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for i in 0..6 {
        add(&app, &p, &format!("d{i}.example.com")).await;
    }
    // Two nodes claim at once, at a time when every domain is due.
    let later = herald_core::clock::Clock::now(app.clock.as_ref()) + 3_600_000;
    let (s1, s2) = (app.store.clone(), app.store.clone());
    let (a, b) = tokio::join!(
        tokio::spawn(async move {
            s1.claim_due_domains(later, later + 300_000, 4)
                .await
                .unwrap()
        }),
        tokio::spawn(async move {
            s2.claim_due_domains(later, later + 300_000, 4)
                .await
                .unwrap()
        }),
    );
    let mut ids: Vec<_> = a
        .unwrap()
        .into_iter()
        .chain(b.unwrap())
        .map(|d| d.id)
        .collect();
    let claimed = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), claimed, "no domain claimed twice");
    let rest = app
        .store
        .claim_due_domains(later, later + 300_000, 10)
        .await
        .unwrap();
    assert_eq!(claimed + rest.len(), 6, "every due domain claimed once");
    assert!(
        app.store
            .claim_due_domains(later, later + 300_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "none due any more"
    );
}

async fn the_periodic_job_survives_timeouts_and_stops_promptly(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |c| c.domain_check_interval_secs = 0.2).await;
    let p = app.project().await;
    let d = add(&app, &p, "example.com").await;
    publish(&dns, &d);
    let verified = wait_status(&app, &p, &d["id"], "VERIFIED").await;
    // A resolver that stops answering changes nothing, however many checks time out.
    dns.set_unresponsive(true);
    // Twelve unanswered queries: at least two checks' worth (a check asks three or four
    // names at once, each over UDP and once more before giving up).
    let before = dns.queries();
    assert!(
        dns.wait_for_queries(before + 12, Duration::from_secs(20))
            .await,
        "the periodic checks stopped asking"
    );
    let still = list(&app, &p).await.remove(0);
    assert_eq!(
        (still["status"].as_str(), &still["lastCheckedAt"]),
        (Some("VERIFIED"), &verified["lastCheckedAt"])
    );
    assert_eq!(
        activity(&app, &p, "").await["data"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "only the verification"
    );

    // A worker in the middle of a timing-out check stops at once on shutdown.
    let secret = app.config.load_or_create_secret().unwrap();
    let mut settings = app.config.engine_settings();
    settings.dns_timeout = Duration::from_secs(5);
    // Its own silent resolver, so its first query is told apart from the app's checks.
    let silent = DnsServer::start().await.unwrap();
    silent.set_unresponsive(true);
    settings.dns_resolver = Some(silent.addr());
    let engine = herald_engine::Engine::new(app.store.clone(), settings, &secret).unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let job = tokio::spawn(herald_engine::domains::run_periodic_checks(engine, stopped));
    // The worker is in a check once its first query (which will time out) arrived.
    assert!(silent.wait_for_queries(1, Duration::from_secs(10)).await);
    let started = std::time::Instant::now();
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(1), job)
        .await
        .expect("stopped promptly")
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
}
