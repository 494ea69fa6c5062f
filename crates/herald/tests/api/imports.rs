//! `POST /contacts/import` and `GET /contacts/import/:jobId` (DECISIONS.md "Jobs"): a CSV with
//! a BOM, CRLF line ends, quoted commas and newlines, duplicate and invalid emails imports its
//! good rows and reports the bad ones by line; size limits (413 from Content-Length and while
//! streaming); header problems (422), a header over the 1,000-column cap refused at once;
//! progress; another project's job is 404.

use std::time::Duration;

use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    an_import_adds_good_rows_and_reports_bad_ones_by_line,
    a_file_over_5_mb_is_refused_with_413,
    a_file_without_an_email_column_or_file_part_is_422,
    more_than_1000_columns_is_422_at_once_and_1000_import,
    progress_moves_while_an_import_runs,
    another_projects_import_job_is_404,
);

/// `POST /contacts/import` of `csv` as the part `file`.
pub async fn post_import(app: &TestApp, key: &str, csv: Vec<u8>) -> reqwest::Response {
    let form = Form::new().part("file", Part::bytes(csv).file_name("contacts.csv"));
    app.client
        .post(app.url("/contacts/import"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .expect("request")
}

/// Polls `path` until the job is completed or failed; returns every answer seen, in order.
pub async fn wait_job(app: &TestApp, key: &str, path: &str) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let job = expect_json(app.get(path, key).await, 200).await;
        let done = job["state"] == "completed" || job["state"] == "failed";
        seen.push(job);
        if done {
            return seen;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "job never ended: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Imports `csv` and waits for the job; returns its last state.
pub async fn import(app: &TestApp, key: &str, csv: &str) -> Value {
    let accepted = expect_json(post_import(app, key, csv.as_bytes().to_vec()).await, 202).await;
    let id = accepted["jobId"].as_str().expect("jobId");
    let seen = wait_job(app, key, &format!("/contacts/import/{id}")).await;
    seen.last().cloned().expect("a poll")
}

async fn an_import_adds_good_rows_and_reports_bad_ones_by_line(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "old@example.com", "subscribed": false, "data": {"plan": "free", "keep": 1}}),
    )
    .await;
    let csv = "\u{FEFF}email,subscribed,plan,seats,vip,note\r\n\
        ann@example.com,yes,pro,5,true,\"Oslo, Norway\r\nsecond line\"\r\n\
        not-an-email,,,,,\r\n\
        old@example.com,true,team,,,\r\n\
        ANN@example.com,,free,,,\r\n\
        bob@example.com,maybe,,,,\r\n\
        cid@example.com,,,0042x,false,\r\n";
    let job = import(&app, sk, csv).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["progress"], 100);
    let r = &job["result"];
    assert_eq!(r["created"], 2, "{job}");
    assert_eq!(r["updated"], 1, "{job}");
    assert_eq!(r["skipped"], 3, "{job}");
    let rows: Vec<u64> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["row"].as_u64().expect("row"))
        .collect();
    // Line 2's quoted field spans two lines, so the next row starts on line 4.
    assert_eq!(rows, vec![4, 6, 7], "{job}");
    assert!(
        r["errors"][1]["error"]
            .as_str()
            .unwrap()
            .contains("duplicate")
    );

    let ann = app.contact_by_email(sk, "ann@example.com").await;
    assert_eq!(ann["subscribed"], true);
    assert_eq!(
        ann["data"],
        json!({"plan": "pro", "seats": 5, "vip": true, "note": "Oslo, Norway\r\nsecond line"})
    );
    let old = app.contact_by_email(sk, "old@example.com").await;
    assert_eq!(old["subscribed"], true, "the flip is applied");
    assert_eq!(
        old["data"],
        json!({"plan": "team", "keep": 1}),
        "data merges"
    );
    let cid = app.contact_by_email(sk, "cid@example.com").await;
    assert_eq!(
        cid["subscribed"], true,
        "new contacts default to subscribed"
    );
    assert_eq!(cid["data"], json!({"seats": "0042x", "vip": false}));

    // The subscription flip of the existing contact is an event, as with PATCH.
    let id = old["id"].as_str().unwrap();
    let feed = expect_json(
        app.get(
            &format!("/activity?contactId={id}&type=contact.subscribed"),
            sk,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(feed["data"].as_array().map(Vec::len), Some(1), "{feed}");
    // Field types are recorded like POST /contacts does.
    let fields = expect_json(app.get("/contacts/fields", sk).await, 200).await;
    let text = fields.to_string();
    assert!(
        text.contains("data.seats") && text.contains("data.vip"),
        "{text}"
    );
}

async fn a_file_over_5_mb_is_refused_with_413(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let mut big = b"email\n".to_vec();
    big.resize(6 * 1024 * 1024, b'a');
    // Declared length over the limit: refused before the body is read.
    expect_error(
        post_import(&app, &p.secret_key, big).await,
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    // A body within the multipart allowance whose file is one byte too many: cut while streaming.
    let mut just_over = b"email\n".to_vec();
    just_over.resize(5 * 1024 * 1024 + 1, b'a');
    expect_error(
        post_import(&app, &p.secret_key, just_over).await,
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    let mut at_limit = b"email\n".to_vec();
    at_limit.resize(5 * 1024 * 1024, b'a');
    expect_json(post_import(&app, &p.secret_key, at_limit).await, 202).await;
}

async fn a_file_without_an_email_column_or_file_part_is_422(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let body = expect_error(
        post_import(&app, sk, b"name,plan\nann,pro\n".to_vec()).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&body), vec!["file"]);
    let body = expect_error(
        post_import(&app, sk, Vec::new()).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&body), vec!["file"]);
    let form = Form::new().text("other", "x");
    let res = app
        .client
        .post(app.url("/contacts/import"))
        .bearer_auth(sk)
        .multipart(form)
        .send()
        .await
        .expect("request");
    expect_error(res, 422, "VALIDATION_ERROR").await;
    let res = app
        .post("/contacts/import", sk, &json!({"file": "x"}))
        .await;
    expect_error(res, 422, "VALIDATION_ERROR").await;
}

/// A CSV with `columns` columns (`email`, then `c1`, ...) and one data row.
fn wide_csv(columns: usize) -> String {
    let names: Vec<String> = std::iter::once("email".to_owned())
        .chain((1..columns).map(|i| format!("c{i}")))
        .collect();
    let values: Vec<String> = std::iter::once("wide@example.org".to_owned())
        .chain((1..columns).map(|i| i.to_string()))
        .collect();
    format!("{}\n{}\n", names.join(","), values.join(","))
}

async fn more_than_1000_columns_is_422_at_once_and_1000_import(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    // 60,000 distinct columns fit in 5 MB: refused by their count before any name is compared.
    for columns in [1001, 60_000] {
        let started = std::time::Instant::now();
        let res = post_import(&app, sk, wide_csv(columns).into_bytes()).await;
        let body = expect_error(res, 422, "VALIDATION_ERROR").await;
        let took = started.elapsed();
        assert_eq!(error_fields(&body), vec!["file"], "{body}");
        assert_eq!(body["error"]["errors"][0]["code"], "too_many_columns");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("1000"),
            "{body}"
        );
        assert!(took < Duration::from_secs(2), "{columns} columns: {took:?}");
    }
    let done = import(&app, sk, &wide_csv(1000)).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["result"]["created"], 1, "{done}");
    let contact = app.contact_by_email(sk, "wide@example.org").await;
    assert_eq!(contact["data"]["c999"], 999, "{contact}");
}

