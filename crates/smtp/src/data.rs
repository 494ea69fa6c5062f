//! The DATA phase (RFC 5321 section 4.1.1.4) as a pure state machine, fed line by line.
//!
//! Invariants:
//! - Only `<CRLF>.<CRLF>` ends the message: a line `.` ends it only when it ends with CRLF and
//!   the line before it did too (the start of DATA counts as after a CRLF). `<LF>.<LF>`,
//!   `<LF>.<CRLF>` and `<CRLF>.<LF>` never end it, so a message cannot smuggle a second one past
//!   a server that reads line ends differently.
//! - A message with a bare LF or a bare CR anywhere is refused as a whole once it ends
//!   ([`DataOutcome::BareLineEnding`]), never partly kept.
//! - Past `max` bytes nothing more is kept ([`DataOutcome::TooLarge`]); a line over the line
//!   limit is [`DataOutcome::LineTooLong`]. The reader still consumes up to the real end, so
//!   the session stays in step with the client.
//! - Dot-stuffing is undone (a leading `.` of a line is dropped).

/// The longest line of a message, CRLF included (RFC 5321 section 4.5.3.1.6).
pub const MAX_LINE: usize = 1000;

#[derive(Debug, PartialEq, Eq)]
pub enum DataOutcome {
    Message(Vec<u8>),
    TooLarge,
    LineTooLong,
    BareLineEnding,
}

pub struct DataReader {
    max: usize,
    out: Vec<u8>,
    prev_crlf: bool,
    too_large: bool,
    too_long: bool,
    bare: bool,
}

impl DataReader {
    pub fn new(max: usize) -> DataReader {
        DataReader {
            max,
            out: Vec::new(),
            prev_crlf: true,
            too_large: false,
            too_long: false,
            bare: false,
        }
    }

    /// True once nothing more will be kept (the size limit was passed).
    pub fn over_limit(&self) -> bool {
        self.too_large
    }

    /// Feeds one whole line (its LF included); true when it was the end of the message.
    pub fn line(&mut self, line: &[u8]) -> bool {
        let crlf = line.ends_with(b"\r\n");
        if line == b".\r\n" && self.prev_crlf {
            return true;
        }
        let content = if crlf {
            &line[..line.len() - 2]
        } else {
            self.bare = true;
            line.strip_suffix(b"\n").unwrap_or(line)
        };
        if content.contains(&b'\r') {
            self.bare = true;
        }
        self.prev_crlf = crlf;
        let content = content.strip_prefix(b".").unwrap_or(content);
        if !self.too_large && !self.bare && !self.too_long {
            if self.out.len() + content.len() + 2 > self.max {
                self.too_large = true;
                self.out = Vec::new();
            } else {
                self.out.extend_from_slice(content);
                self.out.extend_from_slice(b"\r\n");
            }
        }
        false
    }

    /// A line over [`MAX_LINE`] was dropped; `crlf` tells how it ended.
    pub fn long_line(&mut self, crlf: bool) {
        self.too_long = true;
        self.bare |= !crlf;
        self.prev_crlf = crlf;
        self.out = Vec::new();
    }

    pub fn finish(self) -> DataOutcome {
        if self.too_large {
            DataOutcome::TooLarge
        } else if self.bare {
            DataOutcome::BareLineEnding
        } else if self.too_long {
            DataOutcome::LineTooLong
        } else {
            DataOutcome::Message(self.out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` split after each LF; the outcome and what was left unread.
    fn run(input: &[u8], max: usize) -> (Option<DataOutcome>, Vec<u8>) {
        let mut r = DataReader::new(max);
        let mut rest = input;
        while !rest.is_empty() {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            let (line, tail) = rest.split_at(end);
            rest = tail;
            if r.line(line) {
                return (Some(r.finish()), rest.to_vec());
            }
        }
        (None, Vec::new())
    }

    #[test]
    fn only_crlf_dot_crlf_ends_the_message() {
        let (out, rest) = run(b"Subject: a\r\n\r\n..dot\r\n.\r\nQUIT\r\n", 1000);
        assert_eq!(
            out,
            Some(DataOutcome::Message(b"Subject: a\r\n\r\n.dot\r\n".to_vec()))
        );
        assert_eq!(rest, b"QUIT\r\n");
        for smuggle in [
            &b"a\r\nb\n.\nMAIL FROM:<x@y>\r\n"[..],
            b"a\n.\r\nMAIL FROM:<x@y>\r\n",
            b"a\r\n.\nMAIL FROM:<x@y>\r\n",
        ] {
            let (out, _) = run(smuggle, 1000);
            assert_eq!(out, None, "{smuggle:?} ended DATA");
        }
    }

    #[test]
    fn a_bare_cr_before_the_real_end_refuses_the_message() {
        let (out, rest) = run(b"a\r\r\n.\r\nNOOP\r\n", 1000);
        assert_eq!(out, Some(DataOutcome::BareLineEnding));
        assert_eq!(rest, b"NOOP\r\n");
    }

    #[test]
    fn a_bare_lf_refuses_the_message_at_its_real_end() {
        let (out, rest) = run(b"a\r\nb\n.\nc\r\n.\r\nNOOP\r\n", 1000);
        assert_eq!(out, Some(DataOutcome::BareLineEnding));
        assert_eq!(rest, b"NOOP\r\n");
    }

    #[test]
    fn the_size_limit_keeps_nothing_past_it() {
        let (out, _) = run(b"0123456789\r\n0123456789\r\n.\r\n", 20);
        assert_eq!(out, Some(DataOutcome::TooLarge));
        let (out, _) = run(b"0123456789\r\n.\r\n", 12);
        assert_eq!(out, Some(DataOutcome::Message(b"0123456789\r\n".to_vec())));
    }
}
