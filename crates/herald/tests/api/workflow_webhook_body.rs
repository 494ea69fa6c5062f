//! A WEBHOOK step reads at most the bytes it keeps of the answer (1 KiB): a receiver that
//! answers with a huge or endless body cannot hold the step until its timeout, nor make the
//! server download it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::workflow_runs::{
    add_step, connect, enable, track, trigger_of, wait_execution, workflow,
};

both_engines!(a_huge_webhook_answer_is_cut_at_the_kept_bytes_without_reading_it);

/// Answers every request with a 50 MB body sent slowly (reading it all would take minutes);
/// counts the bytes written and notes when the client hung up.
async fn huge_answers() -> (u16, Arc<AtomicUsize>, Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let written = Arc::new(AtomicUsize::new(0));
    let hung_up = Arc::new(AtomicBool::new(false));
    let (w, h) = (written.clone(), hung_up.clone());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (w, h) = (w.clone(), h.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = sock.read(&mut buf).await;
                let total = 50 * 1024 * 1024;
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n");
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; 16 * 1024];
                let mut sent = 0;
                while sent < total {
                    if sock.write_all(&chunk).await.is_err() {
                        h.store(true, Ordering::SeqCst);
                        return;
                    }
                    sent += chunk.len();
                    w.fetch_add(chunk.len(), Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
        }
    });
    (port, written, hung_up)
}

async fn a_huge_webhook_answer_is_cut_at_the_kept_bytes_without_reading_it(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.webhook_allow_private = true;
            c.webhook_timeout_secs = 8.0;
        })
        .await;
    let sk = &app.project().await.secret_key;
    let (port, written, hung_up) = huge_answers().await;
    let wf = workflow(&app, sk, "big", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let hook = add_step(
        &app,
        sk,
        &wf,
        "WEBHOOK",
        json!({"url": format!("http://127.0.0.1:{port}/big")}),
    )
    .await;
    connect(&app, sk, &wf, &trigger_of(&full), &hook, None).await;
    enable(&app, sk, &wf).await;
    let started = Instant::now();
    let c = track(&app, sk, "big@example.com", "big", json!({})).await;
    // Reading the whole body would run into the call's timeout.
    let e = wait_execution(&app, sk, &wf, &c, |e: &Value| {
        e["status"] == "COMPLETED" || e["steps"][1]["status"] == "FAILED"
    })
    .await;
    assert_eq!(e["status"], "COMPLETED", "{e}");
    assert_eq!(e["steps"][1]["output"]["status"], 200);
    let response = e["steps"][1]["output"]["response"].as_str().unwrap();
    assert_eq!(response.len(), 1024, "the kept bytes");
    assert!(response.bytes().all(|b| b == b'x'));
    // Well before the call's timeout (8 s), which is where reading the whole body ended.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    // The server hung up long before the end of the body.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !hung_up.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the connection was kept open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        written.load(Ordering::SeqCst) < 8 * 1024 * 1024,
        "{} bytes written",
        written.load(Ordering::SeqCst)
    );
}
