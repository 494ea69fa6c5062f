//! A loopback stand-in for the four Stripe endpoints Herald calls. It records every request
//! (method, path, query, the headers that matter, the form) and answers like Stripe's API;
//! `fail(true)` makes every endpoint answer Stripe's 500 error shape, `hang(true)` makes the
//! checkout endpoint answer only after 12 s (past Herald's 10 s timeout).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, OriginalUri, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub query: String,
    pub authorization: Option<String>,
    pub idempotency_key: Option<String>,
    pub form: Vec<(String, String)>,
}

impl Recorded {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    failing: AtomicBool,
    hanging: AtomicBool,
    customers: AtomicUsize,
}

#[derive(Clone)]
pub struct StripeStandIn {
    pub base: String,
    shared: Arc<Shared>,
}

impl StripeStandIn {
    pub async fn start() -> StripeStandIn {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/customers", post(customers))
            .route("/v1/checkout/sessions", post(checkout))
            .route("/v1/billing_portal/sessions", post(portal))
            .route("/v1/invoices", get(invoices))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        StripeStandIn { base, shared }
    }

    pub fn fail(&self, on: bool) {
        self.shared.failing.store(on, Ordering::SeqCst);
    }

    pub fn hang(&self, on: bool) {
        self.shared.hanging.store(on, Ordering::SeqCst);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("lock").clone()
    }

    pub fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }
}

fn record(s: &Shared, uri: &OriginalUri, headers: &HeaderMap, form: Vec<(String, String)>) {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    s.requests.lock().expect("lock").push(Recorded {
        path: uri.path().to_owned(),
        query: uri.query().unwrap_or("").to_owned(),
        authorization: header("authorization"),
        idempotency_key: header("idempotency-key"),
        form,
    });
}

/// Stripe's answer when it fails on its side.
fn failure(s: &Shared) -> Option<Response> {
    s.failing.load(Ordering::SeqCst).then(|| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"type": "api_error",
                "message": "Something went wrong on Stripe's end."}})),
        )
            .into_response()
    })
}

async fn customers(
    State(s): State<Arc<Shared>>,
    uri: OriginalUri,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    record(&s, &uri, &headers, form);
    if let Some(f) = failure(&s) {
        return f;
    }
    let n = s.customers.fetch_add(1, Ordering::SeqCst) + 1;
    Json(json!({"id": format!("cus_test_{n}"), "object": "customer"})).into_response()
}

async fn checkout(
    State(s): State<Arc<Shared>>,
    uri: OriginalUri,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    record(&s, &uri, &headers, form);
    if let Some(f) = failure(&s) {
        return f;
    }
    if s.hanging.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_secs(12)).await;
    }
    Json(json!({"id": "cs_test_1", "object": "checkout.session",
        "url": "https://checkout.stripe.test/c/pay/cs_test_1"}))
    .into_response()
}

async fn portal(
    State(s): State<Arc<Shared>>,
    uri: OriginalUri,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    record(&s, &uri, &headers, form);
    if let Some(f) = failure(&s) {
        return f;
    }
    Json(
        json!({"id": "bps_test_1", "object": "billing_portal.session",
        "url": "https://billing.stripe.test/p/session/bps_test_1"}),
    )
    .into_response()
}

async fn invoices(State(s): State<Arc<Shared>>, uri: OriginalUri, headers: HeaderMap) -> Response {
    record(&s, &uri, &headers, Vec::new());
    if let Some(f) = failure(&s) {
        return f;
    }
    Json(
        json!({"object": "list", "has_more": false, "url": "/v1/invoices", "data": [
            {"id": "in_test_2", "object": "invoice", "number": "HRLD-0002", "status": "open",
             "amount_due": 2900, "amount_paid": 0, "currency": "usd", "created": 1764028800,
             "hosted_invoice_url": "https://invoice.stripe.test/i/in_test_2",
             "invoice_pdf": "https://pay.stripe.test/invoice/in_test_2/pdf"},
            {"id": "in_test_1", "object": "invoice", "number": null, "status": "paid",
             "amount_due": 2900, "amount_paid": 2900, "currency": "usd", "created": 1761955200,
             "hosted_invoice_url": null, "invoice_pdf": null}
        ]}),
    )
    .into_response()
}
