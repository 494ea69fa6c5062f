//! SMTP replies: a code, an enhanced status code (RFC 3463) and text, written as one line or,
//! for EHLO, several (`250-...` then `250 ...`).

/// One reply. `text` holds no CR or LF (every constructor is given fixed or cleaned text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub lines: Vec<String>,
}

impl Reply {
    /// `code status text`, e.g. `Reply::new(250, "2.0.0", "OK")`.
    pub fn new(code: u16, status: &str, text: impl AsRef<str>) -> Reply {
        Reply {
            code,
            lines: vec![format!("{status} {}", one_line(text.as_ref()))],
        }
    }

    /// A reply of several lines (EHLO); lines are written as given.
    pub fn multi(code: u16, lines: Vec<String>) -> Reply {
        Reply { code, lines }
    }

    /// True for 2xx and 3xx.
    pub fn is_positive(&self) -> bool {
        self.code < 400
    }

    /// The bytes on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        let n = self.lines.len();
        for (i, line) in self.lines.iter().enumerate() {
            let sep = if i + 1 == n { ' ' } else { '-' };
            out.push_str(&format!("{}{sep}{line}\r\n", self.code));
        }
        if n == 0 {
            out.push_str(&format!("{}\r\n", self.code));
        }
        out.into_bytes()
    }

    pub fn ok() -> Reply {
        Reply::new(250, "2.0.0", "OK")
    }

    pub fn bad_sequence(text: &str) -> Reply {
        Reply::new(503, "5.5.1", text)
    }

    pub fn syntax(text: &str) -> Reply {
        Reply::new(501, "5.5.4", text)
    }

    /// A temporary failure of Herald itself (a store error): nothing was recorded.
    pub fn local_error() -> Reply {
        Reply::new(451, "4.3.0", "Temporary local error, try again later")
    }
}

/// Text safe on one reply line: control characters become spaces, at most 400 characters.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(400)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_multi_line_replies_have_the_wire_form() {
        assert_eq!(Reply::ok().to_bytes(), b"250 2.0.0 OK\r\n");
        let r = Reply::multi(250, vec!["host".into(), "SIZE 10".into()]);
        assert_eq!(r.to_bytes(), b"250-host\r\n250 SIZE 10\r\n");
        assert_eq!(
            Reply::new(550, "5.7.1", "a\r\nb").to_bytes(),
            b"550 5.7.1 a  b\r\n"
        );
    }
}
