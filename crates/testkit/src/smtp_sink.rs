//! An SMTP server on `127.0.0.1` that records what it is sent, for tests of the sender.
//!
//! It speaks enough ESMTP for lettre's client: the 220 greeting, EHLO/HELO, AUTH PLAIN and
//! LOGIN (any credentials pass), MAIL, RCPT, DATA, RSET, NOOP and QUIT, many messages per
//! connection and many connections at once. Commands may be pipelined: replies are buffered
//! and flushed whenever the client has nothing more waiting to be read.
//!
//! Invariants:
//! - A message's `data` is every line between `DATA` and the terminating `.` line, with its
//!   line endings exactly as sent and dot-stuffing removed (a leading `..` becomes `.`).
//! - A message appears in [`SmtpSink::messages`] before its 250 reply is written, so a client
//!   that saw 250 always finds its message recorded.
//! - [`SmtpSink::attempts`] counts every completed DATA transfer, accepted or refused.
//! - [`SmtpSink::stop`] returns only once the listener and every open connection are closed.
//! - With a reply delay ([`SmtpSink::set_reply_delay`]) or replies held
//!   ([`SmtpSink::hold_replies`]), an accepted message is recorded first and its 250 written
//!   only after the delay and once replies are released: a client killed meanwhile handed the
//!   message over without learning so (the window crash tests need). [`SmtpSink::unreplied`]
//!   counts the messages recorded whose 250 was not written yet.
//! - SMTPUTF8 is advertised unless [`SmtpSink::advertise_smtputf8`] turned it off (read at each
//!   EHLO). Like a real server, a non-ASCII `MAIL FROM` or `RCPT TO` path is refused with
//!   `553 5.6.7` unless the transaction's `MAIL FROM` carried the `SMTPUTF8` parameter while
//!   it was advertised.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

/// One message accepted at the end of DATA.
#[derive(Clone, Debug)]
pub struct ReceivedMail {
    /// The reverse path of `MAIL FROM`, without angle brackets (empty for the null sender).
    pub mail_from: String,
    /// The forward paths of every `RCPT TO`, without angle brackets, in order.
    pub rcpt_to: Vec<String>,
    /// The message bytes, dot-unstuffed, line endings as sent.
    pub data: Vec<u8>,
    /// The parameters of `MAIL FROM` after the path, upper-cased (`["BODY=8BITMIME",
    /// "SMTPUTF8"]`).
    pub mail_parameters: Vec<String>,
    /// The id named in the 250 reply ([`SmtpSink::reply_with_queue_ids`]), if any.
    pub queue_id: Option<String>,
}

/// How the sink answers at the end of DATA.
#[derive(Clone, Debug)]
pub enum SinkMode {
    /// Reply 250 and record the message.
    Accept,
    /// Reply `451 4.3.0` for the next n messages, then accept.
    TempFailNext(usize),
    /// Reply `550 5.1.1` to every message.
    RejectPermanent,
}

/// A running SMTP sink. Dropping it closes the listener; use [`SmtpSink::stop`] to also wait
/// for the open connections to close.
pub struct SmtpSink {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::sync::Mutex<Option<Server>>,
}

