//! SES receipt notifications (SNS `notificationType: "Received"`, a receipt rule's SNS action
//! with the message in `content`): the same path as the MX listener
//! ([`Engine::receive_inbound`]), with SES's verdicts (`PASS` → `pass`, `FAIL` → `fail`,
//! `GRAY` → `none`, `PROCESSING_FAILED` → `temperror`) and the SNS message id as the receipt,
//! so a replay records nothing. A notification without the content (an S3 action), or whose
//! message has no From, is ignored.

use base64::Engine as _;
use herald_core::email::EmailAddress;
use herald_mail::inbound::read_inbound;
use serde_json::Value;

use super::{NotificationError, Outcome};
use crate::Engine;
use crate::inbound::InboundMessage;

fn verdict(receipt: &Value, key: &str) -> String {
    match receipt[key]["status"].as_str() {
        Some("PASS") => "pass",
        Some("FAIL") => "fail",
        Some("PROCESSING_FAILED") => "temperror",
        _ => "none",
    }
    .to_owned()
}

impl Engine {
    pub(crate) async fn ses_received(
        &self,
        ses: &Value,
        sns_message_id: &str,
    ) -> Result<Outcome, NotificationError> {
        let Some(content) = ses["content"].as_str() else {
            return Ok(Outcome::Ignored);
        };
        let receipt = &ses["receipt"];
        let raw = if receipt["action"]["encoding"] == "BASE64" {
            base64::engine::general_purpose::STANDARD
                .decode(content.trim())
                .map_err(|_| NotificationError::Malformed("content is not base64".into()))?
        } else {
            content.as_bytes().to_vec()
        };
        let Ok(parts) = read_inbound(&raw) else {
            return Ok(Outcome::Ignored);
        };
        let recipients = receipt["recipients"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .filter_map(|r| r.as_str().and_then(|r| EmailAddress::parse(r).ok()))
                    .collect()
            })
            .unwrap_or_default();
        let m = InboundMessage {
            raw,
            parts,
            recipients,
            spf: verdict(receipt, "spfVerdict"),
            dkim: verdict(receipt, "dkimVerdict"),
            dmarc: verdict(receipt, "dmarcVerdict"),
        };
        let done = self
            .receive_inbound(&m, Some(("sns", sns_message_id)))
            .await?;
        Ok(if done.is_empty() {
            Outcome::Ignored
        } else {
            Outcome::Applied
        })
    }
}
