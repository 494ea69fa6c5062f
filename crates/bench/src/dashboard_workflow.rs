//! The workflow page of `herald-bench dashboard`: a 50-step workflow built through the API (a
//! chain of DELAY steps with a CONDITION every fifth step whose `no` is an EXIT), enabled,
//! with 100 executions started by hand so that they wait at its first DELAY. Its page
//! (`/app/p/{id}/workflows/{id}`: the graph laid out and drawn on the server with the count
//! waiting at each step, the side panel, the executions list) and the same page showing one
//! execution's path are timed like the other pages: target p95 under 50 ms (issue 32).

use anyhow::Context as _;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use crate::server::{Server, expect_status};

/// Steps of the benchmark's workflow (the TRIGGER included).
pub const STEPS: usize = 50;
/// Executions started by hand (they wait at the first DELAY; `GET /contacts` gives at most
/// 100 a page).
const EXECUTIONS: usize = 100;

async fn post(
    client: &Client,
    server: &Server,
    secret: &str,
    path: &str,
    body: Value,
) -> anyhow::Result<Value> {
    let res = client
        .post(server.url(path))
        .bearer_auth(secret)
        .json(&body)
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, path).await
}

/// Builds the workflow and starts its executions; its id and one execution's id.
pub async fn seed(
    client: &Client,
    server: &Server,
    secret: &str,
) -> anyhow::Result<(String, String)> {
    let w = post(
        client,
        server,
        secret,
        "/workflows",
        json!({"name": "Bench: 50 steps", "triggerConfig": {"eventName": "bench.start"}}),
    )
    .await?;
    let wf = w["id"]
        .as_str()
        .context("the workflow has no id")?
        .to_owned();
    let mut prev = w["steps"][0]["id"]
        .as_str()
        .context("the workflow has no TRIGGER")?
        .to_owned();
    let steps_path = format!("/workflows/{wf}/steps");
    let edges_path = format!("/workflows/{wf}/transitions");
    let mut branch: Option<&str> = None;
    let mut steps = 1;
    let id = |v: &Value| v["id"].as_str().map(str::to_owned).context("a step id");
    while steps < STEPS {
        if steps % 5 == 4 && steps + 2 <= STEPS {
            let cond = id(&post(client, server, secret, &steps_path,
                json!({"type": "CONDITION", "config": {"field": "data.plan", "operator": "equals", "value": "pro"}})).await?)?;
            post(
                client,
                server,
                secret,
                &edges_path,
                json!({"fromStepId": prev, "toStepId": cond, "branch": branch}),
            )
            .await?;
            let exit = id(&post(
                client,
                server,
                secret,
                &steps_path,
                json!({"type": "EXIT", "config": {"reason": format!("not pro at {steps}")}}),
            )
            .await?)?;
            post(
                client,
                server,
                secret,
                &edges_path,
                json!({"fromStepId": cond, "toStepId": exit, "branch": "no"}),
            )
            .await?;
            prev = cond;
            branch = Some("yes");
            steps += 2;
        } else {
            let delay = id(&post(
                client,
                server,
                secret,
                &steps_path,
                json!({"type": "DELAY", "config": {"amount": 1, "unit": "days"}}),
            )
            .await?)?;
            post(
                client,
                server,
                secret,
                &edges_path,
                json!({"fromStepId": prev, "toStepId": delay, "branch": branch}),
            )
            .await?;
            prev = delay;
            branch = None;
            steps += 1;
        }
    }
    let res = client
        .patch(server.url(&format!("/workflows/{wf}")))
        .bearer_auth(secret)
        .json(&json!({"enabled": true}))
        .send()
        .await?;
    expect_status(res, StatusCode::OK, "PATCH /workflows/:id").await?;
    let res = client
        .get(server.url(&format!("/contacts?limit={EXECUTIONS}")))
        .bearer_auth(secret)
        .send()
        .await?;
    let contacts = expect_status(res, StatusCode::OK, "GET /contacts").await?;
    let mut execution = String::new();
    for c in contacts["data"].as_array().context("contacts")? {
        let e = post(
            client,
            server,
            secret,
            &format!("/workflows/{wf}/executions"),
            json!({"contactId": c["id"]}),
        )
        .await?;
        execution = e["id"].as_str().context("an execution id")?.to_owned();
    }
    Ok((wf, execution))
}
