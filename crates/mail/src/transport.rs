//! Where signed message bytes go: the local outbox (default) or an SMTP relay.
//!
//! Invariants:
//! - The bytes handed to [`Transport::send`] are delivered unchanged (they are already
//!   DKIM-signed); nothing here rebuilds or re-encodes a message.
//! - Errors are classified for the retry logic: [`TransportError::Transient`] (SMTP 4xx reply,
//!   connection refused/reset/timed out, TLS failure, relay unreachable) may succeed later;
//!   [`TransportError::Permanent`] (SMTP 5xx reply to `MAIL FROM`, an envelope or message the
//!   relay can never take) will not; [`TransportError::Rejected`] (5xx to `RCPT TO`, `DATA` or
//!   the end of data) is the recipient's permanent bounce. The string keeps the server reply, code first: `"550 5.1.1 no such user"`.
//! - SMTP: at most `max_connections` connections are open to the relay at any moment (in use
//!   or idle), enforced by a semaphore whose permit owns the connection (see
//!   [`SmtpTransport`] for why lettre's own pool is not used). Idle connections are reused
//!   after a NOOP answers; one idle for more than 60 s is closed instead. Session setup
//!   (connect, TLS, EHLO, AUTH) and each NOOP have a 30 s timeout, a transaction 30 s per
//!   started MiB of message. A timed-out connection is closed, never reused.
//! - International addresses: envelope addresses go out with their domain as IDNA A-labels
//!   ([`herald_core::email::with_ascii_domain`]). A message that still has a non-ASCII
//!   address in its envelope or UTF-8 in its header section (a non-ASCII local part) is sent
//!   with `MAIL FROM:<..> SMTPUTF8` when the relay offers SMTPUTF8, and otherwise fails
//!   permanently, before `MAIL FROM`, with a reason saying the relay does not support SMTPUTF8.
//! - Failures while setting up the session (including `535` bad credentials or a relay that
//!   does not offer STARTTLS) are transient: they are not the message's fault.
//! - SMTP URL forms: `smtp://user:pass@host:587` = STARTTLS required (default port 587),
//!   `smtps://user:pass@host:465` = implicit TLS (default port 465),
//!   `smtp://host:port?tls=none` = plaintext, for a local relay or test sink only. User and
//!   password are percent-decoded; the password never appears in [`Transport::describe`] or
//!   `Debug` output. Optional `?helo=name` sets the EHLO name.
//! - Outbox: see [`crate::outbox`].

use std::fmt;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use lettre::address::{Address, Envelope as LettreEnvelope};
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::extension::{ClientId, Extension};
use tokio::sync::Semaphore;

use crate::smtp_session::{Session, Stage};

pub use crate::outbox::OutboxTransport;

/// Why a connection could not be set up.
enum SetupError {
    Smtp(lettre::transport::smtp::Error),
    Io(std::io::Error),
}

impl From<lettre::transport::smtp::Error> for SetupError {
    fn from(e: lettre::transport::smtp::Error) -> Self {
        SetupError::Smtp(e)
    }
}

impl From<std::io::Error> for SetupError {
    fn from(e: std::io::Error) -> Self {
        SetupError::Io(e)
    }
}

/// SMTP envelope: reverse path and forward paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The `MAIL FROM` address (bounce address); empty for the null reverse path.
    pub mail_from: String,
    /// One or more `RCPT TO` addresses.
    pub rcpt_to: Vec<String>,
}

/// Why a send failed, and whether trying again later can help.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum TransportError {
    #[error("transient: {0}")]
    Transient(String),
    #[error("permanent: {0}")]
    Permanent(String),
    /// The relay refused this recipient or its message with a 5xx reply to `RCPT TO`, `DATA`
    /// or the end of data: the recipient's permanent bounce (DECISIONS.md: a 5xx at SMTP time
    /// counts as one). A 5xx to `MAIL FROM` names the sender and stays [`Self::Permanent`].
    #[error("rejected: {0}")]
    Rejected(String),
}

