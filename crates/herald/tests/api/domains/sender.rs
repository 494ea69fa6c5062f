//! Reserved test domains and the sender rules (`require_verified_sender`, `dkim_signer`).

use super::*;

both_engines!(
    reserved_domains_verify_at_once_only_with_the_outbox,
    sender_rules_follow_verification_and_the_transport,
);

async fn reserved_domains_verify_at_once_only_with_the_outbox(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for name in ["acme.test", "shop.example", "x.invalid", "app.localhost"] {
        let d = add(&app, &p, name).await;
        assert_eq!(
            (d["status"].as_str(), d["verified"].as_bool()),
            (Some("VERIFIED"), Some(true)),
            "{d}"
        );
        assert!(d["note"].as_str().unwrap().contains("local outbox"), "{d}");
        assert!(d["verifiedAt"].is_string());
        assert_eq!(record(&d, "dkim")["state"], "unchecked", "no DNS is asked");
        assert_eq!(verify(&app, &p, &d).await["status"], "VERIFIED");
    }
    let feed = activity(&app, &p, "?type=domain.verified").await;
    assert_eq!(feed["data"].as_array().unwrap().len(), 4);
    // Ordinary domains still need DNS.
    assert_eq!(add(&app, &p, "example.com").await["status"], "PENDING");

    // With a real transport (constructed at startup, never connected), they are refused.
    let smtp = engine.app_with(|c| c.smtp_url = Some(SMTP.into())).await;
    let q = smtp.project().await;
    let err = expect_error(
        smtp.post("/domains", &q.secret_key, &json!({"domain": "acme.test"}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), ["domain"]);
    assert_eq!(err["error"]["errors"][0]["code"], "reserved_domain");
    assert_eq!(add(&smtp, &q, "example.com").await["status"], "PENDING");
}

async fn sender_rules_follow_verification_and_the_transport(engine: Engine) {
    let app = engine.app().await;
    let (p, other) = (app.project().await, app.project().await);
    let d = add(&app, &p, "acme.test").await;
    let secret = app.config.load_or_create_secret().unwrap();
    let outbox =
        herald_engine::Engine::new(app.store.clone(), app.config.engine_settings(), &secret)
            .unwrap();
    let project = uuid::Uuid::parse_str(&p.id).unwrap();
    let from = |s: &str| EmailAddress::parse(s).unwrap();

    let found = outbox
        .require_verified_sender(project, &from("Hello@ACME.test"))
        .await
        .unwrap();
    assert_eq!(
        (found.id.to_string(), found.domain.as_str()),
        (d["id"].as_str().unwrap().to_owned(), "acme.test")
    );
    assert_eq!(found.selector, d["selector"].as_str().unwrap());
    for (who, addr) in [
        (project, "a@mail.acme.test"),
        (project, "a@elsewhere.test"),
        (uuid::Uuid::parse_str(&other.id).unwrap(), "a@acme.test"),
    ] {
        let err = outbox
            .require_verified_sender(who, &from(addr))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                herald_engine::domains::SenderDomainError::NotVerified { .. }
            ),
            "{addr}: {err}"
        );
    }

    // The signer signs with the key of the published record.
    let signer = outbox
        .dkim_signer(project, "acme.test")
        .await
        .unwrap()
        .expect("a signer");
    assert_eq!(
        (signer.domain(), signer.selector()),
        ("acme.test", d["selector"].as_str().unwrap())
    );
    let message = b"From: a@acme.test\r\nTo: b@example.org\r\nSubject: hi\r\nDate: Thu, 1 Jan 2026 00:00:00 +0000\r\nMessage-ID: <1@acme.test>\r\n\r\nHello\r\n";
    let signed = signer.sign(message).unwrap();
    let txt = record(&d, "dkim")["value"].as_str().unwrap();
    assert!(
        herald_testkit::dkim_check::dkim_passes(&signed, "acme.test", signer.selector(), txt).await
    );
    assert!(
        outbox
            .dkim_signer(project, "elsewhere.test")
            .await
            .unwrap()
            .is_none()
    );

    // Under a real transport the same reserved domain is no sender, and a check unverifies it.
    let mut settings = app.config.engine_settings();
    settings.smtp_url = Some(SMTP.into());
    let relay = herald_engine::Engine::new(app.store.clone(), settings, &secret).unwrap();
    assert!(
        relay
            .require_verified_sender(project, &from("a@acme.test"))
            .await
            .is_err()
    );
    assert!(
        relay
            .dkim_signer(project, "acme.test")
            .await
            .unwrap()
            .is_none()
    );
    let id = uuid::Uuid::parse_str(d["id"].as_str().unwrap()).unwrap();
    let view = relay.verify_domain(project, id).await.unwrap();
    assert!(!view.domain.verified);
    let feed = activity(&app, &p, "").await;
    assert_eq!(feed["data"][0]["type"], "domain.unverified");
    assert!(
        feed["data"][0]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("local outbox")
    );
    assert!(
        outbox
            .require_verified_sender(project, &from("a@acme.test"))
            .await
            .is_err(),
        "the database says pending now"
    );
}
