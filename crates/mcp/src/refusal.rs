//! Tool results. A REST answer becomes a tool result as it is: 2xx is a success whose
//! `structuredContent` is the response body; anything else is a result with `isError: true`
//! holding the API's error envelope (code, message, status, field errors). A refusal decided
//! before the route is reached (confirmation, an argument that cannot form a URL, the bridge
//! cannot reach the server) takes the same envelope shape.

use std::fmt;

use crate::backend::Reply;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// An error the tool layer answers with, in the API's envelope shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub status: u16,
    pub code: String,
    pub message: String,
    pub errors: Vec<Value>,
}

impl Refusal {
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code: code.to_owned(),
            message: message.into(),
            errors: Vec::new(),
        }
    }

    /// A 422 on one argument, as `ApiError::field` words it.
    pub fn field(name: &str, message: String, code: &str) -> Refusal {
        Refusal {
            errors: vec![json!({"field": name, "message": message, "code": code})],
            ..Refusal::new(422, "VALIDATION_ERROR", format!("{name}: {message}"))
        }
    }

    pub fn internal(detail: String) -> Refusal {
        tracing::error!(%detail, "MCP tool failed");
        Refusal::new(500, "INTERNAL_SERVER_ERROR", "An internal error occurred")
    }

    fn envelope(&self) -> Value {
        let mut error = json!({
            "code": self.code,
            "message": self.message,
            "statusCode": self.status,
        });
        if !self.errors.is_empty() {
            error["errors"] = json!(self.errors);
        }
        json!({"success": false, "error": error, "message": self.message})
    }

    pub fn into_result(self) -> CallToolResult {
        error_result(self.envelope())
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// The tool result of a REST answer.
pub fn from_reply(reply: Reply) -> CallToolResult {
    let Reply { status, body, text } = reply;
    if (200..300).contains(&status) {
        let structured = match body {
            Value::Object(_) => body,
            Value::Null => json!({"success": true}),
            // structuredContent is an object: lists travel under `items`.
            other => json!({"items": other}),
        };
        // The REST answer's own text when it is the object itself (not written again).
        let text = text.unwrap_or_else(|| structured.to_string());
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(structured);
        return result;
    }
    if body["error"]["code"].is_string() {
        return error_result(body);
    }
    // Not an envelope (never expected from the API): keep the status visible.
    Refusal::new(
        status,
        "UNEXPECTED_RESPONSE",
        format!("HTTP {status}: {body}"),
    )
    .into_result()
}

/// An `isError` result: the envelope as JSON text and as `structuredContent`.
fn error_result(envelope: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(envelope.to_string())]);
    result.structured_content = Some(envelope);
    result
}
