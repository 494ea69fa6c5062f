//! Helpers of the account tests: reading Herald's own account mail from the local outbox,
//! and signing in.

use std::time::{Duration, Instant};

use mail_parser::MessageParser;
use reqwest::{Client, Method, Response};
use serde_json::json;

use crate::helpers::{TestApp, cookie_client};

pub const PASSWORD: &str = "correct horse battery";

/// A mail of the outbox: subject and HTML body.
#[derive(Clone, Debug)]
pub struct Mail {
    pub subject: String,
    pub html: String,
}

impl Mail {
    /// The token of the link `…{param}=<token>` in the body.
    pub fn token(&self, param: &str) -> String {
        let marker = format!("{param}=");
        let start = self.html.find(&marker).expect("a link with a token") + marker.len();
        self.html[start..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect()
    }
}

/// Every account mail delivered to `to` so far (outbox order is not meaningful).
pub fn mails_to(app: &TestApp, to: &str) -> Vec<Mail> {
    let dir = app.config.data_dir.join("outbox");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(raw) = std::fs::read(e.path()) else {
            continue;
        };
        let Some(m) = MessageParser::default().parse(&raw[..]) else {
            continue;
        };
        let addressed = m
            .to()
            .and_then(|a| a.first())
            .and_then(|a| a.address())
            .is_some_and(|a| a.eq_ignore_ascii_case(to));
        if addressed {
            out.push(Mail {
                subject: m.subject().unwrap_or("").to_owned(),
                html: m.body_html(0).map(|b| b.into_owned()).unwrap_or_default(),
            });
        }
    }
    out
}

/// Waits until `to` has received at least `n` mails whose subject contains `subject`; returns
/// them.
pub async fn wait_mails(app: &TestApp, to: &str, subject: &str, n: usize) -> Vec<Mail> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got: Vec<Mail> = mails_to(app, to)
            .into_iter()
            .filter(|m| m.subject.contains(subject))
            .collect();
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{to} got {} mails {subject:?}, wanted {n}",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn post_json(
    app: &TestApp,
    client: &Client,
    path: &str,
    body: serde_json::Value,
) -> Response {
    app.call_with(client, Method::POST, path, None, Some(&body))
        .await
}

/// Signs in `email` with `password` on a fresh client.
pub async fn login(app: &TestApp, email: &str, password: &str) -> (Client, Response) {
    let client = cookie_client();
    let res = post_json(
        app,
        &client,
        "/auth/login",
        json!({"email": email, "password": password}),
    )
    .await;
    (client, res)
}

/// `GET /users/@me` status for a client.
pub async fn me_status(app: &TestApp, client: &Client) -> u16 {
    app.call_with(client, Method::GET, "/users/@me", None, None)
        .await
        .status()
        .as_u16()
}
