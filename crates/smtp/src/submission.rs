//! Submission (DECISIONS.md "SMTP: submission and inbound mail"): AUTH with user `herald`
//! and a project's secret key, the sender-domain rule at MAIL and again on the From header,
//! at most 50 recipients, and the message through `/v1/send`'s own acceptance path
//! ([`Engine::submit_send`]: the sender-domain rule, contact upserts, message rows,
//! suppression, billing; DKIM and tracking when each message is composed). `250 2.0.0 queued as <id>` is answered only
//! once the rows are committed; a store failure is `451 4.3.0` with nothing written (the
//! acceptance is one transaction).
//!
//! Failed AUTH counts against the client address like failed sign-ins (the stored
//! `login_failures`, under the account name [`AUTH_ACCOUNT`]): after
//! [`account::LOGIN_FAILURES_ALLOWED`] failures within the window every AUTH from that
//! address is `454 4.7.0` until the oldest failure leaves the window.

use std::net::SocketAddr;
use std::sync::Arc;

use herald_core::account;
use herald_core::api_keys::{hash_secret, looks_like_key};
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_engine::Engine;
use herald_engine::domains::SenderDomainError;
use herald_engine::send::{AcceptError, Merged, Recipient, SendPlan, SubmitError};
use herald_store::accounts::Project;

use crate::handler::{AuthOutcome, Envelope, Handler};
use crate::message::{self, Submitted};
use crate::reply::Reply;

/// The user name of AUTH.
pub const USER: &str = "herald";
/// Recipients per message, as `/v1/send`.
pub const MAX_RECIPIENTS: usize = 50;
/// The account name failed AUTH is recorded under, per client address.
pub const AUTH_ACCOUNT: &str = "smtp-submission";
/// Messages parsed on the blocking pool past this size.
const INLINE_PARSE_LIMIT: usize = 256 * 1024;

pub struct Submission {
    pub(crate) engine: Engine,
    pub(crate) max_bytes: usize,
}

fn invalid() -> Reply {
    Reply::new(535, "5.7.8", "Authentication credentials invalid")
}

impl Submission {
    async fn check_key(
        &self,
        peer: SocketAddr,
        user: &str,
        password: &str,
    ) -> herald_store::StoreResult<AuthOutcome<Arc<Project>>> {
        let store = &self.engine.store;
        let client = peer.ip().to_string();
        let now = self.engine.now();
        let since = now - account::LOGIN_FAILURE_WINDOW_MS;
        let (failures, _) = store
            .login_failures_since(AUTH_ACCOUNT, &client, since)
            .await?;
        if failures >= account::LOGIN_FAILURES_ALLOWED {
            return Ok(AuthOutcome::Refused(Reply::new(
                454,
                "4.7.0",
                "Too many failed authentications from your address, try again later",
            )));
        }
        let project = if user == USER && looks_like_key(password, "sk_") {
            store.project_by_secret_hash(&hash_secret(password)).await?
        } else {
            None
        };
        let Some(project) = project else {
            store
                .record_login_failure(AUTH_ACCOUNT, &client, now, since)
                .await?;
            return Ok(AuthOutcome::Refused(invalid()));
        };
        if failures > 0 {
            store.clear_login_failures(AUTH_ACCOUNT, &client).await?;
        }
        Ok(AuthOutcome::Accepted(Arc::new(project)))
    }

    /// The sender-domain rule at MAIL FROM: `550 5.7.1` unless `address` is on a verified
    /// domain of the project (the From header is checked again with the message).
    async fn verified_sender(
        &self,
        project: &Project,
        address: &EmailAddress,
    ) -> Result<(), Reply> {
        self.engine
            .require_verified_sender(project.id, address)
            .await
            .map(|_| ())
            .map_err(sender_refusal)
    }

