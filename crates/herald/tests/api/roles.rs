//! Node roles (`herald serve --role`): an `api` node accepts mail and delivers none; a
//! `worker` node on the same database delivers it, each message once, and answers only
//! `/health` and `/metrics` over HTTP.

use std::time::Duration;

use herald::Application;
use herald::config::Role;
use serde_json::json;

use crate::both_engines;
use crate::crash::send_many;
use crate::helpers::Engine;
use crate::mail_setup::mail_world;

both_engines!(an_api_node_accepts_and_a_worker_node_delivers);

async fn an_api_node_accepts_and_a_worker_node_delivers(engine: Engine) {
    // `workers` stays on: the api role alone keeps this node from delivering.
    let w = mail_world(engine, |c| {
        c.role = Role::Api;
        c.metrics_token = Some("metrics-token".into());
    })
    .await;
    let sent = send_many(&w.app, &w.project.secret_key, 20).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(w.sink.accepted_count(), 0, "an api node delivers nothing");

    let mut config = w.app.config.clone();
    config.role = Role::Worker;
    let worker = Application::build_with_clock(config, w.app.clock.clone())
        .await
        .expect("worker node");
    let base = format!("http://127.0.0.1:{}", worker.port());
    tokio::spawn(worker.run_until_stopped(std::future::pending()));

    let got = w.sink.wait_for(sent.len(), Duration::from_secs(30)).await;
    assert_eq!(
        got.len(),
        sent.len(),
        "the worker node delivers every message"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(w.sink.accepted_count(), sent.len(), "each message once");

    // Its HTTP: health and metrics, nothing else.
    let http = reqwest::Client::new();
    let health = http.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let metrics = http
        .get(format!("{base}/metrics"))
        .bearer_auth("metrics-token")
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    for (method, path) in [
        ("POST", "/v1/send"),
        ("GET", "/contacts"),
        ("GET", "/openapi.json"),
    ] {
        let res = http
            .request(method.parse().unwrap(), format!("{base}{path}"))
            .bearer_auth(&w.project.secret_key)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{method} {path} on a worker node");
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "NOT_FOUND", "{body}");
    }
}
