//! Signing in, up and out through the dashboard's forms; the signed-out redirect and back.

use super::{
    PASSWORD, browser, encode, get, location, owner_email, page, post_form, project_in_browser,
    sign_up,
};
use crate::account_setup::wait_mails;
use crate::both_engines;
use crate::helpers::Engine;

both_engines!(
    a_signed_out_visit_goes_to_login_and_comes_back,
    a_form_post_without_a_session_comes_back_to_a_page_not_a_405,
    login_and_signup_errors_render_beside_their_fields,
    signup_lands_on_new_project_and_logout_ends_the_session,
    password_reset_through_the_dashboard_pages,
);

async fn a_signed_out_visit_goes_to_login_and_comes_back(engine: Engine) {
    let app = engine.app().await;
    let c = browser();
    let res = get(&app, &c, "/").await;
    assert_eq!(location(&res), "/app/");
    let res = get(&app, &c, "/app/").await;
    assert!(location(&res).starts_with("/app/login?next="));

    sign_up(&app, "back@example.com").await;
    let project_page = "/app/projects/new";
    let res = get(&app, &c, project_page).await;
    let to = location(&res);
    assert_eq!(to, "/app/login?next=%2Fapp%2Fprojects%2Fnew");
    let (status, html) = page(get(&app, &c, &to).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"name="next" value="/app/projects/new""#),
        "{html}"
    );
    assert!(html.contains(">Create an account</a>"));
    let res = post_form(
        &app,
        &c,
        "/app/login",
        &[
            ("email", "back@example.com"),
            ("password", PASSWORD),
            ("next", "/app/projects/new"),
        ],
    )
    .await;
    assert_eq!(location(&res), "/app/projects/new");
    let (status, html) = page(get(&app, &c, project_page).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("<h1>New project</h1>"));

    // `next` never leaves the dashboard.
    let res = post_form(
        &app,
        &browser(),
        "/app/login",
        &[
            ("email", "back@example.com"),
            ("password", PASSWORD),
            ("next", "https://evil.example/"),
        ],
    )
    .await;
    assert_eq!(location(&res), "/app/projects/new");
}

