//! The contacts page: the table, search, the subscribed filter, cursor pages, New contact with
//! its errors in place.

use serde_json::json;

use super::{get, location, page, post_form, project_in_browser};
use crate::both_engines;
use crate::helpers::{Engine, expect_json};

both_engines!(
    contacts_list_search_filter_and_pages,
    new_contact_errors_stay_in_the_dialog,
);

async fn contacts_list_search_filter_and_pages(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/contacts", p.id);
    let (_, html) = page(get(&app, &c, &base).await).await;
    assert!(html.contains("No contacts yet"), "the empty state: {html}");
    for i in 0..55 {
        let subscribed = i % 5 != 0;
        app.create_contact(
            &p.secret_key,
            json!({"email": format!("person{i:02}@example.com"), "subscribed": subscribed}),
        )
        .await;
    }
    app.create_contact(&p.secret_key, json!({"email": "zed@other.example"}))
        .await;
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"<th scope="col">Email</th>"#));
    assert!(html.contains(r#"<th scope="col">Subscribed</th>"#));
    assert!(html.contains(r#"<label for="f-search">Search</label>"#));
    assert!(html.contains(">New contact</button>"));
    assert!(html.contains(">Import</button>"));
    assert!(html.contains("56 contacts"), "{html}");
    assert_eq!(html.matches(r#"name="ids""#).count(), 50, "one page of 50");
    // Each row's email links to its page.
    let zed = app
        .contact_by_email(&p.secret_key, "zed@other.example")
        .await;
    assert!(html.contains(&format!(
        r#"<a href="{base}/{}">zed@other.example</a>"#,
        zed["id"].as_str().unwrap()
    )));
    // Next page, then Previous back to the first.
    let next = html
        .split(r#"href=""#)
        .filter_map(|s| s.split('"').next())
        .find(|h| h.contains("cursor="))
        .expect("a Next link")
        .replace("&amp;", "&");
    let (_, page2) = page(get(&app, &c, &next).await).await;
    assert_eq!(page2.matches(r#"name="ids""#).count(), 6);
    assert!(page2.contains("Page 2"));
    let previous = page2
        .split(r#"href=""#)
        .filter_map(|s| s.split('"').next())
        .find(|h| h.contains("back=") || (h.starts_with(&base) && h.contains("cursor=")))
        .map(|h| h.replace("&amp;", "&"));
    if let Some(prev) = previous {
        let (_, again) = page(get(&app, &c, &prev).await).await;
        assert_eq!(again.matches(r#"name="ids""#).count(), 50);
    }

    let (_, html) = page(get(&app, &c, &format!("{base}?search=other.example")).await).await;
    assert_eq!(html.matches(r#"name="ids""#).count(), 1);
    assert!(html.contains("1 contact"));
    let (_, html) = page(get(&app, &c, &format!("{base}?subscribed=false")).await).await;
    assert_eq!(
        html.matches(r#"name="ids""#).count(),
        11,
        "person00, 05, ... 50"
    );
    assert!(html.contains("11 contacts"));
    let (_, html) = page(get(&app, &c, &format!("{base}?search=nobody")).await).await;
    assert!(html.contains("No contact matches this search"));
    // The API has the same filter.
    let api = expect_json(
        app.get("/contacts?subscribed=false&limit=100", &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(api["total"], 11);
    assert_eq!(api["data"].as_array().unwrap().len(), 11);
}

async fn new_contact_errors_stay_in_the_dialog(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/contacts", p.id);
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &base,
            &[("email", "not an email"), ("subscribed", "true")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"<dialog id="new-contact" aria-labelledby="new-contact-title" data-open>"#),
        "{html}"
    );
    assert!(html.contains(r#"value="not an email""#));
    assert!(html.contains(r#"aria-invalid="true" aria-describedby="f-email-error""#));
    let res = post_form(
        &app,
        &c,
        &base,
        &[("email", "Fresh@Example.com"), ("subscribed", "true")],
    )
    .await;
    let to = location(&res);
    assert!(to.starts_with(&format!("{base}/")), "{to}");
    // A second submit of the same form creates nothing new.
    let res = post_form(
        &app,
        &c,
        &base,
        &[("email", "fresh@example.com"), ("subscribed", "true")],
    )
    .await;
    assert_eq!(location(&res), to);
    let list = expect_json(app.get("/contacts?search=fresh", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["data"][0]["subscribed"], true);
    let (status, html) = page(get(&app, &c, &to).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("<h1>fresh@example.com</h1>"), "{html}");
}
