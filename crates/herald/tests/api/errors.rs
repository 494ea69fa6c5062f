//! The cross-cutting behaviour of every endpoint: the error envelope, request ids, body and
//! content-type checks, authentication failures, rate limiting, health and the OpenAPI document.

use std::time::Duration;

use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_error, expect_json};

both_engines!(
    an_unknown_route_is_a_not_found_envelope,
    a_wrong_method_is_405,
    malformed_json_is_a_bad_request,
    a_body_that_is_not_json_is_415,
    a_body_over_the_limit_is_413,
    no_credentials_is_missing_auth,
    a_garbage_bearer_is_an_invalid_api_key,
    the_top_level_message_repeats_the_error_message,
    every_response_has_a_unique_request_id,
    the_rate_limit_refuses_the_request_past_the_limit,
    the_rate_limit_is_per_project,
    successes_carry_rate_limit_headers,
    health_answers_ok,
    openapi_documents_every_route,
);

fn header(res: &Response, name: &str) -> Option<String> {
    res.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn header_u64(res: &Response, name: &str) -> u64 {
    header(res, name)
        .unwrap_or_else(|| panic!("missing header {name}"))
        .parse()
        .unwrap_or_else(|_| panic!("header {name} is not a number"))
}

async fn an_unknown_route_is_a_not_found_envelope(engine: Engine) {
    let app = engine.app().await;
    let res = app.call(Method::GET, "/no/such/route", None, None).await;
    let id = header(&res, "x-request-id").unwrap();
    let err = expect_error(res, 404, "NOT_FOUND").await;
    assert_eq!(err["error"]["requestId"], id.as_str());
    // Also with valid credentials: the route does not exist either way.
    let p = app.project().await;
    expect_error(
        app.get("/nothing-here", &p.secret_key).await,
        404,
        "NOT_FOUND",
    )
    .await;
}

async fn a_wrong_method_is_405(engine: Engine) {
    let app = engine.app().await;
    let res = app.call(Method::DELETE, "/health", None, None).await;
    expect_error(res, 405, "METHOD_NOT_ALLOWED").await;
}

async fn malformed_json_is_a_bad_request(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for body in ["{\"email\": ", "not json", "[1, 2]"] {
        let res = app
            .client
            .post(app.url("/contacts"))
            .bearer_auth(&p.secret_key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        expect_error(res, 400, "BAD_REQUEST").await;
    }
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 0);
}

async fn a_body_that_is_not_json_is_415(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let res = app
        .client
        .post(app.url("/contacts"))
        .bearer_auth(&p.secret_key)
        .header("content-type", "text/plain")
        .body(json!({"email": "plain@example.com"}).to_string())
        .send()
        .await
        .unwrap();
    let err = expect_error(res, 415, "BAD_REQUEST").await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("application/json"),
        "{err}"
    );
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 0);
}

async fn a_body_over_the_limit_is_413(engine: Engine) {
    let app = engine.app_with(|c| c.max_body_bytes = 1024).await;
    let p = app.project().await;
    let body = json!({"email": "big@example.com", "data": {"blob": "x".repeat(4096)}});
    assert!(body.to_string().len() > 4000);
    let err = expect_error(
        app.post("/contacts", &p.secret_key, &body).await,
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    assert_eq!(err["message"], err["error"]["message"]);
    // A body under the limit is fine.
    app.create_contact(
        &p.secret_key,
        json!({"email": "small@example.com", "data": {"blob": "x"}}),
    )
    .await;
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 1, "the large body was not stored");
}

async fn no_credentials_is_missing_auth(engine: Engine) {
    let app = engine.app().await;
    let err = expect_error(
        app.call(Method::GET, "/contacts", None, None).await,
        401,
        "MISSING_AUTH",
    )
    .await;
    assert!(err["error"]["suggestion"].as_str().is_some(), "{err}");
    let res = app
        .call(
            Method::POST,
            "/contacts",
            None,
            Some(&json!({"email": "a@example.com"})),
        )
        .await;
    expect_error(res, 401, "MISSING_AUTH").await;
}

