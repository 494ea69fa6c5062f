//! What the API shows of a domain: the records to publish (from the current configuration)
//! with the state each had at the last check, and a note for reserved domains. Never the
//! private key: [`Domain`] does not carry it.

use herald_mail::dns::{RecordPurpose, required_records};
use herald_store::domains::Domain;
use serde_json::Value;

use super::is_reserved;

/// The state of one record at the last check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordStatus {
    Found,
    Missing,
    WrongValue {
        found: String,
    },
    /// Not looked up yet (or a reserved domain, which is never looked up).
    Unchecked,
}

/// A record to publish and what the last check found.
#[derive(Clone, Debug)]
pub struct RecordView {
    /// `dkim`, `spf`, `dmarc` or `returnPath`.
    pub purpose: &'static str,
    pub record_type: &'static str,
    pub name: String,
    pub value: String,
    pub required: bool,
    pub state: RecordStatus,
}

/// A domain as the API shows it (never with its private key).
#[derive(Clone, Debug)]
pub struct DomainView {
    pub domain: Domain,
    pub reserved: bool,
    pub records: Vec<RecordView>,
    /// An explanation for reserved domains.
    pub note: Option<String>,
}

fn purpose_key(purpose: &RecordPurpose) -> &'static str {
    match purpose {
        RecordPurpose::Dkim => "dkim",
        RecordPurpose::Spf => "spf",
        RecordPurpose::Dmarc => "dmarc",
        RecordPurpose::ReturnPath => "returnPath",
    }
}

/// Reads one record's state from the stored check (`{"state": "wrongValue", "found": ...}`).
fn stored_state(last_check: Option<&Value>, key: &str) -> RecordStatus {
    let Some(entry) = last_check.and_then(|c| c.get(key)) else {
        return RecordStatus::Unchecked;
    };
    match entry.get("state").and_then(Value::as_str) {
        Some("found") => RecordStatus::Found,
        Some("missing") => RecordStatus::Missing,
        Some("wrongValue") => RecordStatus::WrongValue {
            found: entry
                .get("found")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        },
        _ => RecordStatus::Unchecked,
    }
}

impl crate::Engine {
    /// The records of `domain` with their last known states.
    pub fn domain_view(&self, domain: Domain) -> DomainView {
        let reserved = is_reserved(&domain.domain);
        let last_check = domain.last_check.as_ref().map(|j| &j.0);
        let records = required_records(
            &domain.domain,
            &domain.selector,
            &domain.dkim_public_key,
            &self.settings.spf_mechanism,
            self.settings.return_path_host.as_deref(),
        )
        .into_iter()
        .map(|r| {
            let purpose = purpose_key(&r.purpose);
            RecordView {
                purpose,
                record_type: r.record_type,
                name: r.name,
                value: r.value,
                required: r.required,
                state: stored_state(last_check, purpose),
            }
        })
        .collect();
        let note = reserved.then(|| {
            if self.transport.is_local_outbox() {
                "Reserved test domain: verified without DNS because the transport is the local outbox, \
                 so its mail never leaves this machine. It stops being verified if an SMTP relay is configured."
                    .to_owned()
            } else {
                "Reserved test domain: it cannot be verified while an SMTP relay is configured.".to_owned()
            }
        });
        DomainView {
            domain,
            reserved,
            records,
            note,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_states_read_back() {
        let v = serde_json::json!({"dkim": {"state": "found"}, "spf": {"state": "wrongValue", "found": "v=spf1 -all"}});
        assert_eq!(stored_state(Some(&v), "dkim"), RecordStatus::Found);
        assert_eq!(
            stored_state(Some(&v), "spf"),
            RecordStatus::WrongValue {
                found: "v=spf1 -all".into()
            }
        );
        assert_eq!(stored_state(Some(&v), "dmarc"), RecordStatus::Unchecked);
        assert_eq!(stored_state(None, "dkim"), RecordStatus::Unchecked);
    }
}
