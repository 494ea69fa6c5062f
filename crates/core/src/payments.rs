//! Payment-provider rules with no I/O (docs/accounts.md "Payments"): the `Stripe-Signature`
//! check of incoming webhooks and the reading of a Stripe event into the change it asks for.
//!
//! Invariants:
//! - The signature is the scheme of [`crate::timed_signature`] (shared with the generic
//!   feedback format): several `v1` values, constant-time comparison, `t` within
//!   [`SIGNATURE_TOLERANCE_SECS`] of now.
//! - An event is read only after its signature matched, and only the fields a change needs
//!   are kept: unknown event types become [`PaymentChange::Ignored`], never an error.
//! - A subscription status is one of Stripe's words ([`SUBSCRIPTION_STATUSES`]); anything
//!   else is kept as `unknown`, so a new status never becomes arbitrary stored text.

use serde_json::Value;

use crate::ids::{Uuid, parse_id};
use crate::time::Millis;
use crate::timed_signature::{self, Fault};

/// Seconds a webhook's `t` may differ from now (Stripe's own default tolerance).
pub const SIGNATURE_TOLERANCE_SECS: i64 = timed_signature::TOLERANCE_SECS;

/// The statuses of a Stripe subscription.
pub const SUBSCRIPTION_STATUSES: &[&str] = &[
    "incomplete",
    "incomplete_expired",
    "trialing",
    "active",
    "past_due",
    "canceled",
    "unpaid",
    "paused",
];

/// Why a `Stripe-Signature` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing")]
    Missing,
    #[error("the Stripe-Signature header is malformed: expected t=<unix seconds>,v1=<hex>")]
    Malformed,
    #[error("the Stripe-Signature timestamp is more than 300 seconds from now")]
    Stale,
    #[error("the Stripe-Signature does not match the body")]
    Mismatch,
}

/// The `Stripe-Signature` value a sender computes for `body` at `t` (tests, and the check).
pub fn stripe_signature(secret: &[u8], t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", timed_signature::v1(secret, t, body))
}

impl From<Fault> for SignatureError {
    fn from(f: Fault) -> Self {
        match f {
            Fault::Missing => Self::Missing,
            Fault::Malformed => Self::Malformed,
            Fault::Stale => Self::Stale,
            Fault::Mismatch => Self::Mismatch,
        }
    }
}

/// Checks a `Stripe-Signature` header against the raw body.
pub fn verify_stripe_signature(
    header: Option<&str>,
    body: &[u8],
    secret: &[u8],
    now: Millis,
) -> Result<(), SignatureError> {
    timed_signature::verify(header, body, secret, now)?;
    Ok(())
}

/// A verified event: its id (the replay key), when the provider created it, and the change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentEvent {
    pub id: String,
    /// Epoch milliseconds (Stripe's `created`, seconds); orders changes that arrive late.
    pub created: Millis,
    pub change: PaymentChange,
}

/// What an event asks to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaymentChange {
    /// `checkout.session.completed`: the project (client_reference_id, else
    /// metadata.project_id) now has this customer and subscription.
    CheckoutCompleted {
        project: Option<Uuid>,
        customer: Option<String>,
        subscription: Option<String>,
        /// `payment_status` is `paid` or `no_payment_required`.
        paid: bool,
    },
    /// `customer.subscription.created|updated|deleted`.
    Subscription {
        project: Option<Uuid>,
        customer: String,
        subscription: String,
        status: String,
    },
    /// `invoice.payment_failed`: the customer's subscription is past due.
    PaymentFailed {
        customer: String,
        subscription: Option<String>,
    },
    /// Any other type (named): answered 200, nothing changes.
    Ignored(String),
}

/// A project's standing with the provider, as its webhooks reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaymentState {
    pub customer: Option<String>,
    pub subscription: Option<String>,
    pub status: Option<String>,
    /// The provider's time of the event that set `status` (0: none yet).
    pub status_at: Millis,
}

impl PaymentState {
    /// The state after `change`, created by the provider at `created`. A status change older
    /// than the one applied is skipped (the provider does not deliver in order); a completed
    /// checkout links the customer and subscription, and marks a paid one `active` until a
    /// subscription event says otherwise; a failed invoice makes a live subscription
    /// `past_due`. The customer, once set, never changes, and an event about another
    /// customer changes nothing.
    pub fn apply(mut self, change: &PaymentChange, created: Millis) -> PaymentState {
        let newer = created >= self.status_at;
        // An event about another customer than the project's says nothing about it.
        let theirs = match change {
            PaymentChange::CheckoutCompleted { customer, .. } => customer.as_deref(),
            PaymentChange::Subscription { customer, .. }
            | PaymentChange::PaymentFailed { customer, .. } => Some(customer.as_str()),
            PaymentChange::Ignored(_) => None,
        };
        if let (Some(ours), Some(theirs)) = (self.customer.as_deref(), theirs)
            && ours != theirs
        {
            return self;
        }
        match change {
            PaymentChange::CheckoutCompleted {
                customer,
                subscription,
                paid,
                ..
            } => {
                self.customer = self.customer.or_else(|| customer.clone());
                if subscription.is_some() {
                    self.subscription = subscription.clone();
                }
                if *paid && self.status.is_none() {
                    self.status = Some("active".into());
                }
            }
            PaymentChange::Subscription {
                customer,
                subscription,
                status,
                ..
            } if newer => {
                self.customer = self.customer.or_else(|| Some(customer.clone()));
                self.subscription = Some(subscription.clone());
                self.status = Some(status.clone());
                self.status_at = created;
            }
            PaymentChange::PaymentFailed { subscription, .. } if newer => {
                let same = subscription.is_none() || *subscription == self.subscription;
                let live = matches!(
                    self.status.as_deref(),
                    None | Some("active" | "trialing" | "past_due")
                );
                if same && live {
                    self.status = Some("past_due".into());
                    self.status_at = created;
                }
            }
            _ => {}
        }
        self
    }
}

