//! The SMTP command layer both listeners share: one session over any byte stream, its rules
//! in one place.
//!
//! - Command lines are at most [`MAX_COMMAND_LINE`] bytes (AUTH responses included); a longer
//!   one is answered `500 5.5.2` without being kept.
//! - At most [`MAX_COMMANDS_BEFORE_MAIL`] commands before a MAIL is accepted, and again
//!   from each accepted MAIL and each message's end: past that the session ends with
//!   `421 4.7.0` (a client cannot idle through refusals forever).
//! - PIPELINING: commands are read from a buffer and answered in order; replies are flushed
//!   before a read would wait, so a pipelining client gets its replies as one batch.
//! - STARTTLS: anything the client sent after the command, before the handshake, ends the
//!   session (CVE-2011-0411 style injection); after the handshake the session starts over
//!   (EHLO again), as RFC 3207 requires.
//! - SIZE: a `SIZE=` over the limit is refused at MAIL (`552 5.3.4`); DATA stops keeping bytes
//!   once the limit is passed and answers `552 5.3.4` at its end (see [`crate::data`]).
//! - An idle client is dropped after the idle timeout with `421 4.4.2`; the session's total
//!   time is bounded by the listener.

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::command::{self, Command};
use crate::data::{DataOutcome, DataReader, MAX_LINE};
use crate::handler::{AuthOutcome, Envelope, Handler};
use crate::lines::{Line, command_text, read_line};
use crate::reply::Reply;

/// The longest command line, CRLF included (RFC 4954 allows AUTH lines of 12288 octets).
pub const MAX_COMMAND_LINE: usize = 12288;
/// Commands allowed while no mail transaction is open.
pub const MAX_COMMANDS_BEFORE_MAIL: usize = 100;

/// What a session knows of its listener.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub hostname: String,
    /// STARTTLS is offered (a certificate is configured and the session is not TLS yet).
    pub starttls: bool,
    /// A certificate is configured: AUTH needs TLS, except from loopback peers.
    pub tls_configured: bool,
    pub idle_timeout: Duration,
}

/// How a session ended.
pub enum Ended<S> {
    /// Closed (QUIT, an error, a timeout, the peer went away).
    Closed,
    /// STARTTLS was accepted: the caller does the handshake and runs a new session over TLS.
    StartTls(S),
}

/// State that survives STARTTLS.
pub struct Carry {
    pub commands: usize,
}

/// Runs one session (or its part until STARTTLS) over `stream`.
pub async fn run<H: Handler, S: AsyncRead + AsyncWrite + Unpin + Send>(
    h: &H,
    cfg: &SessionConfig,
    stream: S,
    peer: SocketAddr,
    tls: bool,
    carry: &mut Carry,
) -> std::io::Result<Ended<S>> {
    let s = Session {
        h,
        cfg,
        io: BufReader::new(stream),
        env: Envelope::new(peer, tls),
        buf: Vec::new(),
        pending: Vec::new(),
    };
    s.main(carry).await
}

/// Writes the greeting.
pub async fn greet<S: AsyncWrite + Unpin>(stream: &mut S, hostname: &str) -> std::io::Result<()> {
    let r = Reply::multi(220, vec![format!("{hostname} ESMTP Herald")]);
    stream.write_all(&r.to_bytes()).await?;
    stream.flush().await
}

struct Session<'a, H: Handler, S> {
    h: &'a H,
    cfg: &'a SessionConfig,
    io: BufReader<S>,
    env: Envelope<H::Auth>,
    buf: Vec<u8>,
    /// Replies not yet flushed (PIPELINING).
    pending: Vec<u8>,
}

enum Next {
    Continue,
    Close,
    StartTls,
}

