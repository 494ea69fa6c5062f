//! Memory that no request may take (issue 8): a declared body over the route's limit is
//! refused before it is read, large bodies share a budget, and password hashing runs under a
//! bounded queue whose overflow answers 429.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, expect_error, expect_json};

both_engines!(
    a_declared_length_over_the_limit_is_413_before_the_body_is_sent,
    large_bodies_over_the_budget_wait_their_turn,
    logins_past_the_hashing_queue_get_429_and_login_still_works,
);

/// Sends only the head of a request and reads the answer (the body is never sent).
async fn head_only(app: &TestApp, path: &str, key: &str, length: u64) -> (String, Value) {
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut conn = TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf).await.unwrap_or(0);
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            let complete = text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_owned())
                    })
                    .and_then(|v| v.parse::<usize>().ok());
                len.is_some_and(|len| body.len() >= len)
            });
            if n == 0 || complete {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the answer came without the body being sent");
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole response");
    (
        head.to_owned(),
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}")),
    )
}

async fn a_declared_length_over_the_limit_is_413_before_the_body_is_sent(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for (path, length) in [
        ("/v1/send", 1u64 << 40),
        ("/v1/send", 41 << 20),
        ("/contacts", 2 << 20),
    ] {
        let (head, body) = head_only(&app, path, &p.secret_key, length).await;
        assert!(head.starts_with("HTTP/1.1 413"), "{path} {length}: {head}");
        assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE", "{body}");
        assert_eq!(body["error"]["statusCode"], 413, "{body}");
        let request_id = body["error"]["requestId"].as_str().expect("requestId");
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("x-request-id: {request_id}")),
            "{head}"
        );
    }
    // Under the limit, the same route reads and answers normally.
    let ok = app
        .post(
            "/contacts",
            &p.secret_key,
            &json!({"email": "a@example.com"}),
        )
        .await;
    assert!(ok.status().is_success(), "{}", ok.status());
}

async fn large_bodies_over_the_budget_wait_their_turn(engine: Engine) {
    // A budget smaller than any one large body: each runs alone, none fails or hangs.
    let app = engine.app_with(|c| c.body_budget_bytes = 1).await;
    let p = app.project().await;
    let blob = "x".repeat(200 * 1024);
    let calls = (0..6).map(|i| {
        let body = json!({"email": format!("big{i}@example.com"), "data": {"blob": blob}});
        let (app, key) = (&app, p.secret_key.clone());
        async move { app.post("/contacts", &key, &body).await.status().as_u16() }
    });
    let statuses = tokio::time::timeout(Duration::from_secs(60), futures_join_all(calls.collect()))
        .await
        .expect("large requests do not wait forever");
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 200),
        "{statuses:?}"
    );
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 6);
}

async fn futures_join_all<F: Future<Output = u16>>(calls: Vec<F>) -> Vec<u16> {
    let mut set = Vec::new();
    for c in calls {
        set.push(Box::pin(c));
    }
    let mut out = vec![0; set.len()];
    let mut pending: Vec<(usize, _)> = set.into_iter().enumerate().collect();
    // Poll all together until every one is done.
    std::future::poll_fn(|cx| {
        pending.retain_mut(|(i, f)| match f.as_mut().poll(cx) {
            std::task::Poll::Ready(s) => {
                out[*i] = s;
                false
            }
            std::task::Poll::Pending => true,
        });
        if pending.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    out
}

async fn logins_past_the_hashing_queue_get_429_and_login_still_works(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.password_hash_threads = 1;
            c.password_hash_queue = 1;
        })
        .await;
    let email = "flood@example.com";
    app.signup(email).await;
    let login = |password: &str| {
        let body = json!({"email": email, "password": password});
        let app = &app;
        async move {
            app.call_with(
                &cookie_client(),
                Method::POST,
                "/auth/login",
                None,
                Some(&body),
            )
            .await
        }
    };
    let calls = (0..16).map(|i| {
        let attempt = login(if i == 0 { "wrong one" } else { "wrong two" });
        async move {
            let res = attempt.await;
            let status = res.status().as_u16();
            if status == 429 {
                let retry = res
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok());
                assert!(retry.is_some_and(|s| s >= 1), "Retry-After: {retry:?}");
                expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
            } else {
                expect_error(res, 401, "INVALID_CREDENTIALS").await;
            }
            status
        }
    });
    let statuses = futures_join_all(calls.collect()).await;
    assert!(
        statuses.contains(&429),
        "one hash at a time, one waiting: {statuses:?}"
    );
    assert!(statuses.contains(&401), "{statuses:?}");
    // Once the burst is over, signing in works as before, wrong passwords are still refused.
    let res = login("correct horse battery").await;
    let user = expect_json(res, 200).await;
    assert_eq!(user["email"], email);
    expect_error(login("wrong again").await, 401, "INVALID_CREDENTIALS").await;
}
