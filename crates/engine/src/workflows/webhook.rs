//! The call of a WEBHOOK step (DECISIONS.md "Workflows"): the config's strings rendered as
//! templates with the contact and the execution's event, the host resolved once and every
//! address checked by [`herald_core::net::is_internal`] (unless the operator allows private
//! targets), the connection made to the checked address, no redirects followed, the configured
//! timeout (10 s by default), no proxy from the environment (a proxy would bypass the pinned
//! address), at most [`RESPONSE_KEPT`] bytes of the answer read (the rest is never
//! downloaded), and the body signed in `Herald-Signature` under the project's webhook secret. `Herald-Delivery` names the execution and step, the same on every retry,
//! so a receiver can drop a repeat (a call whose outcome was not recorded before a crash is
//! made again: at least once).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

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

/// The client of one call: the timeout for the connection and the whole exchange, no
/// redirects, and no proxy, whatever `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` say: a proxy would
/// resolve the host again and connect wherever it likes, past the address check. `pinned`
/// (a host name and its checked address) makes the connection go to that address only.
pub fn webhook_client(
    timeout: Duration,
    pinned: Option<(&str, SocketAddr)>,
) -> reqwest::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("Herald-Webhook/1");
    if let Some((host, addr)) = pinned {
        builder = builder.resolve(host.trim_matches(['[', ']']), addr);
    }
    builder.build()
}

/// The first `limit` bytes of the body (fewer if it ends first, or a read fails: what came is
/// kept). Reading stops there and the connection is dropped, so an endless or huge answer costs
/// at most one chunk past the limit.
async fn read_at_most(mut res: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    while kept.len() < limit {
        match res.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - kept.len());
                kept.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    kept
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
        let pinned = host
            .parse::<IpAddr>()
            .is_err()
            .then_some((host.as_str(), addr));
        let client = match webhook_client(timeout, pinned) {
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
                let kept = read_at_most(res, RESPONSE_KEPT).await;
                CallOutcome::Answered {
                    status,
                    body: String::from_utf8_lossy(&kept).into_owned(),
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A listener answering every connection with `200 ok`, counting connections.
    async fn counting_listener() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = sock.read(&mut buf).await;
                    let _ = sock
                        .write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        )
                        .await;
                });
            }
        });
        (addr, hits)
    }

    /// Runs in a child process whose environment names a proxy (see
    /// `the_proxy_of_the_environment_is_not_used`): the call must reach the target directly.
    #[tokio::test]
    #[ignore = "run by the_proxy_of_the_environment_is_not_used with proxy variables set"]
    async fn child_calls_direct_despite_proxy_variables() {
        let (target, hits) = counting_listener().await;
        let client =
            webhook_client(Duration::from_secs(5), Some(("hooks.example.com", target))).unwrap();
        let url = format!("http://hooks.example.com:{}/x", target.port());
        let res = client.get(&url).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200);
        // Through a proxy the parent's listener would have answered instead.
        assert_eq!(hits.load(Ordering::SeqCst), 1, "the pinned target answered");
    }

    /// `HTTP_PROXY` and friends are read when a client is built, and the test harness cannot
    /// change its own environment safely (unsafe code is forbidden): the check runs in a child
    /// copy of this test binary started with the variables set.
    #[tokio::test]
    async fn the_proxy_of_the_environment_is_not_used() {
        let (proxy, proxied) = counting_listener().await;
        let proxy_url = format!("http://{proxy}");
        let out = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "workflows::webhook::tests::child_calls_direct_despite_proxy_variables",
                "--ignored",
                "--nocapture",
            ])
            .env("HTTP_PROXY", &proxy_url)
            .env("http_proxy", &proxy_url)
            .env("HTTPS_PROXY", &proxy_url)
            .env("ALL_PROXY", &proxy_url)
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(proxied.load(Ordering::SeqCst), 0, "the proxy was not used");
    }

    #[tokio::test]
    async fn only_the_kept_bytes_of_an_endless_answer_are_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let written = Arc::new(AtomicUsize::new(0));
        let count = written.clone();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let head = b"HTTP/1.1 200 OK\r\nContent-Length: 52428800\r\n\r\n";
            if sock.write_all(head).await.is_err() {
                return;
            }
            let chunk = vec![b'x'; 16 * 1024];
            // 50 MB, slowly: reading it all would take minutes.
            while count.load(Ordering::SeqCst) < 50 * 1024 * 1024 {
                if sock.write_all(&chunk).await.is_err() {
                    return;
                }
                count.fetch_add(chunk.len(), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let client = webhook_client(Duration::from_secs(30), None).unwrap();
        let started = std::time::Instant::now();
        let res = client
            .get(format!("http://{addr}/big"))
            .send()
            .await
            .unwrap();
        let kept = read_at_most(res, RESPONSE_KEPT).await;
        assert_eq!(kept.len(), RESPONSE_KEPT);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(written.load(Ordering::SeqCst) < 1024 * 1024);
    }
}
