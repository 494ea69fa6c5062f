//! The unsubscribe, subscribe and manage pages reached from delivered mail: idempotent
//! unsubscribe (form and RFC 8058 one-click), manage, languages, and no rate limit.

use herald_core::ids::Uuid;
use herald_core::link_token::ListPage;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::json;

use super::*;
use crate::both_engines;
use crate::helpers::expect_error;

both_engines!(
    an_unsubscribe_link_used_twice_records_one_event,
    one_click_post_unsubscribes,
    the_manage_page_changes_the_subscription,
    the_subscribe_page_subscribes_again,
    a_german_contact_gets_german_mail_and_pages,
    pages_follow_the_projects_language,
    bad_page_links_are_refused,
    the_rate_limit_never_applies_to_links_in_mail,
);

const BODY: &str = concat!(
    r#"<p>News. <a href="{{manageUrl}}">Preferences</a> "#,
    r#"<a href="{{subscribeUrl}}">Subscribe</a> <a href="{{unsubscribeUrl}}">Leave</a></p>"#
);

/// A subscribed contact with `data`, sent a MARKETING mail; returns (contact id, raw mail).
async fn marketing_mail(w: &MailWorld, data: Value) -> (String, Vec<u8>) {
    let t = template(w, "MARKETING", BODY).await;
    w.app
        .create_contact(
            &w.project.secret_key,
            json!({"email": "ada@example.org", "subscribed": true, "data": data}),
        )
        .await;
    let (_, contact, raw) = deliver(w, &json!({"to": "ada@example.org", "template": t})).await;
    (contact, raw)
}

fn list_unsubscribe(raw: &[u8]) -> String {
    let mail = parse(raw);
    let h = mail.header_raw("List-Unsubscribe").unwrap().trim();
    h.trim_start_matches('<').trim_end_matches('>').to_owned()
}

async fn html(res: reqwest::Response, status: u16) -> String {
    assert_eq!(res.status(), status);
    assert_eq!(
        res.headers()[CONTENT_TYPE],
        "text/html; charset=utf-8",
        "{:?}",
        res.headers()
    );
    assert!(res.headers().get("ratelimit-limit").is_none());
    assert_eq!(res.headers()["cache-control"], "no-store");
    res.text().await.unwrap()
}

/// Markup every page must have: a language, one heading, no script.
fn assert_accessible(page: &str, lang: &str) {
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains(&format!("<html lang=\"{lang}\">")), "{page}");
    assert_eq!(page.matches("<h1>").count(), 1, "{page}");
    assert!(page.contains("<main>"), "{page}");
    assert!(!page.to_ascii_lowercase().contains("<script"), "{page}");
}