struct Server {
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

struct Shared {
    messages: Mutex<Vec<ReceivedMail>>,
    /// The number of accepted messages, for `wait_for`.
    accepted: watch::Sender<usize>,
    mode: Mutex<SinkMode>,
    attempts: AtomicUsize,
    /// False: count accepted messages without keeping them (benchmarks).
    keep: AtomicBool,
    /// Wait before writing each 250 at the end of DATA.
    reply_delay: Mutex<Duration>,
    /// True: 250 replies wait until it turns false.
    hold: watch::Sender<bool>,
    /// Messages recorded whose 250 is not written yet.
    unreplied: AtomicUsize,
    /// Whether EHLO offers SMTPUTF8.
    smtputf8: AtomicBool,
    /// `RCPT TO` paths refused with `550 5.1.1` (lower-cased).
    refused_recipients: Mutex<Vec<String>>,
    /// True: a 250 at the end of DATA names a queue id, as Amazon SES does (`250 Ok <id>`).
    queue_ids: AtomicBool,
    /// Queue ids handed out so far.
    next_queue_id: AtomicUsize,
    /// Mail whose `From:` header names this address (lower-cased) is accepted at once and
    /// neither recorded nor counted.
    ignored_from: Mutex<Option<String>>,
}

/// What to reply at the end of one DATA transfer.
enum Verdict {
    Accept,
    TempFail,
    Reject,
}

const LISTEN_BACKLOG: u32 = 1024;
const READ_BUFFER: usize = 64 * 1024;
const WRITE_BUFFER: usize = 8 * 1024;

const EHLO_REPLY: &[u8] = b"250-localhost greets you\r\n\
250-PIPELINING\r\n\
250-8BITMIME\r\n\
250-SIZE 104857600\r\n\
250-AUTH PLAIN LOGIN\r\n\
250-ENHANCEDSTATUSCODES\r\n\
250 SMTPUTF8\r\n";
const EHLO_REPLY_WITHOUT_SMTPUTF8: &[u8] = b"250-localhost greets you\r\n\
250-PIPELINING\r\n\
250-8BITMIME\r\n\
250-SIZE 104857600\r\n\
250-AUTH PLAIN LOGIN\r\n\
250 ENHANCEDSTATUSCODES\r\n";

impl SmtpSink {
    /// Starts a sink on `127.0.0.1` at a free port, accepting every message.
    pub async fn start() -> anyhow::Result<SmtpSink> {
        let listener = listen(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        let addr = listener
            .local_addr()
            .context("reading the SMTP sink's local address")?;
        let (accepted, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            messages: Mutex::new(Vec::new()),
            accepted,
            mode: Mutex::new(SinkMode::Accept),
            attempts: AtomicUsize::new(0),
            keep: AtomicBool::new(true),
            reply_delay: Mutex::new(Duration::ZERO),
            hold: watch::channel(false).0,
            unreplied: AtomicUsize::new(0),
            smtputf8: AtomicBool::new(true),
            refused_recipients: Mutex::new(Vec::new()),
            queue_ids: AtomicBool::new(false),
            next_queue_id: AtomicUsize::new(0),
            ignored_from: Mutex::new(None),
        });
        let server = spawn_server(listener, shared.clone());
        Ok(SmtpSink {
            addr,
            shared,
            server: tokio::sync::Mutex::new(Some(server)),
        })
    }

    /// The address the sink listens on (kept across [`SmtpSink::restart`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The relay URL for the sender: `smtp://127.0.0.1:PORT?tls=none`.
    pub fn url(&self) -> String {
        format!("smtp://{}:{}?tls=none", self.addr.ip(), self.addr.port())
    }

    /// The messages accepted so far, in the order their DATA completed.
    pub fn messages(&self) -> Vec<ReceivedMail> {
        lock(&self.shared.messages).clone()
    }

    /// Waits until at least `n` messages were accepted or `timeout` passed, and returns the
    /// messages accepted by then (possibly fewer than `n`).
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<ReceivedMail> {
        let mut accepted = self.shared.accepted.subscribe();
        // The sender lives in `shared`, so the channel cannot close while we hold `self`.
        let _ = tokio::time::timeout(timeout, accepted.wait_for(|count| *count >= n)).await;
        self.messages()
    }

    /// Whether accepted messages are kept for [`SmtpSink::messages`] (default) or only counted.
    pub fn keep_messages(&self, keep: bool) {
        self.shared.keep.store(keep, Ordering::Relaxed);
    }

    /// Whether EHLO offers SMTPUTF8 (default true), for connections that greet from now on.
    pub fn advertise_smtputf8(&self, offer: bool) {
        self.shared.smtputf8.store(offer, Ordering::Relaxed);
    }

    /// Accepts mail whose `From:` header names `address` at once, without recording or
    /// counting it, whatever the mode or hold: Herald's own account mail (the verification
    /// mail of every sign-up) in tests about other mail.
    pub fn ignore_from(&self, address: &str) {
        *lock(&self.shared.ignored_from) = Some(address.to_ascii_lowercase());
    }

    /// How many messages were accepted so far (kept or not).
    pub fn accepted_count(&self) -> usize {
        *self.shared.accepted.borrow()
    }

    /// Changes how the sink answers at the end of DATA, from the next message on.
    pub fn set_mode(&self, mode: SinkMode) {
        *lock(&self.shared.mode) = mode;
    }

    /// Refuses `RCPT TO:<address>` with `550 5.1.1` from now on (a recipient-level bounce at
    /// SMTP time, as a relay that verifies recipients answers).
    pub fn refuse_recipient(&self, address: &str) {
        lock(&self.shared.refused_recipients).push(address.to_ascii_lowercase());
    }

