//! The HTTP edge over raw TCP: slow clients are cut off after the configured timeouts while
//! others are served, the connection cap queues, and the responses hyper writes itself (400,
//! 414, 431) carry the error envelope and `X-Request-Id` like every other response.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::both_engines;
use crate::helpers::{Engine, TestApp};

both_engines!(
    half_sent_headers_are_cut_off_while_others_are_served,
    the_connection_cap_queues_new_connections,
    idle_kept_alive_connections_are_closed,
    a_stalled_body_is_answered_408,
    the_servers_own_refusals_carry_the_envelope,
);

async fn connect(app: &TestApp) -> TcpStream {
    let addr = app.base.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("connect")
}

/// Reads until the peer closes (or `limit` passes): the bytes, and whether it closed.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (out, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Status, lower-cased headers and body of one raw HTTP/1.1 response.
fn parse_response(raw: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let text = String::from_utf8_lossy(raw);
    let (head, _) = text.split_once("\r\n\r\n").expect("a whole response head");
    let head_len = head.len() + 4;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, raw[head_len..].to_vec())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Sends `request` on a new connection and returns the response (the server closes after).
async fn raw_request(app: &TestApp, request: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = connect(app).await;
    s.write_all(request).await.expect("write");
    let (raw, _) = read_until_closed(&mut s, Duration::from_secs(10)).await;
    parse_response(&raw)
}

/// The response is the SPEC.md error envelope, its request id equal to the header.
fn assert_envelope(
    (status, headers, body): &(u16, Vec<(String, String)>, Vec<u8>),
    want: u16,
    code: &str,
) {
    assert_eq!(*status, want, "{}", String::from_utf8_lossy(body));
    assert_eq!(header(headers, "content-type"), Some("application/json"));
    let id = header(headers, "x-request-id").expect("X-Request-Id");
    let v: Value = serde_json::from_slice(body).expect("a JSON body");
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert_eq!(v["error"]["statusCode"], want, "{v}");
    assert_eq!(v["error"]["requestId"], id, "{v}");
    assert_eq!(v["message"], v["error"]["message"], "{v}");
    assert!(v["timestamp"].is_string(), "{v}");
}

async fn half_sent_headers_are_cut_off_while_others_are_served(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.header_timeout_secs = 1.0;
            c.idle_timeout_secs = 60.0;
        })
        .await;
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..100 {
        let mut s = connect(&app).await;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    // Meanwhile, ordinary requests are answered.
    for _ in 0..5 {
        let res = app.client.get(app.url("/health")).send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
    for s in &mut slow {
        let (bytes, closed) = read_until_closed(s, Duration::from_secs(5)).await;
        assert!(closed, "a half-sent request head was still open after 5 s");
        assert!(bytes.is_empty(), "{}", String::from_utf8_lossy(&bytes));
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900),
        "closed too early: {elapsed:?}"
    );
    // On a new connection: the pooled one of the requests above sat idle past the 1 s header
    // timeout, so the server may be closing it just as a request goes out on it.
    let fresh = reqwest::Client::new();
    let res = fresh.get(app.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
}

async fn the_connection_cap_queues_new_connections(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.max_connections = 3;
            c.header_timeout_secs = 1.5;
            c.idle_timeout_secs = 1.5;
        })
        .await;
    // Three connections the server has certainly taken (each was served a request), now
    // kept alive and silent.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = connect(&app).await;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 8192];
        let n = s.read(&mut buf).await.unwrap();
        assert_eq!(parse_response(&buf[..n]).0, 200);
        held.push(s);
    }
    // A fourth connection is taken by the kernel but not served while three are open.
    let client = reqwest::Client::new();
    let early = client
        .get(app.url("/health"))
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    assert!(early.is_err(), "served past the cap: {early:?}");
    // Once the header timeout closes the silent ones, it is served.
    let res = client
        .get(app.url("/health"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("served after the idle connections closed");
    assert_eq!(res.status(), 200);
    drop(held);
}

async fn idle_kept_alive_connections_are_closed(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.idle_timeout_secs = 0.5;
            c.header_timeout_secs = 30.0;
        })
        .await;
    let mut s = connect(&app).await;
    s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 8192];
    let n = s.read(&mut buf).await.unwrap();
    let (status, headers, _) = parse_response(&buf[..n]);
    assert_eq!(status, 200);
    assert!(header(&headers, "x-request-id").is_some());
    let started = Instant::now();
    let (rest, closed) = read_until_closed(&mut s, Duration::from_secs(5)).await;
    assert!(closed, "an idle kept-alive connection stayed open");
    assert!(rest.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(400));
}

async fn a_stalled_body_is_answered_408(engine: Engine) {
    let app = engine.app_with(|c| c.body_timeout_secs = 1.0).await;
    let mut s = connect(&app).await;
    s.write_all(
        b"POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":",
    )
    .await
    .unwrap();
    let (raw, closed) = read_until_closed(&mut s, Duration::from_secs(5)).await;
    assert!(closed, "the connection stayed open after a stalled body");
    assert_envelope(&parse_response(&raw), 408, "REQUEST_TIMEOUT");
}

async fn the_servers_own_refusals_carry_the_envelope(engine: Engine) {
    let app = engine.app().await;
    // A 100 KB cursor: past hyper's fixed URI limit.
    let uri = format!("/contacts?cursor={}", "a".repeat(100 * 1024));
    let req = format!("GET {uri} HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_envelope(
        &raw_request(&app, req.as_bytes()).await,
        414,
        "URI_TOO_LONG",
    );
    // Too many headers.
    let mut req = String::from("GET /health HTTP/1.1\r\nHost: x\r\n");
    for i in 0..150 {
        req.push_str(&format!("X-H{i}: v\r\n"));
    }
    req.push_str("\r\n");
    assert_envelope(
        &raw_request(&app, req.as_bytes()).await,
        431,
        "HEADERS_TOO_LARGE",
    );
    // A NUL byte, and another control byte, in a header value; a space in a header name.
    for bad in [
        &b"GET /health HTTP/1.1\r\nHost: x\r\nX-Bad: a\0b\r\n\r\n"[..],
        &b"GET /health HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n"[..],
        &b"GET /health HTTP/1.1\r\nHost: x\r\nX Bad: v\r\n\r\n"[..],
        &b"GET /he\x01lth HTTP/1.1\r\nHost: x\r\n\r\n"[..],
    ] {
        assert_envelope(&raw_request(&app, bad).await, 400, "BAD_REQUEST");
    }
    // The service's own answers keep working on the same server.
    let res = app.client.get(app.url("/health")).send().await.unwrap();
    assert_eq!(res.status(), 200);
}
