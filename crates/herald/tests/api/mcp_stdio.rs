//! `herald mcp` (stdio) as a child process, driven by rmcp's client: it forwards to the test
//! server, asks for confirmations during the call on a session, and turns a server that is
//! down or a bad key into tool errors while it keeps serving.

use rmcp::model::ProtocolVersion;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::outbox_project;
use crate::mcp_client::{Person, ok, refused, stdio};

both_engines!(
    the_bridge_lists_tools_and_round_trips_contacts,
    the_bridge_asks_for_confirmation_on_its_session,
);

async fn the_bridge_lists_tools_and_round_trips_contacts(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let client = stdio(&app.base, Some(&p.secret_key), ()).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 35);
    let created = ok(
        &client,
        "create_contact",
        json!({"email": "ada@example.com"}),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let rest = expect_json(
        app.get(&format!("/contacts/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(rest["email"], "ada@example.com");
    ok(
        &client,
        "update_contact",
        json!({"id": id, "data": {"plan": "pro"}}),
    )
    .await;
    let read = ok(&client, "get_contact", json!({"email": "ada@example.com"})).await;
    assert_eq!(read["data"]["plan"], "pro");
    client.cancel().await.unwrap();

    // A wrong key: the API's 401 as a tool error; the bridge keeps serving.
    let wrong = stdio(&app.base, Some("sk_wrong"), ()).await;
    refused(&wrong, "list_contacts", json!({}), "INVALID_API_KEY").await;
    refused(&wrong, "list_contacts", json!({}), "INVALID_API_KEY").await;
    wrong.cancel().await.unwrap();

    // No key at all.
    let keyless = stdio(&app.base, None, ()).await;
    let e = refused(&keyless, "list_contacts", json!({}), "MISSING_AUTH").await;
    assert!(e.to_string().contains("HERALD_API_KEY"), "{e}");
    keyless.cancel().await.unwrap();

    // No server there: a clear tool error, and the bridge is still up for the next call.
    let down = stdio("http://127.0.0.1:9", Some(&p.secret_key), ()).await;
    let e = refused(&down, "list_contacts", json!({}), "SERVER_UNREACHABLE").await;
    assert!(e.to_string().contains("127.0.0.1:9"), "{e}");
    refused(
        &down,
        "get_contact",
        json!({"id": id}),
        "SERVER_UNREACHABLE",
    )
    .await;
    assert_eq!(down.list_all_tools().await.unwrap().len(), 35);
    down.cancel().await.unwrap();
}

async fn the_bridge_asks_for_confirmation_on_its_session(engine: Engine) {
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let mail = json!({
        "to": "ada@example.com",
        "from": "hello@shop.test",
        "subject": "Hi",
        "body": "<p>Hi</p>",
    });
    // An older client: the bridge asks with elicitation/create during the call.
    let person = Person::approving().on(ProtocolVersion::V_2025_06_18);
    let client = stdio(&app.base, Some(&p.secret_key), person).await;
    ok(&client, "send_email", mail.clone()).await;
    assert_eq!(client.service().questions(), 1);
    client.cancel().await.unwrap();

    let person = Person::declining().on(ProtocolVersion::V_2025_06_18);
    let client = stdio(&app.base, Some(&p.secret_key), person).await;
    refused(&client, "send_email", mail.clone(), "CONFIRMATION_DECLINED").await;
    client.cancel().await.unwrap();

    // The current protocol: the stateless round trip, over stdio too.
    let client = stdio(&app.base, Some(&p.secret_key), Person::approving()).await;
    ok(&client, "send_email", mail).await;
    assert_eq!(client.service().questions(), 1);
    client.cancel().await.unwrap();

    let list = expect_json(app.get("/emails", &p.secret_key).await, 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 2, "{list}");
}