    /// With `true`, each accepted message is answered `250 Ok <queue id>` (as Amazon SES
    /// does), the id recorded in [`ReceivedMail::queue_id`].
    pub fn reply_with_queue_ids(&self, on: bool) {
        self.shared.queue_ids.store(on, Ordering::SeqCst);
    }

    /// Stops listening and closes every open connection; clients then get connection refused.
    pub async fn stop(&self) {
        let server = self.server.lock().await.take();
        if let Some(server) = server {
            // The server task may already be gone; either way it ends below.
            let _ = server.shutdown.send(());
            if let Err(error) = server.task.await {
                tracing::warn!(%error, "the SMTP sink's server task ended abnormally");
            }
        }
    }

    /// Listens again on the same port after [`SmtpSink::stop`] (a no-op while running).
    pub async fn restart(&self) -> anyhow::Result<()> {
        let mut server = self.server.lock().await;
        if server.is_some() {
            return Ok(());
        }
        // Binding can race with the kernel releasing the port; retry briefly.
        let mut tries = 0;
        let listener = loop {
            match listen(self.addr) {
                Ok(listener) => break listener,
                Err(error) if tries < 50 => {
                    tries += 1;
                    tracing::debug!(%error, "rebinding the SMTP sink, retrying");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error),
            }
        };
        *server = Some(spawn_server(listener, self.shared.clone()));
        Ok(())
    }

    /// Delays every 250 at the end of DATA by `delay` (after recording the message).
    pub fn set_reply_delay(&self, delay: Duration) {
        *lock(&self.shared.reply_delay) = delay;
    }

    /// Holds (true) or releases (false) the 250 replies of accepted messages.
    pub fn hold_replies(&self, hold: bool) {
        self.shared.hold.send_replace(hold);
    }

    /// Messages recorded whose 250 reply has not been written yet.
    pub fn unreplied(&self) -> usize {
        self.shared.unreplied.load(Ordering::SeqCst)
    }

    /// How many DATA transfers completed, whatever the reply (accepted, 451 or 550).
    pub fn attempts(&self) -> usize {
        self.shared.attempts.load(Ordering::SeqCst)
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        if let Some(server) = self.server.get_mut().take() {
            server.task.abort();
        }
    }
}

impl Shared {
    /// Counts one DATA transfer and decides its reply from the current mode.
    fn verdict(&self) -> Verdict {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let mut mode = lock(&self.mode);
        match *mode {
            SinkMode::Accept => Verdict::Accept,
            SinkMode::RejectPermanent => Verdict::Reject,
            SinkMode::TempFailNext(0) => {
                *mode = SinkMode::Accept;
                Verdict::Accept
            }
            SinkMode::TempFailNext(n) => {
                *mode = if n == 1 {
                    SinkMode::Accept
                } else {
                    SinkMode::TempFailNext(n - 1)
                };
                Verdict::TempFail
            }
        }
    }

    /// Waits out the reply delay and any hold.
    async fn before_reply(&self) {
        let delay = *lock(&self.reply_delay);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut hold = self.hold.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = hold.wait_for(|held| !*held).await;
    }

    /// Whether the header block's `From:` line names the ignored address.
    fn is_ignored(&self, data: &[u8]) -> bool {
        let Some(address) = lock(&self.ignored_from).clone() else {
            return false;
        };
        let text = String::from_utf8_lossy(data);
        let head = text.split("\r\n\r\n").next().unwrap_or("");
        head.split("\r\n").any(|line| {
            line.to_ascii_lowercase()
                .strip_prefix("from:")
                .is_some_and(|v| v.contains(&address))
        })
    }

    fn record(&self, mail: ReceivedMail) {
        if !self.keep.load(Ordering::Relaxed) {
            self.accepted.send_modify(|n| *n += 1);
            return;
        }
        let count = {
            let mut messages = lock(&self.messages);
            messages.push(mail);
            messages.len()
        };
        self.accepted.send_replace(count);
    }
}

/// Locks a mutex, ignoring poisoning (a panicking test thread must not hide the data).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn listen(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let socket = TcpSocket::new_v4().context("creating the SMTP sink's socket")?;
    socket
        .set_reuseaddr(true)
        .context("setting SO_REUSEADDR on the SMTP sink's socket")?;
    socket
        .bind(addr)
        .with_context(|| format!("binding the SMTP sink to {addr}"))?;
    socket
        .listen(LISTEN_BACKLOG)
        .with_context(|| format!("listening on {addr}"))
}