async fn a_garbage_bearer_is_an_invalid_api_key(engine: Engine) {
    let app = engine.app().await;
    expect_error(
        app.get("/contacts", "garbage").await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let unknown_secret = format!("sk_{}", "0".repeat(48));
    expect_error(
        app.get("/contacts", &unknown_secret).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let unknown_public = format!("pk_{}", "0".repeat(48));
    expect_error(
        app.get("/contacts", &unknown_public).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let res = app
        .client
        .get(app.url("/contacts"))
        .header("authorization", "Basic Zm9vOmJhcg==")
        .send()
        .await
        .unwrap();
    expect_error(res, 401, "INVALID_API_KEY").await;
}

async fn the_top_level_message_repeats_the_error_message(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let errors = [
        expect_error(
            app.call(Method::GET, "/contacts", None, None).await,
            401,
            "MISSING_AUTH",
        )
        .await,
        expect_error(app.get("/nope", &p.secret_key).await, 404, "NOT_FOUND").await,
        expect_error(
            app.post("/contacts", &p.secret_key, &json!({"email": "bad"}))
                .await,
            422,
            "VALIDATION_ERROR",
        )
        .await,
    ];
    for err in errors {
        let message = err["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty(), "{err}");
        assert_eq!(err["message"], message, "{err}");
    }
}

async fn every_response_has_a_unique_request_id(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let res = app.call(Method::GET, "/health", None, None).await;
        assert_eq!(res.status(), 200);
        ids.push(header(&res, "x-request-id").expect("X-Request-Id on a success"));
    }
    let res = app.get("/contacts", &p.secret_key).await;
    assert_eq!(res.status(), 200);
    ids.push(header(&res, "x-request-id").expect("X-Request-Id on an authenticated success"));
    let res = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "id@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    ids.push(header(&res, "x-request-id").expect("X-Request-Id on a create"));
    assert!(ids.iter().all(|id| !id.trim().is_empty()), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "request ids repeat: {ids:?}");
}

/// Moves the server's clock to just after the start of a minute, so that a few requests fall
/// in one rate-limit window (no waiting for a real minute boundary).
fn at_the_start_of_a_minute(app: &TestApp) {
    let now = herald_core::clock::Clock::now(app.clock.as_ref());
    app.clock.set(now - now % 60_000 + 60_000 + 1_000);
}

async fn the_rate_limit_refuses_the_request_past_the_limit(engine: Engine) {
    let app = engine.app_with(|c| c.rate_limit_per_minute = 3).await;
    let p = app.project().await;
    at_the_start_of_a_minute(&app);
    for remaining in [2, 1, 0] {
        let res = app.get("/contacts", &p.secret_key).await;
        assert_eq!(header_u64(&res, "ratelimit-remaining"), remaining);
        expect_json(res, 200).await;
    }
    let res = app.get("/contacts", &p.secret_key).await;
    let retry_after = header_u64(&res, "retry-after");
    assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
    assert_eq!(header_u64(&res, "ratelimit-limit"), 3);
    assert_eq!(header_u64(&res, "ratelimit-remaining"), 0);
    let reset = header_u64(&res, "ratelimit-reset");
    assert!((1..=60).contains(&reset), "RateLimit-Reset {reset}");
    let err = expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    assert!(
        err["error"]["message"].as_str().unwrap().contains('3'),
        "{err}"
    );
    // Writes are limited too.
    let res = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "late@example.com"}),
        )
        .await;
    expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    // The next window, on the server's clock, takes requests again.
    app.clock.advance(Duration::from_secs(60));
    expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
}

async fn the_rate_limit_is_per_project(engine: Engine) {
    let app = engine.app_with(|c| c.rate_limit_per_minute = 3).await;
    let a = app.project().await;
    let b = app.project().await;
    at_the_start_of_a_minute(&app);
    for _ in 0..3 {
        expect_json(app.get("/contacts", &a.secret_key).await, 200).await;
    }
    expect_error(
        app.get("/contacts", &a.secret_key).await,
        429,
        "RATE_LIMIT_EXCEEDED",
    )
    .await;
    let res = app.get("/contacts", &b.secret_key).await;
    assert_eq!(
        header_u64(&res, "ratelimit-remaining"),
        2,
        "B has its own window"
    );
    expect_json(res, 200).await;
    // The session of B's owner on B's project shares B's budget, not A's.
    let res = b
        .owner
        .get(app.url("/contacts"))
        .header("x-project-id", &b.id)
        .send()
        .await
        .unwrap();
    assert_eq!(header_u64(&res, "ratelimit-remaining"), 1);
    expect_json(res, 200).await;
}

async fn successes_carry_rate_limit_headers(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let res = app.get("/contacts", &p.secret_key).await;
    assert_eq!(app.config.rate_limit_per_minute, 1000, "the default limit");
    assert_eq!(header_u64(&res, "ratelimit-limit"), 1000);
    let remaining = header_u64(&res, "ratelimit-remaining");
    assert!(remaining < 1000, "{remaining}");
    let reset = header_u64(&res, "ratelimit-reset");
    assert!((1..=60).contains(&reset), "{reset}");
    assert!(header(&res, "retry-after").is_none());
    expect_json(res, 200).await;
    let res = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "h@example.com"}),
        )
        .await;
    assert!(header(&res, "ratelimit-remaining").is_some());
    expect_json(res, 201).await;
}

async fn health_answers_ok(engine: Engine) {
    let app = engine.app().await;
    let res = app.call(Method::GET, "/health", None, None).await;
    assert!(
        header(&res, "content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let body = expect_json(res, 200).await;
    assert_eq!(body["status"], "ok", "{body}");
}

async fn openapi_documents_every_route(engine: Engine) {
    let app = engine.app().await;
    let doc = expect_json(
        app.call(Method::GET, "/openapi.json", None, None).await,
        200,
    )
    .await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().expect("paths");
    let expected: [(&str, &[&str]); 17] = [
        ("/health", &["get"]),
        ("/auth/signup", &["post"]),
        ("/auth/login", &["post"]),
        ("/auth/logout", &["get"]),
        ("/users/@me", &["get"]),
        ("/users/@me/projects", &["get", "post"]),
        ("/users/@me/projects/{id}", &["patch", "delete"]),
        ("/users/@me/projects/{id}/regenerate-keys", &["post"]),
        ("/config", &["get"]),
        ("/contacts", &["get", "post"]),
        ("/contacts/{id}", &["get", "patch", "delete"]),
        ("/contacts/lookup", &["post"]),
        ("/contacts/fields", &["get"]),
        ("/contacts/fields/{field}/values", &["get"]),
        ("/contacts/fields/{field}/usage", &["get"]),
        ("/contacts/fields/{field}", &["delete"]),
        ("/events/contact/{contactId}", &["get"]),
    ];
    let mut missing = Vec::new();
    for (path, methods) in expected {
        for m in methods {
            if paths.get(path).and_then(|p: &Value| p.get(*m)).is_none() {
                missing.push(format!("{} {path}", m.to_uppercase()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not documented: {missing:?}; documented: {:?}",
        paths.keys().collect::<Vec<_>>()
    );
    assert!(
        doc["info"]["version"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
}
