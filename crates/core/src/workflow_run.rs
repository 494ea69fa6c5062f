//! What running a workflow step decides, with no I/O (DECISIONS.md "Workflows"): how long a
//! DELAY waits, what a WAIT_FOR_EVENT waits for, whether a CONDITION holds, and the signature
//! a WEBHOOK call carries. The executor (`herald_engine::workflows`) does the I/O around them.
//!
//! Configs arrive as [`crate::workflow::check_config`] stored them; a value that no longer
//! reads (a hand-edited row) is a [`StepError`], which fails the execution, never a panic.

use serde_json::{Map, Value, json};

use crate::filter::{ContactView, Filter, evaluate};
use crate::time::Millis;

/// A step whose config cannot be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepError(pub String);

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(why: impl Into<String>) -> StepError {
    StepError(why.into())
}

/// How long a DELAY step waits, in milliseconds.
pub fn delay_ms(config: &Value) -> Result<Millis, StepError> {
    let amount = config
        .get("amount")
        .and_then(Value::as_i64)
        .filter(|n| *n > 0)
        .ok_or_else(|| bad("the delay has no amount"))?;
    let unit: Millis = match config.get("unit").and_then(Value::as_str) {
        Some("minutes") => 60_000,
        Some("hours") => 3_600_000,
        Some("days") => 86_400_000,
        other => return Err(bad(format!("the delay's unit {other:?} is unknown"))),
    };
    Ok(amount.saturating_mul(unit))
}

/// What a WAIT_FOR_EVENT step waits for: the event name and the timeout in milliseconds.
pub fn wait_for(config: &Value) -> Result<(String, Option<Millis>), StepError> {
    let name = config
        .get("eventName")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bad("the wait names no event"))?;
    let timeout = config
        .get("timeout")
        .and_then(Value::as_i64)
        .map(|s| s.saturating_mul(1000));
    Ok((name.to_owned(), timeout))
}

/// The contact and the execution's event as a CONDITION sees them.
pub struct ConditionInput<'a> {
    pub email: &'a str,
    pub subscribed: bool,
    pub data: &'a Map<String, Value>,
    /// The execution's context: the triggering event's data (or the manual start's).
    pub event: &'a Value,
}

/// Whether a CONDITION step's `{field, operator, value?}` holds: the filter tree's leaf rules
/// and in-memory evaluator (`herald_core::filter`), with `contact.email`, `contact.subscribed`,
/// `data.<key>` read from the contact and `event.<key>` from the execution's context.
pub fn condition_holds(
    config: &Value,
    input: &ConditionInput<'_>,
    now: Millis,
) -> Result<bool, StepError> {
    let field = config
        .get("field")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("the condition names no field"))?;
    let (leaf_field, data) = if field == "contact.email" {
        ("email".to_owned(), input.data.clone())
    } else if field == "contact.subscribed" {
        ("subscribed".to_owned(), input.data.clone())
    } else if let Some(key) = field.strip_prefix("data.") {
        (format!("data.{key}"), input.data.clone())
    } else if let Some(key) = field.strip_prefix("event.") {
        let event = input.event.as_object().cloned().unwrap_or_default();
        (format!("data.{key}"), event)
    } else {
        return Err(bad(format!("the condition's field {field:?} is unknown")));
    };
    let mut leaf = json!({"field": leaf_field, "operator": config.get("operator")});
    for key in ["value", "unit"] {
        if let Some(v) = config.get(key) {
            leaf[key] = v.clone();
        }
    }
    let filter = Filter::parse(&leaf).map_err(|e| bad(format!("the condition: {e}")))?;
    let view = ContactView {
        email: input.email.to_owned(),
        subscribed: input.subscribed,
        data,
        ..ContactView::default()
    };
    Ok(evaluate(&filter, &view, now))
}

