//! Crash safety of `/v1/track`: a `herald serve` process killed (SIGKILL) while 32 clients
//! are tracking loses no acknowledged event. Every event answered 200 before the kill is in
//! the database afterwards, with its contact and its outbox row (acknowledged = committed; an
//! enabled workflow reacts to the event, so each one has an outbox row, and the child runs no
//! workers, so the rows stay to be counted).

use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};

both_engines!(killed_while_tracking_keeps_every_acknowledged_event);

pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A `herald serve` child process, killed and reaped when dropped: a test that fails midway
/// never leaves a server running against its database (it would hold the CI's database open).
pub(crate) struct ServerChild(Child);

impl std::ops::Deref for ServerChild {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for ServerChild {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `herald serve` on the test app's database and data directory, with extra environment.
pub(crate) fn spawn_server_with(
    config: &herald::Config,
    port: u16,
    env: &[(&str, &str)],
) -> ServerChild {
    let child = Command::new(env!("CARGO_BIN_EXE_herald"))
        .arg("serve")
        .envs(env.iter().copied())
        .env("HERALD_LISTEN", format!("127.0.0.1:{port}"))
        .env("HERALD_DATA_DIR", &config.data_dir)
        .env("HERALD_DATABASE_URL", &config.database_url)
        .env(
            "HERALD_DATABASE_SCHEMA",
            config.database_schema.clone().unwrap_or_default(),
        )
        .env("HERALD_SECRET", config.secret.clone().unwrap_or_default())
        .env("HERALD_RATE_LIMIT_PER_MINUTE", "100000000")
        .env("HERALD_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn herald");
    ServerChild(child)
}

/// Waits until the server at `base` answers `/health`.
pub(crate) async fn wait_healthy(client: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = client.get(format!("{base}/health")).send().await
            && r.status() == 200
        {
            return;
        }
        assert!(Instant::now() < deadline, "the child server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// (event id, contact id, email) of every acknowledged track.
type Acked = Arc<Mutex<Vec<(String, String, String)>>>;

async fn killed_while_tracking_keeps_every_acknowledged_event(engine: Engine) {
    // The in-process app creates the project and reads afterwards; the child takes the load.
    let app = engine.app_with(|c| c.workers = false).await;
    let p = app.project().await;
    crate::track::enable_workflow_on(&app, &p.secret_key, "crash-test").await;
    let port = free_port();
    let mut child = spawn_server_with(&app.config, port, &[("HERALD_WORKERS", "false")]);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    wait_healthy(&client, &base).await;

    let acked: Acked = Arc::default();
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for t in 0..32 {
        let (client, acked, attempts, url, key) = (
            client.clone(),
            acked.clone(),
            attempts.clone(),
            format!("{base}/v1/track"),
            p.public_key.clone(),
        );
        clients.push(tokio::spawn(async move {
            for n in 0.. {
                let email = format!("t{t}-{n}@example.com");
                attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let res = client
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&json!({"event": "crash-test", "email": email, "data": {"n": n}}))
                    .send()
                    .await;
                let Ok(res) = res else { return };
                if res.status() != 200 {
                    return;
                }
                let Ok(body) = res.json::<serde_json::Value>().await else {
                    return;
                };
                let (Some(event), Some(contact)) = (
                    body["data"]["event"].as_str(),
                    body["data"]["contact"].as_str(),
                ) else {
                    return;
                };
                acked
                    .lock()
                    .unwrap()
                    .push((event.to_owned(), contact.to_owned(), email));
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 600 {
        assert!(Instant::now() < deadline, "the child acknowledged too few");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    for c in clients {
        c.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let tried = attempts.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "killed after {} acknowledged of {tried} requests sent",
        acked.len()
    );
    assert!(tried > acked.len(), "the kill must hit requests in flight");

    // Every acknowledged event is there, with its contact and its outbox row.
    let mut stored = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/events?limit=100&cursor={c}"),
            None => "/events?limit=100".to_owned(),
        };
        let page = expect_json(app.get(&path, &p.secret_key).await, 200).await;
        for e in page["data"].as_array().unwrap() {
            stored.insert((
                e["id"].as_str().unwrap().to_owned(),
                e["contactId"].as_str().unwrap_or("").to_owned(),
                e["email"].as_str().unwrap_or("").to_owned(),
            ));
        }
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let project: uuid::Uuid = p.id.parse().unwrap();
    let outbox: HashSet<String> = app
        .store
        .waiting_job_payloads(project, herald_engine::track::EVENT_DISPATCH_JOB, 1_000_000)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|j| j["eventId"].as_str().map(str::to_owned))
        .collect();
    for a in &acked {
        assert!(stored.contains(a), "acknowledged event {a:?} lost");
        assert!(outbox.contains(&a.0), "the outbox row of {} lost", a.0);
    }
    // Nothing half-written: every stored event has its outbox row.
    assert_eq!(outbox.len(), stored.len());
}