/// Why a signed body is not an event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MalformedEvent(pub String);

/// Reads a Stripe event (`{id, type, created, data: {object}}`).
pub fn parse_stripe_event(body: &[u8]) -> Result<PaymentEvent, MalformedEvent> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| MalformedEvent(format!("the event is not JSON: {e}")))?;
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && s.len() <= 255)
            .map(str::to_owned)
    };
    let id = text(&v, "id").ok_or_else(|| MalformedEvent("the event has no id".into()))?;
    let kind = text(&v, "type").ok_or_else(|| MalformedEvent("the event has no type".into()))?;
    let created = v
        .get("created")
        .and_then(Value::as_i64)
        .map_or(0, |s| s.saturating_mul(1000));
    let object = v.pointer("/data/object").unwrap_or(&Value::Null);
    let project_of = |o: &Value| {
        text(o, "client_reference_id")
            .or_else(|| o.pointer("/metadata/project_id").and_then(text_of))
            .and_then(|s| parse_id(&s))
    };
    // `customer` is an id, or the expanded object holding one.
    let customer =
        |o: &Value| text(o, "customer").or_else(|| o.get("customer").and_then(|c| text(c, "id")));
    let missing = |what: &str| MalformedEvent(format!("{kind}: data.object has no {what}"));
    let change = match kind.as_str() {
        "checkout.session.completed" => PaymentChange::CheckoutCompleted {
            project: project_of(object),
            customer: customer(object),
            subscription: text(object, "subscription"),
            paid: matches!(
                text(object, "payment_status").as_deref(),
                Some("paid" | "no_payment_required")
            ),
        },
        "customer.subscription.created"
        | "customer.subscription.updated"
        | "customer.subscription.deleted" => PaymentChange::Subscription {
            project: project_of(object),
            customer: customer(object).ok_or_else(|| missing("customer"))?,
            subscription: text(object, "id").ok_or_else(|| missing("id"))?,
            status: subscription_status(text(object, "status").as_deref()),
        },
        "invoice.payment_failed" => PaymentChange::PaymentFailed {
            customer: customer(object).ok_or_else(|| missing("customer"))?,
            subscription: text(object, "subscription"),
        },
        _ => PaymentChange::Ignored(kind.clone()),
    };
    Ok(PaymentEvent {
        id,
        created,
        change,
    })
}

fn text_of(v: &Value) -> Option<String> {
    v.as_str()
        .filter(|s| !s.is_empty() && s.len() <= 255)
        .map(str::to_owned)
}

