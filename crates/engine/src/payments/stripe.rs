//! The Stripe implementation of [`PaymentProvider`]: form-encoded requests to
//! `{api_base}/v1/...` with `Authorization: Bearer <secret key>`, an `Idempotency-Key` on
//! every POST, no redirects followed, and a timeout (10 s). A non-2xx answer becomes a
//! [`ProviderError`] with Stripe's `error.message`.

use std::time::Duration;

use herald_core::ids::Uuid;
use herald_core::payments::{PaymentEvent, parse_stripe_event, verify_stripe_signature};
use herald_core::time::Millis;
use serde_json::Value;

use super::{
    CheckoutRequest, Invoice, PaymentProvider, ProviderError, ProviderFuture, WebhookRefusal,
};

/// The Stripe settings (all required once the secret key is set).
#[derive(Clone)]
pub struct StripeSettings {
    /// `sk_...` (or a restricted `rk_...` key).
    pub secret_key: String,
    /// `whsec_...`: the key of the `Stripe-Signature` of incoming webhooks.
    pub webhook_secret: String,
    /// The price a checkout subscribes to (`price_...`).
    pub price_id: String,
    /// `https://api.stripe.com` (tests point it at a loopback stand-in).
    pub api_base: String,
    pub timeout: Duration,
}

/// The keys hidden.
impl std::fmt::Debug for StripeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeSettings")
            .field("secret_key", &"[redacted]")
            .field("webhook_secret", &"[redacted]")
            .field("price_id", &self.price_id)
            .field("api_base", &self.api_base)
            .field("timeout", &self.timeout)
            .finish()
    }
}

pub struct Stripe {
    settings: StripeSettings,
    http: reqwest::Client,
}

impl Stripe {
    pub fn new(settings: StripeSettings) -> anyhow::Result<Stripe> {
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Stripe { settings, http })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.settings.api_base.trim_end_matches('/'))
    }

    async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        idempotency_key: &str,
    ) -> Result<Value, ProviderError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let req = self
            .http
            .post(self.url(path))
            .bearer_auth(&self.settings.secret_key)
            .header("Idempotency-Key", idempotency_key)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(req).await
    }

    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, ProviderError> {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        let req = self
            .http
            .get(format!("{}?{query}", self.url(path)))
            .bearer_auth(&self.settings.secret_key);
        self.send(req).await
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Value, ProviderError> {
        let res = req.send().await.map_err(|e| self.unreachable(&e))?;
        let status = res.status();
        let bytes = res.bytes().await.map_err(|e| self.unreachable(&e))?;
        let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            let message = json
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map_or_else(
                    || format!("Stripe answered {status}"),
                    |m| format!("Stripe: {m}"),
                );
            tracing::warn!(%status, %message, "Stripe refused a request");
            return Err(ProviderError(message));
        }
        Ok(json)
    }

    fn unreachable(&self, e: &reqwest::Error) -> ProviderError {
        tracing::warn!(error = %e, "Stripe could not be reached");
        ProviderError(if e.is_timeout() {
            format!(
                "Stripe did not answer within {} s",
                self.settings.timeout.as_secs_f64()
            )
        } else {
            "Stripe could not be reached".to_owned()
        })
    }
}

/// A string field of an answer that must have it.
fn required(v: &Value, key: &str) -> Result<String, ProviderError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ProviderError(format!("Stripe's answer has no {key}")))
}

fn optional(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn invoice_of(v: &Value) -> Option<Invoice> {
    Some(Invoice {
        id: optional(v, "id")?,
        number: optional(v, "number"),
        status: optional(v, "status"),
        amount_due: v.get("amount_due").and_then(Value::as_i64).unwrap_or(0),
        amount_paid: v.get("amount_paid").and_then(Value::as_i64).unwrap_or(0),
        currency: optional(v, "currency").unwrap_or_default(),
        created_at: v
            .get("created")
            .and_then(Value::as_i64)
            .map_or(0, |s| s.saturating_mul(1000)),
        hosted_invoice_url: optional(v, "hosted_invoice_url"),
        pdf_url: optional(v, "invoice_pdf"),
    })
}

impl PaymentProvider for Stripe {
    fn create_customer<'a>(
        &'a self,
        project_id: Uuid,
        name: &'a str,
    ) -> ProviderFuture<'a, String> {
        Box::pin(async move {
            let id = project_id.to_string();
            let answer = self
                .post(
                    "/v1/customers",
                    &[("name", name), ("metadata[project_id]", &id)],
                    // Per project: a retried or concurrent first checkout gets the same customer.
                    &format!("herald-customer-{id}"),
                )
                .await?;
            required(&answer, "id")
        })
    }

    fn checkout_session<'a>(&'a self, req: CheckoutRequest<'a>) -> ProviderFuture<'a, String> {
        Box::pin(async move {
            let id = req.project_id.to_string();
            let answer = self
                .post(
                    "/v1/checkout/sessions",
                    &[
                        ("mode", "subscription"),
                        ("customer", req.customer),
                        ("line_items[0][price]", &self.settings.price_id),
                        ("line_items[0][quantity]", "1"),
                        ("success_url", req.success_url),
                        ("cancel_url", req.cancel_url),
                        ("client_reference_id", &id),
                        ("metadata[project_id]", &id),
                        // So the subscription's own events name the project too.
                        ("subscription_data[metadata][project_id]", &id),
                    ],
                    &uuid::Uuid::new_v4().to_string(),
                )
                .await?;
            required(&answer, "url")
        })
    }

    fn portal_session<'a>(
        &'a self,
        customer: &'a str,
        return_url: &'a str,
    ) -> ProviderFuture<'a, String> {
        Box::pin(async move {
            let answer = self
                .post(
                    "/v1/billing_portal/sessions",
                    &[("customer", customer), ("return_url", return_url)],
                    &uuid::Uuid::new_v4().to_string(),
                )
                .await?;
            required(&answer, "url")
        })
    }

    fn invoices<'a>(&'a self, customer: &'a str, limit: u32) -> ProviderFuture<'a, Vec<Invoice>> {
        Box::pin(async move {
            let limit = limit.to_string();
            let answer = self
                .get("/v1/invoices", &[("customer", customer), ("limit", &limit)])
                .await?;
            let data = answer
                .get("data")
                .and_then(Value::as_array)
                .ok_or_else(|| ProviderError("Stripe's answer has no data".into()))?;
            Ok(data.iter().filter_map(invoice_of).collect())
        })
    }

    fn webhook_event(
        &self,
        signature: Option<&str>,
        body: &[u8],
        now: Millis,
    ) -> Result<PaymentEvent, WebhookRefusal> {
        verify_stripe_signature(
            signature,
            body,
            self.settings.webhook_secret.as_bytes(),
            now,
        )?;
        parse_stripe_event(body).map_err(|e| WebhookRefusal::Malformed(e.0))
    }
}
