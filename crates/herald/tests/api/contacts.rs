//! The Contacts resource over HTTP: upsert, get, patch, delete, list, lookup, isolation.

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, error_fields, expect_error, expect_json};

both_engines!(
    upsert_creates_then_updates_with_meta,
    upsert_applies_the_custom_field_rules,
    upsert_rejects_bad_input_with_field_paths,
    get_patch_delete_round_trip,
    patch_refuses_an_email_of_another_contact,
    subscription_flips_are_recorded_as_events,
    list_pages_by_cursor_with_total_on_the_first_page,
    list_validates_limit_and_cursor,
    list_searches_email_case_insensitively,
    lookup_reports_found_and_missing,
    lookup_limits_and_validates_emails,
    projects_never_see_each_others_contacts,
);

async fn upsert_creates_then_updates_with_meta(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let res = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "  Ada@Example.COM "}),
        )
        .await;
    let created = expect_json(res, 201).await;
    assert_eq!(created["email"], "ada@example.com");
    assert_eq!(
        created["subscribed"], true,
        "POST /contacts defaults to subscribed"
    );
    assert_eq!(created["_meta"], json!({"isNew": true, "isUpdate": false}));
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));

    let res = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "ada@example.com", "subscribed": false}),
        )
        .await;
    let updated = expect_json(res, 200).await;
    assert_eq!(updated["id"], created["id"]);
    assert_eq!(updated["subscribed"], false);
    assert_eq!(updated["_meta"], json!({"isNew": false, "isUpdate": true}));

    // Omitting `subscribed` keeps the state of an existing contact.
    let res = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "ada@example.com"}),
        )
        .await;
    assert_eq!(expect_json(res, 200).await["subscribed"], false);
}

async fn upsert_applies_the_custom_field_rules(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "a@example.com", "data": {"plan": "pro", "age": 30, "city": "Oslo"}}),
    )
    .await;
    let c = app
        .create_contact(
            sk,
            json!({"email": "a@example.com", "data": {
                "plan": "team",              // changed
                "age": null,                 // deleted
                "city": "",                  // ignored
                "otp": {"value": "1234", "persistent": false}, // not stored
                "kept": {"value": 7, "persistent": true},
                "id": "x", "svc_id": 1, "svc_email": 1, "email": "x@y.z",
                "unsubscribeUrl": 1, "subscribeUrl": 1, "manageUrl": 1, // reserved: dropped
                "locale": "fr",
                "note": "line one\r\nline two"
            }}),
        )
        .await;
    assert_eq!(
        c["data"],
        json!({"plan": "team", "city": "Oslo", "kept": 7, "locale": "fr", "note": "line one\r\nline two"})
    );
    assert_eq!(c["email"], "a@example.com");
}

async fn upsert_rejects_bad_input_with_field_paths(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    for (body, field) in [
        (json!({}), "email"),
        (json!({"email": 5}), "email"),
        (json!({"email": "not-an-email"}), "email"),
        (
            json!({"email": "a@example.com\r\nBcc: evil@example.com"}),
            "email",
        ),
        (
            json!({"email": "a@example.com", "subscribed": "yes"}),
            "subscribed",
        ),
        (json!({"email": "a@example.com", "data": [1, 2]}), "data"),
        (json!({"email": "a@example.com", "data": "plan"}), "data"),
        (
            json!({"email": "a@example.com", "data": {"bad\nkey": 1}}),
            "data.bad\nkey",
        ),
    ] {
        let res = app.post("/contacts", sk, &body).await;
        let err = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), vec![field.to_string()], "{body}");
    }
    let list = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(list["total"], 0, "nothing was stored");
}

