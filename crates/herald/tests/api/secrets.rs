//! The server secret: `herald rotate-secret` re-seals every DKIM key, so a server restarted on
//! the new secret still signs mail that verifies against the published key, and the old
//! secret opens nothing any more.

use std::time::Duration;

use herald::Application;
use herald::rotate::rotate_secret;
use herald_mail::seal::Sealer;
use herald_testkit::dkim_check::dkim_passes;
use herald_testkit::dns_server::DnsServer;
use herald_testkit::smtp_sink::SmtpSink;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_json};
use crate::mail_setup::{DOMAIN, verify_domain};

both_engines!(
    rotating_a_generated_secret_keeps_dkim_signing,
    rotating_a_configured_secret_needs_the_new_one,
);

const WAIT: Duration = Duration::from_secs(15);

async fn domain_row(app: &TestApp) -> uuid::Uuid {
    let keys = app.store.all_sealed_dkim_keys().await.unwrap();
    assert_eq!(keys.len(), 1);
    keys[0].id
}

async fn rotating_a_generated_secret_keeps_dkim_signing(engine: Engine) {
    let sink = SmtpSink::start().await.unwrap();
    let dns = DnsServer::start().await.unwrap();
    let (smtp_url, dns_addr) = (sink.url(), dns.addr());
    let app = engine
        .app_with(|c| {
            c.secret = None; // generated into the data directory
            c.workers = false;
            c.smtp_url = Some(smtp_url);
            c.dns_resolver = Some(dns_addr);
            c.dns_timeout_secs = 1.0;
        })
        .await;
    sink.ignore_from(&app.config.system_from);
    let p = app.project().await;
    let (txt, selector) = verify_domain(&app, &p, &dns, DOMAIN).await;
    let id = domain_row(&app).await;
    let old = app.config.load_or_create_secret().unwrap();

    let done = rotate_secret(&app.config, None).await.unwrap();
    assert_eq!(done.rotation.resealed, 1);
    assert_eq!(done.written, Some(app.config.data_dir.join("secret")));
    assert!(!app.config.data_dir.join("secret.next").exists());
    let new = app.config.load_or_create_secret().unwrap();
    assert_ne!(old, new, "a new secret in the data directory");
    let sealed = app.store.sealed_dkim_key(id).await.unwrap().unwrap();
    assert!(Sealer::for_dkim(&old).open(&sealed).is_err());
    assert!(Sealer::for_dkim(&new).open(&sealed).is_ok());

    // A server started on the new secret (same database and data directory) signs.
    let mut config = app.config.clone();
    config.workers = true;
    let server = Application::build_with_clock(config, app.clock.clone())
        .await
        .unwrap();
    let base = format!("http://127.0.0.1:{}", server.port());
    tokio::spawn(server.run_until_stopped(std::future::pending()));
    let res = app
        .client
        .post(format!("{base}/v1/send"))
        .bearer_auth(&p.secret_key)
        .json(&json!({
            "to": "ada@example.org",
            "from": format!("hello@{DOMAIN}"),
            "subject": "After the rotation",
            "body": "<p>Still signed</p>",
        }))
        .send()
        .await
        .unwrap();
    expect_json(res, 200).await;
    let got = sink.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    assert!(
        dkim_passes(&got[0].data, DOMAIN, &selector, &txt).await,
        "DKIM must verify after the rotation"
    );
    // Sessions were signed with a key derived from the old secret: signed out.
    let res = p
        .owner
        .get(format!("{base}/users/@me/projects"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

async fn rotating_a_configured_secret_needs_the_new_one(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let dns_addr = dns.addr();
    let app = engine
        .app_with(|c| {
            c.workers = false;
            c.dns_resolver = Some(dns_addr);
            c.dns_timeout_secs = 1.0;
        })
        .await;
    let p = app.project().await;
    verify_domain(&app, &p, &dns, DOMAIN).await;
    let id = domain_row(&app).await;
    let old = app.config.load_or_create_secret().unwrap();
    let before = app.store.sealed_dkim_key(id).await.unwrap().unwrap();

    let err = rotate_secret(&app.config, None).await.unwrap_err();
    assert!(err.to_string().contains("HERALD_NEW_SECRET"), "{err}");
    let err = rotate_secret(&app.config, Some("too short".into()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at least 32"), "{err}");
    let same = String::from_utf8(old.clone()).unwrap();
    assert!(rotate_secret(&app.config, Some(same)).await.is_err());
    assert_eq!(
        app.store.sealed_dkim_key(id).await.unwrap().unwrap(),
        before,
        "refused rotations change nothing"
    );

    let new = "a-brand-new-configured-secret-0123456789".to_owned();
    let done = rotate_secret(&app.config, Some(new.clone())).await.unwrap();
    assert_eq!(done.rotation.resealed, 1);
    assert_eq!(done.written, None, "a configured secret is not written");
    assert!(!app.config.data_dir.join("secret").exists());
    let sealed = app.store.sealed_dkim_key(id).await.unwrap().unwrap();
    assert!(Sealer::for_dkim(new.as_bytes()).open(&sealed).is_ok());
    assert!(Sealer::for_dkim(&old).open(&sealed).is_err());
    // An interrupted run repeated: the key already under the new secret is left alone.
    let mut rotated = app.config.clone();
    rotated.secret = Some(new.clone());
    let err = rotate_secret(&rotated, Some(new.clone()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("same"), "{err}");
    let again = herald_engine::secret_rotation::reseal_dkim_keys(&app.store, &old, new.as_bytes())
        .await
        .unwrap();
    assert_eq!((again.resealed, again.already_new), (0, 1));
}