async fn login_and_signup_errors_render_beside_their_fields(engine: Engine) {
    let app = engine.app().await;
    sign_up(&app, "taken@example.com").await;
    let c = browser();
    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/login",
            &[
                ("email", "taken@example.com"),
                ("password", "wrong password"),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(status, 401);
    assert!(html.contains("Invalid email or password"), "{html}");
    assert!(
        html.contains(r#"value="taken@example.com""#),
        "typed email kept: {html}"
    );
    assert!(
        !html.contains("wrong password"),
        "a password is never echoed"
    );

    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/signup",
            &[("email", "not-an-address"), ("password", "short")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(html.contains(r#"value="not-an-address""#), "{html}");
    assert!(
        html.contains(r#"aria-invalid="true" aria-describedby="f-email-error""#),
        "{html}"
    );
    assert!(html.contains(r#"id="f-email-error""#));
    assert!(
        html.contains(r#"aria-invalid="true" aria-describedby="f-password-error""#),
        "{html}"
    );
    assert!(
        html.contains("password must be 8 to 256 characters"),
        "{html}"
    );
    assert!(!html.contains("\"success\":false"), "never raw JSON");

    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/signup",
            &[("email", "taken@example.com"), ("password", PASSWORD)],
        )
        .await,
    )
    .await;
    assert_eq!(status, 409);
    assert!(html.contains("already exists"), "{html}");
}

async fn signup_lands_on_new_project_and_logout_ends_the_session(engine: Engine) {
    let app = engine.app().await;
    let c = browser();
    let res = post_form(
        &app,
        &c,
        "/app/signup",
        &[("email", "new@example.com"), ("password", PASSWORD)],
    )
    .await;
    assert_eq!(location(&res), "/app/projects/new");
    let (status, html) =
        page(post_form(&app, &c, "/app/projects/new", &[("name", "  ")]).await).await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-name-error""#),
        "{html}"
    );
    let (status, html) =
        page(post_form(&app, &c, "/app/projects/new", &[("name", "Acme")]).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Project created"));
    let secret = html
        .split("sk_")
        .nth(1)
        .map(|s| format!("sk_{}", &s[..48]))
        .expect("the secret key is shown once");
    let res = app.get("/contacts", &secret).await;
    assert_eq!(res.status(), 200, "the shown secret key works");
    // Signing in again lands on the project's home.
    let res = get(&app, &c, "/app/").await;
    let home = location(&res);
    assert!(home.starts_with("/app/p/") && home.ends_with('/'), "{home}");
    let (status, html) = page(get(&app, &c, &home).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("<h1>Acme</h1>"), "{html}");

    let res = post_form(&app, &c, "/app/logout", &[]).await;
    assert_eq!(location(&res), "/app/login");
    let res = get(&app, &c, &home).await;
    assert!(location(&res).starts_with("/app/login?next="));
}

async fn password_reset_through_the_dashboard_pages(engine: Engine) {
    let app = engine.app().await;
    sign_up(&app, "forgot@example.com").await;
    let c = browser();
    let (status, html) =
        page(post_form(&app, &c, "/app/forgot-password", &[("email", "nope")]).await).await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-email-error""#),
        "{html}"
    );
    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/forgot-password",
            &[("email", "forgot@example.com")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    assert!(html.contains("Check your inbox"));
    let (status, html) = page(get(&app, &c, "/app/reset-password").await).await;
    assert_eq!(status, 400);
    assert!(html.contains("This link is incomplete"));
    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/reset-password",
            &[("token", "0000"), ("password", PASSWORD)],
        )
        .await,
    )
    .await;
    assert!(status == 400 || status == 422, "{status}");
    assert!(html.contains(r#"name="token" value="0000""#), "{html}");

    let token =
        wait_mails(&app, "forgot@example.com", "Reset", 1).await[0].token("reset-password?token");
    let form_page = format!("/app/reset-password?token={token}");
    let (status, html) = page(get(&app, &c, &form_page).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Choose a new password"));
    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/reset-password",
            &[("token", &token), ("password", "short")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-password-error""#),
        "{html}"
    );
    let res = post_form(
        &app,
        &c,
        "/app/reset-password",
        &[("token", &token), ("password", "a brand new password")],
    )
    .await;
    assert_eq!(location(&res), "/app/login?done=reset");
    let (_, html) = page(get(&app, &c, "/app/login?done=reset").await).await;
    assert!(html.contains("Your password is changed"));
    let res = post_form(
        &app,
        &c,
        "/app/login",
        &[
            ("email", "forgot@example.com"),
            ("password", "a brand new password"),
        ],
    )
    .await;
    assert_eq!(location(&res), "/app/projects/new");
}

/// A session that ended while a form was open: its post goes to the login and back to a GET
/// page (the page of the form, from a same-origin `Referer`, else the route's section page),
/// never to the form route itself (POST only: a GET of it answers 405).
async fn a_form_post_without_a_session_comes_back_to_a_page_not_a_405(engine: Engine) {
    let app = engine.app().await;
    let (p, _) = project_in_browser(&app).await;
    let email = owner_email(&app, &p).await;
    let pid = &p.id;
    let settings_domains = format!("/app/p/{pid}/settings?tab=domains");
    let signed_out = browser();
    let post = |path: String, referer: Option<String>| {
        let mut req = signed_out
            .post(app.url(&path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("domain=mail.example.com");
        if let Some(r) = referer {
            req = req.header("referer", r);
        }
        req.send()
    };
    let escaped = |p: &str| encode(&[("next", p)])["next=".len()..].to_owned();

    // The page the form was on, from the same-origin Referer.
    let res = post(
        format!("/app/p/{pid}/settings/domains"),
        Some(app.url(&settings_domains)),
    )
    .await
    .unwrap();
    assert_eq!(
        location(&res),
        format!("/app/login?next={}", escaped(&settings_domains))
    );
    // No Referer, or another site's: the section page the route belongs to.
    for referer in [None, Some("https://evil.example/app/p/x/".to_owned())] {
        let res = post(format!("/app/p/{pid}/contacts/bulk"), referer)
            .await
            .unwrap();
        let contacts = format!("/app/p/{pid}/contacts");
        assert_eq!(
            location(&res),
            format!("/app/login?next={}", escaped(&contacts))
        );
    }
    let res = post(format!("/app/p/{pid}/settings/domains/x/verify"), None)
        .await
        .unwrap();
    let settings = format!("/app/p/{pid}/settings");
    assert_eq!(
        location(&res),
        format!("/app/login?next={}", escaped(&settings))
    );

    // Signing in with that `next` lands on a page that answers 200.
    for back in [settings_domains, settings] {
        let c = browser();
        let res = post_form(
            &app,
            &c,
            "/app/login",
            &[("email", &email), ("password", PASSWORD), ("next", &back)],
        )
        .await;
        assert_eq!(location(&res), back);
        let (status, _) = page(get(&app, &c, &back).await).await;
        assert_eq!(status, 200, "{back}");
    }
}
