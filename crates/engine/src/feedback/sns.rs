//! Amazon SES notifications delivered by SNS: verification (certificate fetched from an SNS
//! host, signature versions 1 and 2, a timestamp window, the topic allow-list), subscription
//! confirmation, and the mapping of SES's Bounce/Complaint/Delivery to feedback.
//!
//! Invariants:
//! - SNS is refused (403) unless the message's `TopicArn` is in `HERALD_SNS_TOPIC_ARNS`; with
//!   the list empty every SNS message is refused, `SubscriptionConfirmation` included: any AWS
//!   account can make a validly signed message, so a signature alone proves nothing about
//!   whose topic it came from (DECISIONS.md "Feedback, suppression").
//! - The checks that need no request (JSON shape, `Type` against the header, signature
//!   version, canonical string, base64 signature, topic, timestamp, URL hosts) all run before
//!   any certificate is fetched: a refused message costs the server no outgoing request.
//! - No URL from a message is requested unless it passes `herald_mail::sns::allowed_sns_url`
//!   (https, `sns.<region>.amazonaws.com`), checked before any connection; redirects are not
//!   followed. The one exception is the test-only trusted certificate
//!   (`HERALD_SNS_TRUST_CERT_PEM`): then `http://127.0.0.1:<port>/` URLs are allowed too, and a
//!   certificate fetched from one must be exactly the trusted one.
//! - A message older (or newer) than [`MAX_AGE_MS`] is refused, so a captured message cannot
//!   be replayed later; within the window the receipt (SNS `MessageId`) makes a replay change
//!   nothing.
//! - SES's message is matched by the relay's id kept from its 250 reply (`mail.messageId`),
//!   else by our `Message-ID` (`mail.headers`, then `mail.commonHeaders.messageId`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use herald_core::feedback::FeedbackKind;
use herald_core::time::parse_iso;
use herald_mail::sns::{SnsError, SnsMessage, allowed_sns_url, pem_certificate};
use herald_store::feedback::FeedbackTarget;
use serde_json::Value;

use super::{Feedback, NotificationError, Outcome};
use crate::Engine;

/// How far an SNS `Timestamp` may be from now.
pub const MAX_AGE_MS: i64 = 3600 * 1000;
/// Largest certificate file accepted.
const MAX_CERT_BYTES: usize = 64 * 1024;
/// Certificates kept in memory (SNS uses one per region for months).
const CERT_CACHE: usize = 32;

/// The SNS verifier's state: an HTTP client built on first use, fetched certificates, and
/// the test-only trusted certificate.
#[derive(Default)]
pub struct SnsState {
    client: OnceLock<Result<reqwest::Client, String>>,
    certs: Mutex<HashMap<String, Vec<u8>>>,
    /// DER of `HERALD_SNS_TRUST_CERT_PEM` (tests only).
    trusted: Option<Vec<u8>>,
}