impl TransportError {
    /// True for [`TransportError::Transient`].
    pub fn is_transient(&self) -> bool {
        matches!(self, TransportError::Transient(_))
    }

    /// The reply or reason text.
    pub fn message(&self) -> &str {
        match self {
            TransportError::Transient(m)
            | TransportError::Permanent(m)
            | TransportError::Rejected(m) => m,
        }
    }
}

/// The configured transport. `Send + Sync`; share it in an `Arc`.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one value per process, kept in an Arc
pub enum Transport {
    Outbox(OutboxTransport),
    Smtp(SmtpTransport),
}

impl Transport {
    /// `None` → the local outbox in `outbox_dir` (created if missing); `Some(url)` → that
    /// SMTP relay with at most `max_connections` concurrent sends.
    pub fn from_config(
        smtp_url: Option<&str>,
        outbox_dir: &Path,
        max_connections: usize,
    ) -> anyhow::Result<Self> {
        match smtp_url.map(str::trim).filter(|u| !u.is_empty()) {
            Some(url) => Ok(Transport::Smtp(SmtpTransport::from_url(
                url,
                max_connections,
            )?)),
            None => {
                std::fs::create_dir_all(outbox_dir).with_context(|| {
                    format!("creating the outbox directory {}", outbox_dir.display())
                })?;
                Ok(Transport::Outbox(OutboxTransport::new(outbox_dir)))
            }
        }
    }

    /// Delivers `raw` (already signed). `key` is Herald's message id, used as the outbox file
    /// name. Returns the reply, code first, then which transport took it, for the message's
    /// history: `"250 2.0.0 Ok: queued as X (via smtp://relay:587)"` or `"250 kept as
    /// <key>.eml (via the local outbox)"`. Never a server path or a relay password.
    pub async fn send(
        &self,
        key: &str,
        envelope: &Envelope,
        raw: &[u8],
    ) -> Result<String, TransportError> {
        let reply = match self {
            Transport::Outbox(o) => o.send(key, raw).await?,
            Transport::Smtp(s) => s.send(envelope, raw).await?,
        };
        Ok(format!("{reply} (via {})", self.label()))
    }

    /// [`Self::send`] taking the bytes over, so the outbox keeps them without a copy (the
    /// delivery worker has no use for them afterwards).
    pub async fn send_owned(
        &self,
        key: &str,
        envelope: &Envelope,
        raw: Vec<u8>,
    ) -> Result<String, TransportError> {
        let reply = match self {
            Transport::Outbox(o) => o.send_owned(key, raw).await?,
            Transport::Smtp(s) => s.send(envelope, &raw).await?,
        };
        Ok(format!("{reply} (via {})", self.label()))
    }

    /// Which transport, for message histories: `the local outbox` or the relay's
    /// `scheme://host:port` (no user name, no password, no directory).
    pub fn label(&self) -> String {
        match self {
            Transport::Outbox(_) => "the local outbox".to_owned(),
            Transport::Smtp(s) => s.label(),
        }
    }

    /// Closes idle SMTP connections politely (QUIT); nothing to do for the outbox.
    pub async fn close_idle(&self) {
        if let Transport::Smtp(s) = self {
            s.close_idle().await;
        }
    }

    /// True when mail stays on this machine.
    pub fn is_local_outbox(&self) -> bool {
        matches!(self, Transport::Outbox(_))
    }

