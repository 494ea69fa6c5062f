//! Feedback about delivered mail (deliveries, bounces, complaints, opens, clicks), the
//! suppression list's reasons, the mailbox simulator's addresses, and the generic signed
//! notification format of DECISIONS.md "Feedback, suppression".
//!
//! Invariants:
//! - A permanent bounce or a complaint unsubscribes the contact and suppresses the address
//!   ([`FeedbackKind::suppresses`]); a transient bounce only leaves a history entry.
//! - The generic signature is `t=<unix seconds>,v1=<hex HMAC-SHA256("<t>.<raw body>")>`,
//!   compared in constant time, refused when `t` is more than [`SIGNATURE_TOLERANCE_SECS`]
//!   from now. Several `v1=` values may be given (secret rotation): one match is enough.
//! - Simulator addresses are recognised only at [`SIMULATOR_DOMAIN`], local part (before an
//!   optional `+label`) one of `success`, `bounce`, `complaint`, `suppressionlist`.

use std::fmt;
use std::str::FromStr;

use crate::message_status::MessageStatus;
use crate::time::Millis;
use crate::timed_signature::{self, Fault};

/// Why an address is on a project's suppression list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuppressionReason {
    Bounce,
    Complaint,
    Manual,
}

impl SuppressionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SuppressionReason::Bounce => "bounce",
            SuppressionReason::Complaint => "complaint",
            SuppressionReason::Manual => "manual",
        }
    }
}

impl fmt::Display for SuppressionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a suppression reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown suppression reason {0:?}")]
pub struct UnknownReason(pub String);

impl FromStr for SuppressionReason {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, UnknownReason> {
        match s {
            "bounce" => Ok(SuppressionReason::Bounce),
            "complaint" => Ok(SuppressionReason::Complaint),
            "manual" => Ok(SuppressionReason::Manual),
            other => Err(UnknownReason(other.to_owned())),
        }
    }
}

impl TryFrom<String> for SuppressionReason {
    type Error = UnknownReason;
    fn try_from(s: String) -> Result<Self, UnknownReason> {
        s.parse()
    }
}

/// What a notification says happened to a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedbackKind {
    Delivery,
    /// `permanent`: the address will never accept mail (hard bounce).
    Bounce {
        permanent: bool,
    },
    Complaint,
    Open,
    Click {
        url: Option<String>,
    },
}

impl FeedbackKind {
    /// The status the message moves to (forward only), if any.
    pub fn status(&self) -> Option<MessageStatus> {
        match self {
            FeedbackKind::Delivery => Some(MessageStatus::Delivered),
            FeedbackKind::Bounce { permanent: true } => Some(MessageStatus::Bounced),
            FeedbackKind::Bounce { permanent: false } => None,
            FeedbackKind::Complaint => Some(MessageStatus::Complained),
            FeedbackKind::Open => Some(MessageStatus::Opened),
            FeedbackKind::Click { .. } => Some(MessageStatus::Clicked),
        }
    }

    /// The contact event recorded when the status moves.
    pub fn event(&self) -> Option<&'static str> {
        match self {
            FeedbackKind::Delivery => Some("email.delivery"),
            FeedbackKind::Bounce { permanent: true } => Some("email.bounce"),
            FeedbackKind::Bounce { permanent: false } => None,
            FeedbackKind::Complaint => Some("email.complaint"),
            FeedbackKind::Open => Some("email.open"),
            FeedbackKind::Click { .. } => Some("email.click"),
        }
    }

    /// The suppression reason (and the unsubscribe) this feedback causes.
    pub fn suppresses(&self) -> Option<SuppressionReason> {
        match self {
            FeedbackKind::Bounce { permanent: true } => Some(SuppressionReason::Bounce),
            FeedbackKind::Complaint => Some(SuppressionReason::Complaint),
            _ => None,
        }
    }

    /// Parses the generic format's `type` and `bounceType` (absent: permanent).
    pub fn from_generic(
        kind: &str,
        bounce_type: Option<&str>,
        url: Option<String>,
    ) -> Option<Self> {
        Some(match kind {
            "delivery" => FeedbackKind::Delivery,
            "bounce" => FeedbackKind::Bounce {
                permanent: match bounce_type {
                    None | Some("permanent") => true,
                    Some("transient") => false,
                    Some(_) => return None,
                },
            },
            "complaint" => FeedbackKind::Complaint,
            "open" => FeedbackKind::Open,
            "click" => FeedbackKind::Click { url },
            _ => return None,
        })
    }
}

/// The mailbox simulator's domain: mail to it never reaches a transport.
pub const SIMULATOR_DOMAIN: &str = "simulator.herald.test";

/// What the simulator does with a message to one of its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimulatedOutcome {
    /// `success@`: DELIVERED.
    Success,
    /// `bounce@`: the permanent-bounce path.
    Bounce,
    /// `complaint@`: the complaint path.
    Complaint,
    /// `suppressionlist@`: SUPPRESSED at acceptance.
    SuppressionList,
}

/// The simulator outcome of an address (already lower-cased), or `None` for a real address.
/// Any other local part at the simulator domain behaves like `success@`.
pub fn simulated_outcome(email: &str) -> Option<SimulatedOutcome> {
    let (local, domain) = email.rsplit_once('@')?;
    if !domain.eq_ignore_ascii_case(SIMULATOR_DOMAIN) {
        return None;
    }
    let base = local.split_once('+').map_or(local, |(b, _)| b);
    Some(match base {
        "bounce" => SimulatedOutcome::Bounce,
        "complaint" => SimulatedOutcome::Complaint,
        "suppressionlist" => SimulatedOutcome::SuppressionList,
        _ => SimulatedOutcome::Success,
    })
}