impl SnsState {
    /// Reads the test-only trusted certificate, if configured.
    pub fn new(trusted_pem: Option<&std::path::Path>) -> anyhow::Result<SnsState> {
        let trusted = match trusted_pem {
            None => None,
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    anyhow::anyhow!("reading HERALD_SNS_TRUST_CERT_PEM {}: {e}", path.display())
                })?;
                tracing::warn!(
                    "HERALD_SNS_TRUST_CERT_PEM is set: SNS certificates from 127.0.0.1 are trusted (tests only)"
                );
                Some(pem_certificate(&pem)?)
            }
        };
        Ok(SnsState {
            trusted,
            ..SnsState::default()
        })
    }

    fn client(&self) -> Result<&reqwest::Client, NotificationError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .timeout(Duration::from_secs(10))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| NotificationError::Upstream(format!("no HTTP client: {e}")))
    }

    /// Whether `url` is allowed: an SNS URL, or (test mode only) a loopback http URL.
    fn allowed(&self, url: &str, pem: bool) -> Result<(), NotificationError> {
        if self.trusted.is_some() && is_test_loopback(url) {
            return Ok(());
        }
        allowed_sns_url(url, pem)
            .map(|_| ())
            .map_err(|e| NotificationError::Unauthorized(e.to_string()))
    }

    async fn get(&self, url: &str, limit: usize) -> Result<Vec<u8>, NotificationError> {
        let upstream =
            |e: &dyn std::fmt::Display| NotificationError::Upstream(format!("GET {url}: {e}"));
        let res = self
            .client()?
            .get(url)
            .send()
            .await
            .map_err(|e| upstream(&e))?;
        if !res.status().is_success() {
            return Err(upstream(&res.status()));
        }
        if res.content_length().is_some_and(|n| n > limit as u64) {
            return Err(upstream(&"response too large"));
        }
        let body = res.bytes().await.map_err(|e| upstream(&e))?;
        if body.len() > limit {
            return Err(upstream(&"response too large"));
        }
        Ok(body.to_vec())
    }

    /// The certificate at `url` (DER), from the cache or fetched.
    async fn certificate(&self, url: &str) -> Result<Vec<u8>, NotificationError> {
        self.allowed(url, true)?;
        if let Some(c) = lock(&self.certs).get(url) {
            return Ok(c.clone());
        }
        let pem = self.get(url, MAX_CERT_BYTES).await?;
        let der =
            pem_certificate(&pem).map_err(|e| NotificationError::Unauthorized(e.to_string()))?;
        if is_test_loopback(url) && self.trusted.as_deref() != Some(der.as_slice()) {
            return Err(NotificationError::Unauthorized(
                "the certificate is not the trusted test certificate".into(),
            ));
        }
        let mut cache = lock(&self.certs);
        if cache.len() >= CERT_CACHE {
            cache.clear();
        }
        cache.insert(url.to_owned(), der.clone());
        Ok(der)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `http://127.0.0.1:<port>/...` exactly (not `localhost`, not another address).
fn is_test_loopback(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| {
        u.scheme() == "http"
            && u.host_str() == Some("127.0.0.1")
            && u.username().is_empty()
            && u.password().is_none()
    })
}

/// A malformed message or an unknown signature version is a bad request (400); everything
/// else about the signature is unauthorized (401).
fn refused(e: SnsError) -> NotificationError {
    match e {
        SnsError::Malformed(m) => NotificationError::Malformed(m),
        e @ SnsError::UnsupportedVersion(_) => NotificationError::Malformed(e.to_string()),
        other => NotificationError::Unauthorized(other.to_string()),
    }
}

impl Engine {
    /// `POST /webhooks/notifications` from Amazon SNS (`x-amz-sns-message-type` header).
    pub async fn sns_notification(
        &self,
        message_type: &str,
        body: &[u8],
    ) -> Result<Outcome, NotificationError> {
        // Every check that needs no request comes first: a refused message costs no fetch.
        let msg = SnsMessage::parse(body).map_err(refused)?;
        if msg.kind != message_type {
            return Err(NotificationError::Malformed(
                "x-amz-sns-message-type does not match the message's Type".into(),
            ));
        }
        let signed = msg.prepare().map_err(refused)?;
        let topics = &self.settings.sns_topic_arns;
        if topics.is_empty() {
            return Err(NotificationError::Forbidden(
                "Amazon SNS notifications are refused: HERALD_SNS_TOPIC_ARNS is not configured \
                 (any AWS account can sign an SNS message; list your topics)"
                    .into(),
            ));
        }
        if !topics.contains(&msg.topic_arn) {
            return Err(NotificationError::Forbidden(format!(
                "the SNS topic {:?} is not one of HERALD_SNS_TOPIC_ARNS",
                msg.topic_arn.chars().take(256).collect::<String>()
            )));
        }
        let at = parse_iso(&msg.timestamp)
            .ok_or_else(|| NotificationError::Malformed("Timestamp is not ISO 8601".into()))?;
        if (self.now() - at).abs() > MAX_AGE_MS {
            return Err(NotificationError::Unauthorized(
                "the SNS message's Timestamp is more than an hour from now".into(),
            ));
        }
        if msg.kind == "SubscriptionConfirmation" {
            self.sns
                .allowed(msg.subscribe_url.as_deref().unwrap_or_default(), false)?;
        }
        let cert = self.sns.certificate(&msg.signing_cert_url).await?;
        signed.verify(&cert).map_err(refused)?;
        match msg.kind.as_str() {
            "SubscriptionConfirmation" => {
                // Its host was checked before the certificate was fetched.
                let url = msg.subscribe_url.as_deref().unwrap_or_default();
                self.sns.get(url, MAX_CERT_BYTES).await?;
                tracing::info!(topic = %msg.topic_arn, "SNS subscription confirmed");
                Ok(Outcome::Confirmed)
            }
            "Notification" => self.ses_notification(&msg).await,
            _ => Ok(Outcome::Ignored),
        }
    }