fn spawn_server(listener: TcpListener, shared: Arc<Shared>) -> Server {
    let (shutdown, shutdown_rx) = oneshot::channel();
    let task = tokio::spawn(serve(listener, shared, shutdown_rx));
    Server { shutdown, task }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>, mut shutdown: oneshot::Receiver<()>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(handle_connection(stream, shared.clone()));
                }
                Err(error) => {
                    // Usually EMFILE under load; back off instead of spinning.
                    tracing::warn!(%error, "the SMTP sink could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn handle_connection(stream: TcpStream, shared: Arc<Shared>) {
    // Replies are tiny; Nagle would only delay them.
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    let mut session = Session {
        reader: BufReader::with_capacity(READ_BUFFER, read),
        writer: BufWriter::with_capacity(WRITE_BUFFER, write),
        shared,
    };
    if let Err(error) = session.run().await {
        tracing::debug!(%error, "an SMTP sink connection ended with an error");
    }
}

struct Session<R, W> {
    reader: BufReader<R>,
    writer: BufWriter<W>,
    shared: Arc<Shared>,
}

/// The envelope being built by MAIL and RCPT.
#[derive(Default)]
struct Transaction {
    mail_from: Option<String>,
    rcpt_to: Vec<String>,
    mail_parameters: Vec<String>,
    /// SMTPUTF8 was offered and asked for.
    utf8: bool,
}

const NEED_SMTPUTF8: &[u8] = b"553 5.6.7 SMTPUTF8 is required for a non-ASCII address\r\n";

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    async fn run(&mut self) -> std::io::Result<()> {
        self.writer
            .write_all(b"220 localhost ESMTP Herald test sink\r\n")
            .await?;
        self.writer.flush().await?;

        let mut line = Vec::with_capacity(512);
        let mut transaction = Transaction::default();
        let mut offered_utf8 = false;
        loop {
            line.clear();
            if self.reader.read_until(b'\n', &mut line).await? == 0 {
                return Ok(());
            }
            let command = trim_line_end(&line);
            let verb = verb_of(command);
            let argument = argument_of(command);
            match &verb {
                b"EHLO" => {
                    transaction = Transaction::default();
                    offered_utf8 = self.shared.smtputf8.load(Ordering::Relaxed);
                    let reply = if offered_utf8 {
                        EHLO_REPLY
                    } else {
                        EHLO_REPLY_WITHOUT_SMTPUTF8
                    };
                    self.writer.write_all(reply).await?;
                }
                b"HELO" => {
                    transaction = Transaction::default();
                    self.writer.write_all(b"250 localhost\r\n").await?;
                }
                b"AUTH" => self.auth(argument).await?,
                b"MAIL" => match path_after(argument, b"FROM:") {
                    Some(path) => {
                        let mail_parameters = parameters_of(argument);
                        let utf8 = offered_utf8 && mail_parameters.iter().any(|p| p == "SMTPUTF8");
                        if !path.is_ascii() && !utf8 {
                            self.writer.write_all(NEED_SMTPUTF8).await?;
                        } else {
                            transaction = Transaction {
                                mail_from: Some(path),
                                rcpt_to: Vec::new(),
                                mail_parameters,
                                utf8,
                            };
                            self.writer.write_all(b"250 2.1.0 Ok\r\n").await?;
                        }
                    }
                    None => self.reply_syntax_error().await?,
                },
                b"RCPT" => match path_after(argument, b"TO:") {
                    Some(_) if transaction.mail_from.is_none() => {
                        self.writer
                            .write_all(b"503 5.5.1 Error: need MAIL command\r\n")
                            .await?;
                    }
                    Some(path) if !path.is_ascii() && !transaction.utf8 => {
                        self.writer.write_all(NEED_SMTPUTF8).await?;
                    }
                    Some(path)
                        if lock(&self.shared.refused_recipients)
                            .contains(&path.to_ascii_lowercase()) =>
                    {
                        self.writer
                            .write_all(b"550 5.1.1 Recipient address rejected: User unknown in virtual mailbox table\r\n")
                            .await?;
                    }
                    Some(path) => {
                        transaction.rcpt_to.push(path);
                        self.writer.write_all(b"250 2.1.5 Ok\r\n").await?;
                    }
                    None => self.reply_syntax_error().await?,
                },
                b"DATA" => {
                    let transaction = std::mem::take(&mut transaction);
                    self.data(transaction).await?;
                }
                b"RSET" => {
                    transaction = Transaction::default();
                    self.writer.write_all(b"250 2.0.0 Ok\r\n").await?;
                }
                b"NOOP" => self.writer.write_all(b"250 2.0.0 Ok\r\n").await?,
                b"VRFY" => {
                    self.writer
                        .write_all(b"252 2.5.0 Cannot VRFY user\r\n")
                        .await?;
                }
                b"QUIT" => {
                    self.writer.write_all(b"221 2.0.0 Bye\r\n").await?;
                    self.writer.flush().await?;
                    return self.writer.shutdown().await;
                }
                _ => {
                    self.writer
                        .write_all(b"502 5.5.2 Error: command not recognized\r\n")
                        .await?;
                }
            }
            self.flush_unless_pipelined().await?;
        }
    }

    /// Flushes replies unless more pipelined commands are already buffered.
    async fn flush_unless_pipelined(&mut self) -> std::io::Result<()> {
        if self.reader.buffer().is_empty() {
            self.writer.flush().await?;
        }
        Ok(())
    }

    async fn reply_syntax_error(&mut self) -> std::io::Result<()> {
        self.writer
            .write_all(b"501 5.5.4 Syntax error in parameters\r\n")
            .await
    }

    /// AUTH PLAIN and LOGIN, with or without an initial response; any credentials pass.
    async fn auth(&mut self, argument: &[u8]) -> std::io::Result<()> {
        let mut parts = argument
            .split(|b| b.is_ascii_whitespace())
            .filter(|part| !part.is_empty());
        let mechanism = parts.next().unwrap_or_default().to_ascii_uppercase();
        let initial = parts.next();
        let challenges: &[&[u8]] = match (mechanism.as_slice(), initial) {
            (b"PLAIN", Some(_)) => &[],
            (b"PLAIN", None) => &[b"334 \r\n"],
            // "VXNlcm5hbWU6" and "UGFzc3dvcmQ6" are base64 of "Username:" and "Password:".
            (b"LOGIN", Some(_)) => &[b"334 UGFzc3dvcmQ6\r\n"],
            (b"LOGIN", None) => &[b"334 VXNlcm5hbWU6\r\n", b"334 UGFzc3dvcmQ6\r\n"],
            _ => {
                return self
                    .writer
                    .write_all(b"504 5.5.4 Unrecognized authentication type\r\n")
                    .await;
            }
        };
        let mut answer = Vec::new();
        for challenge in challenges {
            self.writer.write_all(challenge).await?;
            self.writer.flush().await?;
            answer.clear();
            if self.reader.read_until(b'\n', &mut answer).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if trim_line_end(&answer) == b"*" {
                return self
                    .writer
                    .write_all(b"501 5.7.0 Authentication cancelled\r\n")
                    .await;
            }
        }
        self.writer
            .write_all(b"235 2.7.0 Authentication successful\r\n")
            .await
    }

    /// Handles DATA: checks the envelope, reads the message, replies from the current mode.
    async fn data(&mut self, transaction: Transaction) -> std::io::Result<()> {
        let Some(mail_from) = transaction.mail_from else {
            return self
                .writer
                .write_all(b"503 5.5.1 Error: need MAIL command\r\n")
                .await;
        };
        if transaction.rcpt_to.is_empty() {
            return self
                .writer
                .write_all(b"554 5.5.1 Error: no valid recipients\r\n")
                .await;
        }
        self.writer
            .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
            .await?;
        self.writer.flush().await?;

        let data = self.read_data().await?;
        if self.shared.is_ignored(&data) {
            return self.writer.write_all(b"250 2.0.0 Ok: queued\r\n").await;
        }
        match self.shared.verdict() {
            Verdict::Accept => {
                let queue_id = self.shared.queue_ids.load(Ordering::SeqCst).then(|| {
                    let n = self.shared.next_queue_id.fetch_add(1, Ordering::SeqCst);
                    format!("0100{n:012x}-sink-000000")
                });
                self.shared.record(ReceivedMail {
                    mail_from,
                    rcpt_to: transaction.rcpt_to,
                    data,
                    mail_parameters: transaction.mail_parameters,
                    queue_id: queue_id.clone(),
                });
                self.shared.unreplied.fetch_add(1, Ordering::SeqCst);
                self.shared.before_reply().await;
                self.shared.unreplied.fetch_sub(1, Ordering::SeqCst);
                match queue_id {
                    Some(id) => {
                        self.writer
                            .write_all(format!("250 Ok {id}\r\n").as_bytes())
                            .await
                    }
                    None => self.writer.write_all(b"250 2.0.0 Ok: queued\r\n").await,
                }
            }
            Verdict::TempFail => {
                self.writer
                    .write_all(b"451 4.3.0 Temporary failure, try again later\r\n")
                    .await
            }
            Verdict::Reject => {
                self.writer
                    .write_all(b"550 5.1.1 Recipient address rejected: user unknown\r\n")
                    .await
            }
        }
    }

    /// Reads message lines up to the lone `.` line, removing dot-stuffing.
    async fn read_data(&mut self) -> std::io::Result<Vec<u8>> {
        let mut data = Vec::with_capacity(4096);
        loop {
            let start = data.len();
            if self.reader.read_until(b'\n', &mut data).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let line = &data[start..];
            if line.first() == Some(&b'.') {
                if line == b".\r\n" || line == b".\n" {
                    data.truncate(start);
                    return Ok(data);
                }
                data.remove(start);
            }
        }
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The command verb, upper-cased, padded with spaces when shorter than four bytes.
fn verb_of(command: &[u8]) -> [u8; 4] {
    let mut verb = [b' '; 4];
    let end = command
        .iter()
        .position(|b| *b == b' ')
        .unwrap_or(command.len());
    if end == 4 {
        for (slot, byte) in verb.iter_mut().zip(command) {
            *slot = byte.to_ascii_uppercase();
        }
    }
    verb
}

/// The upper-cased parameters after the path of `FROM:<a@b> PARAMS`.
fn parameters_of(argument: &[u8]) -> Vec<String> {
    let rest = match argument.iter().position(|b| *b == b'>') {
        Some(end) => &argument[end + 1..],
        None => b"",
    };
    String::from_utf8_lossy(rest)
        .split_ascii_whitespace()
        .map(str::to_ascii_uppercase)
        .collect()
}

fn argument_of(command: &[u8]) -> &[u8] {
    command.get(5..).unwrap_or_default()
}

/// The path of `FROM:<a@b> PARAMS` or `TO:<a@b>`, without brackets; `None` on bad syntax.
fn path_after(argument: &[u8], keyword: &[u8]) -> Option<String> {
    let head = argument.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = argument[keyword.len()..].trim_ascii_start();
    let path = if let Some(inner) = rest.strip_prefix(b"<") {
        let end = inner.iter().position(|b| *b == b'>')?;
        &inner[..end]
    } else {
        let end = rest.iter().position(|b| *b == b' ').unwrap_or(rest.len());
        &rest[..end]
    };
    Some(String::from_utf8_lossy(path).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_with_and_without_brackets() {
        assert_eq!(
            path_after(b"FROM:<a@b.test> BODY=8BITMIME", b"FROM:").as_deref(),
            Some("a@b.test")
        );
        assert_eq!(
            path_after(b"from: <a@b.test>", b"FROM:").as_deref(),
            Some("a@b.test")
        );
        assert_eq!(path_after(b"FROM:<>", b"FROM:").as_deref(), Some(""));
        assert_eq!(
            path_after(b"TO:c@d.test", b"TO:").as_deref(),
            Some("c@d.test")
        );
        assert_eq!(path_after(b"FROM <a@b.test>", b"FROM:"), None);
        assert_eq!(
            parameters_of(b"FROM:<a@b.test> body=8BITMIME  SMTPUTF8"),
            vec!["BODY=8BITMIME", "SMTPUTF8"]
        );
        assert!(parameters_of(b"FROM:<>").is_empty());
    }

    #[test]
    fn verbs_are_case_insensitive_and_exact() {
        assert_eq!(&verb_of(b"ehlo client"), b"EHLO");
        assert_eq!(&verb_of(b"QUIT"), b"QUIT");
        assert_eq!(&verb_of(b"QUITX"), b"    ");
        assert_eq!(&verb_of(b""), b"    ");
    }
}
