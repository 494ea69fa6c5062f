//! Settings: General with errors in place, API keys regenerated after confirming (the new
//! secret shown once), Domains with their records and Verify, Members, Billing (only with a
//! payment provider: consumption, caps, subscription, invoices, checkout), reset and delete.

use serde_json::json;

use super::{get, location, page, post_form, project_in_browser, sign_up};
use crate::both_engines;
use crate::helpers::{Engine, expect_json};

both_engines!(
    general_settings_save_and_show_errors_in_place,
    keys_regenerate_after_confirming_and_show_the_secret_once,
    domains_show_records_and_verify,
    members_invite_change_role_and_remove,
    reset_and_delete_ask_for_the_name,
    billing_shows_consumption_caps_and_invoices_when_payments_are_on,
);

async fn general_settings_save_and_show_errors_in_place(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/settings", p.id);
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"<nav class="tabs" aria-label="Settings">"#));
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &base,
            &[
                ("name", "Renamed"),
                ("tracking", "DISABLED"),
                ("language", "not a tag!"),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-language-error""#),
        "{html}"
    );
    assert!(html.contains(r#"value="Renamed""#), "typed values kept");
    let res = post_form(
        &app,
        &c,
        &base,
        &[
            ("name", "Renamed"),
            ("tracking", "DISABLED"),
            ("language", "pt-BR"),
        ],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=general&notice=saved"));
    let projects = expect_json(
        app.call_with(
            &p.owner,
            reqwest::Method::GET,
            "/users/@me/projects",
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(projects[0]["name"], "Renamed");
    assert_eq!(projects[0]["tracking"], "DISABLED");
    assert_eq!(projects[0]["language"], "pt-BR");
}

async fn keys_regenerate_after_confirming_and_show_the_secret_once(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/settings", p.id);
    let (_, html) = page(post_form(&app, &c, &format!("{base}/keys"), &[]).await).await;
    assert!(
        html.contains("Regenerate both keys? The current keys stop working at once"),
        "{html}"
    );
    assert_eq!(
        app.get("/contacts", &p.secret_key).await.status(),
        200,
        "nothing changed yet"
    );
    let (status, html) =
        page(post_form(&app, &c, &format!("{base}/keys"), &[("confirm", "yes")]).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Copy the new secret key now"));
    let secret = html
        .split("id=\"new-secret\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .expect("the new secret")
        .to_owned();
    assert!(secret.starts_with("sk_") && secret.len() == 51, "{secret}");
    assert_eq!(
        app.get("/contacts", &p.secret_key).await.status(),
        401,
        "the old key is dead"
    );
    assert_eq!(app.get("/contacts", &secret).await.status(), 200);
    let (_, html) = page(get(&app, &c, &format!("{base}?tab=keys")).await).await;
    assert!(!html.contains(&secret), "shown once");
    assert!(html.contains(&secret[..10]), "its prefix tells it apart");
}

async fn domains_show_records_and_verify(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/settings", p.id);
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/domains"),
            &[("domain", "not a domain")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-domain-error""#),
        "{html}"
    );
    assert!(html.contains(r#"value="not a domain""#));
    let res = post_form(
        &app,
        &c,
        &format!("{base}/domains"),
        &[("domain", "mail.example.test")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=domains&notice=domain"));
    let (_, html) = page(get(&app, &c, &format!("{base}?tab=domains")).await).await;
    assert!(html.contains("mail.example.test"));
    assert!(
        html.contains("_domainkey.mail.example.test"),
        "the DKIM record: {html}"
    );
    assert!(html.contains("v=DKIM1"));
    assert!(
        html.matches("data-copy=\"rec-").count() >= 6,
        "a copy button per name and value"
    );
    assert!(html.contains(">Verify</button>"));
    let domains = expect_json(
        app.get(&format!("/domains/project/{}", p.id), &p.secret_key)
            .await,
        200,
    )
    .await;
    let id = domains[0]["id"].as_str().unwrap().to_owned();
    let res = post_form(&app, &c, &format!("{base}/domains/{id}/verify"), &[]).await;
    assert_eq!(
        location(&res),
        format!("{base}?tab=domains&notice=verified")
    );
    let (_, html) = page(get(&app, &c, &format!("{base}?tab=domains&notice=verified")).await).await;
    assert!(
        html.contains(r#"<span class="badge success">Verified</span>"#),
        "a reserved domain verifies with the outbox: {html}"
    );
}

async fn members_invite_change_role_and_remove(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    sign_up(&app, "colleague@example.com").await;
    let base = format!("/app/p/{}/settings", p.id);
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/members"),
            &[("email", "nope"), ("role", "MEMBER")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-email-error""#),
        "{html}"
    );
    let res = post_form(
        &app,
        &c,
        &format!("{base}/members"),
        &[("email", "colleague@example.com"), ("role", "MEMBER")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=members&notice=joined"));
    let members = expect_json(
        app.call_with(
            &p.owner,
            reqwest::Method::GET,
            &format!("/projects/{}/members", p.id),
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    let colleague = members
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "colleague@example.com")
        .expect("joined");
    let uid = colleague["userId"].as_str().unwrap().to_owned();
    let res = post_form(
        &app,
        &c,
        &format!("{base}/members/{uid}"),
        &[("role", "ADMIN")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=members&notice=role"));
    let (_, html) = page(get(&app, &c, &format!("{base}?tab=members")).await).await;
    assert!(html.contains("colleague@example.com"));
    let res = post_form(
        &app,
        &c,
        &format!("{base}/members/{uid}"),
        &[("remove", "yes"), ("confirm", "yes")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=members&notice=removed"));
    let members = expect_json(
        app.call_with(
            &p.owner,
            reqwest::Method::GET,
            &format!("/projects/{}/members", p.id),
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(members.as_array().unwrap().len(), 1);
    // A new address gets an invitation.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/members"),
        &[("email", "newbie@example.com"), ("role", "ADMIN")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=members&notice=invited"));
}

async fn reset_and_delete_ask_for_the_name(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    app.create_contact(&p.secret_key, json!({"email": "gone@example.com"}))
        .await;
    let base = format!("/app/p/{}/settings", p.id);
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/reset"),
            &[("confirmation", "wrong")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-confirmation-error""#),
        "{html}"
    );
    let res = post_form(
        &app,
        &c,
        &format!("{base}/reset"),
        &[("confirmation", "Test project")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=danger&notice=reset"));
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 0);
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/delete"),
            &[("delete_confirmation", "nope")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-delete_confirmation-error""#),
        "{html}"
    );
    let res = post_form(
        &app,
        &c,
        &format!("{base}/delete"),
        &[("delete_confirmation", "Test project")],
    )
    .await;
    assert_eq!(location(&res), "/app/");
    assert_eq!(app.get("/contacts", &p.secret_key).await.status(), 401);
    let (status, _) = page(get(&app, &c, &format!("/app/p/{}/", p.id)).await).await;
    assert_eq!(status, 404);
}

async fn billing_shows_consumption_caps_and_invoices_when_payments_are_on(engine: Engine) {
    // Without a provider there is no Billing tab, and asking for it shows General.
    let plain = engine.app().await;
    let (p, c) = project_in_browser(&plain).await;
    let base = format!("/app/p/{}/settings", p.id);
    let (_, html) = page(get(&plain, &c, &format!("{base}?tab=billing")).await).await;
    assert!(!html.contains(">Billing</a>"), "{html}");
    assert!(html.contains(r#"id="general-heading""#));

    let stripe = crate::payments::stand_in::StripeStandIn::start().await;
    let app = engine
        .app_with(|cfg| crate::payments::use_stripe(cfg, &stripe.base))
        .await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/settings", p.id);
    let tab = format!("{base}?tab=billing");
    let (status, html) = page(get(&app, &c, &tab).await).await;
    assert_eq!(status, 200);
    assert!(html.contains(">Billing</a>"), "{html}");
    assert!(html.contains("0 (no limit)"), "{html}");
    assert!(html.contains("No subscription yet"), "{html}");
    // Caps: a bad one is refused beside its field with the typed values kept; then saved.
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/billing"),
            &[
                ("transactional", "lots"),
                ("campaigns", "5000"),
                ("workflows", ""),
                ("inbound", ""),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-transactional-hint f-transactional-error""#)
            || html.contains(r#"f-transactional-error"#),
        "{html}"
    );
    assert!(html.contains(r#"value="lots""#), "typed values kept");
    let res = post_form(
        &app,
        &c,
        &format!("{base}/billing"),
        &[
            ("transactional", "1,000"),
            ("campaigns", "5000"),
            ("workflows", ""),
            ("inbound", ""),
        ],
    )
    .await;
    assert_eq!(location(&res), format!("{base}?tab=billing&notice=limits"));
    let limits = expect_json(
        app.call_with(
            &p.owner,
            reqwest::Method::GET,
            &format!("/users/@me/projects/{}/billing-limits", p.id),
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        limits,
        json!({"transactional": 1000, "campaigns": 5000, "workflows": null, "inbound": null})
    );
    let (_, html) = page(get(&app, &c, &tab).await).await;
    assert!(html.contains("0 of 1,000"), "{html}");
    assert!(
        html.contains("No invoices yet"),
        "none before a checkout: {html}"
    );
    // Subscribe: the provider's checkout page is offered as a link.
    let (status, html) =
        page(post_form(&app, &c, &format!("{base}/billing/checkout"), &[]).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"href="https://checkout.stripe.test/c/pay/cs_test_1""#),
        "{html}"
    );
    assert_eq!(stripe.requests_to("/v1/checkout/sessions").len(), 1);
    // Invoices from the provider, newest first, with their links.
    let (_, html) = page(get(&app, &c, &tab).await).await;
    assert!(html.contains("HRLD-0002"), "{html}");
    assert!(html.contains("https://invoice.stripe.test/i/in_test_2"));
    assert!(html.contains("29.00 USD"));
    // The provider failing is the provider's message in the page, not a blank 500.
    stripe.fail(true);
    let (status, html) =
        page(post_form(&app, &c, &format!("{base}/billing/portal"), &[]).await).await;
    assert_eq!(status, 502, "{html}");
    assert!(html.contains("alert danger"), "{html}");
}
