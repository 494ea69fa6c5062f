//! Open and click tracking and the list pages, end to end: mail delivered to a real SMTP sink
//! is parsed, its links followed over HTTP, and the effects read back through the API.

mod links;
mod pages;

use std::time::Duration;

use mail_parser::{Message, MessageParser};
use reqwest::{Client, Method};
use serde_json::{Value, json};

use crate::helpers::{Engine, TestApp, expect_json};
use crate::mail_setup::{DOMAIN, MailWorld, mail_world, message_ids, send, wait_status};
pub use crate::mail_setup::{contact, message};

/// `HERALD_PUBLIC_URL` of these tests: links in mail start with it and are followed by
/// replacing it with the test server's address.
pub const PUBLIC: &str = "https://links.example";
pub const WAIT: Duration = Duration::from_secs(15);

pub async fn world(engine: Engine) -> MailWorld {
    mail_world(engine, |c| c.public_url = PUBLIC.into()).await
}

/// The test server's URL for a link written into mail.
pub fn local(app: &TestApp, url: &str) -> String {
    assert!(url.starts_with(PUBLIC), "{url}");
    url.replacen(PUBLIC, &app.base, 1)
}

/// Every `{PUBLIC}{path}<token>` URL in `text`, in order.
pub fn links_to(text: &str, path: &str) -> Vec<String> {
    let prefix = format!("{PUBLIC}{path}");
    text.match_indices(&prefix)
        .map(|(at, _)| {
            let token: String = text[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            format!("{prefix}{token}")
        })
        .collect()
}

/// A template of `kind` from the verified domain; returns its id.
pub async fn template(w: &MailWorld, kind: &str, body: &str) -> String {
    let t = expect_json(
        w.app
            .post(
                "/templates",
                &w.project.secret_key,
                &json!({"name": kind, "type": kind, "subject": "Hello", "body": body,
                    "from": format!("news@{DOMAIN}")}),
            )
            .await,
        201,
    )
    .await;
    t["id"].as_str().unwrap().to_owned()
}

/// Sends `body` with the project's key to one recipient, waits for SENT and for the sink to
/// hold the mail; returns (message id, contact id, raw mail).
pub async fn deliver(w: &MailWorld, body: &Value) -> (String, String, Vec<u8>) {
    let before = w.sink.messages().len();
    let answer = expect_json(send(w, body).await, 200).await;
    let id = message_ids(&answer).remove(0);
    let contact = answer["data"]["emails"][0]["contact"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_status(&w.app, &w.project.secret_key, &id, &["SENT"], WAIT).await;
    let got = w.sink.wait_for(before + 1, WAIT).await;
    (id, contact, got[before].data.clone())
}

pub fn parse(raw: &[u8]) -> Message<'_> {
    MessageParser::default()
        .parse(raw)
        .expect("the mail parses")
}

/// The contact's events (newest first).
pub async fn events(w: &MailWorld, contact: &str) -> Vec<Value> {
    let res = w
        .app
        .get(&format!("/events/contact/{contact}"), &w.project.secret_key)
        .await;
    let body = expect_json(res, 200).await;
    body["events"].as_array().cloned().unwrap_or_default()
}

/// How many of the contact's events are named `name`.
pub async fn count(w: &MailWorld, contact: &str, name: &str) -> usize {
    events(w, contact)
        .await
        .iter()
        .filter(|e| e["name"] == name)
        .count()
}

/// A client that does not follow redirects.
pub fn no_redirects() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Changes the project's settings (`tracking`, `language`) as its owner.
pub async fn set_project(w: &MailWorld, changes: Value) {
    let res = w
        .app
        .call_with(
            &w.project.owner,
            Method::PATCH,
            &format!("/users/@me/projects/{}", w.project.id),
            None,
            Some(&changes),
        )
        .await;
    expect_json(res, 200).await;
}
