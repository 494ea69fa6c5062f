//! What distinguishes the listeners: a [`Handler`] decides AUTH, each envelope address and
//! what becomes of a received message; the command layer ([`crate::session`]) does the rest.

use std::future::Future;
use std::net::SocketAddr;

use crate::reply::Reply;

/// The state of one session, as a handler sees it.
#[derive(Debug)]
pub struct Envelope<A> {
    pub peer: SocketAddr,
    pub tls: bool,
    /// The EHLO/HELO name.
    pub helo: Option<String>,
    /// The authenticated identity (submission).
    pub auth: Option<A>,
    /// MAIL FROM's path (empty for `<>`), once accepted.
    pub from: Option<String>,
    /// The accepted RCPT paths, in order.
    pub rcpts: Vec<String>,
}

impl<A> Envelope<A> {
    pub(crate) fn new(peer: SocketAddr, tls: bool) -> Envelope<A> {
        Envelope {
            peer,
            tls,
            helo: None,
            auth: None,
            from: None,
            rcpts: Vec::new(),
        }
    }

    /// Ends the mail transaction (after DATA, RSET, a new EHLO).
    pub(crate) fn reset(&mut self) {
        self.from = None;
        self.rcpts.clear();
    }
}

/// The answer to AUTH.
pub enum AuthOutcome<A> {
    Accepted(A),
    /// `535 5.7.8`, or another refusal (too many failures, a temporary error).
    Refused(Reply),
}

pub trait Handler: Send + Sync + 'static {
    /// The authenticated identity.
    type Auth: Send + Sync;

    /// Submission: AUTH is offered and required before MAIL.
    fn requires_auth(&self) -> bool;

    /// The largest message, announced with SIZE.
    fn max_bytes(&self) -> usize;

    /// At most this many RCPT per message (`452 4.5.3` past it).
    fn max_recipients(&self) -> usize;

    fn authenticate(
        &self,
        peer: SocketAddr,
        user: &str,
        password: &str,
    ) -> impl Future<Output = AuthOutcome<Self::Auth>> + Send;

    /// MAIL FROM (`path` empty for `<>`): `Ok` accepts it.
    fn mail_from(
        &self,
        env: &Envelope<Self::Auth>,
        path: &str,
    ) -> impl Future<Output = Result<(), Reply>> + Send;

    /// One RCPT TO: `Ok` accepts it.
    fn rcpt_to(
        &self,
        env: &Envelope<Self::Auth>,
        path: &str,
    ) -> impl Future<Output = Result<(), Reply>> + Send;

    /// A whole message (dot-stuffing undone, CRLF line ends): the final reply.
    fn message(
        &self,
        env: &Envelope<Self::Auth>,
        message: Vec<u8>,
    ) -> impl Future<Output = Reply> + Send;
}
