//! The MCP server over Streamable HTTP (`POST /mcp`) with rmcp's own client: the tool list and
//! its schemas, tools seen through REST, confirmation, read-only mode, tenant isolation, and
//! every refusal shape (bad arguments, unknown tool, oversized body, invalid JSON, a batch,
//! missing or wrong keys, a foreign Host).

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_error, expect_json};
use crate::mail_setup::outbox_project;
use crate::mcp_client::{Person, call, http, ok, refused};

both_engines!(
    tools_are_listed_with_schemas_from_the_api,
    contacts_round_trip_is_seen_through_rest,
    track_event_starts_a_workflow,
    send_email_asks_for_confirmation,
    send_email_without_a_client_that_can_ask,
    read_only_mode_lists_and_runs_only_reads,
    a_key_never_reaches_another_project,
    bad_arguments_are_tool_errors,
    the_endpoint_refuses_bad_requests,
);

const NAMES: [&str; 35] = [
    "list_contacts",
    "get_contact",
    "create_contact",
    "update_contact",
    "delete_contact",
    "subscribe_contact",
    "unsubscribe_contact",
    "send_email",
    "verify_email",
    "track_event",
    "list_templates",
    "get_template",
    "create_template",
    "update_template",
    "list_campaigns",
    "get_campaign",
    "create_campaign",
    "update_campaign",
    "get_campaign_stats",
    "test_campaign",
    "send_campaign",
    "cancel_campaign",
    "list_segments",
    "get_segment",
    "create_segment",
    "list_workflows",
    "get_workflow",
    "create_workflow",
    "update_workflow",
    "set_workflow_enabled",
    "list_workflow_executions",
    "list_domains",
    "check_domain",
    "get_activity",
    "get_analytics",
];

async fn tools_are_listed_with_schemas_from_the_api(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let client = http(&app, &p.secret_key, ()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, NAMES);

    let doc = expect_json(
        app.call(Method::GET, "/openapi.json", None, None).await,
        200,
    )
    .await;
    let tool = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object((*t.input_schema).clone())
    };
    // The body schema is the API's own, property by property.
    let create = tool("create_contact");
    let upsert = &doc["components"]["schemas"]["UpsertContactRequest"];
    for (name, schema) in upsert["properties"].as_object().unwrap() {
        assert_eq!(&create["properties"][name], schema, "create_contact.{name}");
    }
    assert_eq!(create["required"], upsert["required"]);
    // Query parameters carry the limits the route documents.
    let list = tool("list_contacts");
    let params = doc["paths"]["/contacts"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let limit = params.iter().find(|p| p["name"] == "limit").unwrap();
    assert_eq!(
        list["properties"]["limit"]["maximum"],
        limit["schema"]["maximum"]
    );
    assert_eq!(list["properties"]["subscribed"]["type"], json!("boolean"));
    assert_eq!(tool("update_contact")["required"], json!(["id"]));
    // Descriptions say what, the limits and an example.
    let send = tools.iter().find(|t| t.name == "send_email").unwrap();
    let text = send.description.as_deref().unwrap();
    assert!(
        text.contains("50 recipients") && text.contains("Example"),
        "{text}"
    );
    assert_eq!(
        send.annotations.as_ref().and_then(|a| a.destructive_hint),
        Some(true)
    );
}

