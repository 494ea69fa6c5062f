//! Where a tool's REST call goes.
//!
//! - [`Backend::InProcess`] (`POST /mcp`): the API's own router, called in process with the
//!   caller's `Authorization` header. The request passes the same middleware as one from the
//!   network (authentication, the per-project rate limit, a disabled project's write refusal,
//!   the body limit, the error envelope) and the same handler, so an MCP call is a REST call
//!   without the socket.
//! - [`Backend::Remote`] (`herald mcp`, the stdio bridge): the same request over HTTP to
//!   `HERALD_URL` with `HERALD_API_KEY`. A server that cannot be reached or a missing key is a
//!   clear tool error.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Request, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use crate::call::RestCall;
use crate::refusal::Refusal;

/// The largest REST answer read back (a page of 100 contacts with large custom fields fits).
const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

#[derive(Clone)]
pub enum Backend {
    InProcess(axum::Router),
    Remote {
        client: reqwest::Client,
        base: String,
        key: Option<String>,
    },
}

/// A REST answer: status and JSON body (`null` when empty).
pub struct Reply {
    pub status: u16,
    pub body: Value,
    /// The body's own text when it is a JSON object: the tool result's text content, so the
    /// answer is not serialised a second time.
    pub text: Option<String>,
}

/// A REST answer as it came: status and body bytes, not parsed yet (`POST /mcp`'s fast path
/// writes a success around the bytes without parsing them into a [`Value`]).
pub struct RawReply {
    pub status: u16,
    pub bytes: Bytes,
}

impl RawReply {
    /// The answer parsed, as the tool result is built from it.
    pub fn parse(&self) -> Reply {
        Reply::from_bytes(self.status, &self.bytes)
    }
}

impl Reply {
    fn from_bytes(status: u16, bytes: &[u8]) -> Reply {
        let body = parse(bytes);
        let text = match body {
            Value::Object(_) => std::str::from_utf8(bytes).ok().map(str::to_owned),
            _ => None,
        };
        Reply { status, body, text }
    }
}

/// What the in-process call carries over from the `/mcp` request.
#[derive(Clone, Default)]
pub struct Caller {
    pub authorization: Option<HeaderValue>,
    /// The connection's peer (`ConnectInfo`), so per-client rules see the real client.
    pub connect_info: Option<axum::extract::ConnectInfo<std::net::SocketAddr>>,
    pub forwarded_for: Option<HeaderValue>,
}

impl Caller {
    /// What the in-process call carries over from the `/mcp` request's head.
    pub fn from_parts(parts: &Parts) -> Caller {
        Caller {
            authorization: parts.headers.get(header::AUTHORIZATION).cloned(),
            connect_info: parts.extensions.get().copied(),
            forwarded_for: parts.headers.get("x-forwarded-for").cloned(),
        }
    }
}

impl Backend {
    /// The bridge's backend: `base` like `http://127.0.0.1:8080`.
    pub fn remote(base: &str, key: Option<String>) -> anyhow::Result<Backend> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()?;
        Ok(Backend::Remote {
            client,
            base: base.trim_end_matches('/').to_owned(),
            key: key.filter(|k| !k.trim().is_empty()),
        })
    }

    pub async fn send(&self, call: &RestCall, caller: &Caller) -> Result<Reply, Refusal> {
        Ok(self.send_raw(call, caller).await?.parse())
    }

    /// The REST answer's bytes, unparsed.
    pub async fn send_raw(&self, call: &RestCall, caller: &Caller) -> Result<RawReply, Refusal> {
        match self {
            Backend::InProcess(router) => in_process(router, call, caller).await,
            Backend::Remote { client, base, key } => {
                remote(client, base, key.as_deref(), call).await
            }
        }
    }
}

async fn in_process(
    router: &axum::Router,
    call: &RestCall,
    caller: &Caller,
) -> Result<RawReply, Refusal> {
    let mut builder = Request::builder().method(call.method).uri(&call.target);
    if let Some(auth) = &caller.authorization {
        builder = builder.header(header::AUTHORIZATION, auth.clone());
    }
    if let Some(xff) = &caller.forwarded_for {
        builder = builder.header("x-forwarded-for", xff.clone());
    }
    let body = match &call.body {
        Some(json) => {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
            Body::from(serde_json::to_vec(json).map_err(|e| Refusal::internal(e.to_string()))?)
        }
        None => Body::empty(),
    };
    let mut request = builder
        .body(body)
        .map_err(|e| Refusal::internal(format!("building {} {}: {e}", call.method, call.target)))?;
    if let Some(info) = caller.connect_info {
        request.extensions_mut().insert(info);
    }
    let response = match router.clone().oneshot(request).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let status = response.status().as_u16();
    let bytes = http_body_util::Limited::new(response.into_body(), MAX_REPLY_BYTES)
        .collect()
        .await
        .map_err(|e| Refusal::internal(format!("reading {}: {e}", call.target)))?
        .to_bytes();
    Ok(RawReply { status, bytes })
}

async fn remote(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    call: &RestCall,
) -> Result<RawReply, Refusal> {
    let Some(key) = key else {
        return Err(Refusal::new(
            401,
            "MISSING_AUTH",
            "HERALD_API_KEY is not set: give `herald mcp` the project's secret key (sk_...)",
        ));
    };
    let method = reqwest::Method::from_bytes(call.method.as_bytes())
        .map_err(|e| Refusal::internal(e.to_string()))?;
    let mut request = client
        .request(method, format!("{base}{}", call.target))
        .bearer_auth(key);
    if let Some(body) = &call.body {
        request = request.json(body);
    }
    let response = request.send().await.map_err(|e| {
        Refusal::new(
            503,
            "SERVER_UNREACHABLE",
            format!(
                "Cannot reach the Herald server at {base} ({}). Is `herald serve` running there? \
                 Set HERALD_URL to its address.",
                root_cause(&e)
            ),
        )
    })?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| {
        Refusal::new(
            503,
            "SERVER_UNREACHABLE",
            format!(
                "The Herald server at {base} stopped answering: {}",
                root_cause(&e)
            ),
        )
    })?;
    Ok(RawReply { status, bytes })
}

fn parse(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The innermost cause (reqwest's outer message is only "error sending request").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
