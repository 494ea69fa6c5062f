//! Event names: the rule a tracked event's name follows (`/v1/track`, `DELETE /events/:name`).
//!
//! Invariants:
//! - A name that passed [`tracked_name`] is trimmed, 1 to [`EVENT_NAME_MAX`] characters, holds
//!   no control character, and is not a system name ([`is_system_event`]).
//! - System names belong to Herald: `email.*`, `contact.subscribed`, `contact.unsubscribed`,
//!   `segment.<slug>.entry` and `segment.<slug>.exit` (DECISIONS.md "/v1/track"). They are
//!   compared without regard to case, so no tracked event can pass for one in a feed.

use crate::rules::Violation;

/// The longest event name in characters.
pub const EVENT_NAME_MAX: usize = 255;

/// The subscription events Herald records itself.
pub const SUBSCRIBED: &str = "contact.subscribed";
pub const UNSUBSCRIBED: &str = "contact.unsubscribed";

/// True for the names only Herald records (compared ignoring case and surrounding spaces).
pub fn is_system_event(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    if n.starts_with("email.") || n == SUBSCRIBED || n == UNSUBSCRIBED {
        return true;
    }
    n.strip_prefix("segment.").is_some_and(|rest| {
        [".entry", ".exit"]
            .iter()
            .any(|end| rest.strip_suffix(end).is_some_and(|slug| !slug.is_empty()))
    })
}

/// The name of a tracked event: trimmed, not blank, at most [`EVENT_NAME_MAX`] characters,
/// no control characters, not a system name. Codes: `required`, `too_long`,
/// `invalid_characters`, `reserved_event`.
pub fn tracked_name(raw: &str) -> Result<String, Violation> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(Violation::new("required", "event must not be blank"));
    }
    if name.chars().any(char::is_control) {
        return Err(Violation::new(
            "invalid_characters",
            "event must not contain control characters",
        ));
    }
    if name.chars().count() > EVENT_NAME_MAX {
        return Err(Violation::new(
            "too_long",
            format!("event is at most {EVENT_NAME_MAX} characters"),
        ));
    }
    if is_system_event(name) {
        return Err(Violation::new(
            "reserved_event",
            format!(
                "{name:?} is a system event name (email.*, contact.subscribed, \
                 contact.unsubscribed, segment.*.entry, segment.*.exit); choose another name"
            ),
        ));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_names_are_reserved_whatever_their_case() {
        for n in [
            "email.sent",
            "email.",
            "EMAIL.open",
            "contact.subscribed",
            " Contact.Unsubscribed ",
            "segment.vip.entry",
            "segment.big-spenders.exit",
        ] {
            assert!(is_system_event(n), "{n}");
            assert_eq!(tracked_name(n).unwrap_err().code, "reserved_event", "{n}");
        }
        for n in [
            "signup",
            "emails.sent",
            "email",
            "contact.created",
            "segment.entry",
            "segment..exit",
            "segment.vip.entered",
            "user.email.sent",
        ] {
            assert!(!is_system_event(n), "{n}");
            assert!(tracked_name(n).is_ok(), "{n}");
        }
    }

    #[test]
    fn names_are_trimmed_bounded_and_printable() {
        assert_eq!(tracked_name("  signup ").unwrap(), "signup");
        assert_eq!(tracked_name("").unwrap_err().code, "required");
        assert_eq!(tracked_name(" \t ").unwrap_err().code, "required");
        assert_eq!(tracked_name("a\nb").unwrap_err().code, "invalid_characters");
        assert_eq!(
            tracked_name("a\u{1b}b").unwrap_err().code,
            "invalid_characters"
        );
        assert_eq!(
            tracked_name(&"é".repeat(EVENT_NAME_MAX + 1))
                .unwrap_err()
                .code,
            "too_long"
        );
        assert!(tracked_name(&"é".repeat(EVENT_NAME_MAX)).is_ok());
        assert_eq!(
            tracked_name("Kauf abgeschlossen 🎉").unwrap(),
            "Kauf abgeschlossen 🎉"
        );
    }
}