async fn contacts_round_trip_is_seen_through_rest(engine: Engine) {
    // Confirmation over HTTP is covered by send_email_over_http_needs_confirmation.
    let app = engine.app_with(|c| c.mcp_allow_unconfirmed = true).await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let client = http(&app, sk, Person::approving()).await;

    let created = ok(
        &client,
        "create_contact",
        json!({"email": "Ada@Example.com", "data": {"plan": "pro"}}),
    )
    .await;
    assert_eq!(created["email"], "ada@example.com");
    let id = created["id"].as_str().unwrap().to_owned();
    let rest = expect_json(app.get(&format!("/contacts/{id}"), sk).await, 200).await;
    assert_eq!(rest["data"]["plan"], "pro");

    let by_email = ok(&client, "get_contact", json!({"email": "ada@example.com"})).await;
    assert_eq!(by_email["id"], id.as_str());
    let by_id = ok(&client, "get_contact", json!({"id": id})).await;
    assert_eq!(by_id["email"], "ada@example.com");

    ok(
        &client,
        "update_contact",
        json!({"id": id, "data": {"plan": "team"}}),
    )
    .await;
    ok(&client, "unsubscribe_contact", json!({"id": id})).await;
    let rest = expect_json(app.get(&format!("/contacts/{id}"), sk).await, 200).await;
    assert_eq!(rest["data"]["plan"], "team");
    assert_eq!(rest["subscribed"], false);
    // The subscribed filter is the route's own: the unsubscribed contact is the only match.
    ok(
        &client,
        "create_contact",
        json!({"email": "bob@example.com"}),
    )
    .await;
    let unsubscribed = ok(&client, "list_contacts", json!({"subscribed": false})).await;
    assert_eq!(
        strings(&unsubscribed["data"], "email"),
        ["ada@example.com"],
        "{unsubscribed}"
    );
    ok(&client, "subscribe_contact", json!({"id": id})).await;

    let page = ok(
        &client,
        "list_contacts",
        json!({"search": "ada", "limit": 10}),
    )
    .await;
    let rest_page = expect_json(app.get("/contacts?search=ada&limit=10", sk).await, 200).await;
    assert_eq!(page, rest_page);

    // The activity entries the REST route writes are there for MCP calls too.
    let events = expect_json(app.get(&format!("/events/contact/{id}"), sk).await, 200).await;
    let names = strings(&events["events"], "name");
    assert!(names.contains(&"contact.unsubscribed"), "{events}");
    assert!(names.contains(&"contact.subscribed"), "{events}");

    ok(&client, "delete_contact", json!({"id": id})).await;
    expect_error(
        app.get(&format!("/contacts/{id}"), sk).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    refused(
        &client,
        "get_contact",
        json!({"email": "ada@example.com"}),
        "CONTACT_NOT_FOUND",
    )
    .await;
}

async fn track_event_starts_a_workflow(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let client = http(&app, sk, ()).await;
    let wf = ok(
        &client,
        "create_workflow",
        json!({"name": "Onboarding", "triggerConfig": {"eventName": "signed_up"}}),
    )
    .await;
    let wf = wf["id"].as_str().unwrap().to_owned();
    // A step after the trigger keeps the execution waiting, so it is seen.
    let trigger = ok(&client, "get_workflow", json!({"id": wf})).await["steps"][0]["id"].clone();
    let delay = expect_json(
        app.post(
            &format!("/workflows/{wf}/steps"),
            sk,
            &json!({"type": "DELAY", "config": {"amount": 1, "unit": "days"}}),
        )
        .await,
        201,
    )
    .await;
    expect_json(
        app.post(
            &format!("/workflows/{wf}/transitions"),
            sk,
            &json!({"fromStepId": trigger, "toStepId": delay["id"]}),
        )
        .await,
        201,
    )
    .await;
    let enabled = ok(
        &client,
        "set_workflow_enabled",
        json!({"id": wf, "enabled": true}),
    )
    .await;
    assert_eq!(enabled["enabled"], true);

    let tracked = ok(
        &client,
        "track_event",
        json!({"email": "ada@example.com", "event": "signed_up", "data": {"plan": "pro"}}),
    )
    .await;
    let contact = tracked["data"]["contact"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let runs = ok(&client, "list_workflow_executions", json!({"id": wf})).await;
        let rest = expect_json(
            app.get(&format!("/workflows/{wf}/executions"), sk).await,
            200,
        )
        .await;
        // The execution moves (RUNNING, then WAITING at the DELAY): the two reads agree once
        // it has settled.
        let settled = runs["executions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["contactId"] == contact.as_str() && e["status"] == "WAITING");
        if settled && runs == rest {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no settled execution: {runs} (REST: {rest})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn emails(app: &TestApp, key: &str) -> Value {
    expect_json(app.get("/emails", key).await, 200).await
}

/// The string `key` of each item of the array `items`.
fn strings<'a>(items: &'a Value, key: &str) -> Vec<&'a str> {
    items
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item[key].as_str())
        .collect()
}

fn total(list: &Value) -> usize {
    list["data"].as_array().map_or(0, Vec::len)
}

fn mail() -> Value {
    json!({
        "to": "ada@example.com",
        "from": "hello@shop.test",
        "subject": "Welcome",
        "body": "<p>Hello</p>",
    })
}

/// Over stateless HTTP, rmcp's client negotiates a protocol older than 2026-07-28, where the
/// server cannot ask in the middle of a call: even a client that offers elicitation is refused
/// with CONFIRMATION_REQUIRED and nothing is sent (stdio asks: mcp_stdio.rs).
async fn send_email_asks_for_confirmation(engine: Engine) {
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let sk = &p.secret_key;
    let person = http(&app, sk, Person::approving()).await;
    refused(&person, "send_email", mail(), "CONFIRMATION_REQUIRED").await;
    assert_eq!(
        total(&emails(&app, sk).await),
        0,
        "nothing sent unconfirmed"
    );
}

async fn send_email_without_a_client_that_can_ask(engine: Engine) {
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let client = http(&app, &p.secret_key, ()).await;
    let refusal = refused(&client, "send_email", mail(), "CONFIRMATION_REQUIRED").await;
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("HERALD_MCP_ALLOW_UNCONFIRMED"),
        "{refusal}"
    );
    assert_eq!(total(&emails(&app, &p.secret_key).await), 0);

    let app = engine.app_with(|c| c.mcp_allow_unconfirmed = true).await;
    let p = outbox_project(&app).await;
    let client = http(&app, &p.secret_key, ()).await;
    ok(&client, "send_email", mail()).await;
    assert_eq!(total(&emails(&app, &p.secret_key).await), 1);
}

async fn read_only_mode_lists_and_runs_only_reads(engine: Engine) {
    let app = engine.app_with(|c| c.mcp_read_only = true).await;
    let p = app.project().await;
    let client = http(&app, &p.secret_key, Person::approving()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"list_contacts") && names.contains(&"get_analytics"));
    for write in [
        "create_contact",
        "send_email",
        "delete_contact",
        "track_event",
        "check_domain",
    ] {
        assert!(!names.contains(&write), "{write} offered in read-only mode");
        let err = call(&client, write, json!({"email": "ada@example.com"}))
            .await
            .expect_err("a write tool is not offered");
        assert!(err.to_string().contains("Unknown tool"), "{err}");
    }
    assert!(
        tools
            .iter()
            .all(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true))
    );
    let page = ok(&client, "list_contacts", json!({})).await;
    assert_eq!(page["data"], json!([]));
    let rest = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(rest["data"], json!([]), "nothing was written");
}

