//! A `herald serve` process taking a burst of SMTP submissions, killed with SIGKILL: every
//! message it answered `250` for is delivered (by the surviving node), and none twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::both_engines;
use crate::crash::{kill, spawn_worker_with};
use crate::helpers::Engine;
use crate::mail_setup::{DOMAIN, deliveries, mail_world, wait_queue_settled};
use crate::smtp_client::RawSmtp;

both_engines!(killed_during_a_submission_burst_delivers_every_250_once);

async fn killed_during_a_submission_burst_delivers_every_250_once(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = w.project.secret_key.clone();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let listen = format!("127.0.0.1:{port}");
    // The child only accepts (no workers): delivery is the surviving in-process node's.
    let child = spawn_worker_with(
        &w.app.config,
        Duration::from_secs(10),
        &[
            ("HERALD_SUBMISSION_LISTEN", &listen),
            ("HERALD_WORKERS", "false"),
        ],
    );
    let addr: std::net::SocketAddr = listen.parse().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the child never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let accepted: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let (sk, accepted) = (sk.clone(), accepted.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = RawSmtp::login(addr, &sk).await;
            for i in 0.. {
                let to = format!("burst-{t}-{i}@example.org");
                let data = format!(
                    "From: hello@{DOMAIN}\r\nTo: {to}\r\nSubject: burst {i}\r\n\r\nHello\r\n.\r\n"
                );
                match c
                    .try_transaction(&format!("hello@{DOMAIN}"), &to, data.as_bytes())
                    .await
                {
                    Some(a) if a.code == 250 => accepted.lock().unwrap().push(to),
                    Some(a) => panic!("refused: {a:?}"),
                    None => return,
                }
            }
        }));
    }
    let start = tokio::time::Instant::now();
    while accepted.lock().unwrap().len() < 40 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the burst never got going"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(child);
    for t in tasks {
        t.await.unwrap();
    }
    let accepted = accepted.lock().unwrap().clone();
    println!("{} messages answered 250 before the kill", accepted.len());
    // Every answered message is committed: the surviving node delivers each of them.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let counts = deliveries(&w.sink);
        if accepted.iter().all(|r| counts.contains_key(r)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a message answered 250 was lost"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_queue_settled(&w.app, Duration::from_secs(30)).await;
    let counts: HashMap<String, usize> = deliveries(&w.sink);
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered twice: {twice:?}");
}