async fn progress_moves_while_an_import_runs(engine: Engine) {
    let app = engine.app_with(|c| c.import_batch_rows = 200).await;
    let p = app.project().await;
    let mut csv = String::from("email,plan,seats\n");
    for i in 0..20_000 {
        csv.push_str(&format!("user{i}@example.com,pro,{i}\n"));
    }
    let accepted = expect_json(
        post_import(&app, &p.secret_key, csv.into_bytes()).await,
        202,
    )
    .await;
    let id = accepted["jobId"].as_str().unwrap();
    let seen = wait_job(&app, &p.secret_key, &format!("/contacts/import/{id}")).await;
    let progress: Vec<i64> = seen
        .iter()
        .map(|j| j["progress"].as_i64().unwrap())
        .collect();
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert!(
        progress.iter().any(|p| *p > 0 && *p < 100),
        "no intermediate progress seen: {progress:?}"
    );
    let last = seen.last().unwrap();
    assert_eq!(last["result"]["created"], 20_000, "{last}");
    let list = expect_json(app.get("/contacts?limit=1", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 20_000);
}

async fn another_projects_import_job_is_404(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await;
    let b = app.project().await;
    let accepted = expect_json(
        post_import(&app, &a.secret_key, b"email\nx@example.com\n".to_vec()).await,
        202,
    )
    .await;
    assert!(accepted["message"].is_string());
    let id = accepted["jobId"].as_str().unwrap();
    let path = format!("/contacts/import/{id}");
    expect_error(app.get(&path, &b.secret_key).await, 404, "JOB_NOT_FOUND").await;
    // Nor is an import job a bulk job.
    expect_error(
        app.get(&format!("/contacts/bulk/{id}"), &a.secret_key)
            .await,
        404,
        "JOB_NOT_FOUND",
    )
    .await;
    expect_error(
        app.get("/contacts/import/not-an-id", &a.secret_key).await,
        404,
        "JOB_NOT_FOUND",
    )
    .await;
    let seen = wait_job(&app, &a.secret_key, &path).await;
    assert_eq!(seen.last().unwrap()["result"]["created"], 1);
}
