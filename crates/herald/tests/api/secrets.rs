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
use crate::mail_setup::{DOMAIN, mail_world, verify_domain};
use crate::tracking::{PUBLIC, deliver, links_to, no_redirects, parse, template};

both_engines!(
    rotating_a_generated_secret_keeps_dkim_signing,
    rotating_a_configured_secret_needs_the_new_one,
    links_sent_before_a_rotation_work_until_the_retired_secret_is_dropped,
    a_configured_retired_secret_keeps_its_links_working,
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

/// A server on `config` (same database and data directory as the test app), without workers;
/// returns its base URL.
async fn start(app: &TestApp, config: &herald::Config) -> String {
    let mut config = config.clone();
    config.workers = false;
    let server = Application::build_with_clock(config, app.clock.clone())
        .await
        .unwrap();
    let base = format!("http://127.0.0.1:{}", server.port());
    tokio::spawn(server.run_until_stopped(std::future::pending()));
    base
}

/// The links of one delivered MARKETING message: (open, click, unsubscribe).
struct SentLinks {
    open: String,
    click: String,
    unsubscribe: String,
}

impl SentLinks {
    fn on(url: &str, base: &str) -> String {
        url.replacen(PUBLIC, base, 1)
    }
}

async fn marketing_mail(w: &crate::mail_setup::MailWorld) -> (String, String, SentLinks) {
    let body = r#"<p>Sale: <a href="https://shop.example/sale">here</a></p>"#;
    let t = template(w, "MARKETING", body).await;
    w.app
        .create_contact(
            &w.project.secret_key,
            json!({"email": "ada@example.org", "subscribed": true}),
        )
        .await;
    let (id, contact, raw) = deliver(w, &json!({"to": "ada@example.org", "template": t})).await;
    let html = parse(&raw).body_html(0).unwrap().into_owned();
    let one = |path: &str| {
        let found = links_to(&html, path);
        assert!(!found.is_empty(), "{path} in {html}");
        found[0].clone()
    };
    let links = SentLinks {
        open: one("/t/open/"),
        click: one("/t/click/"),
        unsubscribe: one("/unsubscribe/"),
    };
    (id, contact, links)
}

async fn status_of(w: &crate::mail_setup::MailWorld, id: &str) -> String {
    let m = expect_json(
        w.app
            .get(&format!("/emails/{id}"), &w.project.secret_key)
            .await,
        200,
    )
    .await;
    m["status"].as_str().unwrap().to_owned()
}

async fn click_status(url: &str) -> (u16, Option<String>) {
    let res = no_redirects().get(url).send().await.unwrap();
    let location = res
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (res.status().as_u16(), location)
}

async fn links_sent_before_a_rotation_work_until_the_retired_secret_is_dropped(engine: Engine) {
    let w = mail_world(engine, |c| {
        c.public_url = PUBLIC.into();
        c.secret = None; // generated into the data directory
    })
    .await;
    let (id, contact, links) = marketing_mail(&w).await;
    let old = w.app.config.load_or_create_secret().unwrap();

    let done = rotate_secret(&w.app.config, None).await.unwrap();
    let file = w.app.config.retired_secrets_file();
    assert_eq!(done.retired.as_ref(), Some(&file));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().trim().as_bytes(),
        &old[..],
        "the old secret is kept as retired"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    let new = w.app.config.load_or_create_secret().unwrap();
    assert_ne!(old, new);

    // A server on the new secret and the ring: the old mail's links still work.
    let base = start(&w.app, &w.app.config).await;
    let res = w
        .app
        .client
        .get(SentLinks::on(&links.open, &base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    crate::mail_setup::wait_status(&w.app, &w.project.secret_key, &id, &["OPENED"], WAIT).await;
    assert_eq!(
        click_status(&SentLinks::on(&links.click, &base)).await,
        (302, Some("https://shop.example/sale".to_owned()))
    );
    crate::mail_setup::wait_status(&w.app, &w.project.secret_key, &id, &["CLICKED"], WAIT).await;
    let res = w
        .app
        .client
        .get(SentLinks::on(&links.unsubscribe, &base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = w
        .app
        .client
        .post(SentLinks::on(&links.unsubscribe, &base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let c = expect_json(
        w.app
            .get(&format!("/contacts/{contact}"), &w.project.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(c["subscribed"], false, "{c}");

    // A link made after the rotation is made with the new secret, and verifies.
    let project_id: uuid::Uuid = w.project.id.parse().unwrap();
    let message_id: uuid::Uuid = id.parse().unwrap();
    let fresh = herald_core::link_token::LinkTokens::new(&new).encode(
        &herald_core::link_token::LinkToken::Click {
            project_id,
            message_id,
            url: "https://shop.example/new".into(),
        },
    );
    let fresh = format!("{base}/t/click/{fresh}");
    assert_eq!(
        click_status(&fresh).await,
        (302, Some("https://shop.example/new".to_owned()))
    );

    // Dropped: a server started afterwards refuses the old links and keeps the new ones.
    let dropped = herald::rotate::drop_retired(&w.app.config).unwrap();
    assert_eq!((dropped.dropped, dropped.configured_left), (1, 0));
    assert!(!file.exists());
    let base = start(&w.app, &w.app.config).await;
    assert_eq!(
        click_status(&SentLinks::on(&links.click, &base)).await,
        (400, None)
    );
    let res = w
        .app
        .client
        .get(SentLinks::on(&links.unsubscribe, &base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let fresh = fresh.replacen(&fresh[..fresh.find("/t/").unwrap()], &base, 1);
    assert_eq!(
        click_status(&fresh).await,
        (302, Some("https://shop.example/new".to_owned()))
    );
    assert_eq!(status_of(&w, &id).await, "CLICKED");
}

/// A configured secret rotated: the operator lists the old one in `HERALD_RETIRED_SECRETS`.
async fn a_configured_retired_secret_keeps_its_links_working(engine: Engine) {
    let w = mail_world(engine, |c| c.public_url = PUBLIC.into()).await;
    let (_, _, links) = marketing_mail(&w).await;
    let old = w.app.config.secret.clone().unwrap();
    let new = "a-brand-new-configured-secret-0123456789".to_owned();
    let done = rotate_secret(&w.app.config, Some(new.clone()))
        .await
        .unwrap();
    assert_eq!(
        done.retired, None,
        "nothing is written for a configured secret"
    );
    assert!(!w.app.config.retired_secrets_file().exists());

    let mut without = w.app.config.clone();
    without.secret = Some(new.clone());
    let base = start(&w.app, &without).await;
    assert_eq!(
        click_status(&SentLinks::on(&links.click, &base)).await,
        (400, None)
    );

    let mut with = without.clone();
    with.retired_secrets = vec![old];
    let base = start(&w.app, &with).await;
    assert_eq!(
        click_status(&SentLinks::on(&links.click, &base)).await,
        (302, Some("https://shop.example/sale".to_owned()))
    );
}
