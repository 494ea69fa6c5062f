//! The status of a message (one recipient of a send) and the rule of how it may change.
//!
//! Invariant (DECISIONS.md "Messages"): a status only moves forward. The engagement statuses
//! follow the order PENDING → SENDING → SENT → DELIVERED → OPENED → CLICKED → BOUNCED →
//! COMPLAINED, skipping steps allowed; FAILED and SUPPRESSED are reached only before the
//! message went out (from PENDING or SENDING) and are terminal. RECEIVED (inbound mail) is
//! where an inbound message starts and stays. SENDING may be "moved to"
//! again (a retry records another attempt). The store enforces this rule in its SQL with
//! [`MessageStatus::allowed_before`], so no caller can move a message backwards.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageStatus {
    Pending,
    Sending,
    Sent,
    Delivered,
    Opened,
    Clicked,
    Bounced,
    Complained,
    Failed,
    Suppressed,
    /// An inbound message (received by the MX listener): it never moves.
    Received,
}

use MessageStatus::*;

impl MessageStatus {
    /// Every status, in the order of DECISIONS.md.
    pub const ALL: [MessageStatus; 11] = [
        Pending, Sending, Sent, Delivered, Opened, Clicked, Bounced, Complained, Failed,
        Suppressed, Received,
    ];

    /// The name used in the API and stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Pending => "PENDING",
            Sending => "SENDING",
            Sent => "SENT",
            Delivered => "DELIVERED",
            Opened => "OPENED",
            Clicked => "CLICKED",
            Bounced => "BOUNCED",
            Complained => "COMPLAINED",
            Failed => "FAILED",
            Suppressed => "SUPPRESSED",
            Received => "RECEIVED",
        }
    }

    /// FAILED and SUPPRESSED: nothing follows them.
    pub fn is_terminal(self) -> bool {
        matches!(self, Failed | Suppressed)
    }

    /// Whether the message was handed over or skipped for good: a send job finding its
    /// message in one of these has nothing left to do.
    pub fn is_done(self) -> bool {
        !matches!(self, Pending | Sending)
    }

    /// Whether the message went out: handed to the relay (SENT) or any engagement after
    /// that. Only these can be opened or clicked, and only these count in bounce and
    /// complaint rates.
    pub fn went_out(self) -> bool {
        matches!(
            self,
            Sent | Delivered | Opened | Clicked | Bounced | Complained
        )
    }

    /// Position in the order of engagement (terminal statuses have none).
    fn rank(self) -> Option<u8> {
        match self {
            Pending => Some(0),
            Sending => Some(1),
            Sent => Some(2),
            Delivered => Some(3),
            Opened => Some(4),
            Clicked => Some(5),
            Bounced => Some(6),
            Complained => Some(7),
            Failed | Suppressed | Received => None,
        }
    }

    /// Whether a message in `self` may move to `to`.
    pub fn can_move_to(self, to: MessageStatus) -> bool {
        match (self.rank(), to) {
            (None, _) => false,
            (Some(_), Failed | Suppressed) => matches!(self, Pending | Sending),
            (Some(_), Sending) => matches!(self, Pending | Sending),
            (Some(from), _) => to.rank().is_some_and(|r| r > from),
        }
    }

    /// The statuses a message may be in for a move to `self` to apply.
    pub fn allowed_before(self) -> Vec<MessageStatus> {
        Self::ALL
            .into_iter()
            .filter(|from| from.can_move_to(self))
            .collect()
    }
}

impl fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a message status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown message status {0:?}")]
pub struct UnknownStatus(pub String);

impl FromStr for MessageStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

impl TryFrom<String> for MessageStatus {
    type Error = UnknownStatus;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for st in MessageStatus::ALL {
            assert_eq!(st.as_str().parse::<MessageStatus>(), Ok(st));
            let json = serde_json::to_string(&st).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", st.as_str()));
        }
        assert!("sent".parse::<MessageStatus>().is_err());
    }

    #[test]
    fn status_only_moves_forward() {
        assert!(Pending.can_move_to(Sending));
        assert!(Sending.can_move_to(Sending));
        assert!(Pending.can_move_to(Sent));
        assert!(Sent.can_move_to(Delivered));
        assert!(Delivered.can_move_to(Clicked));
        assert!(Opened.can_move_to(Complained));
        assert!(Sending.can_move_to(Failed));
        assert!(Pending.can_move_to(Suppressed));
        assert!(!Sent.can_move_to(Sending));
        assert!(!Sent.can_move_to(Pending));
        assert!(!Sent.can_move_to(Failed));
        assert!(!Clicked.can_move_to(Opened));
        assert!(!Delivered.can_move_to(Delivered));
        for to in MessageStatus::ALL {
            assert!(!Received.can_move_to(to) && !to.can_move_to(Received));
            assert!(!Failed.can_move_to(to));
            assert!(!Suppressed.can_move_to(to));
            assert!(!to.can_move_to(Pending));
        }
        assert_eq!(Sent.allowed_before(), vec![Pending, Sending]);
    }
}
