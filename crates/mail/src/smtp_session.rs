//! One SMTP connection of the relay pool and the mail transaction on it (MAIL, RCPT.., DATA,
//! the message), over lettre's client.
//!
//! With PIPELINING (RFC 2920) offered by the relay, `MAIL`, every `RCPT` and `DATA` go out in
//! one write and their replies are read in order; the message, dot-stuffed, and its
//! terminating `.` go in a second write. Without it, one command per round trip, as lettre
//! does. A message over [`STREAM_OVER`] is written in chunks, dot-stuffed as they go, so no
//! copy of it is made (the relay reads the same bytes). Why pipelining: lettre's own
//! transaction wrote five times and waited for four replies per message, and those sends were
//! about a tenth of a delivering node's CPU (docs/benchmarks.md, `send`).
//!
//! Whatever the mode, a failure ends the connection (the caller aborts it): replies still in
//! flight are never mistaken for the next transaction's, and a message whose `DATA` was
//! answered 354 but whose body was not sent is never completed (no terminating dot).

use std::fmt;

use lettre::address::Envelope as LettreEnvelope;
use lettre::transport::smtp::Error;
use lettre::transport::smtp::client::AsyncSmtpConnection;
use lettre::transport::smtp::commands::{Data, Ehlo, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, MailBodyParameter, MailParameter};
use lettre::transport::smtp::response::Response;

/// Where a failure happened: setting up the session is never the message's fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Setup,
    /// `MAIL FROM`: a refusal names the sender, not the recipient.
    MailFrom,
    /// `RCPT TO`, `DATA` and the message itself: a 5xx refuses this recipient's delivery.
    Send,
}

/// A connection that has said EHLO (after STARTTLS when there is one) and knows whether the
/// relay pipelines.
pub(crate) struct Session {
    pub(crate) conn: AsyncSmtpConnection,
    pipelining: bool,
}

impl Session {
    /// Asks the relay's extensions once more (lettre keeps only those it uses itself, and
    /// PIPELINING is not one of them). Before AUTH: an EHLO after it may reset the session.
    pub(crate) async fn start(
        mut conn: AsyncSmtpConnection,
        hello: &ClientId,
    ) -> Result<Self, Error> {
        let reply = conn.command(Ehlo::new(hello.clone())).await?;
        let pipelining = offers_pipelining(&reply);
        Ok(Self { conn, pipelining })
    }

    /// One transaction: the relay's reply to the end of the message, or the stage that failed.
    pub(crate) async fn transaction(
        &mut self,
        envelope: &LettreEnvelope,
        raw: &[u8],
        smtputf8: bool,
    ) -> Result<Response, (Stage, Error)> {
        let mut parameters = Vec::new();
        if smtputf8 {
            parameters.push(MailParameter::SmtpUtfEight);
        }
        if !raw.is_ascii() {
            parameters.push(MailParameter::Body(MailBodyParameter::EightBitMime));
        }
        let mail = Mail::new(envelope.from().cloned(), parameters);
        let rcpts: Vec<Rcpt> = envelope
            .to()
            .iter()
            .map(|to| Rcpt::new(to.clone(), Vec::new()))
            .collect();
        let send = |e| (Stage::Send, e);
        let conn = &mut self.conn;
        if self.pipelining {
            // The reply read by `command` is MAIL's; then one per RCPT, then DATA's 354.
            conn.command(Pipelined {
                mail: &mail,
                rcpts: &rcpts,
            })
            .await
            .map_err(|e| (Stage::MailFrom, e))?;
            for _ in &rcpts {
                conn.read_response().await.map_err(send)?;
            }
            conn.read_response().await.map_err(send)?;
        } else {
            conn.command(mail).await.map_err(|e| (Stage::MailFrom, e))?;
            for rcpt in rcpts {
                conn.command(rcpt).await.map_err(send)?;
            }
            conn.command(Data).await.map_err(send)?;
        }
        if raw.len() > STREAM_OVER {
            return conn.message_iter(stream_chunks(raw)).await.map_err(send);
        }
        match String::from_utf8(data_block(raw)) {
            // `command` writes its text in one write and reads the reply to the final dot.
            Ok(block) => conn.command(Text(&block)).await.map_err(send),
            // Not UTF-8 (never built by Herald's MIME builder): lettre writes it in two.
            Err(_) => conn.message(raw).await.map_err(send),
        }
    }
}

/// Messages larger than this are written in [`STREAM_CHUNK`]s instead of as one DATA block:
/// the block is a dot-stuffed copy of the message, and lettre's `command` copies its text once
/// more, so a 7 MB message took 21 MB while it was handed over.
pub(crate) const STREAM_OVER: usize = 256 * 1024;
const STREAM_CHUNK: usize = 64 * 1024;

/// The message in chunks for lettre's `message_iter`, which dot-stuffs each (its codec keeps
/// its place across chunks) and then writes `CRLF . CRLF`. A final CRLF of the message is left
/// to that terminator, so the relay reads the message exactly as [`data_block`] sends it.
fn stream_chunks(raw: &[u8]) -> std::slice::Chunks<'_, u8> {
    raw.strip_suffix(b"\r\n")
        .unwrap_or(raw)
        .chunks(STREAM_CHUNK)
}

