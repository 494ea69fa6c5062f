//! Custom fields over HTTP: the listing with inferred types and coverage, distinct values,
//! usage, and removing a field from every contact.

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    standard_fields_are_always_listed,
    custom_fields_are_listed_with_inferred_types,
    the_type_is_fixed_at_first_sight,
    coverage_is_the_share_of_contacts_with_the_key,
    nested_data_gives_dotted_fields,
    values_are_distinct_and_accept_the_bare_name,
    usage_lists_no_references_yet,
    unknown_fields_are_not_found,
    standard_fields_cannot_be_deleted,
    deleting_a_field_removes_it_from_every_contact,
    deleting_a_field_spares_fields_with_similar_names,
    another_projects_fields_are_never_listed,
);

async fn list(app: &TestApp, key: &str) -> Vec<Value> {
    let body = expect_json(app.get("/contacts/fields", key).await, 200).await;
    body["fields"].as_array().expect("fields").clone()
}

fn find<'a>(fields: &'a [Value], name: &str) -> Option<&'a Value> {
    fields.iter().find(|f| f["field"] == name)
}

fn type_of(fields: &[Value], name: &str) -> String {
    let f = find(fields, name).unwrap_or_else(|| panic!("{name} is not listed: {fields:?}"));
    f["type"].as_str().unwrap().to_owned()
}

fn names(fields: &[Value]) -> Vec<String> {
    fields
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_owned())
        .collect()
}

async fn standard_fields_are_always_listed(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let fields = list(&app, &p.secret_key).await;
    assert_eq!(
        fields,
        vec![
            json!({"field": "email", "type": "string", "isCustom": false, "coverage": 0.0}),
            json!({"field": "subscribed", "type": "boolean", "isCustom": false, "coverage": 0.0}),
            json!({"field": "createdAt", "type": "date", "isCustom": false, "coverage": 0.0}),
            json!({"field": "updatedAt", "type": "date", "isCustom": false, "coverage": 0.0}),
        ]
    );
    app.create_contact(&p.secret_key, json!({"email": "a@example.com"}))
        .await;
    let fields = list(&app, &p.secret_key).await;
    assert_eq!(
        names(&fields),
        vec!["email", "subscribed", "createdAt", "updatedAt"]
    );
    for f in &fields {
        assert_eq!(f["isCustom"], false, "{f}");
        assert_eq!(
            f["coverage"], 1.0,
            "every contact has the standard fields: {f}"
        );
    }
}

async fn custom_fields_are_listed_with_inferred_types(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let data = json!({
        "age": 42,
        "score": 1.5,
        "vip": true,
        "birthday": "2026-01-31",
        "lastSeen": "2026-01-31T10:00:00.000Z",
        "firstSeen": "2026-01-31T10:00:00Z",
        "localTime": "2026-01-31 10:00",
        "plan": "pro",
    });
    app.create_contact(
        &p.secret_key,
        json!({"email": "a@example.com", "data": data}),
    )
    .await;
    let fields = list(&app, &p.secret_key).await;
    for (name, ty) in [
        ("data.age", "number"),
        ("data.score", "number"),
        ("data.vip", "boolean"),
        ("data.birthday", "date"),
        ("data.lastSeen", "date"),
        ("data.firstSeen", "date"),
        ("data.localTime", "string"),
        ("data.plan", "string"),
    ] {
        assert_eq!(type_of(&fields, name), ty, "{name}");
        let f = find(&fields, name).unwrap();
        assert_eq!(f["isCustom"], true, "{f}");
        assert_eq!(f["coverage"], 1.0, "{f}");
    }
    assert_eq!(fields.len(), 4 + 8, "{fields:?}");
    assert!(
        find(&fields, "plan").is_none(),
        "custom names carry the data. prefix"
    );
}

async fn the_type_is_fixed_at_first_sight(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "a@example.com", "data": {"n": 5, "day": "2026-01-31", "flag": false}}),
    )
    .await;
    app.create_contact(
        sk,
        json!({"email": "b@example.com", "data": {"n": "five", "day": "someday", "flag": "no"}}),
    )
    .await;
    // Changing the first contact's value does not change the type either.
    let c = app
        .create_contact(sk, json!({"email": "a@example.com", "data": {"n": "six"}}))
        .await;
    assert_eq!(
        c["data"]["n"], "six",
        "later values of another type are still stored"
    );
    let fields = list(&app, sk).await;
    assert_eq!(type_of(&fields, "data.n"), "number");
    assert_eq!(type_of(&fields, "data.day"), "date");
    assert_eq!(type_of(&fields, "data.flag"), "boolean");
    // A key first seen as null has no type yet: the first real value decides.
    app.create_contact(
        sk,
        json!({"email": "c@example.com", "data": {"later": null}}),
    )
    .await;
    assert!(find(&list(&app, sk).await, "data.later").is_none());
    app.create_contact(
        sk,
        json!({"email": "c@example.com", "data": {"later": true}}),
    )
    .await;
    assert_eq!(type_of(&list(&app, sk).await, "data.later"), "boolean");
}

