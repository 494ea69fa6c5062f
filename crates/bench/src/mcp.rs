//! The MCP benchmark: `list_contacts` through `POST /mcp` against `GET /contacts` on the same
//! data, requests alternated one for one over the same kept-alive HTTP client, and the ratio
//! of their medians (target: the MCP call costs at most 1.3x the REST call at p50).
//!
//! The MCP request is a stateless `tools/call` (JSON response): the server parses the JSON-RPC
//! message, runs the REST route in process and wraps its answer as text and
//! `structuredContent`, so the difference is the protocol's cost alone.

use std::time::{Duration, Instant};

use anyhow::ensure;
use reqwest::{Client, StatusCode};
use serde_json::json;

use crate::Options;
use crate::contacts::percentile;
use crate::server::{Server, expect_status, project_key};

/// The most the MCP call may cost, as a multiple of the REST call, at p50.
const TARGET_RATIO: f64 = 1.3;
/// Pairs of calls measured (after as many for warm-up).
const ROUNDS: usize = 500;

pub async fn run(opts: &Options) -> anyhow::Result<()> {
    let server = Server::start_with(opts.database_url.as_deref(), |_| {}).await?;
    println!(
        "Herald MCP benchmark: list_contacts (limit 100) over {} contacts, {ROUNDS} calls each, {}",
        opts.count, server.engine
    );
    let key = project_key(&server).await?;
    crate::load::post_many(
        server.url("/contacts"),
        &key,
        opts.count,
        opts.concurrency,
        StatusCode::CREATED,
        |i| json!({"email": format!("user{i:07}@bench.example"), "data": {"plan": "pro", "seats": i % 50}}),
    )
    .await?;

    let client = Client::new();
    let rest_url = server.url("/contacts?limit=100");
    let mcp_url = server.url("/mcp");
    let call = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_contacts", "arguments": {"limit": 100}}
    })
    .to_string();
    let (mut rest, mut mcp) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for round in 0..ROUNDS * 2 {
        let t = Instant::now();
        let res = client.get(&rest_url).bearer_auth(&key).send().await?;
        let page = expect_status(res, StatusCode::OK, "GET /contacts").await?;
        let rest_time = t.elapsed();

        let t = Instant::now();
        let res = client
            .post(&mcp_url)
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call.clone())
            .send()
            .await?;
        let answer = expect_status(res, StatusCode::OK, "POST /mcp tools/call").await?;
        let mcp_time = t.elapsed();
        ensure!(
            answer["result"]["structuredContent"]["data"] == page["data"],
            "list_contacts answered other contacts than GET /contacts: {answer}"
        );
        if round >= ROUNDS {
            rest.push(rest_time);
            mcp.push(mcp_time);
        }
    }
    rest.sort();
    mcp.sort();
    let line = |name: &str, d: &[Duration]| {
        println!(
            "{name}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
            percentile(d, 50),
            percentile(d, 90),
            percentile(d, 99)
        );
    };
    line("GET /contacts?limit=100        ", &rest);
    line("POST /mcp list_contacts {limit}", &mcp);
    let ratio = percentile(&mcp, 50) / percentile(&rest, 50).max(f64::EPSILON);
    println!(
        "p50 ratio MCP / REST: {ratio:.2}x (target <= {TARGET_RATIO}x: {})",
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "MISSED"
        }
    );
    server.shutdown().await
}
