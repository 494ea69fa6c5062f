//! The closed sets of names the API and the pipeline share: a member's [`Role`], a template's
//! [`TemplateType`] and a project's [`TrackingMode`]. Each serialises to (and parses from) the
//! upper-case names of SPEC.md / DECISIONS.md and is stored as that same string, so the
//! database keeps today's values. Parsing happens at the edges (request bodies, database rows);
//! inside Herald only the enums are compared.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A stored or given name that is not one of an enum's names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {what}: expected {expected}")]
pub struct UnknownName {
    pub what: &'static str,
    pub expected: &'static str,
    pub value: String,
}

/// `as_str`, a case-insensitive `parse`, `Display`, `FromStr` and `TryFrom<String>` (what the
/// store's row decoding uses) for an enum whose variants map to the given wire names.
macro_rules! names {
    ($ty:ident, $what:literal, $expected:literal, { $($variant:ident => $wire:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the documented order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];
            /// What the messages of a refused value list.
            pub const EXPECTED: &'static str = $expected;

            /// The wire and storage name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $wire),+
                }
            }

            /// Parses a name, ignoring case and surrounding whitespace.
            pub fn parse(raw: &str) -> Result<Self, UnknownName> {
                let raw = raw.trim();
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str().eq_ignore_ascii_case(raw))
                    .ok_or_else(|| UnknownName {
                        what: $what,
                        expected: $expected,
                        value: raw.to_owned(),
                    })
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                Self::parse(s)
            }
        }

        impl TryFrom<String> for $ty {
            type Error = UnknownName;
            fn try_from(s: String) -> Result<Self, UnknownName> {
                Self::parse(&s)
            }
        }
    };
}

/// A user's role in a project (DECISIONS.md "Identity, keys, sessions").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Role {
    Owner,
    Admin,
    Member,
}

names!(Role, "role", "OWNER, ADMIN or MEMBER", {
    Owner => "OWNER",
    Admin => "ADMIN",
    Member => "MEMBER",
});

impl Role {
    /// Owners and admins manage members, keys, domains and settings.
    pub fn can_manage(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }
}

/// What kind of mail a template sends (DECISIONS.md "Templates and rendering").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TemplateType {
    /// Receipts, password resets: sent to unsubscribed contacts too.
    Transactional,
    /// Skipped for unsubscribed contacts; carries List-Unsubscribe and the footer.
    Marketing,
    /// Sent as written: no footer, never tracked.
    Headless,
}

names!(TemplateType, "template type", "TRANSACTIONAL, MARKETING or HEADLESS", {
    Transactional => "TRANSACTIONAL",
    Marketing => "MARKETING",
    Headless => "HEADLESS",
});

/// A project's open and click tracking (DECISIONS.md "Mail, tracking, unsubscribe").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TrackingMode {
    Enabled,
    Disabled,
    MarketingOnly,
}

names!(TrackingMode, "tracking mode", "ENABLED, DISABLED or MARKETING_ONLY", {
    Enabled => "ENABLED",
    Disabled => "DISABLED",
    MarketingOnly => "MARKETING_ONLY",
});

impl TrackingMode {
    /// Whether a message of `kind` gets tracked links and the open pixel (DECISIONS.md
    /// "Tracking and list pages"): ENABLED tracks TRANSACTIONAL and MARKETING mail,
    /// MARKETING_ONLY only MARKETING mail; HEADLESS mail is never tracked.
    pub fn tracks(self, kind: TemplateType) -> bool {
        match (self, kind) {
            (_, TemplateType::Headless) | (TrackingMode::Disabled, _) => false,
            (TrackingMode::Enabled, _) => true,
            (TrackingMode::MarketingOnly, k) => k == TemplateType::Marketing,
        }
    }
}

impl TemplateType {
    /// MARKETING mail carries `List-Unsubscribe` and the unsubscribe footer; the others never.
    pub fn has_unsubscribe(self) -> bool {
        self == TemplateType::Marketing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_match_as_str() {
        for r in Role::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
            assert_eq!(
                serde_json::from_value::<Role>(r.as_str().into()).unwrap(),
                *r
            );
        }
        for t in TemplateType::ALL {
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        for m in TrackingMode::ALL {
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
            assert_eq!(
                serde_json::from_value::<TrackingMode>(m.as_str().into()).unwrap(),
                *m
            );
        }
        assert_eq!(TrackingMode::MarketingOnly.as_str(), "MARKETING_ONLY");
    }

    #[test]
    fn parse_ignores_case_and_refuses_others() {
        assert_eq!(
            TemplateType::parse(" marketing "),
            Ok(TemplateType::Marketing)
        );
        assert_eq!("owner".parse::<Role>(), Ok(Role::Owner));
        let e = TemplateType::parse("BULK").unwrap_err();
        assert_eq!(e.value, "BULK");
        assert!(
            e.to_string()
                .contains("TRANSACTIONAL, MARKETING or HEADLESS")
        );
        assert!(TrackingMode::try_from("sometimes".to_owned()).is_err());
    }

    #[test]
    fn tracking_follows_the_mode_and_never_headless() {
        use TemplateType::*;
        use TrackingMode::*;
        let tracked = |m: TrackingMode| -> Vec<bool> {
            [Transactional, Marketing, Headless]
                .iter()
                .map(|k| m.tracks(*k))
                .collect()
        };
        assert_eq!(tracked(Enabled), [true, true, false]);
        assert_eq!(tracked(MarketingOnly), [false, true, false]);
        assert_eq!(tracked(Disabled), [false, false, false]);
        assert!(Marketing.has_unsubscribe() && !Transactional.has_unsubscribe());
        assert!(!Headless.has_unsubscribe());
    }

    #[test]
    fn roles() {
        assert!(Role::Owner.can_manage() && Role::Admin.can_manage());
        assert!(!Role::Member.can_manage());
    }
}

/// What a mailed account token is for (DECISIONS.md "Accounts").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TokenKind {
    VerifyEmail,
    PasswordReset,
    Invitation,
}

names!(TokenKind, "token kind", "VERIFY_EMAIL, PASSWORD_RESET or INVITATION", {
    VerifyEmail => "VERIFY_EMAIL",
    PasswordReset => "PASSWORD_RESET",
    Invitation => "INVITATION",
});
