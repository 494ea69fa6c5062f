//! Campaign rules with no I/O: the statuses and the moves between them (DECISIONS.md
//! "Campaigns"), and the audience types.
//!
//! DRAFT → (send) SENDING, or SCHEDULED when `scheduledFor` is in the future;
//! SCHEDULED → (send again) SENDING or SCHEDULED at the new time; SCHEDULED → (its time comes)
//! SENDING; SENDING → SENT once every recipient's message is terminal; SCHEDULED or SENDING →
//! (cancel) CANCELLED. "Active" is SCHEDULED or SENDING: an active campaign cannot be deleted
//! and keeps its segment from being deleted. Only DRAFT and SCHEDULED campaigns are edited.
//!
//! A fan-out that stops on its own ([`StoppedReason`]) is not a cancel: the campaign stays
//! SENDING until what was queued (and billed) is delivered, then ends SENT with the reason.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CampaignStatus {
    Draft,
    Scheduled,
    Sending,
    Sent,
    Cancelled,
}

use CampaignStatus::*;

impl CampaignStatus {
    pub const ALL: [CampaignStatus; 5] = [Draft, Scheduled, Sending, Sent, Cancelled];
    pub const EXPECTED: &'static str = "DRAFT, SCHEDULED, SENDING, SENT or CANCELLED";

    pub fn as_str(self) -> &'static str {
        match self {
            Draft => "DRAFT",
            Scheduled => "SCHEDULED",
            Sending => "SENDING",
            Sent => "SENT",
            Cancelled => "CANCELLED",
        }
    }

    /// The stored or requested name (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
    }

    /// SCHEDULED or SENDING.
    pub fn is_active(self) -> bool {
        matches!(self, Scheduled | Sending)
    }

    /// Whether PUT may change the campaign.
    pub fn is_editable(self) -> bool {
        matches!(self, Draft | Scheduled)
    }

    /// Whether `POST /send` may start or (re)schedule it.
    pub fn can_send(self) -> bool {
        matches!(self, Draft | Scheduled)
    }

    /// Whether `POST /cancel` applies.
    pub fn can_cancel(self) -> bool {
        self.is_active()
    }

    /// Whether DELETE may remove it.
    pub fn can_delete(self) -> bool {
        !self.is_active()
    }
}

impl std::fmt::Display for CampaignStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a campaign goes to (always only subscribed contacts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AudienceType {
    All,
    Segment,
    Filtered,
}

impl AudienceType {
    pub const EXPECTED: &'static str = "ALL, SEGMENT or FILTERED";

    pub fn as_str(self) -> &'static str {
        match self {
            AudienceType::All => "ALL",
            AudienceType::Segment => "SEGMENT",
            AudienceType::Filtered => "FILTERED",
        }
    }

    /// The stored or requested name (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        [
            AudienceType::All,
            AudienceType::Segment,
            AudienceType::Filtered,
        ]
        .into_iter()
        .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }
}

/// Why a fan-out stopped before the end of its audience, on its own (never a user's cancel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StoppedReason {
    /// The project's monthly campaigns limit was reached.
    BillingLimit,
    /// The audience no longer resolves (its segment is gone, its filter no longer parses).
    AudienceError,
    /// The fan-out failed for another reason, every retry included (the detail is kept).
    FanoutError,
}

impl StoppedReason {
    pub const ALL: [StoppedReason; 3] = [
        StoppedReason::BillingLimit,
        StoppedReason::AudienceError,
        StoppedReason::FanoutError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StoppedReason::BillingLimit => "BILLING_LIMIT",
            StoppedReason::AudienceError => "AUDIENCE_ERROR",
            StoppedReason::FanoutError => "FANOUT_ERROR",
        }
    }

    /// The stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// Longest campaign name and description, in characters.
pub const NAME_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 2000;

/// The subject of a test send: marked, so nobody takes it for the real one.
pub fn test_subject(subject: &str) -> String {
    format!("[Test] {subject}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_parse_case_insensitively() {
        for s in CampaignStatus::ALL {
            assert_eq!(CampaignStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(CampaignStatus::parse("sending"), Some(Sending));
        assert_eq!(CampaignStatus::parse("DONE"), None);
    }

    #[test]
    fn the_status_table_of_decisions() {
        let active: Vec<_> = CampaignStatus::ALL
            .into_iter()
            .filter(|s| s.is_active())
            .collect();
        assert_eq!(active, [Scheduled, Sending]);
        assert!(Draft.can_send() && Scheduled.can_send());
        assert!(!Sending.can_send() && !Sent.can_send() && !Cancelled.can_send());
        assert!(Scheduled.can_cancel() && Sending.can_cancel() && !Draft.can_cancel());
        assert!(!Sending.can_delete() && Sent.can_delete() && Cancelled.can_delete());
        assert!(Draft.is_editable() && !Sending.is_editable() && !Sent.is_editable());
    }

    #[test]
    fn stopped_reasons_round_trip() {
        for r in StoppedReason::ALL {
            assert_eq!(StoppedReason::parse(r.as_str()), Some(r));
        }
        assert_eq!(StoppedReason::parse("billing_limit"), None);
    }

    #[test]
    fn audience_types_parse() {
        assert_eq!(AudienceType::parse("segment"), Some(AudienceType::Segment));
        assert_eq!(AudienceType::parse("SOME"), None);
    }
}