    fn plan(&self, project: &Project, rcpts: &[String], m: Submitted) -> Result<SendPlan, Reply> {
        let mut recipients = Vec::with_capacity(rcpts.len());
        for r in rcpts {
            let email = EmailAddress::parse(r)
                .map_err(|_| Reply::new(501, "5.1.3", format!("Bad recipient address {r}")))?;
            let lower = email.as_str().to_lowercase();
            let name = m
                .names
                .iter()
                .find(|(a, _)| *a == lower)
                .map(|(_, n)| n.clone());
            recipients.push(Recipient { email, name });
        }
        Ok(SendPlan {
            project_id: project.id,
            recipients,
            message: Merged {
                subject: m.subject,
                body: m.html,
                from: m.from,
                from_name: m.from_name,
                reply_to: m.reply_to,
                template_id: None,
                template_type: None,
            },
            subscribed: None,
            data: DataPatch::default(),
            headers: m.headers,
            attachments: m.attachments,
            idempotency_key: None,
            ignore_subscription: false,
        })
    }
}

/// The reply to a sender the domain rule refused.
fn sender_refusal(e: SenderDomainError) -> Reply {
    match e {
        SenderDomainError::NotVerified { domain } => Reply::new(
            550,
            "5.7.1",
            format!("{domain} is not a verified domain of this project"),
        ),
        SenderDomainError::Store(e) => {
            tracing::warn!("SMTP submission: reading the sender domain failed: {e}");
            Reply::local_error()
        }
    }
}

impl Handler for Submission {
    type Auth = Arc<Project>;

    fn requires_auth(&self) -> bool {
        true
    }

    fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    fn max_recipients(&self) -> usize {
        MAX_RECIPIENTS
    }

    async fn authenticate(
        &self,
        peer: SocketAddr,
        user: &str,
        password: &str,
    ) -> AuthOutcome<Arc<Project>> {
        match self.check_key(peer, user, password).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!("SMTP submission: AUTH lookup failed: {e}");
                AuthOutcome::Refused(Reply::new(454, "4.7.0", "Temporary authentication failure"))
            }
        }
    }

    async fn mail_from(&self, env: &Envelope<Arc<Project>>, path: &str) -> Result<(), Reply> {
        let Some(project) = &env.auth else {
            return Err(Reply::new(530, "5.7.0", "Authentication required"));
        };
        if project.disabled {
            return Err(Reply::new(550, "5.7.1", "This project is disabled"));
        }
        let address = EmailAddress::parse(path).map_err(|_| {
            Reply::new(
                550,
                "5.7.1",
                "The sender must be an address on a verified domain",
            )
        })?;
        self.verified_sender(project, &address).await
    }

    async fn rcpt_to(&self, _env: &Envelope<Arc<Project>>, path: &str) -> Result<(), Reply> {
        EmailAddress::parse(path)
            .map(|_| ())
            .map_err(|_| Reply::new(501, "5.1.3", "Bad recipient address syntax"))
    }

    async fn message(&self, env: &Envelope<Arc<Project>>, raw: Vec<u8>) -> Reply {
        let Some(project) = &env.auth else {
            return Reply::new(530, "5.7.0", "Authentication required");
        };
        let read = if raw.len() > INLINE_PARSE_LIMIT {
            match tokio::task::spawn_blocking(move || message::read(&raw)).await {
                Ok(r) => r,
                Err(_) => return Reply::local_error(),
            }
        } else {
            message::read(&raw)
        };
        let submitted = match read {
            Ok(m) => m,
            Err(r) => return r,
        };
        let plan = match self.plan(project, &env.rcpts, submitted) {
            Ok(p) => p,
            Err(r) => return r,
        };
        match self.engine.submit_send(&plan).await {
            Ok(accepted) => match accepted.first() {
                Some(a) => Reply::new(250, "2.0.0", format!("queued as {}", a.message_id)),
                None => Reply::local_error(),
            },
            Err(SubmitError::Sender(e)) => sender_refusal(e),
            Err(SubmitError::Accept(AcceptError::BillingLimit(c))) => Reply::new(
                554,
                "5.7.0",
                format!("The project's monthly {} limit is reached", c.as_str()),
            ),
            Err(SubmitError::Accept(e)) => {
                tracing::warn!("SMTP submission: accepting the message failed: {e}");
                Reply::local_error()
            }
        }
    }
}