    /// A one-line description for logs, without the password.
    pub fn describe(&self) -> String {
        match self {
            Transport::Outbox(o) => format!("outbox:{}", o.dir().display()),
            Transport::Smtp(s) => s.describe(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SMTP

/// Default timeout for session setup (connect, TLS, EHLO, AUTH), for each NOOP, and per
/// started MiB of a transaction.
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle pooled connections older than this are closed instead of reused.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// A pooled connection idle longer than this is probed with NOOP before reuse; one used more
/// recently is reused at once (a NOOP per message was a round trip per message), and if the
/// relay closed it meanwhile, `MAIL FROM` fails before anything was handed over and the
/// message goes once more over a new connection.
const PROBE_IDLE_AFTER: Duration = Duration::from_secs(2);
/// Upper bound for `max_connections`.
pub const MAX_CONNECTIONS: usize = 10_000;

/// How the connection to the relay is secured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// `smtp://` — plaintext connect, then STARTTLS, which must succeed.
    StartTls,
    /// `smtps://` — TLS from the first byte.
    ImplicitTls,
    /// `smtp://...?tls=none` — no TLS at all (local relay, test sink).
    None,
}

/// A parsed relay URL.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpUrl {
    pub security: SmtpSecurity,
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    pub helo: Option<String>,
}

impl fmt::Debug for SmtpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl SmtpUrl {
    /// Parses `smtp://`, `smtps://` and `smtp://...?tls=none` URLs.
    pub fn parse(input: &str) -> anyhow::Result<Self> {
        // Never echo the input in errors: it may carry a password.
        let url = url::Url::parse(input.trim()).map_err(|e| anyhow!("invalid SMTP URL: {e}"))?;
        let mut tls_param: Option<String> = None;
        let mut helo: Option<String> = None;
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "tls" => tls_param = Some(v.to_ascii_lowercase()),
                "helo" => helo = Some(v.into_owned()),
                other => bail!("unknown SMTP URL parameter {other:?} (known: tls, helo)"),
            }
        }
        let security = match (url.scheme(), tls_param.as_deref()) {
            ("smtp", None | Some("required" | "starttls")) => SmtpSecurity::StartTls,
            ("smtp", Some("none")) => SmtpSecurity::None,
            ("smtps", None | Some("wrapper" | "implicit")) => SmtpSecurity::ImplicitTls,
            ("smtp" | "smtps", Some(other)) => {
                bail!("unsupported tls={other:?} for {}://", url.scheme())
            }
            (scheme, _) => bail!("unsupported SMTP URL scheme {scheme:?} (smtp or smtps)"),
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| anyhow!("SMTP URL without a host"))?;
        // `Url` keeps IPv6 literals bracketed; the socket layer wants them bare.
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url.port().unwrap_or(match security {
            SmtpSecurity::ImplicitTls => 465,
            SmtpSecurity::StartTls | SmtpSecurity::None => 587,
        });
        let decode = |s: &str, what: &str| -> anyhow::Result<String> {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| anyhow!("SMTP URL {what} is not valid UTF-8 once percent-decoded"))
        };
        let username = match url.username() {
            "" => None,
            u => Some(decode(u, "user")?),
        };
        let password = match url.password() {
            Some(p) => Some(decode(p, "password")?),
            None => None,
        };
        if password.is_some() && username.is_none() {
            bail!("SMTP URL has a password but no user");
        }
        if url.path().len() > 1 && helo.is_none() {
            helo = Some(url.path().trim_matches('/').to_owned());
        }
        if let Some(h) = &helo {
            let ok = !h.is_empty()
                && h.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':')
                });
            if !ok {
                bail!("invalid helo name {h:?}");
            }
        }
        Ok(Self {
            security,
            host,
            port,
            username,
            password,
            helo,
        })
    }

    /// The URL with the password replaced by `***`.
    pub fn redacted(&self) -> String {
        let scheme = match self.security {
            SmtpSecurity::ImplicitTls => "smtps",
            SmtpSecurity::StartTls | SmtpSecurity::None => "smtp",
        };
        let user = match (&self.username, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (Some(u), None) => format!("{u}@"),
            _ => String::new(),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let query = match self.security {
            SmtpSecurity::None => "?tls=none",
            _ => "",
        };
        format!("{scheme}://{user}{host}:{}{query}", self.port)
    }
}

