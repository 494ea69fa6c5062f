//! Header values that always fit on the wire: no line of a header passes 998 bytes, whatever
//! the value (RFC 5322 section 2.1.1).
//!
//! Plain text stays plain: a value of printable ASCII words separated by single spaces is
//! written as lettre writes it (folded at its spaces) whenever no line then passes 998 bytes.
//! Every other value becomes a sequence of RFC 2047 encoded-words (UTF-8, Q encoding): one
//! with non-ASCII text, tabs, runs of spaces or leading/trailing spaces (which unfolding would
//! not give back exactly), text that itself looks like an encoded-word (`=?`, which readers
//! would decode), or a run without spaces too long for a line (a 998-character subject without
//! spaces, a long token in a custom header). Encoded-words may be folded between any two of
//! them and decode to exactly the original text (whitespace between adjacent encoded-words is
//! ignored, RFC 2047 section 6.2). Each holds whole characters and is at most 75 characters
//! long, so every line stays near 78 bytes.

use lettre::message::header::{HeaderName, HeaderValue, Headers};

/// The hard limit of a header line, CRLF excluded.
pub const MAX_LINE: usize = 998;
/// RFC 2047 section 2: an encoded-word is at most 75 characters.
const MAX_WORD: usize = 75;
const PREFIX: &str = "=?utf-8?q?";
const SUFFIX: &str = "?=";
/// The recommended line length (RFC 5322 section 2.1.1), used to size the first word.
const SOFT_LINE: usize = 78;
/// The longest Q encoding of one character (4 UTF-8 bytes, `=XX` each).
const MAX_CHAR_Q: usize = 12;

/// `name: value` as a lettre header value whose every line is at most [`MAX_LINE`] bytes.
/// The value must not contain CR or LF (checked by the caller).
pub fn header_value(name: HeaderName, value: &str) -> HeaderValue {
    if is_plain(value) {
        let plain = HeaderValue::new(name.clone(), value.to_owned());
        if fits(&plain) {
            return plain;
        }
    }
    let encoded = encoded_words(name.len(), value);
    HeaderValue::dangerous_new_pre_encoded(name, value.to_owned(), encoded)
}

/// Printable ASCII words separated by single spaces, nothing a reader would decode.
fn is_plain(value: &str) -> bool {
    value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.contains("  ")
        && !value.contains("=?")
}

/// True when lettre's rendering of the header has no line over [`MAX_LINE`] bytes.
fn fits(value: &HeaderValue) -> bool {
    let mut headers = Headers::new();
    headers.insert_raw(value.clone());
    headers
        .to_string()
        .split("\r\n")
        .all(|line| line.len() <= MAX_LINE)
}

/// The value as folded Q-encoded words; the first line starts after `name: `.
pub fn encoded_words(name_len: usize, value: &str) -> String {
    let payload_max = MAX_WORD - PREFIX.len() - SUFFIX.len();
    // The first word shares its line with the header name.
    let first_max = SOFT_LINE
        .saturating_sub(name_len + 2 + PREFIX.len() + SUFFIX.len())
        .clamp(MAX_CHAR_Q, payload_max);
    let mut out = String::with_capacity(value.len() * 3);
    let mut payload = String::new();
    let mut budget = first_max;
    let mut words = 0;
    let flush = |payload: &mut String, words: &mut usize, out: &mut String| {
        if *words > 0 {
            out.push_str("\r\n ");
        }
        out.push_str(PREFIX);
        out.push_str(payload);
        out.push_str(SUFFIX);
        payload.clear();
        *words += 1;
    };
    let mut buf = [0u8; 4];
    for c in value.chars() {
        let mut piece = String::new();
        for b in c.encode_utf8(&mut buf).bytes() {
            q_byte(b, &mut piece);
        }
        if payload.len() + piece.len() > budget {
            flush(&mut payload, &mut words, &mut out);
            budget = payload_max;
        }
        payload.push_str(&piece);
    }
    if !payload.is_empty() || words == 0 {
        flush(&mut payload, &mut words, &mut out);
    }
    out
}

/// One byte in the Q encoding, restricted to the characters RFC 2047 section 5(3) allows in
/// any header (so the result is safe in structured and unstructured fields alike).
fn q_byte(b: u8, out: &mut String) {
    match b {
        b' ' => out.push('_'),
        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
            out.push(char::from(b));
        }
        _ => {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('=');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn render(name: &str, value: &str) -> String {
        let mut headers = Headers::new();
        headers.insert_raw(header_value(
            HeaderName::new_from_ascii(name.to_owned()).unwrap(),
            value,
        ));
        headers.to_string()
    }

    #[test]
    fn plain_ascii_that_fits_is_left_to_lettre() {
        let value = "word ".repeat(300);
        let out = render("Subject", value.trim());
        assert!(!out.contains("=?"), "{out}");
        assert!(out.split("\r\n").all(|l| l.len() <= SOFT_LINE));
    }

    #[test]
    fn an_unbreakable_value_becomes_short_encoded_words() {
        for (name, value) in [
            ("Subject", "x".repeat(998)),
            ("X-Token", "ü".repeat(998)),
            (&*"X-".repeat(38), "a=b?c_d ".repeat(120)),
        ] {
            let out = render(name, &value);
            assert!(out.is_ascii());
            for line in out.trim_end().split("\r\n") {
                assert!(line.len() <= 110, "{} bytes: {line}", line.len());
            }
            for word in out.split_ascii_whitespace().filter(|w| w.starts_with("=?")) {
                assert!(word.len() <= MAX_WORD, "{word}");
            }
        }
    }

    #[test]
    fn text_that_unfolding_would_change_is_encoded() {
        for value in ["a  b", " a", "a ", "a\tb", "=?utf-8?q?x?=", "café"] {
            assert!(render("Subject", value).contains("=?utf-8?q?"), "{value:?}");
        }
        assert_eq!(render("Subject", "a b-c"), "Subject: a b-c\r\n");
    }

    #[test]
    fn q_encoding_escapes_everything_but_safe_ascii() {
        assert_eq!(
            encoded_words(7, "a b=?_ü"),
            "=?utf-8?q?a_b=3D=3F=5F=C3=BC?="
        );
        assert_eq!(encoded_words(7, ""), "=?utf-8?q??=");
    }
}
