//! Payments through Stripe (docs/accounts.md "Payments"), on both engines, against a loopback
//! stand-in for Stripe's API (`stand_in.rs`): checkout (the customer created once), billing
//! portal, invoices, the signed webhook (links the subscription, refuses forged, stale and
//! missing signatures, applies a replay once), Stripe failures as 502, roles and disabled
//! projects, and 501 on a server with no provider.

pub mod stand_in;

use herald_core::clock::Clock;
use herald_core::payments::stripe_signature;
use reqwest::{Client, Method, Response};
use serde_json::{Value, json};

use self::stand_in::StripeStandIn;
use crate::both_engines;
use crate::helpers::{Engine, TestApp, TestProject, expect_error, expect_json};

both_engines!(
    checkout_creates_the_customer_once_and_answers_the_session_url,
    the_portal_needs_a_checkout_first,
    invoices_are_mapped_from_stripe,
    a_signed_webhook_links_the_subscription_and_a_replay_changes_nothing,
    a_webhook_for_a_project_without_checkout_links_its_customer,
    forged_stale_and_missing_signatures_are_refused_and_change_nothing,
    stripe_failures_answer_502_and_store_nothing,
    a_stripe_that_does_not_answer_within_10_s_is_a_502,
    members_are_refused_and_a_disabled_project_refuses_payment_writes,
    without_a_provider_payments_answer_501,
);

const WEBHOOK_SECRET: &str = "whsec_test_standin";
const SECRET_KEY: &str = "sk_test_standin";
const PRICE: &str = "price_test_pro";

/// Turns payments on with Stripe's API at `api_base` (a stand-in).
pub fn use_stripe(c: &mut herald::Config, api_base: &str) {
    c.stripe_secret_key = Some(SECRET_KEY.into());
    c.stripe_webhook_secret = Some(WEBHOOK_SECRET.into());
    c.stripe_price_id = Some(PRICE.into());
    c.stripe_api_base = api_base.to_owned();
}

async fn stripe_app(engine: Engine, api_base: &str) -> TestApp {
    engine.app_with(|c| use_stripe(c, api_base)).await
}

async fn account_call(
    app: &TestApp,
    client: &Client,
    p: &TestProject,
    method: Method,
    what: &str,
) -> Response {
    let path = format!("/users/@me/projects/{}/{what}", p.id);
    let body = (method == Method::POST).then(|| json!({}));
    app.call_with(client, method, &path, None, body.as_ref())
        .await
}

async fn checkout(app: &TestApp, p: &TestProject) -> Response {
    account_call(app, &p.owner, p, Method::POST, "checkout").await
}

async fn subscription(app: &TestApp, p: &TestProject) -> Value {
    let c = expect_json(
        account_call(app, &p.owner, p, Method::GET, "billing-consumption").await,
        200,
    )
    .await;
    c["subscription"].clone()
}

/// Posts `event` signed at `t` (unix seconds) with `secret`.
async fn webhook_signed(app: &TestApp, event: &Value, t: i64, secret: &str) -> Response {
    let body = event.to_string();
    let sig = stripe_signature(secret.as_bytes(), t, body.as_bytes());
    app.client
        .post(app.url("/webhooks/incoming/payments"))
        .header("Stripe-Signature", sig)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request")
}

async fn webhook(app: &TestApp, event: &Value) -> Value {
    let now = app.clock.now() / 1000;
    expect_json(webhook_signed(app, event, now, WEBHOOK_SECRET).await, 200).await
}

fn event(id: &str, kind: &str, created: i64, object: Value) -> Value {
    json!({"id": id, "object": "event", "type": kind, "created": created,
        "data": {"object": object}})
}

async fn checkout_creates_the_customer_once_and_answers_the_session_url(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    for _ in 0..2 {
        let s = expect_json(checkout(&app, &p).await, 201).await;
        assert_eq!(
            s,
            json!({"url": "https://checkout.stripe.test/c/pay/cs_test_1"})
        );
    }
    let customers = stripe.requests_to("/v1/customers");
    assert_eq!(customers.len(), 1, "the customer is created once");
    let c = &customers[0];
    assert_eq!(c.field("metadata[project_id]"), Some(p.id.as_str()));
    assert_eq!(
        c.idempotency_key.as_deref(),
        Some(format!("herald-customer-{}", p.id).as_str())
    );
    let sessions = stripe.requests_to("/v1/checkout/sessions");
    assert_eq!(sessions.len(), 2);
    for s in &sessions {
        let bearer = format!("Bearer {SECRET_KEY}");
        assert_eq!(s.authorization.as_deref(), Some(bearer.as_str()));
        assert!(s.idempotency_key.as_deref().is_some_and(|k| !k.is_empty()));
        assert_eq!(s.field("mode"), Some("subscription"));
        assert_eq!(s.field("customer"), Some("cus_test_1"));
        assert_eq!(s.field("line_items[0][price]"), Some(PRICE));
        assert_eq!(s.field("line_items[0][quantity]"), Some("1"));
        assert_eq!(s.field("client_reference_id"), Some(p.id.as_str()));
        assert_eq!(s.field("metadata[project_id]"), Some(p.id.as_str()));
        for url in ["success_url", "cancel_url"] {
            let u = s.field(url).unwrap();
            assert!(u.starts_with(&app.config.public_url), "{u}");
            assert!(u.contains(&p.id), "{u}");
        }
    }
    assert_ne!(
        sessions[0].idempotency_key, sessions[1].idempotency_key,
        "each checkout is a new session"
    );
    let sub = subscription(&app, &p).await;
    assert_eq!(sub["customerId"], "cus_test_1", "{sub}");
    assert_eq!(sub["status"], Value::Null, "{sub}");
}

