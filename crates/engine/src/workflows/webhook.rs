//! The call of a WEBHOOK step (DECISIONS.md "Workflows"): the config's strings rendered as
//! templates with the contact and the execution's event, the host resolved once and every
//! address checked by [`herald_core::net::is_internal`] (unless the operator allows private
//! targets), the connection made to the checked address, no redirects followed, the configured
//! timeout (10 s by default), and the body signed in `Herald-Signature` under the project's
//! webhook secret. `Herald-Delivery` names the execution and step, the same on every retry,
//! so a receiver can drop a repeat (a call whose outcome was not recorded before a crash is
//! made again: at least once).

use std::net::{IpAddr, SocketAddr};

use herald_core::ids::Uuid;
use herald_core::net::is_internal;
use herald_core::template::{Escape, Template};
use herald_core::workflow_run::{SIGNATURE_HEADER, webhook_secret, webhook_signature};
use serde_json::{Map, Value};

use crate::Engine;

/// The most of a response body kept in the step history.
const RESPONSE_KEPT: usize = 1024;

/// What a call came to.
#[derive(Clone, Debug)]
pub enum CallOutcome {
    /// The receiver answered (any status).
    Answered { status: u16, body: String },
    /// Refused before any connection (a private address, a URL that no longer parses): not
    /// retried.
    Refused(String),
    /// No answer (timeout, connection refused, DNS failure): retried.
    Failed(String),
}

/// A WEBHOOK step's request, rendered.
#[derive(Clone, Debug)]
pub struct WebhookRequest {
    pub url: String,
    pub method: reqwest::Method,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// `<execution id>:<step id>`.
    pub delivery: String,
}

impl WebhookRequest {
    /// Renders the step's config with `vars` (the contact's and `event.*`); `default_body` is
    /// sent when the config gives none and the method carries a body.
    pub fn render(
        config: &Value,
        vars: &Map<String, Value>,
        default_body: &Value,
        delivery: String,
    ) -> WebhookRequest {
        let text = |s: &str| Template::parse(s).render(vars, Escape::None);
        let url = config
            .get("url")
            .and_then(Value::as_str)
            .map(text)
            .unwrap_or_default();
        let method = config
            .get("method")
            .and_then(Value::as_str)
            .and_then(|m| m.parse().ok())
            .unwrap_or(reqwest::Method::POST);
        let headers = config
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| {
                        Some((
                            k.clone(),
                            herald_core::rules::header_safe(&text(v.as_str()?)).into_owned(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let body = match config.get("body") {
            None | Some(Value::Null) if method == reqwest::Method::GET => None,
            None | Some(Value::Null) => Some(default_body.to_string()),
            Some(Value::String(s)) => Some(text(s)),
            Some(other) => Some(render_json(other, &text).to_string()),
        };
        WebhookRequest {
            url,
            method,
            headers,
            body,
            delivery,
        }
    }
}

/// A JSON body with each string rendered.
fn render_json(v: &Value, text: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(text(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| render_json(x, text)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), render_json(x, text)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl Engine {
    /// The signing secret of the project's WEBHOOK calls (`GET /workflows/webhook-secret`).
    pub fn webhook_secret(&self, project_id: Uuid) -> String {
        webhook_secret(&self.webhook_key, project_id)
    }

    /// Makes the call.
    pub async fn call_webhook(&self, project_id: Uuid, req: &WebhookRequest) -> CallOutcome {
        let url = match url::Url::parse(&req.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => u,
            _ => return CallOutcome::Refused(format!("{:?} is not an http(s) URL", req.url)),
        };
        let host = url.host_str().unwrap_or_default().to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        let addr = match self.resolve_target(&host, port).await {
            Ok(a) => a,
            Err(outcome) => return outcome,
        };
        let timeout = self.settings.webhook_timeout;
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent("Herald-Webhook/1");
        if host.parse::<IpAddr>().is_err() {
            builder = builder.resolve(host.trim_matches(['[', ']']), addr);
        }
        let client = match builder.build() {
            Ok(c) => c,
            Err(e) => return CallOutcome::Failed(format!("building the HTTP client: {e}")),
        };
        let body = req.body.clone().unwrap_or_default();
        let t = self.now() / 1000;
        let secret = self.webhook_secret(project_id);
        let mut call = client
            .request(req.method.clone(), url)
            .header(
                SIGNATURE_HEADER,
                webhook_signature(secret.as_bytes(), t, body.as_bytes()),
            )
            .header("Herald-Delivery", &req.delivery);
        if req.body.is_some() {
            call = call.header("Content-Type", "application/json").body(body);
        }
        for (k, v) in &req.headers {
            call = call.header(k.as_str(), v.as_str());
        }
        match call.send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                let bytes = res.bytes().await.unwrap_or_default();
                let kept = &bytes[..bytes.len().min(RESPONSE_KEPT)];
                CallOutcome::Answered {
                    status,
                    body: String::from_utf8_lossy(kept).into_owned(),
                }
            }
            Err(e) if e.is_timeout() => {
                CallOutcome::Failed(format!("no answer within {} s", timeout.as_secs_f64()))
            }
            Err(e) => CallOutcome::Failed(format!("the call failed: {e}")),
        }
    }

    /// The address to connect to: the host's first address, refused when any of its addresses
    /// is internal (unless allowed).
    async fn resolve_target(&self, host: &str, port: u16) -> Result<SocketAddr, CallOutcome> {
        let bare = host.trim_matches(['[', ']']);
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                let lookup = tokio::net::lookup_host((bare, port));
                match tokio::time::timeout(self.settings.dns_timeout, lookup).await {
                    Ok(Ok(found)) => found.collect(),
                    Ok(Err(e)) => {
                        return Err(CallOutcome::Failed(format!("resolving {bare}: {e}")));
                    }
                    Err(_) => {
                        return Err(CallOutcome::Failed(format!("resolving {bare} timed out")));
                    }
                }
            }
        };
        let Some(first) = addrs.first().copied() else {
            return Err(CallOutcome::Failed(format!("{bare} has no address")));
        };
        if !self.settings.webhook_allow_private
            && let Some(bad) = addrs.iter().find(|a| is_internal(a.ip()))
        {
            return Err(CallOutcome::Refused(format!(
                "{bare} resolves to {}, a private, loopback or link-local address \
                 (HERALD_WEBHOOK_ALLOW_PRIVATE allows it)",
                bad.ip()
            )));
        }
        Ok(first)
    }
}
