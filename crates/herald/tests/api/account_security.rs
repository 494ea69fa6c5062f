//! The security report: bounce and complaint rates over 7 days and all time, with the
//! configured thresholds and levels.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, send, wait_status};

both_engines!(
    security_reports_rates_levels_and_thresholds,
    a_critical_bounce_rate_disables_the_project_until_an_owner_enables_it,
);

async fn security_reports_rates_levels_and_thresholds(engine: Engine) {
    let w = mail_world(engine, |c| c.bounce_rate_critical = 0.4).await;
    let (app, p) = (&w.app, &w.project);
    w.sink.refuse_recipient("gone@example.org");
    let body = json!({"to": ["here@example.org", "gone@example.org"], "from": format!("x@{DOMAIN}"),
        "subject": "S", "body": "B"});
    let ids = message_ids(&expect_json(send(&w, &body).await, 200).await);
    wait_status(
        app,
        &p.secret_key,
        &ids[0],
        &["SENT"],
        Duration::from_secs(15),
    )
    .await;
    wait_status(
        app,
        &p.secret_key,
        &ids[1],
        &["BOUNCED"],
        Duration::from_secs(15),
    )
    .await;
    for path in [
        format!("/projects/{}/security", p.id),
        format!("/users/@me/projects/{}/security", p.id),
    ] {
        let s = expect_json(
            app.call_with(&p.owner, Method::GET, &path, None, None)
                .await,
            200,
        )
        .await;
        assert_eq!(s["last7Days"]["sent"], 2, "{s}");
        assert_eq!(s["last7Days"]["bounced"], 1, "{s}");
        assert_eq!(s["last7Days"]["bounceRate"], 0.5, "{s}");
        assert_eq!(s["allTime"]["bounced"], 1, "{s}");
        assert_eq!(s["bounceLevel"], "CRITICAL", "{s}");
        assert_eq!(s["complaintLevel"], "OK", "{s}");
        assert_eq!(s["thresholds"]["bounceCritical"], 0.4, "{s}");
        assert_eq!(s["disabled"], false, "{s}");
    }
    // Eight days later (the 7-day session expired: sign in again) the week is clean; all
    // time still counts.
    let me = expect_json(
        app.call_with(&p.owner, Method::GET, "/users/@me", None, None)
            .await,
        200,
    )
    .await;
    app.clock.advance(Duration::from_secs(8 * 24 * 3600));
    let email = me["email"].as_str().unwrap();
    let (owner, res) =
        crate::account_setup::login(app, email, crate::account_setup::PASSWORD).await;
    expect_json(res, 200).await;
    let path = format!("/projects/{}/security", p.id);
    let s = expect_json(
        app.call_with(&owner, Method::GET, &path, None, None).await,
        200,
    )
    .await;
    assert_eq!(s["last7Days"]["sent"], 0, "{s}");
    assert_eq!(s["bounceLevel"], "OK", "{s}");
    assert_eq!(s["allTime"]["sent"], 2, "{s}");
    let stranger = app.signup("spy@example.com").await;
    let res = app
        .call_with(&stranger, Method::GET, &path, None, None)
        .await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
}

async fn a_critical_bounce_rate_disables_the_project_until_an_owner_enables_it(engine: Engine) {
    let w = mail_world(engine, |c| {
        c.bounce_rate_critical = 0.4;
        c.security_min_messages = 2;
    })
    .await;
    let (app, p) = (&w.app, &w.project);
    let sk = &p.secret_key;
    w.sink.refuse_recipient("gone@example.org");
    // One delivered, then one bounced: at the bounce, 1 of 2 (50 %) is over the 40 %.
    for to in ["here@example.org", "gone@example.org"] {
        let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
        let id = message_ids(&expect_json(send(&w, &body).await, 200).await)[0].clone();
        let want = if to.starts_with("gone") {
            "BOUNCED"
        } else {
            "SENT"
        };
        wait_status(app, sk, &id, &[want], Duration::from_secs(15)).await;
    }
    let path = format!("/projects/{}/security", p.id);
    let s = expect_json(
        app.call_with(&p.owner, Method::GET, &path, None, None)
            .await,
        200,
    )
    .await;
    assert_eq!(s["disabled"], true, "{s}");
    assert!(
        s["disabledReason"]
            .as_str()
            .unwrap()
            .contains("Bounce rate"),
        "{s}"
    );
    // Writes are refused: with the key, and on the account routes.
    let res = app
        .post("/contacts", sk, &json!({"email": "new@example.org"}))
        .await;
    expect_error(res, 403, "PROJECT_DISABLED").await;
    let keys = format!("/users/@me/projects/{}/regenerate-keys", p.id);
    let res = app
        .call_with(&p.owner, Method::POST, &keys, None, Some(&json!({})))
        .await;
    expect_error(res, 403, "PROJECT_DISABLED").await;
    let settings = format!("/users/@me/projects/{}", p.id);
    let res = app
        .call_with(
            &p.owner,
            Method::PATCH,
            &settings,
            None,
            Some(&json!({"name": "x"})),
        )
        .await;
    expect_error(res, 403, "PROJECT_DISABLED").await;
    let limits = format!("/users/@me/projects/{}/billing-limits", p.id);
    let res = app
        .call_with(
            &p.owner,
            Method::PUT,
            &limits,
            None,
            Some(&json!({"inbound": 1})),
        )
        .await;
    expect_error(res, 403, "PROJECT_DISABLED").await;
    // Reads still work.
    expect_json(app.get("/contacts", sk).await, 200).await;
    // An admin cannot re-enable; the owner can.
    let enable = format!("/users/@me/projects/{}/enable", p.id);
    app.signup("admin-sec@example.com").await;
    let res = app
        .call_with(
            &p.owner,
            Method::POST,
            &format!("/projects/{}/members", p.id),
            None,
            Some(&json!({"email": "admin-sec@example.com", "role": "ADMIN"})),
        )
        .await;
    expect_error(res, 403, "PROJECT_DISABLED").await;
    let res = app
        .call_with(&p.owner, Method::POST, &enable, None, Some(&json!({})))
        .await;
    assert_eq!(expect_json(res, 200).await["enabled"], true);
    let res = app
        .post("/contacts", sk, &json!({"email": "new@example.org"}))
        .await;
    assert!(res.status().is_success(), "{}", res.status());
    let (admin, _) =
        crate::account_setup::login(app, "admin-sec@example.com", crate::account_setup::PASSWORD)
            .await;
    let res = app
        .call_with(
            &p.owner,
            Method::POST,
            &format!("/projects/{}/members", p.id),
            None,
            Some(&json!({"email": "admin-sec@example.com", "role": "ADMIN"})),
        )
        .await;
    expect_json(res, 201).await;
    let res = app
        .call_with(&admin, Method::POST, &enable, None, Some(&json!({})))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
}
