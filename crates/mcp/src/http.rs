//! `POST /mcp`: the Streamable HTTP transport, stateless (any node answers; no session store),
//! with JSON responses, mounted beside the API on the same listener.
//!
//! Order of checks: the error envelope and request id (outermost, as on the API), a project
//! secret key (`Authorization: Bearer sk_...`; a public key, a wrong key or none is the API's
//! 401), then rmcp's own guards: the `Host` header must name the public URL's host or loopback
//! (DNS rebinding), and the body is bounded by `HERALD_MAX_BODY_BYTES` like a REST body.
//! A plain `tools/call` that passes those guards is answered by [`fast_call`] without rmcp's
//! per-request service, with the same result; everything else goes on to rmcp.
//! Each tool call then runs its REST route in process ([`Backend::InProcess`]), which applies
//! the per-project rate limit to it as to any API request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use herald_api::AppState;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_http::catch_panic::CatchPanicLayer;

use crate::backend::Backend;
use crate::fast_call::{self, FastCall};
use crate::handler::{HeraldTools, McpSettings};

/// The `/mcp` route. `api` is the API's whole router, the one the same listener serves.
pub fn router(
    api: axum::Router,
    state: AppState,
    settings: McpSettings,
) -> anyhow::Result<axum::Router> {
    let tools = HeraldTools::new(Backend::InProcess(api), settings, false)?;
    let fast = Arc::new(FastCall {
        tools: tools.clone(),
        allowed_hosts: allowed_hosts(&state.settings.public_url),
        max_body_bytes: state.settings.max_body_bytes,
    });
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(fast.allowed_hosts.clone())
        .with_max_request_body_bytes(fast.max_body_bytes);
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Ok(axum::Router::new()
        .route_service("/mcp", service)
        // Inside the key check: a plain `tools/call` is answered here, the rest by rmcp.
        .layer(middleware::from_fn_with_state(fast, fast_call::answer))
        .layer(middleware::from_fn_with_state(state, require_secret_key))
        .layer(CatchPanicLayer::custom(
            herald_api::envelope::panic_response,
        ))
        .layer(middleware::from_fn(herald_api::metrics::track_requests))
        .layer(middleware::from_fn(herald_api::envelope::envelope)))
}

async fn require_secret_key(State(state): State<AppState>, req: Request, next: Next) -> Response {
    match herald_api::auth::secret_key_project(&state, req.headers()).await {
        Ok(_) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

/// The public URL's host, and loopback.
fn allowed_hosts(public_url: &str) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let authority = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    if !host.is_empty() && !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        hosts.push(host.to_ascii_lowercase());
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::allowed_hosts;

    #[test]
    fn the_public_host_joins_loopback() {
        assert_eq!(
            allowed_hosts("https://mail.example.com:8443/base"),
            ["localhost", "127.0.0.1", "::1", "mail.example.com"]
        );
        assert_eq!(
            allowed_hosts("http://[::1]:8080"),
            ["localhost", "127.0.0.1", "::1"]
        );
        assert_eq!(
            allowed_hosts("http://127.0.0.1:8080"),
            ["localhost", "127.0.0.1", "::1"]
        );
    }
}
