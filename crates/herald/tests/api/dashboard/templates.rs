//! Templates pages: the list with its empty state, New template with errors beside their
//! fields, the editor's save, the preview (fragment and sandboxed frame) rendered by the send
//! rules, Send test through the send path to a member only, the warning before editing a
//! template an enabled workflow sends, and the 404 of another project's template.

use std::time::Duration;

use serde_json::{Value, json};

use super::{get, location, owner_email, page, post_form, project_in_browser};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, TestProject, expect_json};
use crate::mail_setup::wait_status;
use crate::workflow_runs::{add_step, connect, enable, trigger_of, workflow};

both_engines!(
    list_new_create_and_save_with_errors_in_place,
    the_preview_renders_by_the_send_rules_in_a_locked_frame,
    send_test_goes_through_the_send_path_to_members_only,
    saving_a_template_an_enabled_workflow_sends_asks_first,
    another_projects_template_is_not_found,
);

fn template_form<'a>(name: &'a str, subject: &'a str, body: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("name", name),
        ("subject", subject),
        ("body", body),
        ("type", "MARKETING"),
        ("from", ""),
        ("sampleEmail", "ada@example.com"),
        ("sampleData", "{}"),
    ]
}

/// Creates a template through the dashboard's form; its id.
async fn create_in_page(
    app: &TestApp,
    c: &reqwest::Client,
    p: &TestProject,
    form: &[(&str, &str)],
) -> String {
    let base = format!("/app/p/{}/templates", p.id);
    let res = post_form(app, c, &base, form).await;
    let to = location(&res);
    let rest = to.strip_prefix(&format!("{base}/")).expect("to the editor");
    let id = rest.split('?').next().expect("id").to_owned();
    assert_eq!(to, format!("{base}/{id}?notice=created"));
    id
}

