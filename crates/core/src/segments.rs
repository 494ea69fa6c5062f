//! Segment rules with no I/O: the two types and the names of the membership events
//! (DECISIONS.md "Segments and filters").

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SegmentType {
    Dynamic,
    Static,
}

impl SegmentType {
    pub fn as_str(self) -> &'static str {
        match self {
            SegmentType::Dynamic => "DYNAMIC",
            SegmentType::Static => "STATIC",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "DYNAMIC" => Some(Self::Dynamic),
            "STATIC" => Some(Self::Static),
            _ => None,
        }
    }
}

/// The slug of a segment name: lower-case, spaces to `-`, other non-word characters dropped.
pub fn slug(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

/// `segment.<slug>.entry`
pub fn entry_event(name: &str) -> String {
    format!("segment.{}.entry", slug(name))
}

/// `segment.<slug>.exit`
pub fn exit_event(name: &str) -> String {
    format!("segment.{}.exit", slug(name))
}

/// Longest segment name in characters.
pub const NAME_MAX: usize = 200;
/// Longest description in characters.
pub const DESCRIPTION_MAX: usize = 2000;
/// Most emails one members request may name.
pub const MEMBERS_MAX: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_decisions() {
        assert_eq!(slug("VIP Customers!"), "vip-customers");
        assert_eq!(
            entry_event("Trial users (EU)"),
            "segment.trial-users-eu.entry"
        );
        assert_eq!(exit_event("a_b"), "segment.a_b.exit");
    }
}