/// An SMTP relay: lettre's SMTP client under Herald's own connection pool.
///
/// Not lettre's `AsyncSmtpTransport` pool: measured here, a semaphore in front of it still let
/// 6 connections open for a cap of 3 (its connections return to the pool from a spawned task,
/// after the permit is released), and its async client has no timeout on commands, only on
/// the TCP connect, so a silent server would hold a permit forever. Here a connection is owned
/// by exactly one permit holder or parked idle, so open connections never exceed
/// `max_connections`, and every step runs under a Tokio timeout.
pub struct SmtpTransport {
    url: SmtpUrl,
    tls: Option<TlsParameters>,
    hello: ClientId,
    credentials: Option<Credentials>,
    permits: Semaphore,
    idle: Mutex<Vec<IdleConnection>>,
    max_connections: usize,
    timeout: Duration,
}

struct IdleConnection {
    session: Session,
    since: Instant,
}

impl fmt::Debug for SmtpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpTransport")
            .field("url", &self.url)
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

impl SmtpTransport {
    /// A transport for the relay at `url`; at most `max_connections` (at least 1) concurrent
    /// connections. No network I/O happens here and no runtime is needed.
    pub fn from_url(url: &str, max_connections: usize) -> anyhow::Result<Self> {
        let url = SmtpUrl::parse(url)?;
        let max_connections = max_connections.clamp(1, MAX_CONNECTIONS);
        let tls = match url.security {
            SmtpSecurity::None => None,
            SmtpSecurity::StartTls | SmtpSecurity::ImplicitTls => {
                Some(TlsParameters::new(url.host.clone()).context("TLS parameters for the relay")?)
            }
        };
        let hello = match &url.helo {
            Some(h) => ClientId::Domain(h.clone()),
            None => ClientId::default(),
        };
        let credentials = url
            .username
            .as_ref()
            .map(|user| Credentials::new(user.clone(), url.password.clone().unwrap_or_default()));
        Ok(Self {
            url,
            tls,
            hello,
            credentials,
            permits: Semaphore::new(max_connections),
            idle: Mutex::new(Vec::new()),
            max_connections,
            timeout: SMTP_TIMEOUT,
        })
    }

    /// Replaces the [`SMTP_TIMEOUT`] default (setup, NOOP, and per MiB of a transaction).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The parsed relay URL.
    pub fn url(&self) -> &SmtpUrl {
        &self.url
    }

    /// `scheme://host:port` of the relay, for message histories.
    pub fn label(&self) -> String {
        let url = &self.url;
        let scheme = match url.security {
            SmtpSecurity::ImplicitTls => "smtps",
            SmtpSecurity::StartTls | SmtpSecurity::None => "smtp",
        };
        if url.host.contains(':') {
            format!("{scheme}://[{}]:{}", url.host, url.port)
        } else {
            format!("{scheme}://{}:{}", url.host, url.port)
        }
    }

    /// For logs: redacted URL, security mode and the connection cap.
    pub fn describe(&self) -> String {
        let mode = match self.url.security {
            SmtpSecurity::StartTls => "STARTTLS required",
            SmtpSecurity::ImplicitTls => "implicit TLS",
            SmtpSecurity::None => "plaintext",
        };
        format!(
            "{} ({mode}, max {} connections)",
            self.url.redacted(),
            self.max_connections
        )
    }

    /// Number of idle pooled connections (for metrics and tests).
    pub fn idle_connections(&self) -> usize {
        self.lock_idle().len()
    }

