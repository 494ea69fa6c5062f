//! The inbound MX listener's handler (DECISIONS.md "SMTP: submission and inbound mail",
//! Inbound): no AUTH; any MAIL FROM (the null sender too); a recipient on a domain no project
//! verified is `550 5.1.1` at RCPT (Herald never accepts mail it would have to bounce later);
//! the message gets its SPF, DKIM and DMARC verdicts ([`crate::verdicts`]) and is recorded by
//! the engine ([`Engine::receive_inbound`]) before `250` is answered; a store failure is
//! `451 4.3.0`.

use std::net::SocketAddr;

use herald_core::email::EmailAddress;
use herald_engine::Engine;
use herald_engine::inbound::InboundMessage;
use herald_mail::inbound::{InboundError, read_inbound};
use mail_auth::MessageAuthenticator;

use crate::handler::{AuthOutcome, Envelope, Handler};
use crate::reply::Reply;
use crate::verdicts::verdicts;

/// Recipients per inbound message (RFC 5321 section 4.5.3.1.8's minimum).
pub const MAX_RECIPIENTS: usize = 100;

pub struct Inbound {
    pub(crate) engine: Engine,
    pub(crate) auth: MessageAuthenticator,
    pub(crate) hostname: String,
    pub(crate) max_bytes: usize,
}

impl Handler for Inbound {
    type Auth = ();

    fn requires_auth(&self) -> bool {
        false
    }

    fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    fn max_recipients(&self) -> usize {
        MAX_RECIPIENTS
    }

    async fn authenticate(&self, _: SocketAddr, _: &str, _: &str) -> AuthOutcome<()> {
        AuthOutcome::Refused(Reply::new(502, "5.5.1", "AUTH is not available here"))
    }

    async fn mail_from(&self, _env: &Envelope<()>, path: &str) -> Result<(), Reply> {
        if path.is_empty() || EmailAddress::parse(path).is_ok() {
            Ok(())
        } else {
            Err(Reply::new(501, "5.1.7", "Bad sender address syntax"))
        }
    }

    async fn rcpt_to(&self, _env: &Envelope<()>, path: &str) -> Result<(), Reply> {
        let address = EmailAddress::parse(path)
            .map_err(|_| Reply::new(501, "5.1.3", "Bad recipient address syntax"))?;
        match self.engine.inbound_project(&address).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(Reply::new(550, "5.1.1", "No such recipient here")),
            Err(e) => {
                tracing::warn!("SMTP inbound: looking the recipient's domain up failed: {e}");
                Err(Reply::local_error())
            }
        }
    }

    async fn message(&self, env: &Envelope<()>, raw: Vec<u8>) -> Reply {
        let parts = match read_inbound(&raw) {
            Ok(p) => p,
            Err(InboundError::NoFrom) => {
                return Reply::new(550, "5.6.0", "The message has no From header");
            }
            Err(InboundError::Unparsable) => {
                return Reply::new(554, "5.6.0", "The message could not be parsed");
            }
        };
        let helo = env.helo.as_deref().unwrap_or("");
        let mail_from = env.from.as_deref().unwrap_or("");
        let v = verdicts(
            &self.auth,
            &raw,
            env.peer.ip(),
            helo,
            &self.hostname,
            mail_from,
        )
        .await;
        let recipients = env
            .rcpts
            .iter()
            .filter_map(|r| EmailAddress::parse(r).ok())
            .collect();
        let m = InboundMessage {
            raw,
            parts,
            recipients,
            spf: v.spf,
            dkim: v.dkim,
            dmarc: v.dmarc,
        };
        match self.engine.receive_inbound(&m, None).await {
            Ok(done) => match done.first() {
                Some(r) => Reply::new(250, "2.0.0", format!("queued as {}", r.message_id)),
                None => Reply::new(550, "5.1.1", "No recipient of this message is here"),
            },
            Err(e) => {
                tracing::warn!("SMTP inbound: recording the message failed: {e}");
                Reply::local_error()
            }
        }
    }
}
