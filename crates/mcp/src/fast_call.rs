//! The fast path of `POST /mcp`: a plain `tools/call` answered without rmcp's per-request
//! service, and its success written around the REST answer's bytes.
//!
//! rmcp serves each stateless request with a service of its own (a spawned task and a
//! channel) and builds the result as a `serde_json::Value`, so a page of contacts was parsed,
//! then written out twice. That cost about half as much again as the REST call itself
//! (docs/benchmarks.md, `mcp`). This path takes only requests it can answer exactly as rmcp
//! would, and hands every other one to rmcp untouched:
//!
//! - the checks rmcp makes in stateless JSON-response mode pass, judged conservatively: an
//!   allowed `Host` (DNS rebinding; no `Origin` list is configured, so rmcp checks none), an
//!   `Accept` naming both `application/json` and `text/event-stream` without parameters, a
//!   JSON `Content-Type`, no `MCP-Protocol-Version` header or a known one older than
//!   `2026-07-28` (from that version on a request carries `_meta` and standard headers), and a
//!   `Content-Length` within the body limit;
//! - the body is one JSON-RPC request `tools/call` with only `name` and `arguments` (no batch,
//!   no notification, no `_meta`, no answer to a confirmation);
//! - the tool is offered in this mode and needs no confirmation, decided by the same
//!   [`HeraldTools`] functions the rmcp handler uses.
//!
//! The call is then the handler's own REST call ([`HeraldTools::reply`]). A success whose body
//! is a JSON object is written directly: the text content is the body as a JSON string and
//! `structuredContent` the body's own bytes; any other answer (a refusal, an error envelope)
//! is built and serialised with rmcp's types as the handler would. The result is the one rmcp
//! gives a client of a protocol before `2026-07-28` (no `resultType`).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::model::{CallToolResult, ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::backend::{Caller, RawReply};
use crate::handler::HeraldTools;
use crate::refusal::from_reply;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// What the fast path needs: the tools, and the transport settings rmcp was given.
pub struct FastCall {
    pub tools: HeraldTools,
    /// Hosts as given to rmcp (`with_allowed_hosts`): bare names, no ports.
    pub allowed_hosts: Vec<String>,
    pub max_body_bytes: usize,
}

/// The middleware before rmcp's service: answers a plain `tools/call`, passes anything else on.
pub async fn answer(State(fast): State<Arc<FastCall>>, req: Request, next: Next) -> Response {
    if !fast.takes(&req) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match read_body(body, fast.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let Some(call) = plain_call(&bytes) else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let Some(spec) = fast
        .tools
        .offered(&call.params.name)
        .filter(|spec| !fast.tools.needs_confirmation(spec))
    else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let caller = Caller::from_parts(&parts);
    let args = call.params.arguments.unwrap_or_default();
    let written = match fast.tools.reply(spec, args, &caller).await {
        Ok(reply) => match success_text(&reply) {
            Some((text, raw)) => success_message(&call.id, text, raw),
            None => result_message(call.id, from_reply(reply.parse())),
        },
        Err(refusal) => result_message(call.id, refusal.into_result()),
    };
    match written {
        Ok(body) => ([(header::CONTENT_TYPE, JSON)], body).into_response(),
        // rmcp's own answer when its response does not serialise (never expected).
        Err(e) => {
            tracing::error!("Internal server error when serialize json response: {e}");
            bare(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Encounter an error when serialize json response: {e}"),
            )
        }
    }
}

impl FastCall {
    /// Whether the request's head is one rmcp would take in stateless JSON-response mode and
    /// the fast path can answer; `false` leaves it to rmcp (which may refuse it).
    fn takes(&self, req: &Request) -> bool {
        let headers = req.headers();
        req.method() == Method::POST
            && host_allowed(headers, &self.allowed_hosts)
            && accepts_json_and_event_stream(headers)
            && content_type_is_json(headers)
            && protocol_before_per_request_metadata(headers)
            && headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok())
                .is_some_and(|len| len <= self.max_body_bytes)
    }
}

