//! CSV import and bulk actions from the contacts page, through the API's jobs, with their
//! progress fragment and the row report.

use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::json;

use super::{get, location, page, post_form, project_in_browser};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_json};

both_engines!(
    csv_import_shows_progress_and_the_row_report,
    bulk_actions_run_as_jobs
);

/// Follows the job fragment until it stops polling; its last HTML.
async fn finished_fragment(app: &TestApp, c: &Client, url: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, html) = page(get(app, c, url).await).await;
        assert_eq!(status, 200, "{html}");
        assert!(html.contains("<progress"), "{html}");
        if !html.contains("hx-trigger=\"every 1s\"") {
            return html;
        }
        assert!(Instant::now() < deadline, "the job did not finish: {html}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn jobs_url(html: &str) -> String {
    html.split("hx-get=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the progress region")
        .replace("&amp;", "&")
}

async fn csv_import_shows_progress_and_the_row_report(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/contacts", p.id);
    let csv =
        "email,plan,seats\nann@example.com,pro,3\nnot-an-email,free,1\nbob@example.com,team,12\n";
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(csv.as_bytes().to_vec()).file_name("people.csv"),
    );
    let res = c
        .post(app.url(&format!("{base}/import")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let to = location(&res);
    assert!(to.starts_with(&format!("{base}?import=")), "{to}");
    let (_, html) = page(get(&app, &c, &to).await).await;
    let html = finished_fragment(&app, &c, &jobs_url(&html)).await;
    assert!(html.contains("2 imported"), "{html}");
    assert!(html.contains("0 updated"), "{html}");
    assert!(html.contains("1 refused"), "{html}");
    assert!(
        html.contains("Line 3"),
        "the refused row's line number: {html}"
    );
    assert!(html.contains(r#"value="100""#));
    let ann = app.contact_by_email(&p.secret_key, "ann@example.com").await;
    assert_eq!(ann["data"]["seats"], 3);

    // A file without an email column is refused at once, in the dialog.
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(b"name\nann\n".to_vec()).file_name("bad.csv"),
    );
    let res = c
        .post(app.url(&format!("{base}/import")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let (status, html) = page(res).await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"<dialog id="import" aria-labelledby="import-title" data-open>"#),
        "{html}"
    );
    assert!(html.contains(r#"id="f-file-error""#), "{html}");
}

async fn bulk_actions_run_as_jobs(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/contacts", p.id);
    let mut ids = Vec::new();
    for i in 0..4 {
        let contact = app
            .create_contact(
                &p.secret_key,
                json!({"email": format!("bulk{i}@example.com")}),
            )
            .await;
        ids.push(contact["id"].as_str().unwrap().to_owned());
    }
    app.create_contact(&p.secret_key, json!({"email": "keep@other.example"}))
        .await;
    // Selected rows.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/bulk"),
        &[
            ("operation", "unsubscribe"),
            ("ids", &ids[0]),
            ("ids", &ids[1]),
        ],
    )
    .await;
    let to = location(&res);
    assert!(to.contains("bulk="), "{to}");
    let (_, html) = page(get(&app, &c, &to).await).await;
    let html = finished_fragment(&app, &c, &jobs_url(&html)).await;
    assert!(html.contains("2 changed"), "{html}");
    let first = expect_json(
        app.get(&format!("/contacts/{}", ids[0]), &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(first["subscribed"], false);

    // All that match a search, deleted after the in-page confirmation.
    let all = [
        ("operation", "delete"),
        ("all", "true"),
        ("search", "bulk"),
        ("subscribed", ""),
    ];
    let (status, html) = page(post_form(&app, &c, &format!("{base}/bulk"), &all).await).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("Delete 4 contacts and their events? This cannot be undone."),
        "{html}"
    );
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 5, "nothing deleted before confirming");
    let mut confirmed = all.to_vec();
    confirmed.push(("confirm", "yes"));
    let res = post_form(&app, &c, &format!("{base}/bulk"), &confirmed).await;
    let to = location(&res);
    let (_, html) = page(get(&app, &c, &to).await).await;
    let html = finished_fragment(&app, &c, &jobs_url(&html)).await;
    assert!(html.contains("4 changed"), "{html}");
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["data"][0]["email"], "keep@other.example");
}