fn offers_pipelining(ehlo: &Response) -> bool {
    ehlo.message().skip(1).any(|line| {
        line.split_whitespace()
            .next()
            .is_some_and(|keyword| keyword.eq_ignore_ascii_case("PIPELINING"))
    })
}

/// `MAIL`, the `RCPT`s and `DATA` as one group of commands (RFC 2920: DATA ends a group).
struct Pipelined<'a> {
    mail: &'a Mail,
    rcpts: &'a [Rcpt],
}

impl fmt::Display for Pipelined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.mail)?;
        for rcpt in self.rcpts {
            write!(f, "{rcpt}")?;
        }
        write!(f, "{Data}")
    }
}

/// Text handed to lettre's `command` as is.
struct Text<'a>(&'a str);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The message as the DATA section (RFC 5321 4.5.2): a `.` doubled at the start of every
/// line (after CRLF, as lettre's codec does), then the terminating `.` on a line of its own.
fn data_block(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 64 + 8);
    if raw.first() == Some(&b'.') {
        out.push(b'.');
    }
    let mut copied = 0;
    for at in memchr::memmem::find_iter(raw, b"\r\n.") {
        // Up to and including the CRLF, then the extra dot; the line's own dot follows.
        out.extend_from_slice(&raw[copied..at + 2]);
        out.push(b'.');
        copied = at + 2;
    }
    out.extend_from_slice(&raw[copied..]);
    if !raw.is_empty() && !raw.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b".\r\n");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn data_block_stuffs_dots_at_line_starts_and_ends_with_one_dot_line() {
        assert_eq!(data_block(b"a\r\nb\r\n"), b"a\r\nb\r\n.\r\n");
        assert_eq!(data_block(b"a\r\nb"), b"a\r\nb\r\n.\r\n");
        assert_eq!(data_block(b".a\r\n.\r\n..b"), b"..a\r\n..\r\n...b\r\n.\r\n");
        // Only CRLF starts a line: a bare LF or CR does not.
        assert_eq!(data_block(b"a\n.b\r.c"), b"a\n.b\r.c\r\n.\r\n");
        assert_eq!(data_block(b""), b".\r\n");
    }

    proptest::proptest! {
        /// What a relay reads back (RFC 5321 4.5.2: up to the first line that is only a dot,
        /// one leading dot removed from each line) is the message, ended by CRLF.
        #[test]
        fn a_relay_reads_back_the_message(raw in proptest::collection::vec(
            proptest::sample::select(vec![b'.', b'\r', b'\n', b'a']), 0..40)) {
            let block = data_block(&raw);
            let mut read = Vec::new();
            let mut ended = false;
            for line in block.split_inclusive(|&b| b == b'\n') {
                proptest::prop_assert!(!ended, "data after the end: {:?}", block);
                if line == b".\r\n" && (read.is_empty() || read.ends_with(b"\r\n")) {
                    ended = true;
                    continue;
                }
                let at_line_start = read.is_empty() || read.ends_with(b"\r\n");
                let line = if at_line_start && line.first() == Some(&b'.') { &line[1..] } else { line };
                read.extend_from_slice(line);
            }
            proptest::prop_assert!(ended);
            let mut expected = raw.clone();
            if !expected.is_empty() && !expected.ends_with(b"\r\n") {
                expected.extend_from_slice(b"\r\n");
            }
            proptest::prop_assert_eq!(read, expected);
        }
    }

    #[test]
    fn pipelining_is_read_from_the_extension_lines() {
        let parse = |text: &str| -> Response { text.parse().unwrap() };
        assert!(offers_pipelining(&parse(
            "250-relay greets you\r\n250-8BITMIME\r\n250-PIPELINING\r\n250 SIZE 100\r\n"
        )));
        assert!(offers_pipelining(&parse("250-relay\r\n250 pipelining\r\n")));
        // The greeting line is a name, not an extension.
        assert!(!offers_pipelining(&parse(
            "250-PIPELINING\r\n250 8BITMIME\r\n"
        )));
        assert!(!offers_pipelining(&parse("250 relay\r\n")));
    }

    #[test]
    fn a_group_is_mail_then_each_rcpt_then_data() {
        let from = "a@example.com".parse().unwrap();
        let rcpts = [
            Rcpt::new("b@example.org".parse().unwrap(), Vec::new()),
            Rcpt::new("c@example.org".parse().unwrap(), Vec::new()),
        ];
        let mail = Mail::new(Some(from), Vec::new());
        let text = Pipelined {
            mail: &mail,
            rcpts: &rcpts,
        }
        .to_string();
        assert_eq!(
            text,
            "MAIL FROM:<a@example.com>\r\nRCPT TO:<b@example.org>\r\nRCPT TO:<c@example.org>\r\nDATA\r\n"
        );
    }
}
