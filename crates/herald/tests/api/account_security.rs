//! The security report: bounce and complaint rates over 7 days and all time, with the
//! configured thresholds and levels.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, send, wait_status};

both_engines!(security_reports_rates_levels_and_thresholds);

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