async fn list_new_create_and_save_with_errors_in_place(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/templates", p.id);
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("No templates yet."),
        "the empty state: {html}"
    );
    assert!(html.contains(r#"aria-current="page">"#) && html.contains(">New template</a>"));
    assert!(!html.contains("comes with"), "no longer a later page");

    let (status, html) = page(get(&app, &c, &format!("{base}/new")).await).await;
    assert_eq!(status, 200);
    for name in [
        r#"name="name""#,
        r#"name="subject""#,
        r#"name="body""#,
        r#"name="type""#,
    ] {
        assert!(html.contains(name), "{name}: {html}");
    }
    assert!(html.contains(">Create template</button>"));
    assert!(html.contains(r#"<iframe class="preview-frame" name="preview-frame" title="Preview of the email" sandbox="""#));

    // Refused: a blank name, a subject on two lines; the typed values stay.
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &base,
            &template_form("  ", "Hi\nthere", "<p>Typed {{firstName}}</p>"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-name-error""#),
        "{html}"
    );
    assert!(
        html.contains(r#"id="f-name-error">name must not be empty</p>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"aria-describedby="f-subject-error""#),
        "{html}"
    );
    assert!(
        html.contains("&#60;p&#62;Typed {{firstName}}&#60;/p&#62;</textarea>"),
        "the body kept: {html}"
    );
    assert!(
        html.contains(r#"<option value="MARKETING" selected>"#),
        "{html}"
    );

    let id = create_in_page(
        &app,
        &c,
        &p,
        &template_form(
            "Welcome",
            "Hi {{firstName ?? \"there\"}}",
            "<p>Hello {{firstName}}</p>",
        ),
    )
    .await;
    let (status, html) = page(get(&app, &c, &format!("{base}/{id}?notice=created")).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("<h1>Welcome</h1>"));
    assert!(html.contains("Template created"));
    assert!(html.contains(">Save</button>") && html.contains(">Send test</button>"));
    assert!(html.contains(&format!(r#"src="{base}/{id}/frame""#)));
    assert!(html.contains("No workflow sends it."));

    let res = post_form(
        &app,
        &c,
        &format!("{base}/{id}"),
        &template_form("Welcome", "Welcome aboard", "<p>New body</p>"),
    )
    .await;
    assert_eq!(location(&res), format!("{base}/{id}?notice=saved"));
    let saved = expect_json(
        app.get(&format!("/templates/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(saved["subject"], "Welcome aboard");
    assert_eq!(saved["body"], "<p>New body</p>");
    assert_eq!(saved["type"], "MARKETING");

    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/{id}"),
            &template_form("Welcome", "", "<p>x</p>"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-subject-error""#),
        "{html}"
    );

    let (_, html) = page(get(&app, &c, &base).await).await;
    assert!(
        html.contains(&format!(r#"<a href="{base}/{id}">Welcome</a>"#)),
        "{html}"
    );
    assert!(html.contains("Welcome aboard"));
    assert!(html.contains("1 template"));
    let (_, html) = page(get(&app, &c, &format!("{base}?type=TRANSACTIONAL")).await).await;
    assert!(html.contains("No template matches this search."), "{html}");
}

async fn the_preview_renders_by_the_send_rules_in_a_locked_frame(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/templates", p.id);
    let mut form = template_form(
        "Welcome",
        "Hi {{firstName ?? \"there\"}}",
        "<p>Hello {{firstName}} on {{plan ?? \"free\"}}</p><a href=\"https://x.test/\">Go</a>",
    );
    form[6] = ("sampleData", r#"{"firstName": "<Ada>"}"#);
    let (status, html) = page(post_form(&app, &c, &format!("{base}/preview"), &form).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"id="preview-subject" hx-swap-oob="true""#),
        "{html}"
    );
    assert!(
        html.contains("<strong>Hi &#60;Ada&#62;</strong>")
            || html.contains("<strong>Hi &lt;Ada&gt;</strong>"),
        "{html}"
    );
    assert!(html.contains("<code>firstName</code>"));
    assert!(
        html.contains("<td>there</td>") && html.contains("<td>free</td>"),
        "fallbacks: {html}"
    );
    assert!(
        html.contains("Go (https://x.test/)"),
        "the plain text of the send path: {html}"
    );
    assert!(
        html.contains("unsubscribe footer"),
        "marketing says what delivery adds"
    );

    form[6] = ("sampleData", "[1]");
    let (_, html) = page(post_form(&app, &c, &format!("{base}/preview"), &form).await).await;
    assert!(html.contains("Sample data must be a JSON object"), "{html}");

    form[6] = ("sampleData", r#"{"firstName": "<Ada>"}"#);
    let res = post_form(&app, &c, &format!("{base}/frame"), &form).await;
    assert_eq!(res.status(), 200);
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(
        csp.contains("frame-ancestors 'self'") && csp.ends_with("sandbox"),
        "{csp}"
    );
    assert!(!csp.contains("script-src"), "no script at all: {csp}");
    assert_eq!(res.headers()["x-frame-options"], "SAMEORIGIN");
    let body = res.text().await.unwrap();
    assert_eq!(
        body, "<p>Hello &lt;Ada&gt; on free</p><a href=\"https://x.test/\">Go</a>",
        "values HTML-escaped as a send escapes them"
    );

    // Every other dashboard page keeps its own policy.
    let res = get(&app, &c, &base).await;
    assert_eq!(res.headers()["x-frame-options"], "DENY");

    let id = create_in_page(
        &app,
        &c,
        &p,
        &template_form("Saved", "S", "<p>{{firstName}}</p>"),
    )
    .await;
    let res = get(&app, &c, &format!("{base}/{id}/frame")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.text().await.unwrap(),
        "<p>Ada</p>",
        "the default sample"
    );
}

async fn send_test_goes_through_the_send_path_to_members_only(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let sk = &p.secret_key;
    let base = format!("/app/p/{}/templates", p.id);
    let me = owner_email(&app, &p).await;
    let id = create_in_page(
        &app,
        &c,
        &p,
        &template_form("News", "News for {{email}}", "<p>Hi</p>"),
    )
    .await;

    // No sender yet: the page says what to do, at the top of the test form.
    let (status, html) =
        page(post_form(&app, &c, &format!("{base}/{id}/test"), &[("email", &me)]).await).await;
    assert_eq!(status, 422);
    assert!(
        html.contains("set the template&#39;s From")
            || html.contains("set the template&#x27;s From")
            || html.contains("set the template's From"),
        "{html}"
    );

    expect_json(
        app.post("/domains", sk, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    let mut form = template_form("News", "News for {{email}}", "<p>Hi</p>");
    form[4] = ("from", "news@shop.test");
    let res = post_form(&app, &c, &format!("{base}/{id}"), &form).await;
    assert_eq!(location(&res), format!("{base}/{id}?notice=saved"));

    // Not a member: refused beside the address.
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/{id}/test"),
            &[("email", "stranger@example.com")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-email-error""#),
        "{html}"
    );
    assert!(html.contains("a member of the project"), "{html}");

    let res = post_form(&app, &c, &format!("{base}/{id}/test"), &[("email", &me)]).await;
    let to = location(&res);
    assert!(to.starts_with(&format!("{base}/{id}?notice=sent")), "{to}");
    let (_, html) = page(get(&app, &c, &to).await).await;
    assert!(html.contains(&format!("Test sent to {me}")), "{html}");

    let emails = expect_json(app.get("/emails", sk).await, 200).await;
    let sent: Vec<&Value> = emails["data"].as_array().unwrap().iter().collect();
    assert_eq!(sent.len(), 1, "{emails}");
    assert_eq!(sent[0]["to"], me.as_str());
    assert_eq!(sent[0]["subject"], format!("[Test] News for {me}"));
    assert_eq!(sent[0]["templateId"], id.as_str());
    let message = sent[0]["id"].as_str().unwrap();
    wait_status(&app, sk, message, &["SENT"], Duration::from_secs(15)).await;
    let eml = std::fs::read_to_string(
        app.config
            .data_dir
            .join("outbox")
            .join(format!("{message}.eml")),
    )
    .expect("in the outbox");
    assert!(eml.contains("[Test] News for"), "{eml}");
}

async fn saving_a_template_an_enabled_workflow_sends_asks_first(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let sk = &p.secret_key;
    let base = format!("/app/p/{}/templates", p.id);
    let id = create_in_page(&app, &c, &p, &template_form("Welcome", "Hi", "<p>One</p>")).await;
    let wf = workflow(&app, sk, "signup", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let step = add_step(&app, sk, &wf, "SEND_EMAIL", json!({"templateId": id})).await;
    connect(&app, sk, &wf, &trigger_of(&full), &step, None).await;

    // Disabled: listed, saved at once.
    let (_, html) = page(get(&app, &c, &format!("{base}/{id}")).await).await;
    assert!(
        html.contains(&format!(
            r#"Workflow <strong>W</strong> <code class="muted">{wf}</code>"#
        )),
        "{html}"
    );
    assert!(html.contains(">Disabled</span>"));
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{id}"),
        &template_form("Welcome", "Hi", "<p>Two</p>"),
    )
    .await;
    assert_eq!(location(&res), format!("{base}/{id}?notice=saved"));

    enable(&app, sk, &wf).await;
    let (_, html) = page(get(&app, &c, &format!("{base}/{id}")).await).await;
    assert!(
        html.contains("An enabled workflow sends this template"),
        "{html}"
    );
    let (status, html) = page(
        post_form(
            &app,
            &c,
            &format!("{base}/{id}"),
            &template_form("Welcome", "Hi", "<p>Three</p>"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 409);
    assert!(html.contains("select Save again"), "{html}");
    assert!(html.contains(r#"<input type="hidden" name="confirm" value="yes">"#));
    assert!(
        html.contains("&#60;p&#62;Three&#60;/p&#62;</textarea>"),
        "typed values kept"
    );
    let saved = expect_json(app.get(&format!("/templates/{id}"), sk).await, 200).await;
    assert_eq!(
        saved["body"], "<p>Two</p>",
        "nothing saved before the confirmation"
    );

    let mut form = template_form("Welcome", "Hi", "<p>Three</p>");
    form.push(("confirm", "yes"));
    let res = post_form(&app, &c, &format!("{base}/{id}"), &form).await;
    assert_eq!(location(&res), format!("{base}/{id}?notice=saved"));
    let saved = expect_json(app.get(&format!("/templates/{id}"), sk).await, 200).await;
    assert_eq!(saved["body"], "<p>Three</p>");
}

async fn another_projects_template_is_not_found(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let other = app.project().await;
    let theirs = expect_json(
        app.post(
            "/templates",
            &other.secret_key,
            &json!({"name": "Theirs", "subject": "S", "body": "<p>secret</p>", "type": "TRANSACTIONAL"}),
        )
        .await,
        201,
    )
    .await;
    let tid = theirs["id"].as_str().unwrap();
    let mine = format!("/app/p/{}/templates/{tid}", p.id);
    for path in [
        mine.clone(),
        format!("{mine}/frame"),
        format!("/app/p/{}/templates/not-an-id", p.id),
    ] {
        let (status, html) = page(get(&app, &c, &path).await).await;
        assert_eq!(status, 404, "{path}");
        assert!(!html.contains("secret"), "{path}");
    }
    let res = post_form(&app, &c, &mine, &template_form("Mine now", "S", "<p>x</p>")).await;
    assert_eq!(res.status(), 404);
    let still = expect_json(
        app.get(&format!("/templates/{tid}"), &other.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(still["name"], "Theirs");
    let (status, _) = page(get(&app, &c, &format!("/app/p/{}/templates", other.id)).await).await;
    assert_eq!(status, 404, "their list");
}
