//! The fast path of `POST /mcp` (herald-mcp's `fast_call`) answers a plain `tools/call` as
//! rmcp does. Each call is sent twice: as a plain request, which the fast path takes, and with
//! `q` weights in `Accept`, which rmcp accepts and the fast path leaves to rmcp; the two
//! answers must be the same JSON with the same status and media type.

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_json};

both_engines!(
    fast_calls_answer_as_rmcp_does,
    fast_refusals_answer_as_rmcp_does,
    calls_the_fast_path_leaves_answer_as_before,
);

/// `Accept` as a client usually sends it: the fast path takes the call.
const PLAIN: &str = "application/json, text/event-stream";
/// The same media types weighted: rmcp takes them, the fast path does not.
const WEIGHTED: &str = "application/json;q=1.0, text/event-stream;q=1.0";

struct Answer {
    status: u16,
    content_type: String,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.status, self.text))
    }
}

async fn post(
    app: &TestApp,
    key: &str,
    accept: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> Answer {
    let mut req = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(body.to_string());
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let res = req.send().await.expect("POST /mcp answers");
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Answer {
        status,
        content_type,
        text: res.text().await.expect("body"),
    }
}

fn tools_call(id: u32, name: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    })
}

/// The call through the fast path and through rmcp: the same answer. Returns the fast one.
async fn same_both_ways(
    app: &TestApp,
    key: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> Answer {
    let fast = post(app, key, PLAIN, headers, body).await;
    let rmcp = post(app, key, WEIGHTED, headers, body).await;
    assert_eq!(
        fast.status, rmcp.status,
        "{body}: {} / {}",
        fast.text, rmcp.text
    );
    assert_eq!(fast.content_type, rmcp.content_type, "{body}");
    assert_eq!(comparable(fast.json()), comparable(rmcp.json()), "{body}");
    fast
}

/// The answer without what differs from one request to the next (an error envelope's
/// `requestId` and `timestamp`), the text content read as the JSON it holds.
fn comparable(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| k != "requestId" && k != "timestamp")
                .map(|(k, v)| match (k.as_str(), v) {
                    ("text", Value::String(text)) => {
                        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
                        (k, comparable(v))
                    }
                    (_, v) => (k, comparable(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(comparable).collect()),
        other => other,
    }
}

async fn fast_calls_answer_as_rmcp_does(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = p.secret_key.as_str();
    for (i, email) in ["ada@example.com", "bob@example.com", "cy@example.com"]
        .iter()
        .enumerate()
    {
        app.create_contact(
            sk,
            json!({"email": email, "data": {"plan": "pro", "seats": i, "note": "quote \" and é\n"}}),
        )
        .await;
    }
    let ada = app.contact_by_email(sk, "ada@example.com").await;
    let id = ada["id"].as_str().expect("id");

    let list = tools_call(1, "list_contacts", json!({"limit": 100}));
    let fast = same_both_ways(&app, sk, &[], &list).await;
    assert_eq!(fast.status, 200);
    assert_eq!(fast.content_type, "application/json");
    let answer = fast.json();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["isError"], false);
    // The page is written as the REST route gave it: its own bytes are `structuredContent`,
    // and the text content is those bytes as a JSON string.
    let rest = app.get("/contacts?limit=100", sk).await;
    assert_eq!(rest.status(), 200);
    let rest = rest.text().await.expect("body");
    assert!(
        fast.text.contains(&format!("\"structuredContent\":{rest}")),
        "{}",
        fast.text
    );
    // rmcp writes the page anew from a parsed value, members sorted: so this answer came by
    // the fast path (the route's members are not in sorted order).
    let rmcp = post(&app, sk, WEIGHTED, &[], &list).await;
    assert!(
        !rmcp.text.contains(&format!("\"structuredContent\":{rest}")),
        "{}",
        rmcp.text
    );
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": rest}])
    );
    assert_eq!(
        answer["result"]["structuredContent"]["data"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    for body in [
        tools_call(2, "list_contacts", json!({"search": "ada", "limit": 10})),
        tools_call(3, "get_contact", json!({"id": id})),
        // The route ignores query parameters it does not know, as it ignores unknown fields.
        tools_call(3, "list_contacts", json!({"colour": "red"})),
        tools_call(4, "get_contact", json!({"email": "ada@example.com"})),
        json!({"jsonrpc": "2.0", "id": "call-5", "method": "tools/call", "params": {"name": "list_segments"}}),
    ] {
        let answer = same_both_ways(&app, sk, &[], &body).await.json();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let by_id = same_both_ways(
        &app,
        sk,
        &[],
        &tools_call(6, "get_contact", json!({"id": id})),
    )
    .await
    .json();
    assert_eq!(by_id["result"]["structuredContent"], ada);
    // A client that negotiated an older protocol sends its version: the same answer.
    same_both_ways(&app, sk, &[("mcp-protocol-version", "2025-06-18")], &list).await;
}

async fn fast_refusals_answer_as_rmcp_does(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = p.secret_key.as_str();

    let contact = app
        .create_contact(sk, json!({"email": "ada@example.com"}))
        .await;
    let id = contact["id"].as_str().expect("id");
    // An argument the tool does not take: the tool layer's 422 on it, as an isError result,
    // and nothing written.
    let unknown = same_both_ways(
        &app,
        sk,
        &[],
        &tools_call(
            1,
            "unsubscribe_contact",
            json!({"id": id, "subscribed": true}),
        ),
    )
    .await
    .json();
    let result = &unknown["result"];
    assert_eq!(result["isError"], true, "{unknown}");
    assert_eq!(
        result["structuredContent"]["error"]["statusCode"], 422,
        "{unknown}"
    );
    assert_eq!(
        result["structuredContent"]["error"]["code"], "VALIDATION_ERROR",
        "{unknown}"
    );
    let text: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or_default())
            .expect("the text is the envelope");
    assert_eq!(text, result["structuredContent"]);
    let errors = &result["structuredContent"]["error"]["errors"];
    assert_eq!(errors[0]["field"], "subscribed", "{unknown}");
    assert_eq!(errors[0]["code"], "unknown_field", "{unknown}");
    let still = expect_json(app.get(&format!("/contacts/{id}"), sk).await, 200).await;
    assert_eq!(still["subscribed"], true);

    // Refusals of the tool layer and of the route, through both ways.
    for (body, code) in [
        (
            tools_call(2, "list_contacts", json!({"limit": 101})),
            "VALIDATION_ERROR",
        ),
        (
            tools_call(2, "list_contacts", json!({"limit": "lots"})),
            "VALIDATION_ERROR",
        ),
        (
            tools_call(3, "get_template", json!({"id": {"nested": 1}})),
            "VALIDATION_ERROR",
        ),
        (tools_call(4, "get_template", json!({})), "VALIDATION_ERROR"),
        (
            tools_call(5, "get_contact", json!({"id": "missing"})),
            "CONTACT_NOT_FOUND",
        ),
        (
            tools_call(6, "get_contact", json!({"email": "nobody@example.com"})),
            "CONTACT_NOT_FOUND",
        ),
    ] {
        let answer = same_both_ways(&app, sk, &[], &body).await.json();
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["error"]["code"], code,
            "{answer}"
        );
    }

    // A foreign Host (DNS rebinding) is refused before any call: as rmcp refuses it.
    let call = tools_call(7, "list_contacts", json!({}));
    let foreign = [("host", "attacker.example")];
    let fast = post(&app, sk, PLAIN, &foreign, &call).await;
    let rmcp = post(&app, sk, WEIGHTED, &foreign, &call).await;
    assert_eq!(fast.status, 403, "{}", fast.text);
    assert_eq!(fast.text, "Forbidden: Host header is not allowed");
    same_refusal(&fast, &rmcp);
    // A protocol version rmcp does not know: its refusal.
    let fast = post(
        &app,
        sk,
        PLAIN,
        &[("mcp-protocol-version", "1999-01-01")],
        &call,
    )
    .await;
    let rmcp = post(
        &app,
        sk,
        WEIGHTED,
        &[("mcp-protocol-version", "1999-01-01")],
        &call,
    )
    .await;
    assert_eq!(fast.status, 400, "{}", fast.text);
    same_refusal(&fast, &rmcp);
}

/// rmcp's transport refusals are plain text: the same bytes.
fn same_refusal(fast: &Answer, rmcp: &Answer) {
    assert_eq!(
        (fast.status, &fast.content_type, &fast.text),
        (rmcp.status, &rmcp.content_type, &rmcp.text)
    );
}

/// What the fast path leaves to rmcp is answered as before: confirmation, unknown tools, reads
/// only, other methods.
async fn calls_the_fast_path_leaves_answer_as_before(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = p.secret_key.as_str();
    let mail = json!({"to": "a@example.com", "from": "hi@shop.test", "subject": "S", "body": "B"});
    let unconfirmed = same_both_ways(&app, sk, &[], &tools_call(1, "send_email", mail))
        .await
        .json();
    assert_eq!(
        unconfirmed["result"]["structuredContent"]["error"]["code"], "CONFIRMATION_REQUIRED",
        "{unconfirmed}"
    );
    let unknown = same_both_ways(&app, sk, &[], &tools_call(2, "drop_project", json!({})))
        .await
        .json();
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let tools = same_both_ways(&app, sk, &[], &list).await.json();
    assert_eq!(
        tools["result"]["tools"][0]["name"], "list_contacts",
        "{tools}"
    );

    let read_only = engine.app_with(|c| c.mcp_read_only = true).await;
    let p = read_only.project().await;
    let refused = same_both_ways(
        &read_only,
        &p.secret_key,
        &[],
        &tools_call(4, "create_contact", json!({"email": "w@example.com"})),
    )
    .await
    .json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let list = expect_json(read_only.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["data"], json!([]));
}