async fn get_patch_delete_round_trip(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let c = app
        .create_contact(
            sk,
            json!({"email": "b@example.com", "data": {"plan": "pro", "n": 1}}),
        )
        .await;
    let id = c["id"].as_str().unwrap();
    let got = expect_json(app.get(&format!("/contacts/{id}"), sk).await, 200).await;
    assert_eq!(got["email"], "b@example.com");
    assert!(got.get("_meta").is_none());

    let patched = expect_json(
        app.patch(
            &format!("/contacts/{id}"),
            sk,
            &json!({"email": "B2@example.com", "data": {"n": null, "extra": true}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(patched["email"], "b2@example.com");
    assert_eq!(patched["data"], json!({"plan": "pro", "extra": true}));
    assert_eq!(patched["subscribed"], true, "untouched");

    expect_error(
        app.patch(&format!("/contacts/{id}"), sk, &json!({"email": "nope"}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let res = app.delete(&format!("/contacts/{id}"), sk).await;
    assert_eq!(res.status(), 204);
    expect_error(
        app.get(&format!("/contacts/{id}"), sk).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete(&format!("/contacts/{id}"), sk).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.get("/contacts/not-a-uuid", sk).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.patch("/contacts/not-a-uuid", sk, &json!({})).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
}

async fn patch_refuses_an_email_of_another_contact(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(sk, json!({"email": "taken@example.com"}))
        .await;
    let c = app
        .create_contact(sk, json!({"email": "mine@example.com"}))
        .await;
    let res = app
        .patch(
            &format!("/contacts/{}", c["id"].as_str().unwrap()),
            sk,
            &json!({"email": "TAKEN@example.com"}),
        )
        .await;
    expect_error(res, 409, "CONFLICT").await;
    let still = expect_json(
        app.get(&format!("/contacts/{}", c["id"].as_str().unwrap()), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(still["email"], "mine@example.com");
}

async fn subscription_flips_are_recorded_as_events(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let c = app
        .create_contact(sk, json!({"email": "c@example.com"}))
        .await;
    let id = c["id"].as_str().unwrap();
    let path = format!("/contacts/{id}");
    expect_json(
        app.patch(&path, sk, &json!({"subscribed": false})).await,
        200,
    )
    .await;
    expect_json(
        app.patch(&path, sk, &json!({"subscribed": false})).await,
        200,
    )
    .await; // no flip
    expect_json(app.patch(&path, sk, &json!({"data": {"x": 1}})).await, 200).await; // no flip
    expect_json(
        app.patch(&path, sk, &json!({"subscribed": true})).await,
        200,
    )
    .await;
    let events = expect_json(app.get(&format!("/events/contact/{id}"), sk).await, 200).await;
    let names: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["contact.subscribed", "contact.unsubscribed"],
        "newest first"
    );
    assert_eq!(events["events"][0]["contactId"], id);
}

async fn list_pages_by_cursor_with_total_on_the_first_page(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    for i in 0..25 {
        app.create_contact(sk, json!({"email": format!("user{i:02}@example.com")}))
            .await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            None => "/contacts?limit=10".to_string(),
            Some(c) => format!("/contacts?limit=10&cursor={c}"),
        };
        let page = expect_json(app.get(&path, sk).await, 200).await;
        let expected_total = if cursor.is_none() { 25 } else { 0 };
        assert_eq!(page["total"], expected_total);
        for c in page["data"].as_array().unwrap() {
            seen.push(c["email"].as_str().unwrap().to_owned());
        }
        pages += 1;
        if page["hasMore"] == false {
            assert!(page["cursor"].is_null());
            break;
        }
        cursor = Some(page["cursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..25)
        .rev()
        .map(|i| format!("user{i:02}@example.com"))
        .collect();
    assert_eq!(seen, expected, "newest first, each once");
    let default = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(
        default["data"].as_array().unwrap().len(),
        20,
        "default limit 20"
    );
}

async fn list_validates_limit_and_cursor(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await;
    let b = app.project().await;
    for q in ["limit=101", "limit=0", "limit=abc", "limit=-1"] {
        let err = expect_error(
            app.get(&format!("/contacts?{q}"), &a.secret_key).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&err), vec!["limit"]);
    }
    assert_eq!(
        app.get("/contacts?limit=100", &a.secret_key).await.status(),
        200
    );
    for i in 0..3 {
        app.create_contact(&b.secret_key, json!({"email": format!("b{i}@example.com")}))
            .await;
    }
    let page = expect_json(app.get("/contacts?limit=1", &b.secret_key).await, 200).await;
    let b_cursor = page["cursor"].as_str().unwrap();
    let err = expect_error(
        app.get(&format!("/contacts?cursor={b_cursor}"), &a.secret_key)
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["cursor"]);
    let err = expect_error(
        app.get("/contacts?cursor=garbage!", &a.secret_key).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["cursor"]);
}

async fn list_searches_email_case_insensitively(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    for e in [
        "alice@acme.io",
        "bob@acme.io",
        "carol@other.io",
        "a_b@x.io",
        "axb@x.io",
    ] {
        app.create_contact(sk, json!({"email": e})).await;
    }
    let res = expect_json(app.get("/contacts?search=ACME", sk).await, 200).await;
    assert_eq!(res["total"], 2);
    assert_eq!(res["data"].as_array().unwrap().len(), 2);
    let res = expect_json(app.get("/contacts?search=a_b", sk).await, 200).await;
    assert_eq!(res["total"], 1, "underscore is literal, not a wildcard");
    let res = expect_json(app.get("/contacts?search=%25", sk).await, 200).await;
    assert_eq!(res["total"], 0, "percent is literal");
}

async fn lookup_reports_found_and_missing(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let a = app
        .create_contact(sk, json!({"email": "a@example.com"}))
        .await;
    let res = app
        .post(
            "/contacts/lookup",
            sk,
            &json!({"emails": ["A@example.com", "nobody@example.com", "a@example.com"]}),
        )
        .await;
    let body = expect_json(res, 200).await;
    assert_eq!(
        body["found"],
        json!([{"email": "a@example.com", "id": a["id"]}])
    );
    assert_eq!(body["missing"], json!(["nobody@example.com"]));
}

async fn lookup_limits_and_validates_emails(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let many: Vec<String> = (0..501).map(|i| format!("u{i}@example.com")).collect();
    let err = expect_error(
        app.post("/contacts/lookup", sk, &json!({"emails": many}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["emails"]);
    let ok: Vec<String> = (0..500).map(|i| format!("u{i}@example.com")).collect();
    let body = expect_json(
        app.post("/contacts/lookup", sk, &json!({"emails": ok}))
            .await,
        200,
    )
    .await;
    assert_eq!(body["missing"].as_array().unwrap().len(), 500);
    let err = expect_error(
        app.post(
            "/contacts/lookup",
            sk,
            &json!({"emails": ["ok@example.com", "bad", 7]}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["emails.1", "emails.2"]);
    let err = expect_error(
        app.post("/contacts/lookup", sk, &json!({})).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["emails"]);
}

async fn projects_never_see_each_others_contacts(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await;
    let b = app.project().await;
    let theirs = app
        .create_contact(&b.secret_key, json!({"email": "secret@b.example"}))
        .await;
    let id = theirs["id"].as_str().unwrap();
    app.create_contact(&a.secret_key, json!({"email": "mine@a.example"}))
        .await;

    expect_error(
        app.get(&format!("/contacts/{id}"), &a.secret_key).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.patch(
            &format!("/contacts/{id}"),
            &a.secret_key,
            &json!({"subscribed": false}),
        )
        .await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete(&format!("/contacts/{id}"), &a.secret_key).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.get(&format!("/events/contact/{id}"), &a.secret_key)
            .await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;

    let list = expect_json(app.get("/contacts?search=secret", &a.secret_key).await, 200).await;
    assert_eq!(list["total"], 0);
    let all = expect_json(app.get("/contacts", &a.secret_key).await, 200).await;
    let emails: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, vec!["mine@a.example"]);
    let look = expect_json(
        app.post(
            "/contacts/lookup",
            &a.secret_key,
            &json!({"emails": ["secret@b.example"]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(look["found"], json!([]));
    // The same email may exist in both projects independently.
    let res = app
        .post(
            "/contacts",
            &a.secret_key,
            &json!({"email": "secret@b.example"}),
        )
        .await;
    assert_eq!(expect_json(res, 201).await["_meta"]["isNew"], true);
    // B's contact is untouched.
    let still: Value = expect_json(
        app.get(&format!("/contacts/{id}"), &b.secret_key).await,
        200,
    )
    .await;
    assert_eq!(still["subscribed"], true);
    let _ = Method::GET;
}
