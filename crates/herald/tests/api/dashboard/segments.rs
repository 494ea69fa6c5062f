//! The segment pages and the filter builder: the list and its empty state, New segment with a
//! two-group tree posted as the builder's form, the builder's buttons without JavaScript, the
//! live count equal to the API's count over several trees, a refused tree shown on its row,
//! a static segment's members added and removed, save and delete, and the 404 of another
//! project's segment.

use serde_json::{Value, json};

use super::{get, location, page, post_form, project_in_browser};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, TestProject, expect_json};

both_engines!(
    segments_list_new_segment_and_its_page,
    builder_buttons_work_as_a_plain_form,
    builder_count_equals_the_api_count_over_several_trees,
    a_refused_tree_shows_on_the_row_it_concerns,
    static_segment_members_are_added_and_removed,
    saving_changes_the_segment_and_delete_asks_first,
    another_projects_segment_is_the_404_page,
);

/// The builder's form fields for `tree` under `prefix` (what the browser posts).
fn tree_form(tree: &Value, prefix: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(list) = tree.get("conditions").and_then(Value::as_array) {
        out.push((format!("{prefix}.conditions"), String::new()));
        out.push((
            format!("{prefix}.operator"),
            tree["operator"].as_str().unwrap_or("AND").to_owned(),
        ));
        for (i, c) in list.iter().enumerate() {
            out.extend(tree_form(c, &format!("{prefix}.conditions.{i}")));
        }
        return out;
    }
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let field = text(&tree["field"]);
    match field.strip_prefix("event.") {
        Some(name) => {
            out.push((format!("{prefix}.field"), "event".to_owned()));
            out.push((format!("{prefix}.event"), name.to_owned()));
        }
        None => out.push((format!("{prefix}.field"), field)),
    }
    out.push((format!("{prefix}.operator"), text(&tree["operator"])));
    out.push((format!("{prefix}.value"), text(&tree["value"])));
    out.push((format!("{prefix}.unit"), text(&tree["unit"])));
    out
}