async fn a_key_never_reaches_another_project(engine: Engine) {
    let app = engine.app_with(|c| c.mcp_allow_unconfirmed = true).await;
    let a = app.project().await;
    let b = app.project().await;
    let contact = app
        .create_contact(&a.secret_key, json!({"email": "ada@example.com"}))
        .await;
    let id = contact["id"].as_str().unwrap();
    let client = http(&app, &b.secret_key, Person::approving()).await;
    for (tool, args) in [
        ("get_contact", json!({"id": id})),
        ("get_contact", json!({"email": "ada@example.com"})),
        ("update_contact", json!({"id": id, "subscribed": false})),
        ("delete_contact", json!({"id": id})),
    ] {
        refused(&client, tool, args, "CONTACT_NOT_FOUND").await;
    }
    let page = ok(&client, "list_contacts", json!({})).await;
    assert_eq!(page["data"], json!([]));
    let still = expect_json(
        app.get(&format!("/contacts/{id}"), &a.secret_key).await,
        200,
    )
    .await;
    assert_eq!(still["subscribed"], true);
}

async fn bad_arguments_are_tool_errors(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let client = http(&app, &p.secret_key, ()).await;
    // Wrong types: the route's own 422 with the field.
    let e = refused(
        &client,
        "create_contact",
        json!({"email": 42}),
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(e["error"]["errors"][0]["field"], "email", "{e}");
    let e = refused(
        &client,
        "list_contacts",
        json!({"limit": "lots"}),
        "VALIDATION_ERROR",
    )
    .await;
    assert!(e.to_string().contains("limit"), "{e}");
    refused(
        &client,
        "list_contacts",
        json!({"limit": 101}),
        "VALIDATION_ERROR",
    )
    .await;
    refused(
        &client,
        "get_template",
        json!({"id": {"nested": 1}}),
        "VALIDATION_ERROR",
    )
    .await;
    refused(&client, "get_template", json!({}), "VALIDATION_ERROR").await;
    refused(
        &client,
        "get_template",
        json!({"id": "not-an-id"}),
        "TEMPLATE_NOT_FOUND",
    )
    .await;
    // An unknown tool is the protocol's invalid-params error.
    let err = call(&client, "drop_project", json!({}))
        .await
        .expect_err("unknown tool");
    assert!(
        err.to_string().contains("Unknown tool: drop_project"),
        "{err}"
    );
    // The connection still serves.
    ok(&client, "list_segments", json!({})).await;
}

/// A raw JSON-RPC POST to /mcp.
async fn post_mcp(app: &TestApp, key: Option<&str>, body: Vec<u8>) -> reqwest::Response {
    let mut req = app
        .client
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .timeout(Duration::from_secs(20))
        .body(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.expect("POST /mcp answers")
}

fn initialize() -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}
        }
    })
    .to_string()
    .into_bytes()
}

