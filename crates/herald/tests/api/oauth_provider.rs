//! A loopback stand-in for GitHub's and Google's token and user endpoints (axum on
//! 127.0.0.1:0): it answers what the test set and records every request it received.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use herald::Config;

/// One request the stand-in received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub accept: Option<String>,
    pub body: String,
}

impl Received {
    /// A field of a form body.
    pub fn form(&self, name: &str) -> Option<String> {
        form_pairs(&self.body)
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

/// What the stand-in answers.
pub struct Answers {
    /// Status of the token endpoints (200: an access token).
    pub token_status: u16,
    pub github_id: u64,
    pub github_emails: Value,
    pub google_user: Value,
}

pub struct StandIn {
    pub base: String,
    pub answers: Arc<Mutex<Answers>>,
    received: Arc<Mutex<Vec<Received>>>,
}

#[derive(Clone)]
struct Shared {
    answers: Arc<Mutex<Answers>>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl StandIn {
    pub async fn start() -> StandIn {
        let answers = Arc::new(Mutex::new(Answers {
            token_status: 200,
            github_id: 4242,
            github_emails: github_emails("octo@example.com", true),
            google_user: google_user("g-sub-1", "gina@example.com", true),
        }));
        let received = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            answers: answers.clone(),
            received: received.clone(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(answer).with_state(shared);
        tokio::spawn(async move { axum::serve(listener, app).await });
        StandIn {
            base,
            answers,
            received,
        }
    }

    /// Points the server's provider endpoints here and configures both clients.
    pub fn configure(&self, c: &mut Config) {
        let b = &self.base;
        c.oauth_github_client_id = Some("gh-client".into());
        c.oauth_github_client_secret = Some("gh-secret".into());
        c.oauth_github_auth_url = format!("{b}/github/authorize");
        c.oauth_github_token_url = format!("{b}/github/token");
        c.oauth_github_api_url = format!("{b}/github/api");
        c.oauth_google_client_id = Some("google-client".into());
        c.oauth_google_client_secret = Some("google-secret".into());
        c.oauth_google_auth_url = format!("{b}/google/auth");
        c.oauth_google_token_url = format!("{b}/google/token");
        c.oauth_google_userinfo_url = format!("{b}/google/userinfo");
    }

    pub fn set(&self, f: impl FnOnce(&mut Answers)) {
        f(&mut self.answers.lock().unwrap());
    }

    /// The requests received on `path`.
    pub fn received(&self, path: &str) -> Vec<Received> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

pub fn github_emails(primary: &str, verified: bool) -> Value {
    json!([
        {"email": "other@example.com", "primary": false, "verified": true},
        {"email": primary, "primary": true, "verified": verified},
    ])
}

pub fn google_user(sub: &str, email: &str, verified: bool) -> Value {
    json!({"sub": sub, "email": email, "email_verified": verified})
}

pub fn form_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decoding of a form value (`+` is a space).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

async fn answer(State(s): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    s.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        authorization: header("authorization"),
        accept: header("accept"),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let a = s.answers.lock().unwrap();
    match uri.path() {
        "/github/token" | "/google/token" => {
            if a.token_status != 200 {
                let status = StatusCode::from_u16(a.token_status).unwrap();
                return (status, "the stand-in failed on purpose").into_response();
            }
            axum::Json(json!({"access_token": "at-123", "token_type": "bearer"})).into_response()
        }
        "/github/api/user" => {
            axum::Json(json!({"id": a.github_id, "login": "octo"})).into_response()
        }
        "/github/api/user/emails" => axum::Json(a.github_emails.clone()).into_response(),
        "/google/userinfo" => axum::Json(a.google_user.clone()).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
