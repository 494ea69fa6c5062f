//! Crash safety of imports: a `herald serve` process killed (SIGKILL) in the middle of a CSV
//! import, then started again, finishes the job with every row imported exactly once and
//! exact counts (the checkpoint commits with each batch; the lease of the dead worker
//! expires and the new process resumes after the last committed batch).

use std::time::{Duration, Instant};

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::track_crash::{free_port, spawn_server_with, wait_healthy};

both_engines!(an_import_killed_midway_finishes_after_restart_without_duplicates);

const ROWS: usize = 30_000;
/// Small batches and a short lease: the import is surely mid-way when killed, and the restart
/// takes it over within a second.
const CHILD_ENV: [(&str, &str); 2] = [
    ("HERALD_IMPORT_BATCH_ROWS", "100"),
    ("HERALD_SEND_LEASE_SECS", "1"),
];

async fn an_import_killed_midway_finishes_after_restart_without_duplicates(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let p = app.project().await;
    let sk = p.secret_key.clone();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut child = spawn_server_with(&app.config, port, &CHILD_ENV);
    wait_healthy(&client, &base).await;

    let mut csv = String::from("email,plan,n\n");
    for i in 0..ROWS {
        csv.push_str(&format!("row{i}@example.com,pro,{i}\n"));
    }
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(csv.into_bytes()).file_name("c.csv"),
    );
    let res = client
        .post(format!("{base}/contacts/import"))
        .bearer_auth(&sk)
        .multipart(form)
        .send()
        .await
        .expect("import");
    let accepted = expect_json(res, 202).await;
    let path = format!("/contacts/import/{}", accepted["jobId"].as_str().unwrap());

    // Kill once some batches are committed and the job is not done.
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let job = expect_json(app.get(&path, &sk).await, 200).await;
        let progress = job["progress"].as_i64().unwrap();
        assert_ne!(
            job["state"], "completed",
            "the import finished before the kill"
        );
        if progress >= 5 {
            break job;
        }
        assert!(
            Instant::now() < deadline,
            "the import never progressed: {job}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    let after_kill = expect_json(app.get(&path, &sk).await, 200).await;
    assert_eq!(after_kill["state"], "active", "{after_kill}");
    println!("killed at {at_kill}");

    let mut child = spawn_server_with(&app.config, port, &CHILD_ENV);
    wait_healthy(&client, &base).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let job = expect_json(app.get(&path, &sk).await, 200).await;
        if job["state"] == "completed" {
            break job;
        }
        assert_ne!(job["state"], "failed", "{job}");
        assert!(
            Instant::now() < deadline,
            "the import never finished: {job}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    child.kill().expect("kill");
    child.wait().expect("reap");
    assert_eq!(done["result"]["created"], ROWS, "{done}");
    assert_eq!(
        done["result"]["updated"], 0,
        "no row was imported twice: {done}"
    );
    assert_eq!(done["result"]["skipped"], 0);
    let list = expect_json(app.get("/contacts?limit=1", &sk).await, 200).await;
    assert_eq!(list["total"], ROWS);
}
