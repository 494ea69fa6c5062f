//! Request extractors that fail with the error envelope: JSON bodies (400 for malformed JSON,
//! 415 for another content type, 413 when too large, 422 with a field path for wrong types),
//! ids in paths (malformed ids are simply not found), and query strings.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
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
    } else {
        ApiError::bad_request(format!("Could not read the request body: {r}"))
    }
}

/// Parses JSON, telling a syntax error (400) from a value of the wrong shape (422 with path).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("Malformed JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("The JSON body must be an object"));
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

/// The raw query string as key/value pairs, for handlers that validate each parameter
/// themselves (so a bad `limit` is reported on the field `limit`).
pub struct RawQuery(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for RawQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let q = parts.uri.query().unwrap_or("");
        let pairs = form_pairs(q);
        Ok(RawQuery(pairs))
    }
}

impl RawQuery {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// An integer parameter in `min..=max`, `default` when absent.
    pub fn int(&self, key: &str, default: u32, min: u32, max: u32) -> Result<u32, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(default),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(ApiError::field(
                    key,
                    format!("{key} must be an integer from {min} to {max}"),
                    "out_of_range",
                )),
            },
        }
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
    fn decodes_query_pairs() {
        let p = form_pairs("search=a%40b.com&limit=5&x=%zz&y=%4&z=%é");
        assert_eq!(p[0], ("search".into(), "a@b.com".into()));
        assert_eq!(p[1], ("limit".into(), "5".into()));
        assert_eq!(p[2], ("x".into(), "%zz".into()));
        assert_eq!(p[3], ("y".into(), "%4".into()));
        assert_eq!(p[4], ("z".into(), "%é".into()));
    }
}