/// One of [`SUBSCRIPTION_STATUSES`], else `unknown`.
pub fn subscription_status(raw: Option<&str>) -> String {
    match raw {
        Some(s) if SUBSCRIPTION_STATUSES.contains(&s) => s.to_owned(),
        _ => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_test";
    const NOW: Millis = 1_700_000_000_000;

    fn header(t: i64, body: &[u8]) -> String {
        stripe_signature(SECRET, t, body)
    }

    #[test]
    fn a_valid_signature_verifies() {
        let body = br#"{"id":"evt_1"}"#;
        let h = header(NOW / 1000, body);
        assert_eq!(verify_stripe_signature(Some(&h), body, SECRET, NOW), Ok(()));
    }

    #[test]
    fn any_of_several_v1_values_may_match_and_v0_is_ignored() {
        let body = b"{}";
        let good = header(NOW / 1000, body);
        let v1 = good.split("v1=").nth(1).unwrap_or_default();
        let h = format!("t={}, v0=abcd, v1={}, v1={v1}", NOW / 1000, "00".repeat(32));
        assert_eq!(verify_stripe_signature(Some(&h), body, SECRET, NOW), Ok(()));
    }

    #[test]
    fn a_forged_or_other_body_signature_is_a_mismatch() {
        let body = b"{}";
        let h = header(NOW / 1000, body);
        assert_eq!(
            verify_stripe_signature(Some(&h), b"{ }", SECRET, NOW),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_stripe_signature(Some(&h), body, b"whsec_other", NOW),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn a_timestamp_over_five_minutes_away_is_stale() {
        let body = b"{}";
        let old = header(NOW / 1000 - 301, body);
        assert_eq!(
            verify_stripe_signature(Some(&old), body, SECRET, NOW),
            Err(SignatureError::Stale)
        );
        let edge = header(NOW / 1000 - 300, body);
        assert_eq!(
            verify_stripe_signature(Some(&edge), body, SECRET, NOW),
            Ok(())
        );
        let future = header(NOW / 1000 + 301, body);
        assert_eq!(
            verify_stripe_signature(Some(&future), body, SECRET, NOW),
            Err(SignatureError::Stale)
        );
    }

    #[test]
    fn missing_and_malformed_headers_are_refused() {
        assert_eq!(
            verify_stripe_signature(None, b"{}", SECRET, NOW),
            Err(SignatureError::Missing)
        );
        for bad in [
            "",
            "t=1",
            "v1=ab",
            "t=x,v1=ab",
            "t=1,v1=zz",
            "garbage",
            "t=1,v0=ab",
        ] {
            assert_eq!(
                verify_stripe_signature(Some(bad), b"{}", SECRET, NOW),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_checkout_session_names_its_project_customer_and_subscription() {
        let p = crate::ids::new_id();
        let body = format!(
            r#"{{"id":"evt_1","type":"checkout.session.completed","created":1700000000,
            "data":{{"object":{{"client_reference_id":"{p}","customer":"cus_1","subscription":"sub_1"}}}}}}"#
        );
        let e = parse_stripe_event(body.as_bytes()).expect("event");
        assert_eq!(e.id, "evt_1");
        assert_eq!(e.created, 1_700_000_000_000);
        assert_eq!(
            e.change,
            PaymentChange::CheckoutCompleted {
                project: Some(p),
                customer: Some("cus_1".into()),
                subscription: Some("sub_1".into()),
                paid: false,
            }
        );
    }

    #[test]
    fn subscription_events_keep_known_statuses_only() {
        let body = br#"{"id":"evt_2","type":"customer.subscription.updated","created":1,
            "data":{"object":{"id":"sub_1","customer":{"id":"cus_1"},"status":"past_due",
            "metadata":{"project_id":"not-an-id"}}}}"#;
        let e = parse_stripe_event(body).expect("event");
        assert_eq!(
            e.change,
            PaymentChange::Subscription {
                project: None,
                customer: "cus_1".into(),
                subscription: "sub_1".into(),
                status: "past_due".into(),
            }
        );
        assert_eq!(subscription_status(Some("<script>")), "unknown");
        assert_eq!(subscription_status(None), "unknown");
    }

    #[test]
    fn later_events_win_and_late_older_ones_are_skipped() {
        let sub = |status: &str| PaymentChange::Subscription {
            project: None,
            customer: "cus_1".into(),
            subscription: "sub_1".into(),
            status: status.into(),
        };
        let checkout = PaymentChange::CheckoutCompleted {
            project: None,
            customer: Some("cus_1".into()),
            subscription: Some("sub_1".into()),
            paid: true,
        };
        let s = PaymentState::default().apply(&checkout, 10);
        assert_eq!(s.status.as_deref(), Some("active"));
        assert_eq!(s.status_at, 0, "a checkout does not order statuses");
        let s = s.apply(&sub("past_due"), 20).apply(&sub("active"), 15);
        assert_eq!(s.status.as_deref(), Some("past_due"));
        let failed = PaymentChange::PaymentFailed {
            customer: "cus_1".into(),
            subscription: Some("sub_1".into()),
        };
        let s = s.apply(&sub("canceled"), 30).apply(&failed, 40);
        assert_eq!(
            s.status.as_deref(),
            Some("canceled"),
            "a canceled one stays"
        );
        let s = PaymentState::default()
            .apply(&sub("active"), 5)
            .apply(&failed, 6);
        assert_eq!(s.status.as_deref(), Some("past_due"));
        assert_eq!(s.customer.as_deref(), Some("cus_1"));
        let other = PaymentChange::Subscription {
            project: None,
            customer: "cus_2".into(),
            subscription: "sub_2".into(),
            status: "canceled".into(),
        };
        assert_eq!(s.clone().apply(&other, 100), s, "another customer's event");
    }

    #[test]
    fn unknown_types_are_ignored_and_broken_events_are_malformed() {
        let e = parse_stripe_event(br#"{"id":"evt_3","type":"charge.refunded"}"#).expect("event");
        assert_eq!(e.change, PaymentChange::Ignored("charge.refunded".into()));
        for bad in [
            &b"not json"[..],
            br#"{"type":"invoice.payment_failed"}"#,
            br#"{"id":"evt_4"}"#,
            br#"{"id":"evt_5","type":"invoice.payment_failed","data":{"object":{}}}"#,
        ] {
            assert!(parse_stripe_event(bad).is_err());
        }
    }
}