/// The relay's own message id in its 250 reply, when it names one: the last word of the reply
/// text (before Herald's ` (via ...)` suffix), if it looks like an id (6 to 255 characters of
/// letters, digits and `-._@=+<>`, at least one digit). `250 Ok 0100018b...-000000` (Amazon
/// SES) and `250 2.0.0 Ok: queued as 4XyZ1` (Postfix) name one; `250 2.0.0 Ok: queued` does not.
pub fn relay_message_id(reply: &str) -> Option<String> {
    let reply = reply.split(" (via ").next().unwrap_or(reply).trim();
    if !reply.starts_with("250") {
        return None;
    }
    let last = reply.split_whitespace().skip(1).last()?;
    let id = last.trim_start_matches('<').trim_end_matches('>');
    let ok_chars = id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._@=+".contains(&b));
    let looks_like_id = (6..=255).contains(&id.len())
        && ok_chars
        && id.bytes().any(|b| b.is_ascii_digit())
        && !id.contains(".0.") // an enhanced status code such as 2.0.0
        && id.bytes().filter(|b| *b == b'.').count() != 2;
    looks_like_id.then(|| id.to_owned())
}

/// Seconds a generic notification's `t` may differ from now.
pub const SIGNATURE_TOLERANCE_SECS: i64 = timed_signature::TOLERANCE_SECS;

/// Why a `Herald-Signature` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Herald-Signature header is missing")]
    Missing,
    #[error("the Herald-Signature header is malformed: expected t=<unix seconds>,v1=<hex>")]
    Malformed,
    #[error("the Herald-Signature timestamp is more than 300 seconds from now")]
    Stale,
    #[error("the Herald-Signature does not match the body")]
    Mismatch,
}

/// The hex HMAC-SHA256 of `"<t>.<body>"` under `secret` (what a sender puts in `v1=`).
pub fn generic_signature(secret: &[u8], t: i64, body: &[u8]) -> String {
    timed_signature::v1(secret, t, body)
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

/// Checks a `Herald-Signature` header against the raw body; returns the matching `v1` value
/// (lower-case hex), which identifies the notification for replay detection.
pub fn verify_generic_signature(
    header: Option<&str>,
    body: &[u8],
    secret: &[u8],
    now: Millis,
) -> Result<String, SignatureError> {
    Ok(timed_signature::verify(header, body, secret, now)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulator_addresses_with_and_without_labels() {
        use SimulatedOutcome::*;
        assert_eq!(
            simulated_outcome("success@simulator.herald.test"),
            Some(Success)
        );
        assert_eq!(
            simulated_outcome("bounce+a1@simulator.herald.test"),
            Some(Bounce)
        );
        assert_eq!(
            simulated_outcome("complaint@simulator.herald.test"),
            Some(Complaint)
        );
        assert_eq!(
            simulated_outcome("suppressionlist+x@simulator.herald.test"),
            Some(SuppressionList)
        );
        assert_eq!(simulated_outcome("bounce@simulator.herald.test.evil"), None);
        assert_eq!(simulated_outcome("bounce@example.com"), None);
    }

    #[test]
    fn relay_ids_are_found_in_250_replies() {
        assert_eq!(
            relay_message_id("250 Ok 0100018b2c3d4e5f-aaaa-000000 (via smtp://relay:587)"),
            Some("0100018b2c3d4e5f-aaaa-000000".into())
        );
        assert_eq!(
            relay_message_id("250 2.0.0 Ok: queued as 4XyZ12ab"),
            Some("4XyZ12ab".into())
        );
        assert_eq!(
            relay_message_id("250 2.0.0 Ok: queued (via smtp://x:25)"),
            None
        );
        assert_eq!(relay_message_id("250 2.0.0"), None);
        assert_eq!(relay_message_id("550 5.1.1 no"), None);
    }

    #[test]
    fn generic_signatures_verify_and_refuse() {
        let secret = b"s3cret";
        let body = br#"{"type":"delivery","messageId":"x"}"#;
        let now = 1_700_000_000_000;
        let t = now / 1000;
        let v1 = generic_signature(secret, t, body);
        let header = format!("t={t},v1={v1}");
        assert_eq!(
            verify_generic_signature(Some(&header), body, secret, now),
            Ok(v1.clone())
        );
        let rotated = format!("t={t}, v1={}, v1={v1}", "00".repeat(32));
        assert!(verify_generic_signature(Some(&rotated), body, secret, now).is_ok());
        assert_eq!(
            verify_generic_signature(Some(&header), b"{}", secret, now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_generic_signature(Some(&header), body, b"other", now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_generic_signature(Some(&header), body, secret, now + 301_000),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify_generic_signature(None, body, secret, now),
            Err(SignatureError::Missing)
        );
        for bad in ["", "t=1", "v1=ab", "t=x,v1=ab", "t=1,v1=zz", "garbage"] {
            assert!(
                verify_generic_signature(Some(bad), body, secret, now).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn feedback_kinds_map_to_statuses_and_suppression() {
        let hard = FeedbackKind::from_generic("bounce", None, None).unwrap_or(FeedbackKind::Open);
        assert_eq!(hard.status(), Some(MessageStatus::Bounced));
        assert_eq!(hard.suppresses(), Some(SuppressionReason::Bounce));
        let soft = FeedbackKind::Bounce { permanent: false };
        assert_eq!(soft.status(), None);
        assert_eq!(soft.suppresses(), None);
        assert_eq!(
            FeedbackKind::from_generic("bounce", Some("soft"), None),
            None
        );
        assert_eq!(FeedbackKind::from_generic("nope", None, None), None);
    }
}
