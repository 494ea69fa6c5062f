//! Adding domains: the records to publish, name validation, and the sealed DKIM key.

use super::*;

both_engines!(
    add_answers_the_records_to_publish,
    add_suggests_the_return_path_mx_when_configured,
    add_rejects_invalid_host_names,
    the_private_key_is_sealed_at_rest_and_never_shown,
);

async fn add_answers_the_records_to_publish(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let p = app.project().await;
    let d = add(&app, &p, " Mail.Example.COM. ").await;
    assert_eq!(d["domain"], "mail.example.com");
    assert_eq!(d["projectId"], p.id.as_str());
    assert_eq!(
        (d["status"].as_str(), d["verified"].as_bool()),
        (Some("PENDING"), Some(false))
    );
    let selector = d["selector"].as_str().unwrap();
    assert!(
        selector.starts_with("herald") && selector.len() == "herald".len() + 8,
        "{selector}"
    );
    assert!(
        d["verifiedAt"].is_null() && d["lastCheckedAt"].is_null() && d["createdAt"].is_string(),
        "{d}"
    );

    let dkim = record(&d, "dkim");
    assert_eq!(
        (dkim["type"].as_str(), dkim["required"].as_bool()),
        (Some("TXT"), Some(true))
    );
    assert_eq!(
        dkim["name"],
        format!("{selector}._domainkey.mail.example.com")
    );
    let value = dkim["value"].as_str().unwrap();
    let key = value
        .strip_prefix("v=DKIM1; k=rsa; p=")
        .expect("DKIM value");
    let der = base64::engine::general_purpose::STANDARD
        .decode(key)
        .expect("base64 public key");
    assert!(
        der.len() > 256 && der.len() < 300,
        "an RSA-2048 SubjectPublicKeyInfo, got {} bytes",
        der.len()
    );
    let spf = record(&d, "spf");
    assert_eq!(
        (spf["name"].as_str(), spf["value"].as_str()),
        (
            Some("mail.example.com"),
            Some("v=spf1 include:_spf.herald.test ~all")
        )
    );
    let dmarc = record(&d, "dmarc");
    assert_eq!(
        (dmarc["name"].as_str(), dmarc["required"].as_bool()),
        (Some("_dmarc.mail.example.com"), Some(false))
    );
    assert!(dmarc["value"].as_str().unwrap().starts_with("v=DMARC1"));
    assert_eq!(
        states(&d),
        pairs(&[
            ("dkim", "unchecked"),
            ("spf", "unchecked"),
            ("dmarc", "unchecked")
        ]),
        "no MX without a return-path host"
    );

    // The same domain twice in one project is a conflict; the list shows it once.
    expect_error(
        app.post(
            "/domains",
            &p.secret_key,
            &json!({"domain": "mail.example.com"}),
        )
        .await,
        409,
        "CONFLICT",
    )
    .await;
    assert_eq!(list(&app, &p).await.len(), 1);
}

async fn add_suggests_the_return_path_mx_when_configured(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |c| {
        c.return_path_host = Some("mx.herald.test".into())
    })
    .await;
    let p = app.project().await;
    let d = add(&app, &p, "example.com").await;
    let mx = record(&d, "returnPath");
    assert_eq!(mx["type"], "MX");
    assert_eq!(
        (mx["name"].as_str(), mx["value"].as_str()),
        (Some("bounces.example.com"), Some("10 mx.herald.test"))
    );
    assert_eq!(mx["required"], false);
    // Published with the other records, it is found; it never blocks verification.
    publish(&dns, &d);
    dns.set_mx("bounces.example.com", vec![(10, "mx.herald.test".into())]);
    let v = verify(&app, &p, &d).await;
    assert_eq!(v["status"], "VERIFIED");
    assert_eq!(record(&v, "returnPath")["state"], "found");
}

async fn add_rejects_invalid_host_names(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for bad in [
        "",
        "localhost",
        "example",
        "exa mple.com",
        "-bad.example.com",
        "a..b.com",
        "user@example.com",
        "bü cher.de",
        "10.0.0.1",
        "under_score.com",
    ] {
        let res = app
            .post("/domains", &p.secret_key, &json!({ "domain": bad }))
            .await;
        let err = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), ["domain"], "{bad:?}: {err}");
    }
    let err = expect_error(
        app.post("/domains", &p.secret_key, &json!({})).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err["error"]["errors"][0]["code"], "required");
    let err = expect_error(
        app.post("/domains", &p.secret_key, &json!({"domain": 7}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), ["domain"]);
    assert!(list(&app, &p).await.is_empty());
}

async fn the_private_key_is_sealed_at_rest_and_never_shown(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let p = app.project().await;
    let one = add(&app, &p, "one.example.com").await;
    let two = add(&app, &p, "two.example.com").await;
    publish(&dns, &one);
    let verified = verify(&app, &p, &one).await;
    let listed = serde_json::to_string(&list(&app, &p).await).unwrap();

    let sealed = |d: &Value| {
        let id = uuid::Uuid::parse_str(d["id"].as_str().unwrap()).unwrap();
        let store = app.store.clone();
        async move {
            store
                .sealed_dkim_key(id)
                .await
                .unwrap()
                .expect("a stored key")
        }
    };
    let (s1, s2) = (sealed(&one).await, sealed(&two).await);
    assert_ne!(s1, s2);
    let secret = app.config.load_or_create_secret().unwrap();
    let sealer = herald_mail::seal::Sealer::for_dkim(&secret);
    for (blob, d) in [(&s1, &one), (&s2, &two)] {
        assert!(!blob.windows(10).any(|w| w == b"-----BEGIN"), "not PEM");
        let der = sealer.open(blob).expect("sealed with the server secret");
        assert_eq!(der[0], 0x30, "PKCS#8 DER once unsealed");
        // Not the DER in clear anywhere in what is stored. (The blob's first byte is random:
        // it was 0x30, a DER SEQUENCE's tag, in one run in 256.)
        assert!(
            !blob.windows(der.len()).any(|w| w == der.as_slice()),
            "the key is stored in clear"
        );
        let public = herald_mail::dkim::public_key_b64_from_pkcs8(&der).unwrap();
        assert!(
            record(d, "dkim")["value"]
                .as_str()
                .unwrap()
                .ends_with(&public),
            "the key pair of the published record"
        );
        // No response carries the private key, whole or in part.
        let private = base64::engine::general_purpose::STANDARD.encode(&der);
        for text in [d.to_string(), verified.to_string(), listed.clone()] {
            assert!(
                !text.contains(&private[100..160]),
                "private key material in a response"
            );
            assert!(!text.to_lowercase().contains("private"), "{text}");
        }
    }
    let other = herald_mail::seal::Sealer::for_dkim(b"another-secret-another-secret-0000");
    assert!(
        other.open(&s1).is_err(),
        "another server secret cannot open it"
    );
}
