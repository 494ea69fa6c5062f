//! The per-client limit of the unauthenticated account routes (DECISIONS.md "Accounts"):
//! `HERALD_AUTH_RATE_LIMIT_PER_MINUTE` requests per minute per client address and route on
//! sign-up, sign-in, verify-email, the `request-*` routes and reset-password (and the pages
//! whose forms post to them), and OAuth sign-in (its start and its callback, both GETs); more
//! answer 429 `RATE_LIMIT_EXCEEDED` with `Retry-After`.
//!
//! The client address is the TCP peer's, or the last `X-Forwarded-For` hop only when the peer
//! is one of `HERALD_TRUSTED_PROXIES` (a client can write anything in that header itself).

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The limited routes (POST only).
const LIMITED: &[&str] = &[
    "/auth/signup",
    "/auth/login",
    "/auth/verify-email",
    "/auth/request-verification",
    "/auth/request-password-reset",
    "/auth/reset-password",
    "/verify-email",
    "/reset-password",
    "/signup",
    // The dashboard's forms (herald-web).
    "/app/login",
    "/app/signup",
    "/app/forgot-password",
    "/app/reset-password",
    "/app/verify-email",
];

/// The limited route a request is on, if any.
fn limited_route(method: &Method, path: &str) -> Option<&'static str> {
    if method == Method::POST {
        return LIMITED.iter().find(|r| **r == path).copied();
    }
    if method != Method::GET {
        return None;
    }
    // `/auth/oauth/{provider}` and `/auth/oauth/{provider}/callback`.
    let rest = path.strip_prefix("/auth/oauth/")?;
    Some(if rest.ends_with("/callback") {
        "/auth/oauth/{provider}/callback"
    } else {
        "/auth/oauth/{provider}"
    })
}

/// The limited route of `req` and its client address, when the route is limited (read before
/// [`check`] awaits: a request body is not `Sync`).
pub fn key_of(state: &AppState, req: &Request) -> Option<(IpAddr, &'static str)> {
    let route = limited_route(req.method(), req.uri().path())?;
    Some((client_address(state, req)?, route))
}

/// The refusal when the caller's address used up this route's minute.
pub async fn check(state: &AppState, (client, route): (IpAddr, &'static str)) -> Option<Response> {
    let now = u64::try_from(state.engine.now() / 1000).unwrap_or(0);
    let d = state.auth_limiter.check((client, route), now).await;
    if d.allowed {
        return None;
    }
    let mut res = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMIT_EXCEEDED",
        format!("Rate limit of {} requests per minute exceeded", d.limit),
    )
    .with_suggestion(format!("Retry after {} seconds", d.reset))
    .into_response();
    super::rate_headers(res.headers_mut(), &d);
    if let Ok(v) = HeaderValue::from_str(&d.reset.to_string()) {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    Some(res)
}

fn client_address(state: &AppState, req: &Request) -> Option<IpAddr> {
    client_of(state, req.extensions(), req.headers())
}

/// The client address of a request: the TCP peer's, or the last `X-Forwarded-For` hop when
/// the peer is a trusted proxy. `None` without a peer (a request not from a socket).
fn client_of(state: &AppState, extensions: &Extensions, headers: &HeaderMap) -> Option<IpAddr> {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())?;
    if !state.settings.trusted_proxies.contains(&peer) {
        return Some(peer);
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
        .next_back();
    Some(forwarded.unwrap_or(peer))
}

/// The client address of the request, computed as for the limits above (for the sign-in
/// slow-down, which counts per account and client address).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddress(pub Option<IpAddr>);

impl ClientAddress {
    /// The address as stored with a failed sign-in; `unknown` without a peer.
    pub fn key(&self) -> String {
        self.0
            .map_or_else(|| "unknown".to_owned(), |ip| ip.to_string())
    }
}

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(ClientAddress(client_of(
            state,
            &parts.extensions,
            &parts.headers,
        )))
    }
}
