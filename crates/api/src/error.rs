//! The one error type of the API and its envelope.
//!
//! Handlers return `ApiError`; its response carries the error as an extension and the
//! outermost middleware ([`crate::envelope`]) renders the SPEC.md body with the request id and
//! timestamp, so every failure, including axum's own rejections and panics, has one shape.
//! Internal errors are logged and never echoed.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_store::StoreError;
use serde::Serialize;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// Dot path of the offending field, e.g. `attachments.0.filename`.
    pub field: String,
    pub message: String,
    pub code: String,
}

impl FieldError {
    pub fn new(
        field: impl Into<String>,
        message: impl Into<String>,
        code: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            code: code.into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub errors: Vec<FieldError>,
    pub suggestion: Option<String>,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after: Option<u64>,
    /// Machine-readable facts about the error (`error.details`), e.g. what keeps a domain in use.
    /// Boxed: rare, and every handler's `Result` carries an `ApiError`'s size.
    pub details: Option<Box<serde_json::Value>>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
            suggestion: None,
            retry_after: None,
            details: None,
        }
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn with_suggestion(mut self, s: impl Into<String>) -> Self {
        self.suggestion = Some(s.into());
        self
    }

    /// 422 with field-level details.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let message = match errors.as_slice() {
            [one] if one.field.is_empty() => one.message.clone(),
            [one] => format!("{}: {}", one.field, one.message),
            _ => format!("{} fields are invalid", errors.len()),
        };
        Self {
            errors,
            ..Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "VALIDATION_ERROR",
                message,
            )
        }
    }

    /// 422 for one field.
    pub fn field(
        field: impl Into<String>,
        message: impl Into<String>,
        code: impl Into<String>,
    ) -> Self {
        Self::validation(vec![FieldError::new(field, message, code)])
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }

    pub fn not_found(code: &'static str, what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, format!("{what} not found"))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "CONFLICT", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn unauthorized(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message)
    }

    pub fn not_implemented(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_IMPLEMENTED,
            "NOT_IMPLEMENTED",
            format!("{what} is not implemented in this version of Herald"),
        )
    }

    /// Logs the cause and answers a bare 500.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_SERVER_ERROR",
            "An unexpected error occurred",
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found("NOT_FOUND", "Resource"),
            StoreError::Conflict(_) => {
                ApiError::conflict("The resource conflicts with an existing one")
            }
            e if e.is_unavailable() => {
                tracing::warn!(error = %e, "the database is unavailable; answered 503");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    "The database is unavailable for a moment",
                )
                .with_suggestion(
                    "Retry shortly; send writes with an Idempotency-Key so a retry of one whose \
                     commit was cut off is not recorded twice",
                )
                .with_retry_after(1)
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::internal(format!("{e:#}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = self.status.into_response();
        if let Some(secs) = self.retry_after {
            res.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        res.extensions_mut().insert(self);
        res
    }
}
