//! Completes the OpenAPI document generated from the handlers' annotations so that it is valid
//! OpenAPI 3.1 and lists every status the server can answer.
//!
//! Invariants, applied to every operation in one place (so no handler can forget them):
//! - every response has a `description` (the status's reason phrase unless annotated);
//! - every 4xx/5xx response carries the [`ErrorEnvelope`] schema, the one shape
//!   [`crate::envelope`] renders;
//! - the statuses the shared layers produce are declared: 401 on every authenticated
//!   operation, 403 on project writes (a disabled project), 429 everywhere (any request bearing
//!   a key counts against its project's rate limit), 400/413/415/422 where a JSON body is read,
//!   422 where query parameters are parsed, 404 where a path names a resource;
//! - each operation names who may call it (`security`): nobody for the public routes, a
//!   session for the account routes, the secret key or a session plus `X-Project-Id` otherwise.
//!
//! Statuses particular to one handler (409, 502, ...) stay in its annotation. What the request
//! schemas must say beyond the annotations is [`crate::openapi_requests`].

use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa::openapi::OpenApi;

use crate::error::FieldError;

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    /// Always `false`.
    pub success: bool,
    pub error: ErrorDetail,
    /// The same text as `error.message` (for clients written for the legacy shape).
    pub message: String,
    /// When the error was answered (RFC 3339).
    pub timestamp: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    /// Machine-readable code, e.g. `VALIDATION_ERROR`, `CONTACT_NOT_FOUND`.
    pub code: String,
    pub message: String,
    pub status_code: u16,
    /// The `X-Request-Id` of the response.
    pub request_id: String,
    /// Field-level details (validation errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// Machine-readable facts about the error, when the code has any (e.g. `DOMAIN_IN_USE`:
    /// `{campaigns: [{id, name}], workflows: [{id, name}]}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// Routes anyone may call.
const PUBLIC: &[&str] = &[
    "/health",
    "/config",
    "/auth/signup",
    "/auth/login",
    "/auth/logout",
    "/auth/verify-email",
    "/auth/request-verification",
    "/auth/request-password-reset",
    "/auth/reset-password",
    "/auth/oauth-config",
    "/auth/oauth/{provider}",
    "/auth/oauth/{provider}/callback",
    "/webhooks/notifications",
    "/webhooks/incoming/payments",
];

enum Caller {
    Anyone,
    User,
    Project,
    /// `/v1/track`: the public key too.
    AnyKey,
}

fn caller(path: &str) -> Caller {
    if path == crate::cors::TRACK_PATH {
        Caller::AnyKey
    } else if PUBLIC.contains(&path) {
        Caller::Anyone
    } else if path.starts_with("/users/") || path.starts_with("/projects/") {
        Caller::User
    } else {
        Caller::Project
    }
}

/// Applies the module's invariants to the generated document and returns its JSON form (the
/// request rules of [`crate::openapi_requests`] use JSON Schema keywords utoipa's model lacks,
/// so the document is served as JSON from here on). Empty only if utoipa cannot serialize its
/// own model.
pub fn finish(doc: OpenApi) -> Value {
    match serde_json::to_value(&doc) {
        Ok(mut v) => {
            complete(&mut v);
            v
        }
        Err(e) => {
            tracing::error!(error = %e, "could not serialize the OpenAPI document");
            json!({})
        }
    }
}

/// The rewrite on the JSON form of the document.
pub fn complete(doc: &mut Value) {
    let schemes = json!({
        "secretKey": {"type": "http", "scheme": "bearer",
            "description": "The project's secret key (`sk_...`)."},
        "publicKey": {"type": "http", "scheme": "bearer",
            "description": "The project's public key (`pk_...`): `POST /v1/track` only."},
        "session": {"type": "apiKey", "in": "cookie", "name": crate::auth::session::COOKIE_NAME,
            "description": "The dashboard session set by /auth/login or /auth/signup."},
        "projectId": {"type": "apiKey", "in": "header", "name": "X-Project-Id",
            "description": "With a session: the project the request acts on."}
    });
    let components = object_at(doc, "components");
    if let (Some(m), Value::Object(add)) = (
        object_at(components, "securitySchemes").as_object_mut(),
        schemes,
    ) {
        m.extend(add);
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, op) in item.iter_mut() {
                if let Some(op) = op.as_object_mut() {
                    complete_operation(path, method, op);
                }
            }
        }
    }
    crate::openapi_requests::tighten(doc);
}

fn complete_operation(path: &str, method: &str, op: &mut Map<String, Value>) {
    let who = caller(path);
    let params = |place: &str| {
        op.get("parameters")
            .and_then(Value::as_array)
            .is_some_and(|ps| ps.iter().any(|p| p["in"] == place))
    };
    let mut added: Vec<u16> = vec![429];
    match who {
        Caller::Anyone => {}
        Caller::User => added.push(401),
        Caller::Project | Caller::AnyKey => {
            added.push(401);
            if method != "get" {
                added.push(403);
            }
        }
    }
    if op.contains_key("requestBody") {
        added.extend([400, 413, 415, 422]);
    }
    if params("query") {
        added.push(422);
    }
    if params("path") {
        added.push(404);
    }
    let security = match who {
        Caller::Anyone => json!([]),
        Caller::User => json!([{"session": []}]),
        Caller::Project => json!([{"secretKey": []}, {"session": [], "projectId": []}]),
        Caller::AnyKey => {
            json!([{"publicKey": []}, {"secretKey": []}, {"session": [], "projectId": []}])
        }
    };
    op.insert("security".into(), security);
    let responses = op
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(responses) = responses else {
        return;
    };
    for status in added {
        responses
            .entry(status.to_string())
            .or_insert_with(|| json!({}));
    }
    for (status, res) in responses.iter_mut() {
        let Some(res) = res.as_object_mut() else {
            continue;
        };
        let code = status.parse::<u16>().unwrap_or(0);
        res.entry("description")
            .or_insert_with(|| json!(description(code)));
        if code >= 400 && !res.contains_key("content") {
            res.insert(
                "content".into(),
                json!({"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}),
            );
        }
    }
}

fn description(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        204 => "No content",
        302 => "Redirect; see `Location`",
        400 => "Malformed request (unreadable JSON, a body that is not an object)",
        401 => "Missing or invalid credentials",
        403 => "Not allowed (role, disabled project or signups)",
        404 => "Not found",
        409 => "Conflicts with the current state",
        413 => "The request body is larger than this endpoint accepts",
        415 => "The body is not `application/json`",
        422 => "Invalid input; `error.errors` lists the fields",
        429 => "Rate limit exceeded; see `Retry-After`",
        500 => "Internal error",
        502 => "An upstream server failed",
        503 => "Unavailable",
        504 => "An upstream server timed out",
        _ => "Response",
    }
}

fn object_at<'a>(v: &'a mut Value, key: &str) -> &'a mut Value {
    if !v.get(key).is_some_and(Value::is_object) {
        v[key] = json!({});
    }
    &mut v[key]
}
