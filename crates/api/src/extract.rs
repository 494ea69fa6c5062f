//! Request extractors that fail with the error envelope: JSON bodies (400 for malformed JSON,
//! 415 for another content type, 413 when too large, 422 with a field path for wrong types),
//! ids in paths (malformed ids are simply not found), and query strings.
//!
//! Invariant: no string containing U+0000 gets past this module. A NUL anywhere in a JSON body
//! (any key or string value, at any depth, known field or not) or in a query parameter (key or
//! value, on every route: [`refuse_nul_in_url`] runs for all of them, and checks the path too) is a 422
//! `VALIDATION_ERROR` with code `invalid_characters` and the field's dot path, before any
//! handler or store sees it. PostgreSQL cannot store NUL in text and SQLite would, so refusing
//! it here is what makes both engines answer alike.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use herald_core::ids::Uuid;
use serde::de::DeserializeOwned;

use crate::envelope::payload_too_large;
use crate::error::{ApiError, FieldError};

/// A JSON body.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let mime = ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            });
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "BAD_REQUEST",
                "Expected a JSON body with Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(body_rejection)?;
        parse_json(&bytes).map(ApiJson)
    }
}

fn body_rejection(r: BytesRejection) -> ApiError {
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
        payload_too_large()
    } else if timed_out(&r) {
        // The server's body read timeout (HERALD_BODY_TIMEOUT_SECS) fails the read this way.
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "REQUEST_TIMEOUT",
            "The request body did not arrive in time",
        )
    } else {
        ApiError::bad_request(format!("Could not read the request body: {r}"))
    }
}

fn timed_out(r: &BytesRejection) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(r);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// Parses JSON, telling a syntax error (400) from a value of the wrong shape (422 with path).
///
/// A body is first read straight into `T` (strings are copied once, or not at all when `T`
/// takes them borrowed, as `/v1/send` attachments do); only when that fails is it read again
/// through a `Value` to find which error to report, so errors are the same as before.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    // JSON can carry U+0000 only as the escape `\u0000`: a body that may hold one takes the
    // slow path, which refuses it with its field path.
    let may_hold_nul = bytes.windows(6).any(|w| w == b"\\u0000");
    if first == Some(&b'{') && !may_hold_nul {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        if let Ok(v) = T::deserialize(&mut de)
            && de.end().is_ok()
        {
            return Ok(v);
        }
    }
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("Malformed JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("The JSON body must be an object"));
    }
    if let Some(field) = nul_path(&value) {
        return Err(nul_error(field));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        let inner = e.into_inner().to_string();
        let code = if inner.starts_with("missing field") {
            "required"
        } else {
            "invalid_type"
        };
        ApiError::validation(vec![FieldError::new(field, inner, code)])
    })
}

/// Parses a path id; anything that is not an id is "not found", like another project's id.
pub fn path_id(raw: &str, code: &'static str, what: &str) -> Result<Uuid, ApiError> {
    herald_core::ids::parse_id(raw).ok_or_else(|| ApiError::not_found(code, what))
}

/// The raw query string as key/value pairs, for a handler whose parameters are another
/// party's (the OAuth callback); list routes use a typed [`Query`](crate::query::Query).
pub struct RawQuery(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for RawQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        checked_query(parts.uri.query().unwrap_or("")).map(RawQuery)
    }
}

/// Middleware for every route: a NUL in any query parameter is refused, also where the
/// handler reads no query at all, with the same check [`RawQuery`] applies; so is a `%00` in
/// the path (a path segment such as a field name may reach the store), reported as `path`.
pub async fn refuse_nul_in_url(req: Request, next: Next) -> Response {
    if req.uri().path().contains("%00") {
        return nul_error("path".to_owned()).into_response();
    }
    match req.uri().query().map(checked_query) {
        Some(Err(e)) => e.into_response(),
        _ => next.run(req).await,
    }
}

