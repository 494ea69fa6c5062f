//! Custom headers of a message (`/v1/send` `headers`): the one rule the API answers 422 with
//! and the MIME builder refuses again, so a request answered 200 never fails at compose time
//! for a header reason (DECISIONS.md "/v1/send").
//!
//! Invariants of a header that passed [`custom_header`]:
//! - the name is 1 to [`NAME_MAX`] printable ASCII characters (33..=126) without `:`;
//! - the name is not [`reserved`] (case-insensitive): not one Herald writes itself. The list is
//!   DECISIONS.md's plus `Reply-To`, which Herald writes from the request's `reply` field (or
//!   the template's reply-to), so a custom one would be a second `Reply-To` line;
//! - the threading headers `In-Reply-To` and `References` are allowed and delivered;
//! - the value is at most [`VALUE_MAX`] characters and follows the header character rule of
//!   [`crate::rules::header_text`] (no CR, LF, NUL or other C0 control except tab).

use crate::rules::{Violation, header_text};

/// The longest custom header name (RFC 5322 recommends lines of at most 78 characters).
pub const NAME_MAX: usize = 76;
/// The longest custom header value in characters.
pub const VALUE_MAX: usize = 998;

/// Names Herald sets itself; a request may not give them (compared case-insensitively).
pub const RESERVED: [&str; 18] = [
    "From",
    "To",
    "Cc",
    "Bcc",
    "Subject",
    "Date",
    "Message-ID",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
    "Content-Disposition",
    "DKIM-Signature",
    "Return-Path",
    "Received",
    "Sender",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
    "Reply-To",
];

/// Threading headers a request may set (they are not reserved).
pub const THREADING: [&str; 2] = ["In-Reply-To", "References"];

/// True when `name` is one Herald sets itself.
pub fn reserved(name: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// The name rule: 1 to [`NAME_MAX`] printable ASCII characters without `:`.
pub fn header_name(name: &str) -> Result<(), Violation> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && name.bytes().all(|b| (33..=126).contains(&b) && b != b':');
    if ok {
        Ok(())
    } else {
        Err(Violation::new(
            "invalid_header_name",
            format!("header names are 1 to {NAME_MAX} printable ASCII characters without ':'"),
        ))
    }
}

/// The value rule: at most [`VALUE_MAX`] characters and the header character rule.
pub fn header_value(value: &str) -> Result<(), Violation> {
    header_text(value, "a header value")?;
    if value.chars().count() > VALUE_MAX {
        return Err(Violation::new(
            "too_long",
            format!("header values are at most {VALUE_MAX} characters"),
        ));
    }
    Ok(())
}

/// The whole rule for one custom header: name, not reserved, value.
pub fn custom_header(name: &str, value: &str) -> Result<(), Violation> {
    header_name(name)?;
    if reserved(name) {
        return Err(Violation::new(
            "reserved_header",
            format!("{name} is set by Herald; use the request's own field"),
        ));
    }
    header_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reserved_name_is_refused_in_any_case() {
        for name in RESERVED {
            for n in [
                name.to_owned(),
                name.to_ascii_lowercase(),
                name.to_ascii_uppercase(),
            ] {
                assert_eq!(custom_header(&n, "v").unwrap_err().code, "reserved_header");
            }
        }
    }

    #[test]
    fn threading_and_other_names_pass() {
        for name in THREADING
            .into_iter()
            .chain(["X-Campaign", "Content-ID", "Precedence"])
        {
            assert!(custom_header(name, "<a@b>").is_ok(), "{name}");
        }
        assert!(custom_header(&"X".repeat(NAME_MAX), "v").is_ok());
    }

    #[test]
    fn bad_names_and_values() {
        for name in ["", "X:B", "X B", "Ünï", "X\r\nBcc"] {
            assert_eq!(
                custom_header(name, "v").unwrap_err().code,
                "invalid_header_name"
            );
        }
        let long = "X".repeat(NAME_MAX + 1);
        assert_eq!(
            custom_header(&long, "v").unwrap_err().code,
            "invalid_header_name"
        );
        for value in ["a\r\nBcc: x@y.z", "a\0", "a\u{1b}b"] {
            assert_eq!(
                custom_header("X-A", value).unwrap_err().code,
                "invalid_characters"
            );
        }
        assert_eq!(
            custom_header("X-A", &"v".repeat(VALUE_MAX + 1))
                .unwrap_err()
                .code,
            "too_long"
        );
        assert!(custom_header("X-A", &"v".repeat(VALUE_MAX)).is_ok());
        assert!(custom_header("X-A", "tab\tis fine").is_ok());
    }
}
