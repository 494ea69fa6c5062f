//! A contact's page: typed data fields edited in place, subscription, events, emails.

use serde_json::json;

use super::{get, location, page, post_form, project_in_browser};
use crate::both_engines;
use crate::helpers::{Engine, expect_json};

both_engines!(
    contact_data_is_edited_by_type,
    a_contact_of_another_project_is_404
);

async fn contact_data_is_edited_by_type(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let contact = app
        .create_contact(
            &p.secret_key,
            json!({"email": "typed@example.com", "data": {"plan": "pro", "seats": 3, "vip": true, "renews": "2027-01-31"}}),
        )
        .await;
    let id = contact["id"].as_str().unwrap();
    let res = app
        .post(
            "/v1/track",
            &p.secret_key,
            &json!({"event": "logged-in", "email": "typed@example.com"}),
        )
        .await;
    assert!(res.status().is_success());
    let path = format!("/app/p/{}/contacts/{id}", p.id);
    let (status, html) = page(get(&app, &c, &path).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"name="data.seats" type="number""#),
        "{html}"
    );
    assert!(html.contains(r#"name="data.renews" type="date""#), "{html}");
    assert!(
        html.contains(r#"<select id="d-4" name="data.vip""#) || html.contains(r#"name="data.vip""#)
    );
    assert!(html.contains("logged-in"), "its events");
    assert!(html.contains("No email sent to this contact yet"));

    // A number that is not one: the message beside the field, every typed value kept.
    let bad = [
        ("email", "typed@example.com"),
        ("subscribed", "true"),
        ("type.plan", "text"),
        ("data.plan", "team"),
        ("type.seats", "number"),
        ("data.seats", "many"),
        ("type.vip", "boolean"),
        ("data.vip", "false"),
        ("type.renews", "date"),
        ("data.renews", "2027-02-28"),
    ];
    let (status, html) = page(post_form(&app, &c, &path, &bad).await).await;
    assert_eq!(status, 422);
    assert!(html.contains("Enter a number"), "{html}");
    assert!(
        html.contains(r#"value="many" aria-invalid="true""#),
        "{html}"
    );
    assert!(html.contains(r#"value="team""#), "typed values kept");
    let unchanged = expect_json(
        app.get(&format!("/contacts/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(unchanged["data"]["plan"], "pro");

    let good = [
        ("email", "typed@example.com"),
        ("type.plan", "text"),
        ("data.plan", "team"),
        ("type.seats", "number"),
        ("data.seats", "12"),
        ("type.vip", "boolean"),
        ("data.vip", "false"),
        ("type.renews", "date"),
        ("data.renews", "2027-02-28"),
        ("remove.renews", "true"),
        ("new_key", "score"),
        ("new_type", "number"),
        ("new_value", "4.5"),
    ];
    let res = post_form(&app, &c, &path, &good).await;
    assert_eq!(location(&res), format!("{path}?saved=1"));
    let saved = expect_json(
        app.get(&format!("/contacts/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(saved["data"]["plan"], "team");
    assert_eq!(saved["data"]["seats"], 12);
    assert_eq!(saved["data"]["vip"], false);
    assert_eq!(saved["data"]["score"], 4.5);
    assert!(saved["data"].get("renews").is_none(), "removed");
    assert_eq!(saved["subscribed"], false, "the unticked box unsubscribes");
    let (_, html) = page(get(&app, &c, &format!("{path}?saved=1")).await).await;
    assert!(html.contains(r#"<p class="toast">Saved</p>"#));

    // A bad email comes back from the API's own check, beside the field.
    let (status, html) = page(post_form(&app, &c, &path, &[("email", "broken")]).await).await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-email-error""#),
        "{html}"
    );
}

async fn a_contact_of_another_project_is_404(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let other = app.project().await;
    let theirs = app
        .create_contact(&other.secret_key, json!({"email": "theirs@example.com"}))
        .await;
    let path = format!(
        "/app/p/{}/contacts/{}",
        p.id,
        theirs["id"].as_str().unwrap()
    );
    let (status, html) = page(get(&app, &c, &path).await).await;
    assert_eq!(status, 404);
    assert!(!html.contains("theirs@example.com"));
    let (status, _) =
        page(post_form(&app, &c, &path, &[("email", "mine@example.com")]).await).await;
    assert_eq!(status, 404);
    let (status, _) = page(get(&app, &c, &format!("/app/p/{}/contacts/nope", p.id)).await).await;
    assert_eq!(status, 404);
}
