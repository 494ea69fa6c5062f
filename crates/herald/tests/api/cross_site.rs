//! Cross-site writes with the session cookie (DECISIONS.md "Accounts"): refused by
//! `Sec-Fetch-Site` and `Origin`; requests with neither header pass; API keys are unaffected.

use reqwest::{Client, Method, RequestBuilder};
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_error, expect_json};

both_engines!(
    cookie_writes_from_another_site_are_refused,
    cookie_writes_from_the_public_origin_or_without_headers_pass,
    api_keys_and_reads_are_not_affected,
);

const PUBLIC: &str = "http://dash.example.com";

async fn app(engine: Engine) -> TestApp {
    engine.app_with(|c| c.public_url = PUBLIC.into()).await
}

fn create_project(app: &TestApp, client: &Client) -> RequestBuilder {
    client
        .request(Method::POST, app.url("/users/@me/projects"))
        .json(&json!({"name": "Shop"}))
}

async fn cookie_writes_from_another_site_are_refused(engine: Engine) {
    let app = app(engine).await;
    let client = app.signup("csrf@example.com").await;
    for (name, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "https://evil.example"),
        ("origin", "https://dash.example.com"),
        ("origin", "null"),
    ] {
        let res = create_project(&app, &client)
            .header(name, value)
            .send()
            .await
            .unwrap();
        expect_error(res, 403, "FORBIDDEN").await;
    }
    // Sec-Fetch-Site same-origin does not excuse a foreign Origin.
    let res = create_project(&app, &client)
        .header("sec-fetch-site", "same-origin")
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "FORBIDDEN").await;
    // DELETE and PATCH too: logout is a write.
    let res = client
        .request(Method::POST, app.url("/auth/logout"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "FORBIDDEN").await;
    // Nothing was created.
    let list = expect_json(
        client
            .get(app.url("/users/@me/projects"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(list.as_array().map(Vec::len), Some(0), "{list}");
}

async fn cookie_writes_from_the_public_origin_or_without_headers_pass(engine: Engine) {
    let app = app(engine).await;
    let client = app.signup("same@example.com").await;
    let res = create_project(&app, &client).send().await.unwrap();
    expect_json(res, 201).await;
    let res = create_project(&app, &client)
        .header("sec-fetch-site", "same-origin")
        .header("origin", "HTTP://dash.example.com:80")
        .send()
        .await
        .unwrap();
    expect_json(res, 201).await;
    let res = create_project(&app, &client)
        .header("sec-fetch-site", "none")
        .send()
        .await
        .unwrap();
    expect_json(res, 201).await;
}

async fn api_keys_and_reads_are_not_affected(engine: Engine) {
    let app = app(engine).await;
    let p = app.project().await;
    let res = app
        .client
        .post(app.url("/contacts"))
        .bearer_auth(&p.secret_key)
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"email": "a@example.com"}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let res = p
        .owner
        .get(app.url("/contacts"))
        .header("x-project-id", &p.id)
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    expect_json(res, 200).await;
}