/// The decoded query pairs, or the 422 for the first parameter holding a NUL or given more
/// than once (every parameter takes one value, so a repeated one is ambiguous, not ignored).
pub(crate) fn checked_query(q: &str) -> Result<Vec<(String, String)>, ApiError> {
    let pairs = form_pairs(q);
    if let Some((k, _)) = pairs
        .iter()
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
    {
        return Err(nul_error(escape_nul(k)));
    }
    // One pass with a set: the number of pairs is the client's to choose.
    let mut seen = std::collections::HashSet::with_capacity(pairs.len());
    if let Some((k, _)) = pairs.iter().find(|(k, _)| !seen.insert(k.as_str())) {
        return Err(ApiError::field(
            k.clone(),
            format!("{k} is given more than once"),
            "duplicate_parameter",
        ));
    }
    Ok(pairs)
}

fn nul_error(field: String) -> ApiError {
    ApiError::field(
        field,
        "must not contain NUL characters (U+0000)",
        "invalid_characters",
    )
}

/// A key as it appears in a field path, with any NUL written as `\u0000`.
fn escape_nul(key: &str) -> String {
    key.replace('\0', "\\u0000")
}

/// The dot path (`data.tags.2`, `headers.X-Note`) of the first key or string holding a NUL.
fn nul_path(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    fn join(parent: &str, key: &str) -> String {
        if parent.is_empty() {
            key.to_owned()
        } else {
            format!("{parent}.{key}")
        }
    }
    // serde_json limits nesting to 128 levels, so this recursion is bounded.
    fn walk(value: &Value, path: &str) -> Option<String> {
        match value {
            Value::String(s) if s.contains('\0') => Some(path.to_owned()),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, &join(path, &i.to_string()))),
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                let here = join(path, &escape_nul(k));
                if k.contains('\0') {
                    Some(here)
                } else {
                    walk(v, &here)
                }
            }),
            _ => None,
        }
    }
    walk(value, "")
}

impl RawQuery {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `application/x-www-form-urlencoded` pairs (`+` is a space, bad escapes kept verbatim).
fn form_pairs(q: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_query_parameter_is_refused() {
        assert!(checked_query("limit=5&cursor=").is_ok());
        let err = checked_query("minutes=&limit=2&minutes=5").unwrap_err();
        assert_eq!(err.errors[0].field, "minutes");
        assert_eq!(err.errors[0].code, "duplicate_parameter");
    }

    #[test]
    fn decodes_query_pairs() {
        let p = form_pairs("search=a%40b.com&limit=5&x=%zz&y=%4&z=%é");
        assert_eq!(p[0], ("search".into(), "a@b.com".into()));
        assert_eq!(p[1], ("limit".into(), "5".into()));
        assert_eq!(p[2], ("x".into(), "%zz".into()));
        assert_eq!(p[3], ("y".into(), "%4".into()));
        assert_eq!(p[4], ("z".into(), "%é".into()));
    }

    #[test]
    fn a_nul_anywhere_in_json_is_refused_with_its_path() {
        let cases = [
            (r#"{"name":"a\u0000b"}"#, "name"),
            (
                r#"{"data":{"plan":{"tags":["ok","x\u0000"]}}}"#,
                "data.plan.tags.1",
            ),
            (r#"{"data":{"k\u0000":1}}"#, "data.k\\u0000"),
            (r#"{"unknown":[{"deep":"\u0000"}]}"#, "unknown.0.deep"),
        ];
        for (body, field) in cases {
            let err = parse_json::<serde_json::Value>(body.as_bytes()).unwrap_err();
            assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert_eq!(err.errors.len(), 1, "{body}");
            assert_eq!(err.errors[0].field, field, "{body}");
            assert_eq!(err.errors[0].code, "invalid_characters", "{body}");
        }
        // Escaped text that only looks like a NUL is fine.
        assert!(parse_json::<serde_json::Value>(br#"{"a":"\\u0000","b":"%00"}"#).is_ok());
    }

    #[test]
    fn a_nul_in_a_query_key_or_value_is_refused() {
        let err = checked_query("limit=5&search=a%00b").unwrap_err();
        assert_eq!(err.errors[0].field, "search");
        assert_eq!(err.errors[0].code, "invalid_characters");
        let err = checked_query("ty%00pe=x").unwrap_err();
        assert_eq!(err.errors[0].field, "ty\\u0000pe");
        assert_eq!(checked_query("search=a%2500").unwrap()[0].1, "a%00");
    }
}