fn pairs(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The number in "1,234 contacts match" of a builder or count fragment.
fn shown_count(html: &str) -> Option<i64> {
    let output = &html[html.find(r#"class="fb-count"#)?..];
    let start = output.find("<strong>")? + "<strong>".len();
    let end = start + output[start..].find(" contact")?;
    output[start..end].replace(',', "").parse().ok()
}

async fn people(app: &TestApp, p: &TestProject) {
    let sk = &p.secret_key;
    let rows = [
        (
            "ann@example.com",
            true,
            json!({"plan": "pro", "logins": 12, "signedUpAt": "2026-01-10"}),
        ),
        (
            "bob@example.com",
            true,
            json!({"plan": "free", "logins": 2, "signedUpAt": "2026-03-01"}),
        ),
        (
            "cid@example.org",
            false,
            json!({"plan": "pro", "logins": 40}),
        ),
        (
            "dee@example.org",
            true,
            json!({"plan": "enterprise", "logins": 7, "signedUpAt": "2025-12-24"}),
        ),
        ("eve@example.net", true, json!({"plan": "free"})),
    ];
    for (email, subscribed, data) in rows {
        app.create_contact(
            sk,
            json!({"email": email, "subscribed": subscribed, "data": data}),
        )
        .await;
    }
    for email in ["ann@example.com", "eve@example.net"] {
        let res = app
            .post(
                "/v1/track",
                sk,
                &json!({"email": email, "event": "purchase"}),
            )
            .await;
        assert!(res.status().is_success());
    }
}

fn two_groups() -> Value {
    json!({"operator": "AND", "conditions": [
        {"operator": "OR", "conditions": [
            {"field": "data.plan", "operator": "equals", "value": "pro"},
            {"field": "data.plan", "operator": "equals", "value": "enterprise"},
        ]},
        {"operator": "AND", "conditions": [
            {"field": "data.logins", "operator": "greaterThan", "value": 5},
            {"field": "subscribed", "operator": "equals", "value": true},
        ]},
    ]})
}

async fn segments_list_new_segment_and_its_page(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    people(&app, &p).await;
    let base = format!("/app/p/{}/segments", p.id);
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("No segments yet"), "{html}");
    assert!(html.contains(">New segment</a>"));
    assert!(html.contains(r#"aria-current="page""#) && html.contains("Segments</a>"));

    let (status, html) = page(get(&app, &c, &format!("{base}/new")).await).await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"<label for="f-name">Name</label>"#));
    assert!(
        html.contains(r#"name="filters.conditions.0.field""#),
        "{html}"
    );
    assert!(html.contains(">Create segment</button>"));
    // The starter tree (subscribed contacts) is counted at once.
    assert_eq!(shown_count(&html), Some(4), "{html}");

    let mut form = vec![
        ("name".to_owned(), "Engaged paying".to_owned()),
        (
            "description".to_owned(),
            "Pro or enterprise, active".to_owned(),
        ),
        ("type".to_owned(), "DYNAMIC".to_owned()),
    ];
    form.extend(tree_form(&two_groups(), "filters"));
    let res = post_form(&app, &c, &format!("{base}/new"), &pairs(&form)).await;
    let to = location(&res);
    let id = to.rsplit('/').next().unwrap().to_owned();
    let api = expect_json(
        app.get(&format!("/segments/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(api["name"], "Engaged paying");
    assert_eq!(api["type"], "DYNAMIC");
    assert_eq!(
        api["memberCount"], 2,
        "ann (pro, 12) and dee (enterprise, 7): {api}"
    );
    assert_eq!(
        api["filters"]["conditions"][1]["conditions"][0]["value"],
        5.0
    );

    let (status, html) = page(get(&app, &c, &to).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("<h1>Engaged paying</h1>"), "{html}");
    assert!(html.contains("2 members"));
    assert_eq!(shown_count(&html), Some(2));
    assert!(html.contains(">ann@example.com</a>") && html.contains(">dee@example.org</a>"));
    assert!(!html.contains(">bob@example.com</a>"));
    // The stored tree comes back as the builder's rows.
    assert!(
        html.contains(r#"name="filters.conditions.1.conditions.0.value" value="5""#),
        "{html}"
    );

    let (_, html) = page(get(&app, &c, &base).await).await;
    assert!(html.contains(&format!(r#"<a href="{base}/{id}">Engaged paying</a>"#)));
    assert!(html.contains("1 segment"));
}

async fn builder_buttons_work_as_a_plain_form(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let new = format!("/app/p/{}/segments/new", p.id);
    let mut form = vec![("name".to_owned(), "Kept".to_owned())];
    form.extend(tree_form(
        &json!({"operator": "AND", "conditions": [
            {"field": "email", "operator": "contains", "value": "@example.com"}]}),
        "filters",
    ));
    let with = |action: &str| {
        let mut f = form.clone();
        f.push(("builder".to_owned(), action.to_owned()));
        f
    };
    // Add condition: a second row, the typed values kept, nothing created.
    let (status, html) =
        page(post_form(&app, &c, &new, &pairs(&with("add-row:filters"))).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"name="filters.conditions.1.field""#),
        "{html}"
    );
    assert!(html.contains(r#"value="Kept""#));
    assert!(html.contains(r#"value="@example.com""#));
    // Add group: a nested group with its own row and its own buttons.
    let (_, html) = page(post_form(&app, &c, &new, &pairs(&with("add-group:filters"))).await).await;
    assert!(html.contains(r#"name="filters.conditions.1.conditions""#));
    assert!(html.contains(r#"value="add-row:filters.conditions.1""#));
    // Remove: the only row goes.
    let (_, html) =
        page(post_form(&app, &c, &new, &pairs(&with("remove:filters.conditions.0"))).await).await;
    assert!(!html.contains(r#"name="filters.conditions.0.field""#));
    // A field change re-renders its operators (without JavaScript: Update count).
    let mut f = form.clone();
    for (k, v) in &mut f {
        if k == "filters.conditions.0.field" {
            *v = "createdAt".to_owned();
        }
    }
    f.push(("builder".to_owned(), "refresh".to_owned()));
    let (_, html) = page(post_form(&app, &c, &new, &pairs(&f)).await).await;
    assert!(
        html.contains(r#"<option value="within" selected>in the last</option>"#),
        "{html}"
    );
    assert!(html.contains(r#"name="filters.conditions.0.unit""#));
    let list = expect_json(app.get("/segments", &p.secret_key).await, 200).await;
    assert_eq!(
        list.as_array().unwrap().len(),
        0,
        "no button created a segment"
    );

    // The htmx endpoint answers the builder alone, with the same action applied.
    let url = format!("/app/p/{}/filter/builder?prefix=filters", p.id);
    let (status, html) =
        page(post_form(&app, &c, &url, &pairs(&with("add-row:filters"))).await).await;
    assert_eq!(status, 200);
    assert!(
        html.trim_start()
            .starts_with(r#"<div class="filter-builder""#),
        "{html}"
    );
    assert!(
        html.contains(r#"name="filters.conditions.1.field" class="fb-field" autofocus"#),
        "{html}"
    );
}

async fn builder_count_equals_the_api_count_over_several_trees(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    people(&app, &p).await;
    let sk = &p.secret_key;
    let other = expect_json(
        app.post(
            "/segments",
            sk,
            &json!({"name": "Free", "filters": {"conditions": [
                {"field": "data.plan", "operator": "equals", "value": "free"}]}}),
        )
        .await,
        201,
    )
    .await;
    let other_id = other["id"].as_str().unwrap();
    let trees = [
        two_groups(),
        json!({"operator": "OR", "conditions": [
            {"field": "email", "operator": "contains", "value": "example.org"},
            {"field": "event.purchase", "operator": "triggered"}]}),
        json!({"operator": "AND", "conditions": [
            {"field": "data.signedUpAt", "operator": "lessThan", "value": "2026-02-01"},
            {"field": "data.logins", "operator": "greaterThanOrEqual", "value": 7}]}),
        json!({"operator": "AND", "conditions": [
            {"field": "createdAt", "operator": "within", "value": 1, "unit": "days"},
            {"field": "email.opened", "operator": "notTriggered"},
            {"operator": "OR", "conditions": [
                {"field": format!("segment.{other_id}"), "operator": "memberOfSegment"},
                {"field": "data.logins", "operator": "notExists"},
                {"field": "subscribed", "operator": "equals", "value": false}]}]}),
        json!({"operator": "AND", "conditions": [
            {"field": "data.plan", "operator": "notEquals", "value": "free"},
            {"field": "event.purchase", "operator": "notTriggeredWithin", "value": 2, "unit": "hours"}]}),
    ];
    let url = format!("/app/p/{}/filter/count?prefix=filters", p.id);
    let mut seen = Vec::new();
    for (i, tree) in trees.iter().enumerate() {
        let (status, html) =
            page(post_form(&app, &c, &url, &pairs(&tree_form(tree, "filters"))).await).await;
        assert_eq!(status, 200);
        let shown = shown_count(&html).unwrap_or_else(|| panic!("tree {i}: no count in {html}"));
        let api = expect_json(
            app.post(
                "/segments",
                sk,
                &json!({"name": format!("Tree {i}"), "filters": tree}),
            )
            .await,
            201,
        )
        .await;
        let got = expect_json(
            app.get(&format!("/segments/{}", api["id"].as_str().unwrap()), sk)
                .await,
            200,
        )
        .await;
        assert_eq!(Some(shown), got["memberCount"].as_i64(), "tree {i}: {tree}");
        seen.push(shown);
    }
    // The trees are not all alike (a count that ignored the tree would not pass).
    seen.sort_unstable();
    seen.dedup();
    assert!(seen.len() >= 3, "{seen:?}");
}

async fn a_refused_tree_shows_on_the_row_it_concerns(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    people(&app, &p).await;
    let new = format!("/app/p/{}/segments/new", p.id);
    let post = |tree: Value| {
        let mut form = vec![("name".to_owned(), "Bad".to_owned())];
        form.extend(tree_form(&tree, "filters"));
        form
    };
    // A bad value for a number field: on its row, the typed value kept.
    let form = post(json!({"operator": "AND", "conditions": [
        {"field": "email", "operator": "contains", "value": "@"},
        {"field": "data.logins", "operator": "greaterThan", "value": "lots"}]}));
    let (status, html) = page(post_form(&app, &c, &new, &pairs(&form)).await).await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"name="filters.conditions.1.value" value="lots" type="text" inputmode="decimal" class="fb-number" autocomplete="off" aria-invalid="true" aria-describedby="fb-filters-conditions-1-error""#),
        "{html}"
    );
    assert!(html.contains(r#"<p class="field-error fb-error" id="fb-filters-conditions-1-error">value must be a number for this field</p>"#), "{html}");
    assert!(
        html.contains("Condition 2: value must be a number"),
        "the count area names the row"
    );
    assert!(html.contains(
        r#"<p class="field-error fb-error" id="fb-filters-conditions-0-error" hidden></p>"#
    ));
    // The live count says the same, and swaps the message in beside the row.
    let url = format!("/app/p/{}/filter/count?prefix=filters", p.id);
    let (status, html) = page(post_form(&app, &c, &url, &pairs(&form[1..])).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(
            r#"id="fb-filters-conditions-1-error" hx-swap-oob="true">value must be a number"#
        ),
        "{html}"
    );
    // Too deep: on the group that is one level too many.
    let mut deep = json!({"field": "email", "operator": "exists"});
    for _ in 0..9 {
        deep = json!({"operator": "AND", "conditions": [deep]});
    }
    let (status, html) = page(post_form(&app, &c, &new, &pairs(&post(deep))).await).await;
    assert_eq!(status, 422);
    let group = format!("filters{}", ".conditions.0".repeat(8));
    let id = format!("fb-{}-error", group.replace('.', "-"));
    assert!(
        html.contains(&format!(
            r#"<p class="field-error" id="{id}">groups nest at most 8 levels</p>"#
        )),
        "{html}"
    );
    // An unknown segment, the API's message at the top of the builder.
    let form = post(json!({"operator": "AND", "conditions": [
        {"field": "segment.0194f1c2-0000-7000-8000-000000000000", "operator": "memberOfSegment"}]}));
    let (status, html) = page(post_form(&app, &c, &new, &pairs(&form)).await).await;
    assert_eq!(status, 422);
    assert!(html.contains("does not exist"), "{html}");
    // A blank name is the name's message, and the tree keeps its count.
    let mut form = post(two_groups());
    form[0].1 = " ".to_owned();
    let (status, html) = page(post_form(&app, &c, &new, &pairs(&form)).await).await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-invalid="true" aria-describedby="f-name-error""#),
        "{html}"
    );
    assert_eq!(shown_count(&html), Some(2));
    let list = expect_json(app.get("/segments", &p.secret_key).await, 200).await;
    assert_eq!(list.as_array().unwrap().len(), 0);
}

async fn static_segment_members_are_added_and_removed(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    people(&app, &p).await;
    let new = format!("/app/p/{}/segments/new", p.id);
    let mut form = vec![
        ("name".to_owned(), "Hand picked".to_owned()),
        ("type".to_owned(), "STATIC".to_owned()),
    ];
    form.extend(tree_form(&two_groups(), "filters"));
    let to = location(&post_form(&app, &c, &new, &pairs(&form)).await);
    let id = to.rsplit('/').next().unwrap().to_owned();
    let (_, html) = page(get(&app, &c, &to).await).await;
    assert!(html.contains("No members yet"), "{html}");
    assert!(
        !html.contains("filter-builder"),
        "a static segment has no conditions"
    );
    let (_, html) = page(get(&app, &c, &format!("{to}?find=example.org")).await).await;
    assert!(
        html.contains(r#"aria-label="Add cid@example.org""#),
        "{html}"
    );
    assert!(html.contains(r#"aria-label="Add dee@example.org""#));
    assert!(!html.contains(r#"aria-label="Add ann@example.com""#));
    for email in ["cid@example.org", "dee@example.org"] {
        let res = post_form(
            &app,
            &c,
            &format!("{to}/members"),
            &[("email", email), ("find", "example.org")],
        )
        .await;
        assert_eq!(location(&res), format!("{to}?done=added&find=example.org"));
    }
    let res = post_form(
        &app,
        &c,
        &format!("{to}/members"),
        &[("email", "cid@example.org")],
    )
    .await;
    assert_eq!(location(&res), format!("{to}?done=already"));
    let (_, html) = page(get(&app, &c, &format!("{to}?find=example.org&done=added")).await).await;
    assert!(html.contains("2 members"));
    assert!(html.contains(r#"aria-label="Remove cid@example.org""#));
    assert!(html.contains("Added to the segment"));
    let api = expect_json(
        app.get(&format!("/segments/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(api["memberCount"], 2);
    let res = post_form(
        &app,
        &c,
        &format!("{to}/members/remove"),
        &[("email", "cid@example.org")],
    )
    .await;
    assert_eq!(location(&res), format!("{to}?done=removed"));
    let members = expect_json(
        app.get(&format!("/segments/{id}/contacts"), &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(members["total"], 1);
    assert_eq!(members["contacts"][0]["email"], "dee@example.org");
    // An address that is no contact: the API's refusal, in the page.
    let res = post_form(
        &app,
        &c,
        &format!("{to}/members/remove"),
        &[("email", "not an email")],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 422);
    assert!(html.contains(r#"class="alert danger""#), "{html}");
}

async fn saving_changes_the_segment_and_delete_asks_first(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    people(&app, &p).await;
    let sk = &p.secret_key;
    let s = expect_json(
        app.post(
            "/segments",
            sk,
            &json!({"name": "Pro", "filters": {"conditions": [
            {"field": "data.plan", "operator": "equals", "value": "pro"}]}}),
        )
        .await,
        201,
    )
    .await;
    let id = s["id"].as_str().unwrap();
    let to = format!("/app/p/{}/segments/{id}", p.id);
    let mut form = vec![
        ("name".to_owned(), "Paying".to_owned()),
        ("description".to_owned(), "Not free".to_owned()),
        ("trackMembership".to_owned(), "true".to_owned()),
    ];
    form.extend(tree_form(
        &json!({"operator": "AND", "conditions": [
            {"field": "data.plan", "operator": "notEquals", "value": "free"}]}),
        "filters",
    ));
    let res = post_form(&app, &c, &to, &pairs(&form)).await;
    assert_eq!(location(&res), format!("{to}?done=saved"));
    let api = expect_json(app.get(&format!("/segments/{id}"), sk).await, 200).await;
    assert_eq!(api["name"], "Paying");
    assert_eq!(api["description"], "Not free");
    assert_eq!(api["trackMembership"], true);
    assert_eq!(api["memberCount"], 3, "ann, cid, dee");
    let (_, html) = page(get(&app, &c, &format!("{to}?done=saved")).await).await;
    assert!(html.contains(r#"<p class="toast">Saved</p>"#));
    assert!(
        html.contains(
            r#"id="f-trackMembership" name="trackMembership" type="checkbox" value="true" checked"#
        ),
        "{html}"
    );
    // Its own segment is not offered as a condition (a cycle).
    assert!(!html.contains(&format!(r#"value="segment.{id}""#)));
    // Untick tracked membership.
    form.remove(2);
    post_form(&app, &c, &to, &pairs(&form)).await;
    let api = expect_json(app.get(&format!("/segments/{id}"), sk).await, 200).await;
    assert_eq!(api["trackMembership"], false);

    // Delete: without the confirmation, a second step; then gone.
    let (status, html) = page(post_form(&app, &c, &format!("{to}/delete"), &[]).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Delete the segment Paying?"), "{html}");
    assert!(
        app.get(&format!("/segments/{id}"), sk)
            .await
            .status()
            .is_success()
    );
    let res = post_form(&app, &c, &format!("{to}/delete"), &[("confirm", "yes")]).await;
    assert_eq!(location(&res), format!("/app/p/{}/segments", p.id));
    assert_eq!(
        app.get(&format!("/segments/{id}"), sk)
            .await
            .status()
            .as_u16(),
        404
    );
}

async fn another_projects_segment_is_the_404_page(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let other = app.project().await;
    let theirs = expect_json(
        app.post(
            "/segments",
            &other.secret_key,
            &json!({"name": "Theirs", "type": "STATIC"}),
        )
        .await,
        201,
    )
    .await;
    let id = theirs["id"].as_str().unwrap();
    for path in [
        format!("/app/p/{}/segments/{id}", p.id),
        format!("/app/p/{}/segments/not-an-id", p.id),
        format!("/app/p/{}/segments", other.id),
        format!("/app/p/{}/segments/{id}", other.id),
    ] {
        let (status, html) = page(get(&app, &c, &path).await).await;
        assert_eq!(status, 404, "{path}");
        assert!(!html.contains("Theirs"), "{path}");
    }
    let res = post_form(
        &app,
        &c,
        &format!("/app/p/{}/segments/{id}/delete", p.id),
        &[("confirm", "yes")],
    )
    .await;
    assert_eq!(res.status().as_u16(), 404);
    let res = post_form(&app, &c, &format!("/app/p/{}/filter/count", other.id), &[]).await;
    assert_eq!(res.status().as_u16(), 404);
    assert!(
        app.get(&format!("/segments/{id}"), &other.secret_key)
            .await
            .status()
            .is_success()
    );
}
