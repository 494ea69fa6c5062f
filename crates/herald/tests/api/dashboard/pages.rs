//! Every page's frame: security headers, assets, navigation, the 404 of a foreign or unknown
//! project, the home page's figures, escaping, and the cross-site rule on the forms.

use serde_json::json;

use super::{get, page, post_form, project_in_browser, sign_up};
use crate::both_engines;
use crate::helpers::Engine;

both_engines!(
    pages_carry_the_csp_and_no_inline_script,
    a_foreign_or_unknown_project_is_the_404_page,
    home_shows_figures_activity_and_keys,
    every_value_is_escaped,
    cross_site_form_posts_are_refused,
    the_navigation_marks_the_current_page,
);

async fn pages_carry_the_csp_and_no_inline_script(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    for path in [
        "/app/login".to_owned(),
        format!("/app/p/{}/", p.id),
        format!("/app/p/{}/contacts", p.id),
    ] {
        let res = get(&app, &c, &path).await;
        let csp = res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(res.headers()["x-frame-options"], "DENY");
        let (status, html) = page(res).await;
        assert_eq!(status, 200, "{path}");
        // Every script has a src of our own; no inline script or handler.
        for tag in html.split("<script").skip(1) {
            assert!(
                tag.trim_start().starts_with("src=\"/app/assets/"),
                "{path}: <script{tag}"
            );
        }
        assert!(!html.contains(" onclick="), "{path}");
        for attr in ["src=\"http", "href=\"http", "action=\"http", "url(http"] {
            assert!(!html.contains(attr), "{path}: no outside URL ({attr})");
        }
        // Assets: content-hashed names with a long cache.
        let css = html
            .split("href=\"/app/assets/")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .expect("stylesheet")
            .to_owned();
        assert!(
            css.starts_with("app.")
                && css.ends_with(".css")
                && css.len() == "app.12345678.css".len(),
            "{css}"
        );
        let res = get(&app, &c, &format!("/app/assets/{css}")).await;
        assert_eq!(res.status(), 200);
        assert!(
            res.headers()["cache-control"]
                .to_str()
                .unwrap()
                .contains("immutable")
        );
        assert!(
            res.text()
                .await
                .unwrap()
                .contains("prefers-color-scheme: dark")
        );
    }
    let res = get(&app, &c, "/app/assets/app.00000000.css").await;
    assert_eq!(res.status(), 404);
}

