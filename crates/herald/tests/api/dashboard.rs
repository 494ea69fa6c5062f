//! The dashboard (`/app`, crates/web) over HTTP on both engines: sign-in and the redirect back,
//! each page's main path, form errors re-rendered beside their fields, the 404 of a foreign
//! project, the security headers, escaping, and the cross-site rule on its forms.

use reqwest::redirect::Policy;
use reqwest::{Client, Response};

use crate::helpers::{TestApp, TestProject};

mod account;
mod auth;
mod campaigns;
mod contact;
mod contacts;
mod jobs;
mod pages;
mod segments;
mod settings;
mod templates;

pub const PASSWORD: &str = "correct horse battery";

/// A client that keeps cookies and does not follow redirects (so tests see each 303).
pub fn browser() -> Client {
    Client::builder()
        .cookie_store(true)
        .redirect(Policy::none())
        .build()
        .expect("client")
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub fn encode(pairs: &[(&str, &str)]) -> String {
    fn esc(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_owned(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

pub async fn get(app: &TestApp, client: &Client, path: &str) -> Response {
    client.get(app.url(path)).send().await.expect("GET")
}

pub async fn post_form(
    app: &TestApp,
    client: &Client,
    path: &str,
    pairs: &[(&str, &str)],
) -> Response {
    client
        .post(app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(encode(pairs))
        .send()
        .await
        .expect("POST")
}

/// The status and HTML of a response, asserting it is HTML.
pub async fn page(res: Response) -> (u16, String) {
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = res.text().await.expect("body");
    assert!(ct.starts_with("text/html"), "{status} {ct}: {body}");
    (status, body)
}

/// The `Location` of a 303.
pub fn location(res: &Response) -> String {
    assert_eq!(res.status().as_u16(), 303, "expected a 303 redirect");
    res.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned()
}

/// A signed-up user (through the dashboard's form) with a browser-like client.
pub async fn sign_up(app: &TestApp, email: &str) -> Client {
    let c = browser();
    let res = post_form(
        app,
        &c,
        "/app/signup",
        &[("email", email), ("password", PASSWORD)],
    )
    .await;
    assert_eq!(
        res.status().as_u16(),
        303,
        "{}",
        res.text().await.unwrap_or_default()
    );
    c
}

/// A project made through the API; its owner signed in to the dashboard.
pub async fn project_in_browser(app: &TestApp) -> (TestProject, Client) {
    let p = app.project().await;
    let email = owner_email(app, &p).await;
    let c = browser();
    let res = post_form(
        app,
        &c,
        "/app/login",
        &[("email", &email), ("password", PASSWORD)],
    )
    .await;
    assert_eq!(res.status().as_u16(), 303);
    (p, c)
}

pub async fn owner_email(app: &TestApp, p: &TestProject) -> String {
    let me: serde_json::Value = p
        .owner
        .get(app.url("/users/@me"))
        .send()
        .await
        .expect("me")
        .json()
        .await
        .expect("json");
    me["email"].as_str().expect("email").to_owned()
}