async fn the_portal_needs_a_checkout_first(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    assert_eq!(subscription(&app, &p).await, Value::Null);
    let res = account_call(&app, &p.owner, &p, Method::POST, "billing-portal").await;
    expect_error(res, 409, "NO_BILLING_CUSTOMER").await;
    let none = account_call(&app, &p.owner, &p, Method::GET, "billing-invoices").await;
    assert_eq!(expect_json(none, 200).await, json!([]));
    assert!(stripe.requests().is_empty(), "nothing asked of Stripe");
    expect_json(checkout(&app, &p).await, 201).await;
    let res = account_call(&app, &p.owner, &p, Method::POST, "billing-portal").await;
    assert_eq!(
        expect_json(res, 200).await,
        json!({"url": "https://billing.stripe.test/p/session/bps_test_1"})
    );
    let portal = stripe.requests_to("/v1/billing_portal/sessions");
    assert_eq!(portal.len(), 1);
    assert_eq!(portal[0].field("customer"), Some("cus_test_1"));
    assert!(portal[0].idempotency_key.is_some());
    let back = portal[0].field("return_url").unwrap();
    assert!(back.starts_with(&app.config.public_url), "{back}");
}

async fn invoices_are_mapped_from_stripe(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    expect_json(checkout(&app, &p).await, 201).await;
    let res = account_call(&app, &p.owner, &p, Method::GET, "billing-invoices?limit=5").await;
    let list = expect_json(res, 200).await;
    assert_eq!(
        list,
        json!([
            {"id": "in_test_2", "number": "HRLD-0002", "status": "open", "amountDue": 2900,
             "amountPaid": 0, "currency": "usd", "createdAt": "2025-11-25T00:00:00.000Z",
             "hostedInvoiceUrl": "https://invoice.stripe.test/i/in_test_2",
             "pdfUrl": "https://pay.stripe.test/invoice/in_test_2/pdf"},
            {"id": "in_test_1", "number": null, "status": "paid", "amountDue": 2900,
             "amountPaid": 2900, "currency": "usd", "createdAt": "2025-11-01T00:00:00.000Z",
             "hostedInvoiceUrl": null, "pdfUrl": null}
        ])
    );
    let asked = stripe.requests_to("/v1/invoices");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].query, "customer=cus_test_1&limit=5");
    let bearer = format!("Bearer {SECRET_KEY}");
    assert_eq!(asked[0].authorization.as_deref(), Some(bearer.as_str()));
    let res = account_call(&app, &p.owner, &p, Method::GET, "billing-invoices?limit=0").await;
    expect_error(res, 422, "VALIDATION_ERROR").await;
}