    /// Sends pre-built bytes with the given envelope.
    pub async fn send(&self, envelope: &Envelope, raw: &[u8]) -> Result<String, TransportError> {
        let lettre_envelope = to_lettre_envelope(envelope)?;
        let smtputf8 = needs_smtputf8(&lettre_envelope, raw);
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| TransportError::Transient("SMTP transport closed".into()))?;
        let mut fresh = false;
        loop {
            let (mut session, unprobed) = if fresh {
                (self.open().await?, false)
            } else {
                self.checkout().await?
            };
            if smtputf8
                && !session
                    .conn
                    .server_info()
                    .supports_feature(Extension::SmtpUtfEight)
            {
                self.checkin(session);
                return Err(TransportError::Permanent(format!(
                    "the relay {} does not support SMTPUTF8, which this message needs for its \
                     non-ASCII address (a local part that is not ASCII)",
                    self.url.redacted()
                )));
            }
            let limit = send_timeout(self.timeout, raw.len());
            let sent = session.transaction(&lettre_envelope, raw, smtputf8);
            return match tokio::time::timeout(limit, sent).await {
                Ok(Ok(response)) => {
                    let reply = reply_text(
                        &response.code().to_string(),
                        response.message().collect::<Vec<_>>().join(" "),
                    );
                    self.checkin(session);
                    Ok(reply)
                }
                Ok(Err((stage, e))) => {
                    // As lettre's own `send` does: QUIT and close after any error.
                    session.conn.abort().await;
                    if stage == Stage::MailFrom && unprobed && !e.is_permanent() {
                        // A reused connection the relay closed while it was idle: nothing
                        // was handed over; once more over a new connection.
                        fresh = true;
                        continue;
                    }
                    Err(classify(&e, stage, envelope, raw))
                }
                // Dropping the connection closes it: its state mid-transaction is unknown.
                Err(_) => Err(TransportError::Transient(format!(
                    "timed out after {limit:?} sending to {}",
                    self.url.redacted()
                ))),
            };
        }
    }

    /// Closes the idle connections politely (QUIT). Sends in flight are not affected.
    pub async fn close_idle(&self) {
        let idle = std::mem::take(&mut *self.lock_idle());
        for mut c in idle {
            let _ = tokio::time::timeout(self.timeout, c.session.conn.quit()).await;
        }
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<IdleConnection>> {
        // The vector stays consistent even if a holder panicked: recover it.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pooled connection (probed with NOOP when idle longer than [`PROBE_IDLE_AFTER`]), or
    /// a new one; true when it is a pooled one reused without a probe.
    async fn checkout(&self) -> Result<(Session, bool), TransportError> {
        loop {
            let parked = self.lock_idle().pop();
            let Some(IdleConnection { mut session, since }) = parked else {
                break;
            };
            let idle = since.elapsed();
            if idle > POOL_IDLE_TIMEOUT {
                let _ = tokio::time::timeout(self.timeout, session.conn.quit()).await;
                continue;
            }
            if idle <= PROBE_IDLE_AFTER {
                return Ok((session, true));
            }
            let probe = session.conn.test_connected();
            if let Ok(true) = tokio::time::timeout(self.timeout, probe).await {
                return Ok((session, false));
            }
            // Broken or silent: drop it (closing the socket) and try the next one.
        }
        Ok((self.open().await?, false))
    }

    /// A new connection, set up within the timeout.
    async fn open(&self) -> Result<Session, TransportError> {
        match tokio::time::timeout(self.timeout, self.connect()).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(SetupError::Smtp(e))) => Err(classify(&e, Stage::Setup, &NO_ENVELOPE, b"")),
            Ok(Err(SetupError::Io(e))) => Err(TransportError::Transient(format!(
                "Connection error: {e} ({})",
                self.url.redacted()
            ))),
            Err(_) => Err(TransportError::Transient(format!(
                "timed out after {:?} connecting to {}",
                self.timeout,
                self.url.redacted()
            ))),
        }
    }

    fn checkin(&self, session: Session) {
        if session.conn.has_broken() {
            return;
        }
        let mut idle = self.lock_idle();
        if idle.len() < self.max_connections {
            idle.push(IdleConnection {
                session,
                since: Instant::now(),
            });
        }
    }

    /// TCP (+ implicit TLS), greeting, EHLO, STARTTLS + EHLO when required, the EHLO that
    /// learns PIPELINING, AUTH.
    async fn connect(&self) -> Result<Session, SetupError> {
        let mut conn = match self.url.security {
            SmtpSecurity::ImplicitTls => {
                AsyncSmtpConnection::connect_tokio1(
                    (self.url.host.as_str(), self.url.port),
                    Some(self.timeout),
                    &self.hello,
                    self.tls.clone(),
                    None,
                )
                .await?
            }
            SmtpSecurity::StartTls | SmtpSecurity::None => {
                // Our own socket, for TCP_NODELAY: lettre writes the body and the final
                // "\r\n.\r\n" separately, and with Nagle's algorithm against a peer's delayed
                // ACK every message would wait about 40 ms.
                let tcp =
                    tokio::net::TcpStream::connect((self.url.host.as_str(), self.url.port)).await?;
                tcp.set_nodelay(true)?;
                AsyncSmtpConnection::connect_with_transport(Box::new(tcp), &self.hello).await?
            }
        };
        if let (SmtpSecurity::StartTls, Some(params)) = (self.url.security, &self.tls) {
            // Fails when the server does not offer STARTTLS: never fall back to plaintext.
            conn.starttls(params.clone(), &self.hello).await?;
        }
        let mut session = Session::start(conn, &self.hello).await?;
        if let Some(credentials) = &self.credentials
            && let Err(e) = session.conn.auth(DEFAULT_MECHANISMS, credentials).await
        {
            session.conn.abort().await;
            return Err(e.into());
        }
        Ok(session)
    }
}