async fn coverage_is_the_share_of_contacts_with_the_key(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "a@example.com", "data": {"plan": "pro", "age": 1}}),
    )
    .await;
    app.create_contact(
        sk,
        json!({"email": "b@example.com", "data": {"plan": "free", "age": 2}}),
    )
    .await;
    app.create_contact(sk, json!({"email": "c@example.com", "data": {"age": 3}}))
        .await;
    app.create_contact(sk, json!({"email": "d@example.com"}))
        .await;
    let fields = list(&app, sk).await;
    assert_eq!(find(&fields, "data.plan").unwrap()["coverage"], 0.5);
    assert_eq!(find(&fields, "data.age").unwrap()["coverage"], 0.75);
    assert_eq!(find(&fields, "email").unwrap()["coverage"], 1.0);
    // Deleting the key from one contact lowers the coverage.
    app.create_contact(
        sk,
        json!({"email": "a@example.com", "data": {"plan": null}}),
    )
    .await;
    let fields = list(&app, sk).await;
    assert_eq!(find(&fields, "data.plan").unwrap()["coverage"], 0.25);
}

async fn nested_data_gives_dotted_fields(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "a@example.com", "data": {"address": {"city": "Oslo", "zip": 150}}}),
    )
    .await;
    app.create_contact(
        sk,
        json!({"email": "b@example.com", "data": {"address": {"city": "Bergen"}}}),
    )
    .await;
    let fields = list(&app, sk).await;
    assert_eq!(type_of(&fields, "data.address.city"), "string");
    assert_eq!(type_of(&fields, "data.address.zip"), "number");
    assert_eq!(find(&fields, "data.address.city").unwrap()["coverage"], 1.0);
    assert_eq!(find(&fields, "data.address.zip").unwrap()["coverage"], 0.5);
    let values = expect_json(
        app.get("/contacts/fields/data.address.city/values", sk)
            .await,
        200,
    )
    .await;
    assert_eq!(values["values"], json!(["Bergen", "Oslo"]));
}

async fn values_are_distinct_and_accept_the_bare_name(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    for (email, plan) in [
        ("a@example.com", "pro"),
        ("b@example.com", "free"),
        ("c@example.com", "pro"),
    ] {
        app.create_contact(
            sk,
            json!({"email": email, "data": {"plan": plan, "seats": 3}}),
        )
        .await;
    }
    app.create_contact(sk, json!({"email": "d@example.com"}))
        .await;
    let body = expect_json(app.get("/contacts/fields/data.plan/values", sk).await, 200).await;
    assert_eq!(body["field"], "data.plan");
    let mut values: Vec<String> = body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    values.sort();
    assert_eq!(values, vec!["free", "pro"]);
    let bare = expect_json(app.get("/contacts/fields/plan/values", sk).await, 200).await;
    assert_eq!(bare, body);
    let seats = expect_json(app.get("/contacts/fields/seats/values", sk).await, 200).await;
    assert_eq!(seats["values"], json!([3]), "values keep their JSON type");
    let err = expect_error(
        app.get("/contacts/fields/plan/values?limit=0", sk).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["limit"]);
    let one = expect_json(
        app.get("/contacts/fields/plan/values?limit=1", sk).await,
        200,
    )
    .await;
    assert_eq!(one["values"].as_array().unwrap().len(), 1);
}

