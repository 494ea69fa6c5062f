//! Rate limits of the unauthenticated account routes: per client address and route, and the
//! failed-sign-in slow-down per account and client address, both 429 with `Retry-After`.

use serde_json::json;

use crate::account_setup::{PASSWORD, login, post_json};
use crate::both_engines;
use crate::helpers::{Engine, cookie_client, expect_error, expect_json};

both_engines!(
    unauthenticated_routes_are_limited_per_client_and_route,
    a_trusted_proxy_names_the_client,
    five_failed_sign_ins_slow_the_account_down,
    failed_sign_ins_from_one_address_do_not_lock_the_owner_out,
);

async fn unauthenticated_routes_are_limited_per_client_and_route(engine: Engine) {
    let app = engine.app_with(|c| c.auth_rate_limit_per_minute = 3).await;
    let c = cookie_client();
    let body = json!({"email": "someone@example.com"});
    for _ in 0..3 {
        expect_json(
            post_json(&app, &c, "/auth/request-password-reset", body.clone()).await,
            200,
        )
        .await;
    }
    let res = post_json(&app, &c, "/auth/request-password-reset", body.clone()).await;
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    // Another route has its own budget.
    let res = post_json(&app, &c, "/auth/verify-email", json!({"token": "00"})).await;
    expect_error(res, 400, "INVALID_TOKEN").await;
    // The next minute is a new window.
    app.clock.advance(std::time::Duration::from_secs(61));
    expect_json(
        post_json(&app, &c, "/auth/request-password-reset", body).await,
        200,
    )
    .await;
}

async fn a_trusted_proxy_names_the_client(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.auth_rate_limit_per_minute = 1;
            c.trusted_proxies = vec!["127.0.0.1".into()];
        })
        .await;
    let send = |ip: &'static str| {
        app.client
            .post(app.url("/auth/request-verification"))
            .header("x-forwarded-for", ip)
            .json(&json!({"email": "a@example.com"}))
            .send()
    };
    assert_eq!(send("203.0.113.1").await.unwrap().status(), 200);
    assert_eq!(
        send("203.0.113.2").await.unwrap().status(),
        200,
        "another client"
    );
    assert_eq!(send("203.0.113.1").await.unwrap().status(), 429);
}

async fn five_failed_sign_ins_slow_the_account_down(engine: Engine) {
    let app = engine.app().await;
    app.signup("target@example.com").await;
    for _ in 0..5 {
        let (_, res) = login(&app, "target@example.com", "wrong password").await;
        expect_error(res, 401, "INVALID_CREDENTIALS").await;
    }
    // Now even the right password waits.
    let (_, res) = login(&app, "target@example.com", PASSWORD).await;
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=900).contains(&retry), "{retry}");
    expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    // Other accounts are not affected.
    app.signup("bystander@example.com").await;
    let (_, res) = login(&app, "bystander@example.com", PASSWORD).await;
    expect_json(res, 200).await;
    // After the window, the right password works and resets the count.
    app.clock
        .advance(std::time::Duration::from_secs(15 * 60 + 1));
    let (_, res) = login(&app, "target@example.com", PASSWORD).await;
    expect_json(res, 200).await;
    let (_, res) = login(&app, "target@example.com", "wrong password").await;
    expect_error(res, 401, "INVALID_CREDENTIALS").await;
}

/// Wrong passwords from one client address slow down that address only: the owner, elsewhere,
/// still signs in. A success resets its own address's count, not another's.
async fn failed_sign_ins_from_one_address_do_not_lock_the_owner_out(engine: Engine) {
    let app = engine
        .app_with(|c| c.trusted_proxies = vec!["127.0.0.1".into()])
        .await;
    app.signup("owner@example.com").await;
    let login_from = |ip: &'static str, password: &'static str| {
        app.client
            .post(app.url("/auth/login"))
            .header("x-forwarded-for", ip)
            .json(&json!({"email": "owner@example.com", "password": password}))
            .send()
    };
    let (attacker, owner) = ("203.0.113.66", "198.51.100.7");
    for _ in 0..5 {
        let res = login_from(attacker, "wrong password").await.unwrap();
        expect_error(res, 401, "INVALID_CREDENTIALS").await;
    }
    let res = login_from(attacker, PASSWORD).await.unwrap();
    assert!(res.headers().contains_key("retry-after"));
    expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    expect_json(login_from(owner, PASSWORD).await.unwrap(), 200).await;
    // The owner's success does not unlock the attacker's address.
    let res = login_from(attacker, PASSWORD).await.unwrap();
    expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    // A success resets its own address's count: four failures, a success, four more, and the
    // right password still works.
    for round in 0..2 {
        for _ in 0..4 {
            let res = login_from(owner, "wrong password").await.unwrap();
            expect_error(res, 401, "INVALID_CREDENTIALS").await;
        }
        let res = login_from(owner, PASSWORD).await.unwrap();
        assert_eq!(res.status(), 200, "round {round}");
    }
}
