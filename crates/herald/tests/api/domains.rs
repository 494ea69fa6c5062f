//! Sender domains over HTTP, verified through a real DNS server on loopback: the records to
//! publish, verification outcomes, the periodic re-check, ownership between projects, reserved
//! test domains, deletion, tenant isolation, the sealed DKIM key, and the sender rules.

use std::time::Duration;

use base64::Engine as _;
use herald_core::email::EmailAddress;
use herald_testkit::dns_server::DnsServer;
use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, TestProject, error_fields, expect_error, expect_json};

mod access;
mod in_use;
mod periodic;
mod records;
mod sender;
mod verification;

const SPF: &str = "include:_spf.herald.test";
const SMTP: &str = "smtp://127.0.0.1:1?tls=none";

/// An app resolving through `dns`, with a short DNS timeout and a known SPF mechanism.
async fn dns_app(
    engine: Engine,
    dns: &DnsServer,
    tweak: impl FnOnce(&mut herald::Config),
) -> TestApp {
    let addr = dns.addr();
    engine
        .app_with(|c| {
            c.dns_resolver = Some(addr);
            c.dns_timeout_secs = 0.3;
            c.spf_mechanism = SPF.into();
            tweak(c);
        })
        .await
}

async fn add(app: &TestApp, p: &TestProject, domain: &str) -> Value {
    expect_json(
        app.post("/domains", &p.secret_key, &json!({ "domain": domain }))
            .await,
        201,
    )
    .await
}

async fn verify(app: &TestApp, p: &TestProject, d: &Value) -> Value {
    let id = d["id"].as_str().unwrap();
    expect_json(
        app.get(&format!("/domains/{id}/verify"), &p.secret_key)
            .await,
        200,
    )
    .await
}

async fn list(app: &TestApp, p: &TestProject) -> Vec<Value> {
    let res = app
        .get(&format!("/domains/project/{}", p.id), &p.secret_key)
        .await;
    expect_json(res, 200).await.as_array().cloned().unwrap()
}

fn record<'a>(d: &'a Value, purpose: &str) -> &'a Value {
    let records = d["records"].as_array().unwrap();
    records
        .iter()
        .find(|r| r["purpose"] == purpose)
        .unwrap_or_else(|| panic!("no {purpose} record in {d}"))
}

fn states(d: &Value) -> Vec<(String, String)> {
    let records = d["records"].as_array().unwrap();
    records
        .iter()
        .map(|r| {
            (
                r["purpose"].as_str().unwrap().to_owned(),
                r["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// Publishes every TXT record of `d` as given.
fn publish(dns: &DnsServer, d: &Value) {
    for r in d["records"].as_array().unwrap() {
        if r["type"] == "TXT" {
            dns.set_txt(
                r["name"].as_str().unwrap(),
                vec![r["value"].as_str().unwrap().to_owned()],
            );
        }
    }
}

/// Polls the project's list until the domain has `status`.
async fn wait_status(app: &TestApp, p: &TestProject, id: &Value, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(d) = list(app, p).await.into_iter().find(|d| d["id"] == *id) {
            if d["status"] == status {
                return d;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never became {status}: {d}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn activity(app: &TestApp, p: &TestProject, query: &str) -> Value {
    expect_json(
        app.get(&format!("/activity{query}"), &p.secret_key).await,
        200,
    )
    .await
}

/// Runs one statement on the app's database with the given uuid and text binds, bypassing the
/// API (to set up rows of other features, or to probe a constraint).
async fn raw_execute(
    app: &TestApp,
    q: &'static str,
    ids: &[uuid::Uuid],
    texts: &[&str],
) -> Result<u64, sqlx::Error> {
    use sqlx::Connection as _;
    if let Some(mut conn) = crate::helpers::pg_schema_connection(app).await {
        let mut query = sqlx::query(q);
        for id in ids {
            query = query.bind(*id);
        }
        for t in texts {
            query = query.bind(*t);
        }
        Ok(query.execute(&mut conn).await?.rows_affected())
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&app.config.database_url).await?;
        let mut query = sqlx::query(q);
        for id in ids {
            query = query.bind(*id);
        }
        for t in texts {
            query = query.bind(*t);
        }
        Ok(query.execute(&mut conn).await?.rows_affected())
    }
}

fn uuid_of(v: &Value) -> uuid::Uuid {
    uuid::Uuid::parse_str(v.as_str().unwrap()).unwrap()
}