async fn a_foreign_or_unknown_project_is_the_404_page(engine: Engine) {
    let app = engine.app().await;
    let (p, owner) = project_in_browser(&app).await;
    let res = post_form(
        &app,
        &owner,
        &format!("/app/p/{}/settings", p.id),
        &[
            ("name", "Secret Orchard"),
            ("tracking", "ENABLED"),
            ("language", "en"),
        ],
    )
    .await;
    assert_eq!(res.status(), 303);
    app.create_contact(&p.secret_key, json!({"email": "hidden@orchard.example"}))
        .await;
    let stranger = sign_up(&app, "stranger@example.com").await;
    for path in [
        format!("/app/p/{}/", p.id),
        format!("/app/p/{}/contacts", p.id),
        format!("/app/p/{}/settings?tab=keys", p.id),
        "/app/p/0190f5a0-0000-7000-8000-000000000000/".to_owned(),
        "/app/p/not-an-id/contacts".to_owned(),
        "/app/nothing-here".to_owned(),
    ] {
        let (status, html) = page(get(&app, &stranger, &path).await).await;
        assert_eq!(status, 404, "{path}");
        assert!(html.contains("Page not found"), "{path}");
        assert!(
            !html.contains("Secret Orchard"),
            "{path}: nothing of that project"
        );
        assert!(!html.contains("orchard.example"), "{path}");
        assert!(!html.contains(&p.public_key), "{path}");
    }
    let res = post_form(
        &app,
        &stranger,
        &format!("/app/p/{}/contacts", p.id),
        &[("email", "x@example.com")],
    )
    .await;
    assert_eq!(res.status(), 404);
    // The owner sees it.
    let (status, html) = page(get(&app, &owner, &format!("/app/p/{}/", p.id)).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Secret Orchard"));
}

async fn home_shows_figures_activity_and_keys(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    for i in 0..3 {
        app.create_contact(
            &p.secret_key,
            json!({"email": format!("home{i}@example.com")}),
        )
        .await;
    }
    let res = app
        .post(
            "/v1/track",
            &p.public_key,
            &json!({"event": "signed-up", "email": "home1@example.com"}),
        )
        .await;
    assert!(res.status().is_success());
    let (status, html) = page(get(&app, &c, &format!("/app/p/{}/", p.id)).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(&format!(
            "<p class=\"stat-label\"><a href=\"/app/p/{}/analytics?tab=audience&#38;range=30\">Contacts</a></p>\n  <p class=\"stat-value\">3</p>",
            p.id
        )),
        "{html}"
    );
    assert!(html.contains("Emails sent, 30 days"));
    assert!(html.contains("Open rate, 30 days"));
    assert!(html.contains("Bounce rate, 30 days"));
    assert!(html.contains("Complaint rate, 30 days"));
    assert!(
        html.contains("signed-up"),
        "the tracked event is in recent activity: {html}"
    );
    assert!(html.contains(&p.public_key));
    assert!(html.contains("/v1/send"));
    assert!(
        !html.contains(&p.secret_key),
        "the secret key is never shown again"
    );
}

async fn every_value_is_escaped(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let evil = app
        .create_contact(
            &p.secret_key,
            json!({"email": "evil@example.com", "data": {
                "note": "<script>alert(1)</script>",
                "title\"><img src=x onerror=alert(2)>": "\"><img src=x onerror=alert(3)>"
            }}),
        )
        .await;
    let id = evil["id"].as_str().unwrap();
    for path in [
        format!("/app/p/{}/contacts/{id}", p.id),
        format!("/app/p/{}/contacts", p.id),
    ] {
        let (status, html) = page(get(&app, &c, &path).await).await;
        assert_eq!(status, 200, "{path}");
        assert!(!html.contains("<script>alert"), "{path}");
        assert!(!html.contains("<img src=x"), "{path}");
        assert!(!html.contains("\"><img"), "{path}");
    }
    let (_, html) = page(get(&app, &c, &format!("/app/p/{}/contacts/{id}", p.id)).await).await;
    // askama escapes `<`, `>` and `"` as numeric references.
    assert!(
        html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
        "{html}"
    );
    assert!(
        html.contains(r#"value="&#34;&#62;&#60;img src=x onerror=alert(3)&#62;""#),
        "{html}"
    );
}

async fn cross_site_form_posts_are_refused(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let path = format!("/app/p/{}/contacts", p.id);
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let res = c
            .post(app.url(&path))
            .header(name, value)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("email=csrf%40example.com&subscribed=true")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{name}");
    }
    let list =
        crate::helpers::expect_json(app.get("/contacts?search=csrf", &p.secret_key).await, 200)
            .await;
    assert_eq!(list["total"], 0, "nothing was created");
    let res = c
        .post(app.url(&path))
        .header("sec-fetch-site", "same-origin")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("email=same%40example.com&subscribed=true")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
}

async fn the_navigation_marks_the_current_page(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let (_, html) = page(get(&app, &c, &format!("/app/p/{}/contacts", p.id)).await).await;
    assert!(html.contains(r#"<nav aria-label="Main">"#));
    for label in [
        "Home",
        "Contacts",
        "Segments",
        "Templates",
        "Campaigns",
        "Workflows",
        "Activity",
        "Analytics",
        "Settings",
    ] {
        assert!(html.contains(&format!("</svg>{label}</a>")), "{label}");
    }
    assert_eq!(html.matches(r#"aria-current="page""#).count(), 1);
    assert!(
        html.contains(&format!(
            r#"<a href="/app/p/{}/contacts" aria-current="page">"#,
            p.id
        )),
        "{html}"
    );
    assert!(html.contains(">New project</a>"));
    assert!(
        html.contains("Test project"),
        "the Project switcher lists the project"
    );
    // Workflows is its own page (dashboard_workflows.rs); unknown sections are the 404.
    let (status, html) = page(get(&app, &c, &format!("/app/p/{}/workflows", p.id)).await).await;
    assert_eq!(status, 200);
    assert!(html.contains(">Create workflow</button>"));
    let (status, _) = page(get(&app, &c, &format!("/app/p/{}/nothing", p.id)).await).await;
    assert_eq!(status, 404);
}
