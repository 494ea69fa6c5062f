//! Templates to responses: HTML with its status, or the plain 500 when a template fails.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

/// `template` rendered as an HTML page with `status`.
pub fn html(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(body) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            )],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "rendering a dashboard page failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "The page could not be rendered; the server log has the details.",
            )
                .into_response()
        }
    }
}

/// `template` with 200.
pub fn ok(template: &impl Template) -> Response {
    html(StatusCode::OK, template)
}

/// A 303 to `to` (after a successful form post: a reload never posts twice).
pub fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

/// A 303 to `to` that also sets `cookie`.
pub fn see_other_with_cookie(to: &str, cookie: &str) -> Response {
    let mut res = Redirect::to(to).into_response();
    if let Ok(v) = HeaderValue::from_str(cookie) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}