impl<H: Handler, S: AsyncRead + AsyncWrite + Unpin + Send> Session<'_, H, S> {
    async fn main(mut self, carry: &mut Carry) -> std::io::Result<Ended<S>> {
        loop {
            let line = match self.read(MAX_COMMAND_LINE).await? {
                Some(l) => l,
                None => return Ok(Ended::Closed),
            };
            carry.commands += 1;
            if carry.commands > MAX_COMMANDS_BEFORE_MAIL {
                self.send(Reply::new(421, "4.7.0", "Too many commands, closing"))
                    .await?;
                return Ok(Ended::Closed);
            }
            let next = match line {
                Line::TooLong { .. } => {
                    self.queue(Reply::new(500, "5.5.2", "Line too long"));
                    Next::Continue
                }
                Line::Eof => return Ok(Ended::Closed),
                Line::Full => {
                    let parsed = match command_text(&self.buf) {
                        Some(text) => command::parse(text),
                        None => Err(Reply::new(500, "5.5.2", "Commands are ASCII text lines")),
                    };
                    match parsed {
                        Err(r) => {
                            self.queue(r);
                            Next::Continue
                        }
                        Ok(c) => self.command(c, carry).await?,
                    }
                }
            };
            match next {
                Next::Continue => {}
                Next::Close => {
                    self.flush().await?;
                    return Ok(Ended::Closed);
                }
                Next::StartTls => {
                    self.flush().await?;
                    if !self.io.buffer().is_empty() {
                        // Commands pipelined past STARTTLS would be read as if sent over TLS.
                        return Ok(Ended::Closed);
                    }
                    return Ok(Ended::StartTls(self.io.into_inner()));
                }
            }
        }
    }

    /// Reads a line (flushing queued replies first when the read would wait); `None` when
    /// the session must end (the peer left, or the idle timeout passed and was answered).
    async fn read(&mut self, max: usize) -> std::io::Result<Option<Line>> {
        if self.io.buffer().is_empty() {
            self.flush().await?;
        }
        match tokio::time::timeout(
            self.cfg.idle_timeout,
            read_line(&mut self.io, &mut self.buf, max),
        )
        .await
        {
            Ok(Ok(Line::Eof)) => Ok(None),
            Ok(Ok(l)) => Ok(Some(l)),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                self.send(Reply::new(421, "4.4.2", "Idle timeout, closing"))
                    .await?;
                Ok(None)
            }
        }
    }

    fn queue(&mut self, r: Reply) {
        self.pending.extend_from_slice(&r.to_bytes());
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let out = std::mem::take(&mut self.pending);
            let w = self.io.get_mut();
            w.write_all(&out).await?;
            w.flush().await?;
        }
        Ok(())
    }

    async fn send(&mut self, r: Reply) -> std::io::Result<()> {
        self.queue(r);
        self.flush().await
    }

    /// AUTH is offered: a submission listener, over TLS or without a certificate configured
    /// or to a loopback peer.
    fn auth_offered(&self) -> bool {
        self.h.requires_auth()
            && (self.env.tls || !self.cfg.tls_configured || self.env.peer.ip().is_loopback())
    }

    async fn command(&mut self, c: Command, carry: &mut Carry) -> std::io::Result<Next> {
        match c {
            Command::Ehlo(host) => {
                self.env.reset();
                self.env.helo = Some(host);
                let mut lines = vec![
                    format!("{} greets you", self.cfg.hostname),
                    "PIPELINING".into(),
                    format!("SIZE {}", self.h.max_bytes()),
                    "8BITMIME".into(),
                    "ENHANCEDSTATUSCODES".into(),
                    "SMTPUTF8".into(),
                ];
                if self.cfg.starttls && !self.env.tls {
                    lines.push("STARTTLS".into());
                }
                if self.auth_offered() {
                    lines.push("AUTH PLAIN LOGIN".into());
                }
                self.queue(Reply::multi(250, lines));
            }
            Command::Helo(host) => {
                self.env.reset();
                self.env.helo = Some(host);
                let r = Reply::multi(250, vec![self.cfg.hostname.clone()]);
                self.queue(r);
            }
            Command::Noop => self.queue(Reply::ok()),
            Command::Rset => {
                self.env.reset();
                self.queue(Reply::ok());
            }
            Command::Quit => {
                self.queue(Reply::new(221, "2.0.0", "Bye"));
                return Ok(Next::Close);
            }
            Command::Vrfy => self.queue(Reply::new(
                252,
                "2.5.0",
                "Cannot verify the user, but will accept the message",
            )),
            Command::Help => self.queue(Reply::new(214, "2.0.0", "See RFC 5321")),
            Command::StartTls => {
                if !self.cfg.starttls || self.env.tls {
                    self.queue(Reply::new(502, "5.5.1", "STARTTLS is not available"));
                } else {
                    self.queue(Reply::new(220, "2.0.0", "Ready to start TLS"));
                    return Ok(Next::StartTls);
                }
            }
            Command::Auth { mechanism, initial } => {
                return self.auth(&mechanism, initial).await;
            }
            Command::Mail { path, params } => {
                let r = self.mail(&path, &params).await;
                if r.is_positive() {
                    carry.commands = 0;
                }
                self.queue(r);
            }
            Command::Rcpt { path, params } => {
                let r = self.rcpt(&path, &params).await;
                self.queue(r);
            }
            Command::Data => {
                let next = self.data().await?;
                carry.commands = 0;
                return Ok(next);
            }
        }
        Ok(Next::Continue)
    }

    async fn mail(&mut self, path: &str, params: &[(String, Option<String>)]) -> Reply {
        if self.env.helo.is_none() {
            return Reply::bad_sequence("Send EHLO first");
        }
        if self.env.from.is_some() {
            return Reply::bad_sequence("A mail transaction is already open");
        }
        if self.h.requires_auth() && self.env.auth.is_none() {
            return Reply::new(530, "5.7.0", "Authentication required");
        }
        for (k, v) in params {
            match (k.as_str(), v.as_deref()) {
                ("SIZE", Some(n)) => match n.parse::<u64>() {
                    Ok(n) if n > self.h.max_bytes() as u64 => {
                        return Reply::new(
                            552,
                            "5.3.4",
                            format!("Message too large: at most {} bytes", self.h.max_bytes()),
                        );
                    }
                    Ok(_) => {}
                    Err(_) => return Reply::new(501, "5.5.4", "Bad SIZE parameter"),
                },
                ("BODY", Some(b)) if b.eq_ignore_ascii_case("8BITMIME") => {}
                ("BODY", Some(b)) if b.eq_ignore_ascii_case("7BIT") => {}
                ("SMTPUTF8", None) => {}
                _ => return Reply::new(555, "5.5.4", format!("Unsupported parameter {k}")),
            }
        }
        match self.h.mail_from(&self.env, path).await {
            Ok(()) => {
                self.env.from = Some(path.to_owned());
                Reply::new(250, "2.1.0", "Sender OK")
            }
            Err(r) => r,
        }
    }

    async fn rcpt(&mut self, path: &str, params: &[(String, Option<String>)]) -> Reply {
        if self.env.from.is_none() {
            return Reply::bad_sequence("Send MAIL first");
        }
        if let Some((k, _)) = params.first() {
            return Reply::new(555, "5.5.4", format!("Unsupported parameter {k}"));
        }
        if self.env.rcpts.len() >= self.h.max_recipients() {
            return Reply::new(
                452,
                "4.5.3",
                format!("Too many recipients: at most {}", self.h.max_recipients()),
            );
        }
        match self.h.rcpt_to(&self.env, path).await {
            Ok(()) => {
                self.env.rcpts.push(path.to_owned());
                Reply::new(250, "2.1.5", "Recipient OK")
            }
            Err(r) => r,
        }
    }

    async fn data(&mut self) -> std::io::Result<Next> {
        if self.env.from.is_none() {
            self.queue(Reply::bad_sequence("Send MAIL first"));
            return Ok(Next::Continue);
        }
        if self.env.rcpts.is_empty() {
            self.queue(Reply::new(554, "5.5.1", "No valid recipients"));
            return Ok(Next::Continue);
        }
        self.send(Reply::multi(
            354,
            vec!["Send the message, end with <CRLF>.<CRLF>".into()],
        ))
        .await?;
        let mut reader = DataReader::new(self.h.max_bytes());
        loop {
            match self.read(MAX_LINE).await? {
                None => return Ok(Next::Close),
                Some(Line::Eof) => return Ok(Next::Close),
                Some(Line::TooLong { crlf }) => reader.long_line(crlf),
                Some(Line::Full) => {
                    if reader.line(&self.buf) {
                        break;
                    }
                }
            }
        }
        let reply = match reader.finish() {
            DataOutcome::Message(bytes) => self.h.message(&self.env, bytes).await,
            DataOutcome::TooLarge => Reply::new(
                552,
                "5.3.4",
                format!("Message too large: at most {} bytes", self.h.max_bytes()),
            ),
            DataOutcome::LineTooLong => Reply::new(
                500,
                "5.5.6",
                format!("A line of the message is longer than {MAX_LINE} octets"),
            ),
            DataOutcome::BareLineEnding => Reply::new(
                550,
                "5.6.0",
                "Bare LF or CR in the message: lines must end with CRLF",
            ),
        };
        self.env.reset();
        self.queue(reply);
        Ok(Next::Continue)
    }

    async fn auth(&mut self, mechanism: &str, initial: Option<String>) -> std::io::Result<Next> {
        if !self.h.requires_auth() {
            self.queue(Reply::new(502, "5.5.1", "AUTH is not available here"));
            return Ok(Next::Continue);
        }
        if !self.auth_offered() {
            self.queue(Reply::new(
                538,
                "5.7.11",
                "Encryption required: use STARTTLS first",
            ));
            return Ok(Next::Continue);
        }
        if self.env.auth.is_some() {
            self.queue(Reply::bad_sequence("Already authenticated"));
            return Ok(Next::Continue);
        }
        if self.env.from.is_some() {
            self.queue(Reply::bad_sequence(
                "AUTH is not allowed during a mail transaction",
            ));
            return Ok(Next::Continue);
        }
        let credentials = match mechanism {
            "PLAIN" => {
                let Some(resp) = self.response(initial, "").await? else {
                    return Ok(Next::Continue);
                };
                let mut parts = resp.split(|&b| b == 0);
                match (parts.next(), parts.next(), parts.next(), parts.next()) {
                    (Some(_authz), Some(user), Some(pass), None) => (user.to_vec(), pass.to_vec()),
                    _ => {
                        self.queue(Reply::new(501, "5.5.2", "Malformed PLAIN response"));
                        return Ok(Next::Continue);
                    }
                }
            }
            "LOGIN" => {
                let Some(user) = self.response(initial, "VXNlcm5hbWU6").await? else {
                    return Ok(Next::Continue);
                };
                let Some(pass) = self.response(None, "UGFzc3dvcmQ6").await? else {
                    return Ok(Next::Continue);
                };
                (user, pass)
            }
            _ => {
                self.queue(Reply::new(504, "5.5.4", "Unrecognized authentication type"));
                return Ok(Next::Continue);
            }
        };
        let (Ok(user), Ok(pass)) = (
            String::from_utf8(credentials.0),
            String::from_utf8(credentials.1),
        ) else {
            self.queue(Reply::new(
                535,
                "5.7.8",
                "Authentication credentials invalid",
            ));
            return Ok(Next::Continue);
        };
        match self.h.authenticate(self.env.peer, &user, &pass).await {
            AuthOutcome::Accepted(a) => {
                self.env.auth = Some(a);
                self.queue(Reply::new(235, "2.7.0", "Authentication successful"));
            }
            AuthOutcome::Refused(r) => self.queue(r),
        }
        Ok(Next::Continue)
    }

    /// One SASL response, decoded: the initial one when given (`=` is empty), else after a
    /// `334 <challenge>`. `None` when it was cancelled or malformed (already answered).
    async fn response(
        &mut self,
        initial: Option<String>,
        challenge: &str,
    ) -> std::io::Result<Option<Vec<u8>>> {
        let text = match initial {
            Some(t) if t == "=" => String::new(),
            Some(t) => t,
            None => {
                self.send(Reply::multi(334, vec![challenge.to_owned()]))
                    .await?;
                match self.read(MAX_COMMAND_LINE).await? {
                    Some(Line::Full) => command_text(&self.buf).unwrap_or("").to_owned(),
                    None => {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "the client left during AUTH",
                        ));
                    }
                    Some(_) => {
                        self.queue(Reply::new(501, "5.5.2", "Bad AUTH response"));
                        return Ok(None);
                    }
                }
            }
        };
        if text == "*" {
            self.queue(Reply::new(501, "5.0.0", "Authentication cancelled"));
            return Ok(None);
        }
        match STANDARD.decode(text.trim()) {
            Ok(b) => Ok(Some(b)),
            Err(_) => {
                self.queue(Reply::new(501, "5.5.2", "AUTH response is not base64"));
                Ok(None)
            }
        }
    }
}
