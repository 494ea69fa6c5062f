//! A NUL (U+0000) in any string the API takes is a 422 `invalid_characters` with the field's
//! path, the same on both engines, and nothing is written.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, mail_world};

both_engines!(
    a_nul_in_a_json_body_is_refused_and_nothing_is_written,
    a_nul_in_a_query_parameter_is_refused_on_every_route,
);

/// Asserts a 422 whose single error is `invalid_characters` on `field`.
async fn expect_nul_refused(res: reqwest::Response, field: &str, what: &str) {
    let body = expect_error(res, 422, "VALIDATION_ERROR").await;
    let errors = body["error"]["errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(errors.len(), 1, "{what}: {body}");
    assert_eq!(errors[0]["field"], field, "{what}: {body}");
    assert_eq!(errors[0]["code"], "invalid_characters", "{what}: {body}");
}

async fn a_nul_in_a_json_body_is_refused_and_nothing_is_written(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    let existing = app
        .create_contact(
            sk,
            json!({"email": "kept@example.com", "data": {"plan": "pro"}}),
        )
        .await;
    let contact_path = format!("/contacts/{}", existing["id"].as_str().unwrap());
    let from = format!("hello@{DOMAIN}");
    let template = |name: &str, subject: &str, body: &str| json!({"name": name, "subject": subject, "body": body, "type": "TRANSACTIONAL"});
    let send = |patch: Value| {
        let mut body = json!({"to": "ada@example.org", "from": from, "subject": "S", "body": "B"});
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases: Vec<(Method, &str, Value, &str)> = vec![
        (
            Method::POST,
            "/contacts",
            json!({"email": "a@example.com", "data": {"plan": "p\u{0}"}}),
            "data.plan",
        ),
        (
            Method::POST,
            "/contacts",
            json!({"email": "a@example.com", "data": {"k\u{0}": "v"}}),
            "data.k\\u0000",
        ),
        (
            Method::POST,
            "/contacts",
            json!({"email": "a@example.com", "data": {"tags": ["x", "y\u{0}"]}}),
            "data.tags.1",
        ),
        (
            Method::POST,
            "/contacts",
            json!({"email": "a\u{0}@example.com"}),
            "email",
        ),
        (
            Method::PATCH,
            &contact_path,
            json!({"data": {"plan": {"value": "\u{0}"}}}),
            "data.plan.value",
        ),
        (
            Method::POST,
            "/templates",
            template("n\u{0}", "s", "b"),
            "name",
        ),
        (
            Method::POST,
            "/templates",
            template("n", "s\u{0}", "b"),
            "subject",
        ),
        (
            Method::POST,
            "/templates",
            template("n", "s", "<p>\u{0}</p>"),
            "body",
        ),
        (
            Method::POST,
            "/v1/send",
            send(json!({"body": "B\u{0}"})),
            "body",
        ),
        (
            Method::POST,
            "/v1/send",
            send(json!({"subject": "S\u{0}"})),
            "subject",
        ),
        (
            Method::POST,
            "/v1/send",
            send(json!({"headers": {"X-Note": "a\u{0}b"}})),
            "headers.X-Note",
        ),
        (
            Method::POST,
            "/v1/send",
            send(json!({"data": {"plan": "\u{0}"}})),
            "data.plan",
        ),
        (
            Method::POST,
            "/v1/send",
            send(json!({"unknownExtra": ["\u{0}"]})),
            "unknownExtra.0",
        ),
        (
            Method::POST,
            "/contacts/lookup",
            json!({"emails": ["\u{0}@example.com"]}),
            "emails.0",
        ),
    ];
    for (method, path, body, field) in cases {
        let res = app.call(method.clone(), path, Some(sk), Some(&body)).await;
        expect_nul_refused(res, field, &format!("{method} {path} {body}")).await;
    }
    // The dashboard's own bodies go through the same extractor.
    let res = app
        .call_with(
            &w.project.owner,
            Method::POST,
            "/users/@me/projects",
            None,
            Some(&json!({"name": "x\u{0}"})),
        )
        .await;
    expect_nul_refused(res, "name", "create project").await;

    let contacts = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(contacts["total"], 1, "{contacts}");
    let kept = expect_json(app.get(&contact_path, sk).await, 200).await;
    assert_eq!(kept["data"], json!({"plan": "pro"}));
    let templates = expect_json(app.get("/templates", sk).await, 200).await;
    assert_eq!(templates["total"], 0, "{templates}");
    let emails = expect_json(app.get("/emails", sk).await, 200).await;
    assert_eq!(emails["total"], 0, "{emails}");
    assert_eq!(w.sink.attempts(), 0);
}

async fn a_nul_in_a_query_parameter_is_refused_on_every_route(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    let cases = [
        ("/contacts?search=a%00b", "search"),
        ("/contacts?limit=5&cursor=%00", "cursor"),
        ("/emails?source=api%00", "source"),
        ("/emails?status=%00SENT", "status"),
        ("/activity?type=domain%00", "type"),
        ("/templates?type=%00&search=x", "type"),
        ("/templates?search=%00", "search"),
        ("/contacts/fields?anything=%00", "anything"),
        ("/contacts?se%00arch=x", "se\\u0000arch"),
        // A route that reads no query at all still refuses one.
        ("/domains/project/any?x=%00", "x"),
        // A path segment that reaches the store as a field name.
        ("/contacts/fields/data.a%00b/values", "path"),
    ];
    for (path, field) in cases {
        expect_nul_refused(app.get(path, sk).await, field, path).await;
    }
    let res = app
        .call_with(
            &w.project.owner,
            Method::GET,
            "/users/@me?x=%00",
            None,
            None,
        )
        .await;
    expect_nul_refused(res, "x", "/users/@me").await;
    let res = app.call(Method::GET, "/health?probe=%00", None, None).await;
    expect_nul_refused(res, "probe", "/health").await;
    // A literal "%00" (percent-encoded percent) is ordinary text.
    let ok = expect_json(app.get("/contacts?search=%2500", sk).await, 200).await;
    assert_eq!(ok["total"], 0);
}
