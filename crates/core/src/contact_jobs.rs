//! Contact jobs (CSV imports and bulk operations): their states and operations as the API
//! names them (DECISIONS.md "Jobs").

use serde::{Deserialize, Serialize};

/// Most contact ids one bulk request may name.
pub const BULK_MAX_IDS: usize = 1000;

/// Where a job is: `waiting` (queued), `active` (a worker holds it), then `completed` or `failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Waiting,
    Active,
    Completed,
    Failed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Active => "active",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "waiting" => Some(Self::Waiting),
            "active" => Some(Self::Active),
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }

    /// `waiting` or `active`: the job still has work.
    pub fn is_open(self) -> bool {
        matches!(self, JobState::Waiting | JobState::Active)
    }
}

impl TryFrom<String> for JobState {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| format!("unknown job state {s:?}"))
    }
}

impl TryFrom<String> for JobOperation {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| format!("unknown job operation {s:?}"))
    }
}

/// What a contact job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobOperation {
    Import,
    Subscribe,
    Unsubscribe,
    Delete,
}

impl JobOperation {
    /// The name stored and shown as a bulk result's `operation`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobOperation::Import => "import",
            JobOperation::Subscribe => "subscribe",
            JobOperation::Unsubscribe => "unsubscribe",
            JobOperation::Delete => "delete",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "import" => Some(Self::Import),
            "subscribe" => Some(Self::Subscribe),
            "unsubscribe" => Some(Self::Unsubscribe),
            "delete" => Some(Self::Delete),
            _ => None,
        }
    }

    /// The queue kind whose worker runs it.
    pub fn queue_kind(self) -> &'static str {
        match self {
            JobOperation::Import => IMPORT_KIND,
            _ => BULK_KIND,
        }
    }
}

/// Queue kind of CSV imports (payload `{jobId}`).
pub const IMPORT_KIND: &str = "contacts.import";
/// Queue kind of bulk operations (payload `{jobId}`).
pub const BULK_KIND: &str = "contacts.bulk";

/// Progress 0-100 of `done` out of `total` (100 when there is nothing to do).
pub fn progress(done: u64, total: u64) -> i32 {
    if total == 0 {
        return 100;
    }
    i32::try_from(done.min(total) * 100 / total).unwrap_or(100)
}
