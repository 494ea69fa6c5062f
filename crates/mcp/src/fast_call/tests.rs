//! The fast path's pieces against rmcp's own answers: the written success is the bytes rmcp
//! serialises for the same REST answer, and the head and body checks take only what rmcp
//! would serve the same way.

use axum::http::{HeaderMap, HeaderValue};
use serde_json::json;

use super::*;

fn raw(status: u16, body: &str) -> RawReply {
    RawReply {
        status,
        bytes: Bytes::from(body.to_owned()),
    }
}

/// What rmcp writes for the handler's result of this REST answer.
fn through_rmcp(id: RequestId, reply: &RawReply) -> Vec<u8> {
    let Ok(bytes) = result_message(id, from_reply(reply.parse())) else {
        panic!("rmcp's message does not serialise");
    };
    bytes
}

fn written(id: &RequestId, reply: &RawReply) -> Vec<u8> {
    let Some((text, structured)) = success_text(reply) else {
        panic!("not a success object");
    };
    let Ok(bytes) = success_message(id, text, structured) else {
        panic!("not written");
    };
    bytes
}

#[test]
fn a_success_is_written_as_rmcp_serialises_it() {
    // Keys in order and no spaces: rmcp's re-serialised `Value` is then the same bytes.
    let body =
        r#"{"cursor":null,"data":[{"email":"a\"b@example.com","name":"Zoë\n\u0001"}],"total":1}"#;
    for id in [
        RequestId::Number(7),
        RequestId::Number(-3),
        RequestId::String("a\"id\\é".into()),
    ] {
        let reply = raw(200, body);
        assert_eq!(
            String::from_utf8_lossy(&written(&id, &reply)),
            String::from_utf8_lossy(&through_rmcp(id.clone(), &reply)),
        );
    }
}

#[test]
fn any_object_is_the_same_json_as_through_rmcp() {
    // The REST order of members is kept (rmcp sorts them): equal as JSON.
    let reply = raw(
        201,
        r#" {"total":2,"data":[1.5,true,{"b":1,"a":[]}],"cursor":"x"} "#,
    );
    let id = RequestId::Number(1);
    let fast: Value = serde_json::from_slice(&written(&id, &reply)).unwrap_or_default();
    let rmcp: Value = serde_json::from_slice(&through_rmcp(id, &reply)).unwrap_or_default();
    assert_eq!(fast, rmcp);
    assert_eq!(fast["result"]["isError"], json!(false));
}

#[test]
fn only_a_success_object_is_written_around_the_bytes() {
    assert!(success_text(&raw(200, "{}")).is_some());
    assert!(success_text(&raw(204, "")).is_none());
    assert!(success_text(&raw(200, "[1,2]")).is_none());
    assert!(success_text(&raw(200, "{\"a\":")).is_none());
    assert!(success_text(&raw(200, "not json")).is_none());
    assert!(
        success_text(&raw(
            422,
            r#"{"success":false,"error":{"code":"VALIDATION_ERROR"}}"#
        ))
        .is_none()
    );
}

#[test]
fn only_a_plain_tools_call_is_taken() {
    let plain = |v: Value| plain_call(v.to_string().as_bytes()).is_some();
    assert!(plain(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "list_contacts", "arguments": {"limit": 100}}})
    ));
    assert!(plain(
        json!({"jsonrpc": "2.0", "id": "x", "method": "tools/call",
        "params": {"name": "list_segments"}})
    ));
    for other in [
        // A batch, a notification, another method, another version.
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_contacts"}}]),
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "list_contacts"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"name": "list_contacts"}}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": {"name": "list_contacts"}}),
        // Request metadata, a confirmation's answer, state to echo, arguments not an object.
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_contacts", "_meta": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "send_email", "inputResponses": {}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "send_email", "requestState": "s"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_contacts", "arguments": [1]}}),
        // An id rmcp does not take, a member more.
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/call", "params": {"name": "list_contacts"}}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "list_contacts"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_contacts"}, "x": 1}),
    ] {
        assert!(!plain(other.clone()), "{other}");
    }
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn the_host_is_one_rmcp_allows() {
    let allowed = [
        "localhost".to_owned(),
        "::1".to_owned(),
        "mail.example.com".to_owned(),
    ];
    for host in ["localhost:8080", "LOCALHOST", "[::1]:9", "Mail.Example.com"] {
        assert!(
            host_allowed(&headers(&[("host", host)]), &allowed),
            "{host}"
        );
    }
    for host in ["attacker.example", "localhost.attacker.example", "", "a b"] {
        assert!(
            !host_allowed(&headers(&[("host", host)]), &allowed),
            "{host}"
        );
    }
    assert!(!host_allowed(&HeaderMap::new(), &allowed));
}

#[test]
fn accept_and_content_type_are_the_plain_ones() {
    let both = |pairs| accepts_json_and_event_stream(&headers(pairs));
    assert!(both(&[("accept", "application/json, text/event-stream")]));
    assert!(both(&[
        ("accept", "text/event-stream"),
        ("accept", "Application/JSON")
    ]));
    assert!(!both(&[("accept", "application/json")]));
    // Weights and quoted parameters are rmcp's to judge (the API tests force rmcp this way).
    assert!(!both(&[(
        "accept",
        "application/json;q=1.0, text/event-stream;q=1.0"
    )]));
    assert!(!both(&[(
        "accept",
        "application/json;q=0, text/event-stream"
    )]));
    assert!(!both(&[(
        "accept",
        "a/b;x=\",\", application/json, text/event-stream"
    )]));

    let json_body = |value| content_type_is_json(&headers(&[("content-type", value)]));
    assert!(json_body("application/json"));
    assert!(json_body("Application/Json; charset=utf-8"));
    assert!(!json_body("text/plain"));
    assert!(!content_type_is_json(&HeaderMap::new()));
}

#[test]
fn protocol_versions_with_request_metadata_go_to_rmcp() {
    let version =
        |v| protocol_before_per_request_metadata(&headers(&[("mcp-protocol-version", v)]));
    assert!(protocol_before_per_request_metadata(&HeaderMap::new()));
    assert!(version("2025-06-18"));
    assert!(version("2025-11-25"));
    assert!(version("2024-11-05"));
    assert!(!version("2026-07-28"));
    assert!(!version("2025-01-01"));
    assert!(!version("latest"));
}