static NO_ENVELOPE: Envelope = Envelope {
    mail_from: String::new(),
    rcpt_to: Vec::new(),
};

/// Time allowed for one transaction: `base` plus as much again per started MiB.
fn send_timeout(base: Duration, len: usize) -> Duration {
    let mib = u32::try_from(len / (1024 * 1024)).unwrap_or(u32::MAX / 2);
    base.saturating_mul(mib.saturating_add(1))
}

/// True when an envelope address is not ASCII (after the A-label conversion, only a local
/// part can be) or the header section carries UTF-8 (RFC 6531, RFC 6532).
fn needs_smtputf8(envelope: &LettreEnvelope, raw: &[u8]) -> bool {
    let header_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(raw.len());
    let address_ascii = |a: &Address| a.to_string().is_ascii();
    !raw[..header_end].is_ascii()
        || !envelope.from().is_none_or(address_ascii)
        || !envelope.to().iter().all(address_ascii)
}

fn to_lettre_envelope(envelope: &Envelope) -> Result<LettreEnvelope, TransportError> {
    let parse = |a: &str| -> Result<Address, TransportError> {
        let invalid = |e: &dyn fmt::Display| {
            TransportError::Permanent(format!("invalid envelope address {a:?}: {e}"))
        };
        herald_core::email::with_ascii_domain(a.trim())
            .map_err(|e| invalid(&e))?
            .parse::<Address>()
            .map_err(|e| invalid(&e))
    };
    let from = match envelope.mail_from.trim() {
        "" => None,
        a => Some(parse(a)?),
    };
    let to = envelope
        .rcpt_to
        .iter()
        .map(|a| parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    LettreEnvelope::new(from, to)
        .map_err(|e| TransportError::Permanent(format!("invalid envelope: {e}")))
}

fn reply_text(code: &str, message: String) -> String {
    if message.is_empty() {
        code.to_owned()
    } else {
        format!("{code} {message}")
    }
}

/// Maps a lettre error to transient/permanent, keeping the server's reply when there is one.
///
/// During session setup (greeting, EHLO, STARTTLS, AUTH) every failure is transient, even a
/// 5xx such as `535 5.7.8` bad credentials: it is the relay's or the configuration's problem,
/// not the message's, and must not fail a whole campaign for good.
fn classify(
    e: &lettre::transport::smtp::Error,
    stage: Stage,
    envelope: &Envelope,
    raw: &[u8],
) -> TransportError {
    if let Some(code) = e.status() {
        let message = std::error::Error::source(e)
            .map(|s| s.to_string())
            .unwrap_or_default();
        let reply = reply_text(&code.to_string(), message);
        return match stage {
            Stage::Send if e.is_permanent() => TransportError::Rejected(reply),
            Stage::MailFrom if e.is_permanent() => TransportError::Permanent(reply),
            Stage::Send | Stage::MailFrom | Stage::Setup => TransportError::Transient(reply),
        };
    }
    let text = error_chain(e);
    // lettre refuses locally, before MAIL FROM, to send 8-bit data or UTF-8 addresses to a
    // server without 8BITMIME / SMTPUTF8: the same message can never go to this relay.
    let non_ascii_input = !raw.is_ascii()
        || !envelope.mail_from.is_ascii()
        || envelope.rcpt_to.iter().any(|a| !a.is_ascii());
    if e.is_client() && non_ascii_input {
        return TransportError::Permanent(text);
    }
    // Connection refused/reset, timeouts, TLS handshake failures, garbled replies, an
    // unreachable relay or a relay missing STARTTLS: all may work on a later try.
    TransportError::Transient(text)
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn url_forms() {
        let u = SmtpUrl::parse("smtp://user%40example.com:p%40ss%3Aw%2Fd@smtp.example.com:587")
            .unwrap();
        assert_eq!(u.security, SmtpSecurity::StartTls);
        assert_eq!(u.host, "smtp.example.com");
        assert_eq!(u.port, 587);
        assert_eq!(u.username.as_deref(), Some("user@example.com"));
        assert_eq!(u.password.as_deref(), Some("p@ss:w/d"));
        assert_eq!(
            u.redacted(),
            "smtp://user@example.com:***@smtp.example.com:587"
        );
        assert!(!format!("{u:?}").contains("p@ss"));

        let u = SmtpUrl::parse("smtps://AKIA:secret@email-smtp.eu-west-1.amazonaws.com").unwrap();
        assert_eq!(u.security, SmtpSecurity::ImplicitTls);
        assert_eq!(u.port, 465);

        let u = SmtpUrl::parse("smtp://127.0.0.1:2525?tls=none").unwrap();
        assert_eq!(u.security, SmtpSecurity::None);
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 2525));
        assert_eq!(u.username, None);
        assert_eq!(u.redacted(), "smtp://127.0.0.1:2525?tls=none");

        let u = SmtpUrl::parse("smtp://[::1]:25?tls=none&helo=mta.example.com").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.helo.as_deref(), Some("mta.example.com"));

        assert_eq!(SmtpUrl::parse("smtp://relay.local").unwrap().port, 587);

        for bad in [
            "http://host",
            "smtp://",
            "smtps://host?tls=none",
            "smtp://host?tls=maybe",
            "smtp://host?foo=bar",
            "smtp://:secret@host",
            "not a url",
        ] {
            assert!(SmtpUrl::parse(bad).is_err(), "{bad} accepted");
        }
        // Errors never contain the password.
        let err = SmtpUrl::parse("smtp://u:hunter2@host?tls=maybe").unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
    }

    #[test]
    fn describe_redacts() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transport::from_config(
            Some("smtp://me:topsecret@smtp.example.com:587"),
            dir.path(),
            4,
        )
        .unwrap();
        assert!(!t.is_local_outbox());
        let d = t.describe();
        assert!(
            d.contains("smtp.example.com:587") && d.contains("***"),
            "{d}"
        );
        assert!(!d.contains("topsecret"));
        assert!(!format!("{t:?}").contains("topsecret"));

        let t = Transport::from_config(None, &dir.path().join("out"), 4).unwrap();
        assert!(t.is_local_outbox());
        assert!(t.describe().starts_with("outbox:"));
        assert!(dir.path().join("out").is_dir());

        fn check<T: Send + Sync + 'static>() {}
        check::<Transport>();
    }
}
