//! The rules of the strings that end up in a message's header: subjects, display names,
//! addresses, and the one character rule every header-bound string follows. `/v1/send`, the
//! templates resource (and later campaigns) call these functions, so the same input gets the
//! same answer (code and message) everywhere; the MIME builder checks the same rule again.
//!
//! Invariants:
//! - A header-bound string never holds a C0 control character other than tab (so no CR, LF,
//!   NUL, ESC, VT, FF, ...), nor DEL (DECISIONS.md "Envelopes and errors").
//! - A [`subject`] that passed is 1 to [`SUBJECT_MAX`] characters and not blank; a
//!   [`display_name`] that passed is trimmed, at most [`DISPLAY_NAME_MAX`] characters.
//! - A [`Violation`] carries a stable code and a message without the field path (the caller
//!   adds the path, which differs per endpoint).

use std::borrow::Cow;

use crate::email::EmailAddress;

/// The longest subject in characters (RFC 5322's line limit).
pub const SUBJECT_MAX: usize = 998;
/// The longest display name in characters.
pub const DISPLAY_NAME_MAX: usize = 200;

/// Why a value was refused: `code` for `errors[].code`, `message` for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub code: &'static str,
    pub message: String,
}

impl Violation {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Violation {}

/// True for the characters no header-bound string may hold: C0 controls except tab, and DEL.
pub fn is_forbidden_in_header(c: char) -> bool {
    (c < ' ' && c != '\t') || c == '\u{7f}'
}

/// The character rule of every header-bound string; `what` names it in the message.
pub fn header_text(value: &str, what: &str) -> Result<(), Violation> {
    if value.chars().any(is_forbidden_in_header) {
        Err(Violation::new(
            "invalid_characters",
            format!("{what} must not contain line breaks or control characters (tab is allowed)"),
        ))
    } else {
        Ok(())
    }
}

/// Text rendered from a template (contact data may hold anything): every forbidden character
/// becomes a space, so a rendered subject always satisfies [`header_text`].
pub fn header_safe(value: &str) -> Cow<'_, str> {
    if value.chars().any(is_forbidden_in_header) {
        Cow::Owned(
            value
                .chars()
                .map(|c| if is_forbidden_in_header(c) { ' ' } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(value)
    }
}

/// A subject (or subject template): not blank, at most [`SUBJECT_MAX`] characters, and the
/// header character rule. Kept as given (not trimmed).
pub fn subject(raw: &str) -> Result<String, Violation> {
    if raw.trim().is_empty() {
        return Err(Violation::new("required", "subject must not be blank"));
    }
    header_text(raw, "subject")?;
    if raw.chars().count() > SUBJECT_MAX {
        return Err(Violation::new(
            "too_long",
            format!("subject is at most {SUBJECT_MAX} characters"),
        ));
    }
    Ok(raw.to_owned())
}

/// A display name: trimmed; blank means none; at most [`DISPLAY_NAME_MAX`] characters and the
/// header character rule.
pub fn display_name(raw: &str) -> Result<Option<String>, Violation> {
    let name = raw.trim();
    if name.is_empty() {
        return Ok(None);
    }
    header_text(name, "a display name")?;
    if name.chars().count() > DISPLAY_NAME_MAX {
        return Err(Violation::new(
            "too_long",
            format!("a display name is at most {DISPLAY_NAME_MAX} characters"),
        ));
    }
    Ok(Some(name.to_owned()))
}

/// An email address (sender, recipient, reply-to): [`EmailAddress::parse`] with the one code.
pub fn address(raw: &str) -> Result<EmailAddress, Violation> {
    EmailAddress::parse(raw).map_err(|e| Violation::new("invalid_email", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_text_refuses_c0_but_tab_and_del() {
        for bad in [
            "a\rb",
            "a\nb",
            "a\0b",
            "a\u{1b}[31mb",
            "a\u{b}b",
            "a\u{c}b",
            "a\u{7f}",
        ] {
            let v = header_text(bad, "subject").expect_err(bad);
            assert_eq!(v.code, "invalid_characters");
        }
        for good in ["a\tb", "Grüße 🎉", "a\u{85}b"] {
            assert!(header_text(good, "subject").is_ok(), "{good:?}");
        }
        assert_eq!(header_safe("a\u{1b}b\nc"), "a b c");
        assert!(matches!(header_safe("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn subject_rules() {
        assert_eq!(subject("").unwrap_err().code, "required");
        assert_eq!(subject("   ").unwrap_err().code, "required");
        assert_eq!(subject("a\u{1b}b").unwrap_err().code, "invalid_characters");
        assert_eq!(subject(&"é".repeat(999)).unwrap_err().code, "too_long");
        assert_eq!(subject(&"é".repeat(998)).unwrap().chars().count(), 998);
        assert_eq!(subject(" Hi ").unwrap(), " Hi ");
    }

    #[test]
    fn display_name_rules() {
        assert_eq!(display_name("  Ada  ").unwrap().as_deref(), Some("Ada"));
        assert_eq!(display_name("   ").unwrap(), None);
        assert_eq!(
            display_name("A\u{c}B").unwrap_err().code,
            "invalid_characters"
        );
        assert_eq!(display_name(&"n".repeat(201)).unwrap_err().code, "too_long");
        assert!(display_name("Tab\tName").is_ok());
    }

    #[test]
    fn address_rule() {
        assert_eq!(
            address(" A@Example.COM ").unwrap().as_str(),
            "a@example.com"
        );
        assert_eq!(address("nope").unwrap_err().code, "invalid_email");
    }
}