async fn a_signed_webhook_links_the_subscription_and_a_replay_changes_nothing(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    expect_json(checkout(&app, &p).await, 201).await;
    let now = app.clock.now() / 1000;
    let completed = event(
        "evt_1",
        "checkout.session.completed",
        now,
        json!({"id": "cs_test_1", "object": "checkout.session", "client_reference_id": p.id,
            "customer": "cus_test_1", "subscription": "sub_1", "payment_status": "paid",
            "metadata": {"project_id": p.id}}),
    );
    assert_eq!(
        webhook(&app, &completed).await,
        json!({"received": true, "outcome": "applied"})
    );
    let sub = subscription(&app, &p).await;
    assert_eq!(sub["customerId"], "cus_test_1", "{sub}");
    assert_eq!(sub["subscriptionId"], "sub_1", "{sub}");
    assert_eq!(sub["status"], "active", "{sub}");
    let updated = |id: &str, status: &str, created: i64| {
        event(
            id,
            "customer.subscription.updated",
            created,
            json!({"id": "sub_1", "object": "subscription", "customer": "cus_test_1",
                "status": status}),
        )
    };
    let res = webhook(&app, &updated("evt_2", "past_due", now + 10)).await;
    assert_eq!(res["outcome"], "applied");
    assert_eq!(subscription(&app, &p).await["status"], "past_due");
    // The same event id again (even with other content) changes nothing.
    let res = webhook(&app, &updated("evt_2", "canceled", now + 20)).await;
    assert_eq!(res["outcome"], "replayed");
    assert_eq!(subscription(&app, &p).await["status"], "past_due");
    // An older event delivered late does not overwrite a newer state.
    webhook(&app, &updated("evt_3", "active", now + 5)).await;
    assert_eq!(subscription(&app, &p).await["status"], "past_due");
    let deleted = event(
        "evt_4",
        "customer.subscription.deleted",
        now + 30,
        json!({"id": "sub_1", "object": "subscription", "customer": "cus_test_1",
            "status": "canceled"}),
    );
    webhook(&app, &deleted).await;
    assert_eq!(subscription(&app, &p).await["status"], "canceled");
    // Types Herald does not act on are acknowledged and change nothing.
    let other = event("evt_5", "charge.refunded", now + 40, json!({"id": "ch_1"}));
    assert_eq!(webhook(&app, &other).await["outcome"], "ignored");
    let sub = subscription(&app, &p).await;
    assert_eq!(sub["status"], "canceled", "{sub}");
    assert_eq!(sub["subscriptionId"], "sub_1", "{sub}");
}

async fn a_webhook_for_a_project_without_checkout_links_its_customer(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    let now = app.clock.now() / 1000;
    let created = event(
        "evt_10",
        "customer.subscription.created",
        now,
        json!({"id": "sub_9", "customer": {"id": "cus_elsewhere"}, "status": "trialing",
            "metadata": {"project_id": p.id}}),
    );
    webhook(&app, &created).await;
    let sub = subscription(&app, &p).await;
    assert_eq!(sub["customerId"], "cus_elsewhere", "{sub}");
    assert_eq!(sub["status"], "trialing", "{sub}");
    let failed = event(
        "evt_11",
        "invoice.payment_failed",
        now + 1,
        json!({"id": "in_1", "customer": "cus_elsewhere", "subscription": "sub_9"}),
    );
    webhook(&app, &failed).await;
    assert_eq!(subscription(&app, &p).await["status"], "past_due");
    // An event naming no project of this server is acknowledged (Stripe stops retrying).
    let stranger = event(
        "evt_12",
        "invoice.payment_failed",
        now + 2,
        json!({"id": "in_2", "customer": "cus_unknown"}),
    );
    assert_eq!(webhook(&app, &stranger).await["outcome"], "unmatched");
    assert!(
        stripe.requests().is_empty(),
        "webhooks ask nothing of Stripe"
    );
}

async fn forged_stale_and_missing_signatures_are_refused_and_change_nothing(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    let now = app.clock.now() / 1000;
    let completed = event(
        "evt_20",
        "checkout.session.completed",
        now,
        json!({"client_reference_id": p.id, "customer": "cus_x", "subscription": "sub_x",
            "payment_status": "paid"}),
    );
    let forged = webhook_signed(&app, &completed, now, "whsec_guessed").await;
    let e = expect_error(forged, 400, "INVALID_SIGNATURE").await;
    assert!(
        e["message"].as_str().unwrap().contains("does not match"),
        "{e}"
    );
    let stale = webhook_signed(&app, &completed, now - 301, WEBHOOK_SECRET).await;
    let e = expect_error(stale, 400, "INVALID_SIGNATURE").await;
    assert!(
        e["message"].as_str().unwrap().contains("300 seconds"),
        "{e}"
    );
    let missing = app
        .client
        .post(app.url("/webhooks/incoming/payments"))
        .body(completed.to_string())
        .send()
        .await
        .unwrap();
    let e = expect_error(missing, 400, "INVALID_SIGNATURE").await;
    assert!(e["message"].as_str().unwrap().contains("missing"), "{e}");
    let malformed = app
        .client
        .post(app.url("/webhooks/incoming/payments"))
        .header("Stripe-Signature", "v1=nothex")
        .body(completed.to_string())
        .send()
        .await
        .unwrap();
    expect_error(malformed, 400, "INVALID_SIGNATURE").await;
    // A body that is signed but is no event.
    let body = "not an event";
    let sig = stripe_signature(WEBHOOK_SECRET.as_bytes(), now, body.as_bytes());
    let res = app
        .client
        .post(app.url("/webhooks/incoming/payments"))
        .header("Stripe-Signature", sig)
        .body(body)
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "BAD_REQUEST").await;
    assert_eq!(subscription(&app, &p).await, Value::Null, "nothing changed");
    // The genuine one is still applied afterwards: the refusals recorded no event id.
    assert_eq!(webhook(&app, &completed).await["outcome"], "applied");
    assert_eq!(subscription(&app, &p).await["subscriptionId"], "sub_x");
}

