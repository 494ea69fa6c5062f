//! Outermost middleware: gives every request an id (`X-Request-Id` on every response) and
//! renders `ApiError`s, whoever produced them, as the SPEC.md error envelope.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use herald_core::clock::{Clock, SystemClock};
use herald_core::time::iso;
use serde_json::json;

use crate::error::ApiError;

/// The id of the request being served.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

pub async fn envelope(mut req: Request, next: Next) -> Response {
    let id = uuid::Uuid::now_v7().to_string();
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut res = next.run(req).await;
    if let Some(err) = res.extensions_mut().remove::<ApiError>() {
        res = render(&err, &id, res);
    } else if res.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_json(&res) {
        // tower-http's body limit answers with plain text.
        res = render(&payload_too_large(), &id, res);
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert("x-request-id", v);
    }
    res
}

pub fn payload_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "PAYLOAD_TOO_LARGE",
        "The request body is larger than this endpoint accepts",
    )
}

fn is_json(res: &Response) -> bool {
    res.headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
}

fn render(err: &ApiError, request_id: &str, original: Response) -> Response {
    let mut error = json!({
        "code": err.code,
        "message": err.message,
        "statusCode": err.status.as_u16(),
        "requestId": request_id,
    });
    if !err.errors.is_empty() {
        error["errors"] = json!(err.errors);
    }
    if let Some(d) = &err.details {
        error["details"] = (**d).clone();
    }
    if let Some(s) = &err.suggestion {
        error["suggestion"] = json!(s);
    }
    let body = envelope_body(error, &err.message);
    let (mut parts, _) = original.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let mut res = Response::from_parts(parts, Body::from(body.to_string()));
    *res.status_mut() = err.status;
    res
}

fn envelope_body(error: serde_json::Value, message: &str) -> serde_json::Value {
    json!({
        "success": false,
        "error": error,
        // Clients written for the legacy shape (such as @plunk/node) read a top-level message.
        "message": message,
        // Display only: the envelope runs outside the app state, so it reads the wall clock.
        "timestamp": iso(SystemClock.now()),
    })
}

/// The envelope of an error produced outside the router (the server's own 400/414/431).
pub fn error_json(status: StatusCode, code: &str, message: &str, request_id: &str) -> String {
    let error = json!({
        "code": code,
        "message": message,
        "statusCode": status.as_u16(),
        "requestId": request_id,
    });
    envelope_body(error, message).to_string()
}

/// Turns a panic into a 500 without internals (the panic is logged).
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ApiError::internal(format!("handler panicked: {detail}")).into_response()
}

pub async fn not_found_fallback() -> ApiError {
    ApiError::not_found("NOT_FOUND", "Route")
}

pub async fn method_not_allowed_fallback() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        "This method is not allowed on this path",
    )
}