async fn an_unsubscribe_link_used_twice_records_one_event(engine: Engine) {
    let w = world(engine).await;
    let (contact_id, raw) = marketing_mail(&w, json!({})).await;
    let url = local(&w.app, &list_unsubscribe(&raw));
    // The body's {{unsubscribeUrl}} is a link to the same page (for the same message).
    let body = parse(&raw).body_html(0).unwrap().into_owned();
    assert!(body.contains(&list_unsubscribe(&raw)), "{body}");
    let page = html(w.app.client.get(&url).send().await.unwrap(), 200).await;
    assert_accessible(&page, "en");
    assert!(page.contains("<strong>ada@example.org</strong>"), "{page}");
    assert!(
        page.contains(r#"<button type="submit">Unsubscribe</button>"#),
        "{page}"
    );
    assert_eq!(
        contact(&w, &contact_id).await["subscribed"],
        true,
        "a GET changes nothing"
    );
    for _ in 0..2 {
        let res = w
            .app
            .client
            .post(&url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body("List-Unsubscribe=One-Click")
            .send()
            .await
            .unwrap();
        let page = html(res, 200).await;
        assert!(page.contains("You are unsubscribed"), "{page}");
        assert!(page.contains(r#"role="status""#), "{page}");
    }
    assert_eq!(contact(&w, &contact_id).await["subscribed"], false);
    assert_eq!(count(&w, &contact_id, "contact.unsubscribed").await, 1);
    // Once unsubscribed, the page says so and offers to subscribe again.
    let page = html(w.app.client.get(&url).send().await.unwrap(), 200).await;
    assert!(page.contains("You are unsubscribed"), "{page}");
    assert!(
        page.contains(r#"<form method="post" action="/subscribe/"#),
        "{page}"
    );
}

async fn one_click_post_unsubscribes(engine: Engine) {
    let w = world(engine).await;
    let (contact_id, raw) = marketing_mail(&w, json!({})).await;
    let url = local(&w.app, &list_unsubscribe(&raw));
    // As a mailbox provider sends it (RFC 8058): multipart, no cookies, no Accept.
    let form = reqwest::multipart::Form::new().text("List-Unsubscribe", "One-Click");
    let res = no_redirects()
        .post(&url)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(contact(&w, &contact_id).await["subscribed"], false);
    let res = no_redirects()
        .post(&url)
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(count(&w, &contact_id, "contact.unsubscribed").await, 1);
    // Later marketing mail skips the contact.
    let t = template(&w, "MARKETING", "<p>Again</p>").await;
    let answer = expect_json(
        send(&w, &json!({"to": "ada@example.org", "template": t})).await,
        200,
    )
    .await;
    assert_eq!(answer["data"]["emails"][0]["skipped"], "unsubscribed");
}

async fn the_manage_page_changes_the_subscription(engine: Engine) {
    let w = world(engine).await;
    let (contact_id, raw) = marketing_mail(&w, json!({})).await;
    let body = parse(&raw).body_html(0).unwrap().into_owned();
    let manage = local(&w.app, &links_to(&body, "/manage/")[0]);
    let page = html(w.app.client.get(&manage).send().await.unwrap(), 200).await;
    assert_accessible(&page, "en");
    for needle in [
        "<fieldset><legend>Marketing email</legend>",
        r#"<input type="radio" id="subscribed-yes" name="subscribed" value="true" checked>"#,
        r#"<label for="subscribed-yes">"#,
        r#"<label for="subscribed-no">"#,
        r#"<button type="submit">Save preferences</button>"#,
    ] {
        assert!(page.contains(needle), "{needle} in {page}");
    }
    let post = |value: &'static str| {
        w.app
            .client
            .post(&manage)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(format!("subscribed={value}"))
            .send()
    };
    let page = html(post("false").await.unwrap(), 200).await;
    assert!(page.contains("Your preferences have been saved."), "{page}");
    assert!(page.contains(r#"value="false" checked"#), "{page}");
    assert_eq!(contact(&w, &contact_id).await["subscribed"], false);
    html(post("false").await.unwrap(), 200).await;
    assert_eq!(count(&w, &contact_id, "contact.unsubscribed").await, 1);
    html(post("true").await.unwrap(), 200).await;
    assert_eq!(contact(&w, &contact_id).await["subscribed"], true);
    assert_eq!(count(&w, &contact_id, "contact.subscribed").await, 1);
    let res = post("maybe").await.unwrap();
    let err = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(err["error"]["errors"][0]["field"], "subscribed");
    let res = w.app.client.post(&manage).send().await.unwrap();
    expect_error(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(contact(&w, &contact_id).await["subscribed"], true);
}

async fn the_subscribe_page_subscribes_again(engine: Engine) {
    let w = world(engine).await;
    let (contact_id, raw) = marketing_mail(&w, json!({})).await;
    w.app
        .client
        .post(local(&w.app, &list_unsubscribe(&raw)))
        .send()
        .await
        .unwrap();
    let body = parse(&raw).body_html(0).unwrap().into_owned();
    let subscribe = local(&w.app, &links_to(&body, "/subscribe/")[0]);
    let page = html(w.app.client.get(&subscribe).send().await.unwrap(), 200).await;
    assert!(
        page.contains(r#"<button type="submit">Subscribe</button>"#),
        "{page}"
    );
    assert_eq!(contact(&w, &contact_id).await["subscribed"], false);
    for _ in 0..2 {
        let page = html(w.app.client.post(&subscribe).send().await.unwrap(), 200).await;
        assert!(page.contains("You are subscribed"), "{page}");
    }
    assert_eq!(contact(&w, &contact_id).await["subscribed"], true);
    assert_eq!(count(&w, &contact_id, "contact.subscribed").await, 1);
}

async fn a_german_contact_gets_german_mail_and_pages(engine: Engine) {
    let w = world(engine).await;
    let (contact_id, raw) = marketing_mail(&w, json!({"locale": "de-AT"})).await;
    let mail = parse(&raw);
    let text = mail.body_text(0).unwrap();
    assert!(text.contains("Sie erhalten diese E-Mail"), "{text}");
    assert!(
        text.contains("Abmelden: https://links.example/unsubscribe/"),
        "{text}"
    );
    let body = mail.body_html(0).unwrap();
    assert!(body.contains(r#"<div lang="de""#), "{body}");
    let url = local(&w.app, &list_unsubscribe(&raw));
    let page = html(w.app.client.get(&url).send().await.unwrap(), 200).await;
    assert_accessible(&page, "de");
    assert!(page.contains("<title>Abmelden</title>"), "{page}");
    assert!(page.contains("Möchten Sie unter <strong>ada@example.org</strong> keine Marketing-E-Mails mehr erhalten?"), "{page}");
    let page = html(w.app.client.post(&url).send().await.unwrap(), 200).await;
    assert!(page.contains("Sie sind abgemeldet"), "{page}");
    assert!(page.contains("Erneut anmelden"), "{page}");
    assert_eq!(contact(&w, &contact_id).await["subscribed"], false);
}

async fn pages_follow_the_projects_language(engine: Engine) {
    let w = world(engine).await;
    set_project(&w, json!({"language": "fr"})).await;
    let (_, raw) = marketing_mail(&w, json!({"locale": "it"})).await;
    let text = parse(&raw).body_text(0).unwrap().into_owned();
    assert!(text.contains("Se désabonner: "), "{text}");
    let body = parse(&raw).body_html(0).unwrap().into_owned();
    let manage = local(&w.app, &links_to(&body, "/manage/")[0]);
    let page = html(w.app.client.get(&manage).send().await.unwrap(), 200).await;
    assert_accessible(&page, "fr");
    assert!(page.contains("Préférences e-mail"), "{page}");
    // Spanish as the project's language, a contact without a locale.
    set_project(&w, json!({"language": "es"})).await;
    let page = html(w.app.client.get(&manage).send().await.unwrap(), 200).await;
    assert_accessible(&page, "es");
    assert!(page.contains("Guardar preferencias"), "{page}");
}

async fn bad_page_links_are_refused(engine: Engine) {
    let w = world(engine).await;
    let (contact_id, raw) = marketing_mail(&w, json!({})).await;
    let url = local(&w.app, &list_unsubscribe(&raw));
    let token = url.rsplit('/').next().unwrap().to_owned();
    let mid = token.len() / 2;
    let flipped = if &token[mid..=mid] == "A" { "B" } else { "A" };
    let tampered = format!(
        "{}/unsubscribe/{}{flipped}{}",
        w.app.base,
        &token[..mid],
        &token[mid + 1..]
    );
    let res = w.app.client.post(&tampered).send().await.unwrap();
    expect_error(res, 400, "BAD_REQUEST").await;
    // A browser gets a page saying so.
    let res = w
        .app
        .client
        .get(&tampered)
        .header(ACCEPT, "text/html,application/xhtml+xml")
        .send()
        .await
        .unwrap();
    let page = html(res, 400).await;
    assert_accessible(&page, "en");
    assert!(page.contains("This link is not valid"), "{page}");
    // An unsubscribe token does not open another page.
    let res = w
        .app
        .client
        .post(format!("{}/subscribe/{token}", w.app.base))
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "BAD_REQUEST").await;
    assert_eq!(contact(&w, &contact_id).await["subscribed"], true);
    // A deleted contact: 404.
    let res = w
        .app
        .delete(&format!("/contacts/{contact_id}"), &w.project.secret_key)
        .await;
    assert_eq!(res.status(), 204);
    let res = w.app.client.post(&url).send().await.unwrap();
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    let res = w.app.client.put(&url).send().await.unwrap();
    expect_error(res, 405, "METHOD_NOT_ALLOWED").await;
}

async fn the_rate_limit_never_applies_to_links_in_mail(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.rate_limit_per_minute = 2;
            c.public_url = PUBLIC.into();
        })
        .await;
    let p = app.project().await;
    let c = app
        .create_contact(
            &p.secret_key,
            json!({"email": "ada@example.org", "subscribed": true}),
        )
        .await;
    let project: Uuid = p.id.parse().unwrap();
    let contact: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let links = &app.engine.links;
    let message = Uuid::now_v7();
    let open = links.open_url(project, message);
    let click = links.click_url(project, message, "https://shop.example/");
    let manage = links.page_url(ListPage::Manage, project, contact, None);
    let unsubscribe = links.page_url(ListPage::Unsubscribe, project, contact, None);
    // The project's limit is used up.
    app.get("/contacts", &p.secret_key).await;
    expect_error(
        app.get("/contacts", &p.secret_key).await,
        429,
        "RATE_LIMIT_EXCEEDED",
    )
    .await;
    let client = no_redirects();
    for _ in 0..5 {
        // With and without the project's key: the links never authenticate, never count.
        for key in [None, Some(&p.secret_key)] {
            let with_key = |r: reqwest::RequestBuilder| match key {
                Some(k) => r.bearer_auth(k),
                None => r,
            };
            let res = with_key(client.get(local(&app, &open)))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            let res = with_key(client.get(local(&app, &click)))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 302);
            assert_eq!(res.headers()["location"], "https://shop.example/");
            let res = with_key(client.get(local(&app, &manage)))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            assert!(res.headers().get("ratelimit-remaining").is_none());
            let res = with_key(client.post(local(&app, &unsubscribe)))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
        }
    }
    expect_error(
        app.get("/contacts", &p.secret_key).await,
        429,
        "RATE_LIMIT_EXCEEDED",
    )
    .await;
}