async fn the_endpoint_refuses_bad_requests(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = p.secret_key.as_str();

    // Keys: none, a public key, a wrong secret key: the API's 401 envelope.
    expect_error(
        post_mcp(&app, None, initialize()).await,
        401,
        "MISSING_AUTH",
    )
    .await;
    expect_error(
        post_mcp(&app, Some(&p.public_key), initialize()).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let wrong = format!("sk_{}", "0".repeat(sk.len() - 3));
    expect_error(
        post_mcp(&app, Some(&wrong), initialize()).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let fine = post_mcp(&app, Some(sk), initialize()).await;
    assert_eq!(fine.status(), 200);
    let fine: Value = fine.json().await.unwrap();
    assert_eq!(fine["result"]["serverInfo"]["name"], "herald", "{fine}");

    // A Host that is neither the public URL's nor loopback (DNS rebinding) is refused.
    let foreign = app
        .client
        .post(app.url("/mcp"))
        .header("host", "attacker.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(sk)
        .body(initialize())
        .send()
        .await
        .unwrap();
    assert!(foreign.status().is_client_error(), "{}", foreign.status());

    // Not JSON: the protocol's parse error, never a 500.
    let broken = post_mcp(
        &app,
        Some(sk),
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth".to_vec(),
    )
    .await;
    let status = broken.status();
    assert!(status.is_client_error(), "{status}");
    let text = broken.text().await.unwrap();
    if let Ok(body) = serde_json::from_str::<Value>(&text) {
        assert_eq!(body["error"]["code"], -32700, "{body}");
    }

    // A batch (removed from the protocol in 2025-06-18): an error answer, not a hang or a 500.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    ]);
    let answer = post_mcp(&app, Some(sk), batch.to_string().into_bytes()).await;
    assert!(answer.status().as_u16() < 500, "{}", answer.status());
    assert!(answer.status().is_client_error(), "{}", answer.status());

    // Over the REST body limit: 413 with the envelope, and nothing written.
    let huge = "x".repeat(app.config.max_body_bytes + 1);
    let call = json!({
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "create_contact", "arguments": {"email": "big@example.com", "data": {"blob": huge}}}
    });
    expect_error(
        post_mcp(&app, Some(sk), call.to_string().into_bytes()).await,
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    let list = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(list["data"], json!([]));

    // GET (a server stream) is not offered by the stateless server.
    let get = app
        .client
        .get(app.url("/mcp"))
        .bearer_auth(sk)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405);
}
