//! `GET /t/open/{token}` (the open pixel) and `GET /t/click/{token}` (tracked links): public,
//! no key, never rate limited, not in the OpenAPI document (see docs/tracking.md).
//!
//! Invariants: the pixel is always a 1x1 GIF that is never cached, whatever the token; a click
//! redirects (302) only for a valid click token, to the URL sealed in it (http or https), and
//! a tampered or unknown token is a 400 envelope without a `Location`.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;

/// A transparent 1x1 GIF (43 bytes).
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

const NO_STORE: &str = "no-store, no-cache, must-revalidate, max-age=0";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/t/open/{token}", get(open))
        .route("/t/click/{token}", get(click))
}

async fn open(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    state.engine.record_open_link(&token).await;
    let mut res = PIXEL.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/gif"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    h.insert(header::EXPIRES, HeaderValue::from_static("0"));
    res
}

async fn click(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let Ok(url) = state.engine.follow_click(&token).await else {
        return ApiError::bad_request("The link is invalid or has been altered").into_response();
    };
    match HeaderValue::from_str(&location(&url)) {
        Ok(target) => {
            let mut res = StatusCode::FOUND.into_response();
            res.headers_mut().insert(header::LOCATION, target);
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
            res.headers_mut().insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
            res
        }
        Err(_) => ApiError::bad_request("The link is invalid or has been altered").into_response(),
    }
}

/// `url` with every byte that may not appear in a header (controls, space, non-ASCII)
/// percent-encoded, as a browser would send it.
fn location(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for b in url.bytes() {
        if (0x21..0x7f).contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn location_percent_encodes_what_a_header_cannot_hold() {
        assert_eq!(
            super::location("https://x.example/a b/é?q=1"),
            "https://x.example/a%20b/%C3%A9?q=1"
        );
    }

    #[test]
    fn the_pixel_is_a_gif() {
        assert!(super::PIXEL.starts_with(b"GIF89a") && super::PIXEL.len() == 43);
    }
}