    async fn ses_notification(&self, msg: &SnsMessage) -> Result<Outcome, NotificationError> {
        let Ok(ses) = serde_json::from_str::<Value>(&msg.message) else {
            return Ok(Outcome::Ignored);
        };
        if ses["notificationType"] == "Received" {
            return self.ses_received(&ses, &msg.message_id).await;
        }
        let Some((kind, detail)) = ses_feedback(&ses) else {
            return Ok(Outcome::Ignored);
        };
        let Some(target) = self.ses_target(&ses["mail"]).await? else {
            return Ok(Outcome::UnknownMessage);
        };
        let fb = Feedback {
            kind,
            detail: detail.as_deref(),
            source: "Amazon SES",
            attempt: false,
        };
        self.apply_notification(&target, "sns", &msg.message_id, &fb)
            .await
    }

    async fn ses_target(&self, mail: &Value) -> Result<Option<FeedbackTarget>, NotificationError> {
        if let Some(id) = mail["messageId"].as_str()
            && let Some(t) = self.store.feedback_target_by_relay_id(id).await?
        {
            return Ok(Some(t));
        }
        let from_headers = mail["headers"].as_array().and_then(|hs| {
            hs.iter()
                .find(|h| {
                    h["name"]
                        .as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case("message-id"))
                })
                .and_then(|h| h["value"].as_str())
        });
        for header in [from_headers, mail["commonHeaders"]["messageId"].as_str()]
            .into_iter()
            .flatten()
        {
            if let Some(t) = self.store.feedback_target_by_header(header).await? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }
}

/// SES's notification (or event-publishing record) as feedback with its detail.
/// `Undetermined` bounces are treated as transient: suppressing needs certainty.
fn ses_feedback(ses: &Value) -> Option<(FeedbackKind, Option<String>)> {
    let kind = ses["notificationType"]
        .as_str()
        .or_else(|| ses["eventType"].as_str())?;
    match kind {
        "Bounce" => {
            let b = &ses["bounce"];
            let permanent = b["bounceType"].as_str() == Some("Permanent");
            let r = &b["bouncedRecipients"][0];
            let detail = r["diagnosticCode"]
                .as_str()
                .or_else(|| r["status"].as_str())
                .or_else(|| b["bounceSubType"].as_str())
                .map(str::to_owned);
            Some((FeedbackKind::Bounce { permanent }, detail))
        }
        "Complaint" => {
            let detail = ses["complaint"]["complaintFeedbackType"]
                .as_str()
                .map(str::to_owned);
            Some((FeedbackKind::Complaint, detail))
        }
        "Delivery" => {
            let detail = ses["delivery"]["smtpResponse"].as_str().map(str::to_owned);
            Some((FeedbackKind::Delivery, detail))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ses_kinds_map_to_feedback() {
        let hard = serde_json::json!({"notificationType": "Bounce", "bounce": {"bounceType": "Permanent",
            "bouncedRecipients": [{"emailAddress": "a@b.c", "diagnosticCode": "smtp; 550 5.1.1 unknown"}]}});
        assert_eq!(
            ses_feedback(&hard),
            Some((
                FeedbackKind::Bounce { permanent: true },
                Some("smtp; 550 5.1.1 unknown".into())
            ))
        );
        let soft =
            serde_json::json!({"eventType": "Bounce", "bounce": {"bounceType": "Undetermined"}});
        assert!(matches!(
            ses_feedback(&soft),
            Some((FeedbackKind::Bounce { permanent: false }, _))
        ));
        let c = serde_json::json!({"notificationType": "Complaint", "complaint": {"complaintFeedbackType": "abuse"}});
        assert_eq!(
            ses_feedback(&c),
            Some((FeedbackKind::Complaint, Some("abuse".into())))
        );
        assert_eq!(
            ses_feedback(&serde_json::json!({"notificationType": "Received"})),
            None
        );
    }

    #[test]
    fn only_plain_loopback_ip_urls_count_as_test_urls() {
        assert!(is_test_loopback("http://127.0.0.1:4000/cert.pem"));
        assert!(!is_test_loopback("http://localhost:4000/cert.pem"));
        assert!(!is_test_loopback("https://127.0.0.1:4000/cert.pem"));
        assert!(!is_test_loopback("http://127.0.0.1.evil.test/cert.pem"));
        assert!(!is_test_loopback("http://x@127.0.0.1:4000/cert.pem"));
    }
}