/// rmcp's DNS-rebinding check for a `Host` header: the host part, without brackets and in
/// lower case, is one of the allowed hosts (which carry no port). No `Host` header (HTTP/2's
/// `:authority` alone) is left to rmcp.
fn host_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(authority) = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| axum::http::uri::Authority::try_from(h).ok())
    else {
        return false;
    };
    let host = authority
        .host()
        .trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase();
    allowed.iter().any(|a| a.eq_ignore_ascii_case(&host))
}

/// Both media types listed plainly. rmcp also weighs `q` parameters and quoted strings; an
/// `Accept` using them is left to it.
fn accepts_json_and_event_stream(headers: &HeaderMap) -> bool {
    let (mut json, mut event_stream) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains('"') {
            return false;
        }
        for entry in value.split(',').map(str::trim) {
            json |= entry.eq_ignore_ascii_case(JSON);
            event_stream |= entry.eq_ignore_ascii_case(EVENT_STREAM);
        }
    }
    json && event_stream
}

/// rmcp's rule: the media type before any parameter is `application/json`.
fn content_type_is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case(JSON)
        })
}

/// No `MCP-Protocol-Version`, or a known version older than `2026-07-28`: then rmcp checks
/// neither standard headers nor request `_meta`, and answers in the older shape.
fn protocol_before_per_request_metadata(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get("mcp-protocol-version") else {
        return true;
    };
    value.to_str().is_ok_and(|v| {
        v < ProtocolVersion::V_2026_07_28.as_str()
            && ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == v)
    })
}

/// The body, bounded as rmcp bounds it; a failure is answered as rmcp answers it.
async fn read_body(body: Body, max_bytes: usize) -> Result<Bytes, Response> {
    match Limited::new(body, max_bytes).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(bare(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: request body exceeds {max_bytes} bytes"),
        )),
        Err(e) => Err(bare(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Failed to read request body: {e}"),
        )),
    }
}

/// A text answer without a `Content-Type`, as rmcp writes its transport errors (the API's
/// envelope layer then treats it as it treats rmcp's).
fn bare(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}

/// A JSON-RPC request with exactly these members; anything more is rmcp's to read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainCall {
    jsonrpc: String,
    /// rmcp's own id type, so the id is accepted and written back exactly as rmcp does.
    id: RequestId,
    method: String,
    params: PlainParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

fn plain_call(body: &[u8]) -> Option<PlainCall> {
    serde_json::from_slice::<PlainCall>(body)
        .ok()
        .filter(|c| c.jsonrpc == "2.0" && c.method == "tools/call")
}

/// A 2xx answer whose body is a JSON object: its text, and the object's own bytes. This is
/// the case where the handler's result is that text with the object as `structuredContent`.
fn success_text(reply: &RawReply) -> Option<(&str, &str)> {
    if !(200..300).contains(&reply.status) {
        return None;
    }
    let text = std::str::from_utf8(&reply.bytes).ok()?;
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    let raw = raw.get();
    raw.starts_with('{').then_some((text, raw))
}

/// `{"jsonrpc":"2.0","id":…,"result":{"content":[{"type":"text","text":…}],
/// "structuredContent":…,"isError":false}}`, the members in rmcp's order, written around the
/// answer's bytes.
fn success_message(id: &RequestId, text: &str, structured: &str) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() + structured.len() + text.len() / 8 + 128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    serde_json::to_writer(&mut out, text)?;
    out.extend_from_slice(br#"}],"structuredContent":"#);
    out.extend_from_slice(structured.as_bytes());
    out.extend_from_slice(br#","isError":false}}"#);
    Ok(out)
}

/// Any other result, as rmcp's handler answers a client before `2026-07-28`.
fn result_message(id: RequestId, result: CallToolResult) -> serde_json::Result<Vec<u8>> {
    let mut result = ServerResult::CallToolResult(result);
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    serde_json::to_vec(&ServerJsonRpcMessage::response(result, id))
}

#[cfg(test)]
mod tests;
