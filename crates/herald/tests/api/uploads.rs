//! `POST /uploads/image`: images recognised by content, stored under a content-addressed
//! name, served publicly; other content 422; the configured size limit 413 (declared length
//! and while streaming); a key is required to upload.

use reqwest::multipart::{Form, Part};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    an_image_is_stored_by_content_and_served_publicly,
    content_that_is_not_an_image_is_422,
    an_image_over_the_configured_limit_is_413,
);

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

async fn upload(app: &TestApp, key: Option<&str>, bytes: Vec<u8>, name: &str) -> reqwest::Response {
    let form = Form::new().part("file", Part::bytes(bytes).file_name(name.to_owned()));
    let mut req = app.client.post(app.url("/uploads/image")).multipart(form);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.expect("request")
}

async fn an_image_is_stored_by_content_and_served_publicly(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    // The name says .txt; the content is a PNG.
    let first = expect_json(
        upload(&app, Some(&p.secret_key), PNG.to_vec(), "logo.txt").await,
        201,
    )
    .await;
    assert_eq!(first["contentType"], "image/png");
    assert_eq!(first["size"], PNG.len());
    let name = first["name"].as_str().unwrap();
    assert!(name.ends_with(".png") && name.len() == 68, "{name}");
    let url = first["url"].as_str().unwrap();
    assert!(url.ends_with(&format!("/uploads/{name}")), "{url}");
    // The same bytes from another project get the same name.
    let other = app.project().await;
    let again = expect_json(
        upload(&app, Some(&other.secret_key), PNG.to_vec(), "x.png").await,
        201,
    )
    .await;
    assert_eq!(again["name"], name);
    // Served without a key.
    let res = app
        .client
        .get(app.url(&format!("/uploads/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(res.bytes().await.unwrap().as_ref(), PNG);
    let missing = format!("/uploads/{}.png", "0".repeat(64));
    expect_error(
        app.client.get(app.url(&missing)).send().await.unwrap(),
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        app.client
            .get(app.url("/uploads/..%2Fsecret"))
            .send()
            .await
            .unwrap(),
        404,
        "NOT_FOUND",
    )
    .await;
    // Uploading needs a key.
    let res = upload(&app, None, PNG.to_vec(), "x.png").await;
    assert_eq!(res.status(), 401);
}

async fn content_that_is_not_an_image_is_422(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for bytes in [
        b"<svg xmlns='http://www.w3.org/2000/svg'/>".to_vec(),
        Vec::new(),
    ] {
        let body = expect_error(
            upload(&app, Some(&p.secret_key), bytes, "x.png").await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&body), vec!["file"]);
    }
    let gif = b"GIF89a\x01\0\x01\0\0\0\0;".to_vec();
    expect_json(upload(&app, Some(&p.secret_key), gif, "a.gif").await, 201).await;
}

async fn an_image_over_the_configured_limit_is_413(engine: Engine) {
    let app = engine.app_with(|c| c.upload_max_bytes = 1000).await;
    let p = app.project().await;
    let mut big = PNG.to_vec();
    big.resize(1001, 0);
    // Within the multipart allowance: cut while streaming.
    expect_error(
        upload(&app, Some(&p.secret_key), big, "a.png").await,
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    let mut huge = PNG.to_vec();
    huge.resize(200 * 1024, 0);
    expect_error(
        upload(&app, Some(&p.secret_key), huge, "a.png").await,
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    let mut fits = PNG.to_vec();
    fits.resize(1000, 0);
    expect_json(upload(&app, Some(&p.secret_key), fits, "a.png").await, 201).await;
}