async fn stripe_failures_answer_502_and_store_nothing(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    stripe.fail(true);
    let e = expect_error(checkout(&app, &p).await, 502, "PAYMENT_PROVIDER_ERROR").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Something went wrong on Stripe's end."),
        "{e}"
    );
    assert_eq!(
        subscription(&app, &p).await,
        Value::Null,
        "no customer stored"
    );
    stripe.fail(false);
    expect_json(checkout(&app, &p).await, 201).await;
    stripe.fail(true);
    for (m, what) in [
        (Method::POST, "billing-portal"),
        (Method::GET, "billing-invoices"),
    ] {
        let res = account_call(&app, &p.owner, &p, m, what).await;
        expect_error(res, 502, "PAYMENT_PROVIDER_ERROR").await;
    }
    // Stripe unreachable (nothing listens on the port): 502 as well.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let app = stripe_app(engine, &closed).await;
    let p = app.project().await;
    let e = expect_error(checkout(&app, &p).await, 502, "PAYMENT_PROVIDER_ERROR").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{e}"
    );
}

async fn a_stripe_that_does_not_answer_within_10_s_is_a_502(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    stripe.hang(true);
    let started = std::time::Instant::now();
    let e = expect_error(checkout(&app, &p).await, 502, "PAYMENT_PROVIDER_ERROR").await;
    assert!(
        e["message"].as_str().unwrap().contains("within 10 s"),
        "{e}"
    );
    let waited = started.elapsed().as_secs_f64();
    assert!((9.5..12.0).contains(&waited), "{waited} s");
}

async fn members_are_refused_and_a_disabled_project_refuses_payment_writes(engine: Engine) {
    let stripe = StripeStandIn::start().await;
    let app = stripe_app(engine, &stripe.base).await;
    let p = app.project().await;
    let email = format!("member-{}@example.com", uuid::Uuid::new_v4().simple());
    let member = app.signup(&email).await;
    let path = format!("/projects/{}/members", p.id);
    let body = json!({"email": email, "role": "MEMBER"});
    let res = app
        .call_with(&p.owner, Method::POST, &path, None, Some(&body))
        .await;
    expect_json(res, 201).await;
    for (m, what) in [
        (Method::POST, "checkout"),
        (Method::POST, "billing-portal"),
        (Method::GET, "billing-invoices"),
    ] {
        let res = account_call(&app, &member, &p, m, what).await;
        expect_error(res, 403, "FORBIDDEN").await;
    }
    let id = herald_core::ids::parse_id(&p.id).unwrap();
    let mut tx = app.store.begin().await.unwrap();
    let now = app.clock.now();
    let disabled = herald_store::security::disable_if_critical(&mut tx, id, 0, now, |_| {
        Some("Disabled by the test".into())
    })
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(disabled);
    for what in ["checkout", "billing-portal"] {
        let res = account_call(&app, &p.owner, &p, Method::POST, what).await;
        expect_error(res, 403, "PROJECT_DISABLED").await;
    }
    // Reading invoices is not a write.
    let res = account_call(&app, &p.owner, &p, Method::GET, "billing-invoices").await;
    expect_json(res, 200).await;
    assert!(stripe.requests().is_empty());
}

async fn without_a_provider_payments_answer_501(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for (m, what) in [
        (Method::GET, "billing-invoices"),
        (Method::POST, "checkout"),
        (Method::POST, "billing-portal"),
    ] {
        let res = account_call(&app, &p.owner, &p, m, what).await;
        let e = expect_error(res, 501, "NOT_IMPLEMENTED").await;
        let hint = e["error"]["suggestion"].as_str().unwrap();
        assert!(hint.contains("HERALD_STRIPE_SECRET_KEY"), "{e}");
    }
    let res = webhook_signed(&app, &json!({}), app.clock.now() / 1000, WEBHOOK_SECRET).await;
    expect_error(res, 501, "NOT_IMPLEMENTED").await;
    // Limits and consumption work without a provider.
    assert_eq!(subscription(&app, &p).await, Value::Null);
}

#[tokio::test]
async fn an_incomplete_stripe_setup_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = herald::Config {
        listen: "127.0.0.1:0".into(),
        data_dir: dir.path().to_path_buf(),
        secret: Some("test-secret-test-secret-test-secret-0123".into()),
        stripe_secret_key: Some(SECRET_KEY.into()),
        stripe_price_id: Some(PRICE.into()),
        ..herald::Config::default()
    }
    .resolved();
    let err = herald::Application::build(config)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("HERALD_STRIPE_WEBHOOK_SECRET"), "{err}");
}