async fn usage_lists_no_references_yet(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    app.create_contact(
        &p.secret_key,
        json!({"email": "a@example.com", "data": {"plan": "pro"}}),
    )
    .await;
    let expected = json!({"field": "data.plan", "segments": [], "campaigns": [], "workflows": []});
    let usage = expect_json(
        app.get("/contacts/fields/data.plan/usage", &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(usage, expected);
    let usage = expect_json(
        app.get("/contacts/fields/plan/usage", &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(usage, expected);
}

async fn unknown_fields_are_not_found(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "a@example.com", "data": {"plan": "pro"}}),
    )
    .await;
    for field in ["data.nope", "nope", "data.plan.deeper"] {
        expect_error(
            app.get(&format!("/contacts/fields/{field}/values"), sk)
                .await,
            404,
            "NOT_FOUND",
        )
        .await;
        expect_error(
            app.get(&format!("/contacts/fields/{field}/usage"), sk)
                .await,
            404,
            "NOT_FOUND",
        )
        .await;
        expect_error(
            app.delete(&format!("/contacts/fields/{field}"), sk).await,
            404,
            "NOT_FOUND",
        )
        .await;
    }
    let contacts = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(
        contacts["data"][0]["data"],
        json!({"plan": "pro"}),
        "nothing was removed"
    );
}

async fn standard_fields_cannot_be_deleted(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let c = app
        .create_contact(sk, json!({"email": "a@example.com"}))
        .await;
    for field in ["email", "subscribed", "createdAt", "updatedAt"] {
        let err = expect_error(
            app.delete(&format!("/contacts/fields/{field}"), sk).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&err), vec!["field"], "{err}");
    }
    let got = expect_json(
        app.get(&format!("/contacts/{}", c["id"].as_str().unwrap()), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(got["email"], "a@example.com");
    assert_eq!(got["subscribed"], true);
}

async fn deleting_a_field_removes_it_from_every_contact(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let mut ids = Vec::new();
    for (i, data) in [
        json!({"plan": "pro", "age": 1}),
        json!({"plan": "free", "city": "Oslo"}),
        json!({"age": 3}),
    ]
    .into_iter()
    .enumerate()
    {
        let c = app
            .create_contact(
                sk,
                json!({"email": format!("u{i}@example.com"), "data": data}),
            )
            .await;
        ids.push(c["id"].as_str().unwrap().to_owned());
    }
    let res = app.delete("/contacts/fields/data.plan", sk).await;
    assert_eq!(res.status(), 204);
    assert_eq!(res.text().await.unwrap(), "");
    let expected = [
        json!({"age": 1}),
        json!({"city": "Oslo"}),
        json!({"age": 3}),
    ];
    for (id, data) in ids.iter().zip(expected) {
        let c = expect_json(app.get(&format!("/contacts/{id}"), sk).await, 200).await;
        assert_eq!(c["data"], data, "{c}");
    }
    let fields = list(&app, sk).await;
    assert!(find(&fields, "data.plan").is_none(), "{fields:?}");
    assert_eq!(type_of(&fields, "data.age"), "number");
    assert_eq!(type_of(&fields, "data.city"), "string");
    expect_error(
        app.get("/contacts/fields/data.plan/values", sk).await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete("/contacts/fields/plan", sk).await,
        404,
        "NOT_FOUND",
    )
    .await;
    // The bare name deletes too, and a field can come back with a new type.
    assert_eq!(app.delete("/contacts/fields/city", sk).await.status(), 204);
    app.create_contact(sk, json!({"email": "u0@example.com", "data": {"plan": 7}}))
        .await;
    let fields = list(&app, sk).await;
    assert!(find(&fields, "data.city").is_none(), "{fields:?}");
    assert_eq!(type_of(&fields, "data.plan"), "number");
}

async fn deleting_a_field_spares_fields_with_similar_names(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let data =
        json!({"a_b": 1, "axb": {"c": 2}, "plan": "pro", "planet": "earth", "plan2": {"x": true}});
    let c = app
        .create_contact(sk, json!({"email": "a@example.com", "data": data}))
        .await;
    assert_eq!(
        app.delete("/contacts/fields/data.a_b", sk).await.status(),
        204
    );
    assert_eq!(
        app.delete("/contacts/fields/data.plan", sk).await.status(),
        204
    );
    let got = expect_json(
        app.get(&format!("/contacts/{}", c["id"].as_str().unwrap()), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(
        got["data"],
        json!({"axb": {"c": 2}, "planet": "earth", "plan2": {"x": true}})
    );
    let fields = list(&app, sk).await;
    assert_eq!(
        names(&fields)[4..],
        ["data.axb.c", "data.plan2.x", "data.planet"],
        "`_` in a name is not a wildcard"
    );
}

async fn another_projects_fields_are_never_listed(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await;
    let b = app.project().await;
    app.create_contact(
        &b.secret_key,
        json!({"email": "x@b.example", "data": {"secretPlan": "gold", "shared": 1}}),
    )
    .await;
    app.create_contact(
        &a.secret_key,
        json!({"email": "x@a.example", "data": {"shared": "text"}}),
    )
    .await;
    let fields = list(&app, &a.secret_key).await;
    assert_eq!(
        names(&fields),
        vec![
            "email",
            "subscribed",
            "createdAt",
            "updatedAt",
            "data.shared"
        ]
    );
    assert_eq!(
        type_of(&fields, "data.shared"),
        "string",
        "types are per project"
    );
    assert_eq!(find(&fields, "data.shared").unwrap()["coverage"], 1.0);
    expect_error(
        app.get("/contacts/fields/data.secretPlan/values", &a.secret_key)
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete("/contacts/fields/data.secretPlan", &a.secret_key)
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
    let shared = expect_json(
        app.get("/contacts/fields/data.shared/values", &a.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(shared["values"], json!(["text"]));
    // A deleting the shared name leaves B's contacts alone.
    assert_eq!(
        app.delete("/contacts/fields/data.shared", &a.secret_key)
            .await
            .status(),
        204
    );
    let theirs = expect_json(app.get("/contacts", &b.secret_key).await, 200).await;
    assert_eq!(
        theirs["data"][0]["data"],
        json!({"secretPlan": "gold", "shared": 1})
    );
    assert_eq!(
        type_of(&list(&app, &b.secret_key).await, "data.shared"),
        "number"
    );
}