/// The header a WEBHOOK call is signed in: the scheme of the generic feedback notifications
/// (`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, [`crate::feedback`]), so one
/// verifier serves both directions.
pub const SIGNATURE_HEADER: &str = "Herald-Signature";

/// The value of [`SIGNATURE_HEADER`] for a call made at `unix_seconds`.
pub fn webhook_signature(secret: &[u8], unix_seconds: i64, body: &[u8]) -> String {
    let v1 = crate::feedback::generic_signature(secret, unix_seconds, body);
    format!("t={unix_seconds},v1={v1}")
}
/// A project's signing secret for WEBHOOK calls (`whsec_` and 64 hex digits): an HMAC of the
/// project id under the key of [`crate::secret::KeyPurpose::WebhookSigning`], so it needs no
/// storage, differs per project, and changes when the server secret is rotated.
pub fn webhook_secret(base: &crate::secret::DerivedKey, project_id: uuid::Uuid) -> String {
    let hex = crate::feedback::generic_signature(&base.0, 0, project_id.as_bytes());
    format!("whsec_{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(data: &'a Map<String, Value>, event: &'a Value) -> ConditionInput<'a> {
        ConditionInput {
            email: "ada@example.com",
            subscribed: true,
            data,
            event,
        }
    }

    #[test]
    fn delays_convert_their_unit() {
        let d = |a: i64, u: &str| delay_ms(&json!({"amount": a, "unit": u}));
        assert_eq!(d(2, "minutes"), Ok(120_000));
        assert_eq!(d(1, "hours"), Ok(3_600_000));
        assert_eq!(d(7, "days"), Ok(604_800_000));
        assert!(d(1, "weeks").is_err());
        assert!(delay_ms(&json!({"unit": "days"})).is_err());
    }

    #[test]
    fn waits_name_their_event_and_timeout() {
        let w = wait_for(&json!({"eventName": "paid", "timeout": 60})).expect("wait");
        assert_eq!(w, ("paid".into(), Some(60_000)));
        assert_eq!(
            wait_for(&json!({"eventName": "paid"})).expect("wait").1,
            None
        );
        assert!(wait_for(&json!({})).is_err());
    }

    #[test]
    fn conditions_read_contact_data_and_event() {
        let data = json!({"plan": "pro", "seats": 12})
            .as_object()
            .cloned()
            .unwrap();
        let event = json!({"amount": 40});
        let holds = |cfg: Value| condition_holds(&cfg, &input(&data, &event), 0).unwrap();
        assert!(holds(
            json!({"field": "data.plan", "operator": "equals", "value": "pro"})
        ));
        assert!(!holds(
            json!({"field": "data.plan", "operator": "equals", "value": "free"})
        ));
        assert!(holds(
            json!({"field": "data.seats", "operator": "greaterThan", "value": 10})
        ));
        assert!(holds(
            json!({"field": "event.amount", "operator": "lessThan", "value": 50})
        ));
        assert!(holds(
            json!({"field": "event.missing", "operator": "notExists"})
        ));
        assert!(holds(
            json!({"field": "contact.email", "operator": "contains", "value": "@example.com"})
        ));
        assert!(holds(
            json!({"field": "contact.subscribed", "operator": "equals", "value": true})
        ));
        assert!(
            condition_holds(
                &json!({"field": "other", "operator": "exists"}),
                &input(&data, &event),
                0
            )
            .is_err()
        );
    }

    #[test]
    fn signatures_cover_time_and_body() {
        let a = webhook_signature(b"k", 1_700_000_000, b"{}");
        assert!(a.starts_with("t=1700000000,v1="), "{a}");
        assert_eq!(a.len(), "t=1700000000,v1=".len() + 64);
        assert_ne!(a, webhook_signature(b"k", 1_700_000_001, b"{}"));
        assert_ne!(a, webhook_signature(b"k", 1_700_000_000, b"[]"));
        assert_ne!(a, webhook_signature(b"j", 1_700_000_000, b"{}"));
    }
}
