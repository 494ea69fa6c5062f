//! Account mails and their pages in the list pages' languages: the language of the request
//! that caused a mail (`Accept-Language`), carried by the link (`&lang=`) to the page, and
//! by the page's form to the page it posts to.

use reqwest::Method;
use serde_json::json;

use crate::account_pages::post_body;
use crate::account_setup::{PASSWORD, wait_mails};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, expect_json};

both_engines!(
    a_german_request_gets_a_german_mail_and_german_pages,
    invitations_and_resets_follow_the_requests_language,
);

async fn page(app: &TestApp, path: &str, accept_language: Option<&str>) -> (u16, String) {
    let mut req = app.client.get(app.url(path));
    if let Some(l) = accept_language {
        req = req.header("accept-language", l);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

async fn a_german_request_gets_a_german_mail_and_german_pages(engine: Engine) {
    let app = engine.app().await;
    let res = cookie_client()
        .post(app.url("/auth/signup"))
        .header("accept-language", "de-DE,de;q=0.9,en;q=0.5")
        .json(&json!({"email": "hans@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    expect_json(res, 201).await;
    let mail = &wait_mails(
        &app,
        "hans@example.com",
        "Bestätigen Sie Ihre E-Mail-Adresse",
        1,
    )
    .await[0];
    assert!(
        mail.html.contains("E-Mail-Adresse bestätigen"),
        "{}",
        mail.html
    );
    assert!(mail.html.contains("&amp;lang=de"), "{}", mail.html);
    let token = mail.token("verify-email?token");

    // The link's language, whatever the browser says.
    let (status, html) = page(
        &app,
        &format!("/verify-email?token={token}&lang=de"),
        Some("fr"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(html.contains("<html lang=\"de\">"), "{html}");
    assert!(
        html.contains("Bestätigen Sie, dass diese Adresse Ihnen gehört."),
        "{html}"
    );
    assert!(html.contains("name=\"lang\" value=\"de\""), "{html}");
    // Without `lang`: the browser's language; neither: English.
    let (_, html) = page(&app, &format!("/verify-email?token={token}"), Some("de")).await;
    assert!(html.contains("<html lang=\"de\">"), "{html}");
    let (_, html) = page(&app, &format!("/verify-email?token={token}"), None).await;
    assert!(html.contains("<html lang=\"en\">"), "{html}");
    let (status, html) = page(&app, "/verify-email", Some("de")).await;
    assert_eq!(status, 400);
    assert!(html.contains("Ungültiger Link"), "{html}");

    // The form's answer keeps the language; so does its error.
    let (status, html) = post_body(&app, "/verify-email", format!("token={token}&lang=de")).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("E-Mail-Adresse bestätigt"), "{html}");
    let (status, html) = post_body(&app, "/verify-email", format!("token={token}&lang=de")).await;
    assert_eq!(status, 400);
    assert!(html.contains("bereits verwendet"), "{html}");
}

async fn invitations_and_resets_follow_the_requests_language(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let res = p
        .owner
        .request(
            Method::POST,
            app.url(&format!("/projects/{}/members", p.id)),
        )
        .header("accept-language", "fr-FR")
        .json(&json!({"email": "amelie@example.com"}))
        .send()
        .await
        .unwrap();
    expect_json(res, 202).await;
    let mail = &wait_mails(
        &app,
        "amelie@example.com",
        "Vous êtes invité(e) à Test project",
        1,
    )
    .await[0];
    assert!(
        mail.html.contains("rejoindre Test project sur Herald"),
        "{}",
        mail.html
    );
    let token = mail.token("signup?invitation");
    let (status, html) = page(&app, &format!("/signup?invitation={token}&lang=fr"), None).await;
    assert_eq!(status, 200);
    assert!(html.contains("<html lang=\"fr\">"), "{html}");
    assert!(html.contains("Créer le compte"), "{html}");
    let (status, html) = post_body(
        &app,
        "/signup",
        format!("invitation={token}&lang=fr&password=court"),
    )
    .await;
    assert_eq!(status, 422);
    assert!(html.contains("8 à 256 caractères"), "{html}");
    let (status, html) = post_body(
        &app,
        "/signup",
        format!("invitation={token}&lang=fr&password=un+mot+de+passe"),
    )
    .await;
    assert_eq!(status, 201, "{html}");
    assert!(html.contains("Bienvenue sur Herald"), "{html}");

    let res = app
        .client
        .post(app.url("/auth/request-password-reset"))
        .header("accept-language", "es;q=0.8, it")
        .json(&json!({"email": "amelie@example.com"}))
        .send()
        .await
        .unwrap();
    expect_json(res, 200).await;
    let mail = &wait_mails(&app, "amelie@example.com", "Restablece tu contraseña", 1).await[0];
    assert!(mail.html.contains("&amp;lang=es"), "{}", mail.html);
    let token = mail.token("reset-password?token");
    let (_, html) = page(
        &app,
        &format!("/reset-password?token={token}&lang=es"),
        None,
    )
    .await;
    assert!(html.contains("Contraseña nueva"), "{html}");
}
