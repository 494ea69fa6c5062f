//! Herald's SMTP listeners: submission (any SMTP client sends through Herald with a project's
//! secret key) and inbound MX (mail for the projects' verified domains). One command layer ([`session`]) serves
//! both; a [`handler::Handler`] holds what differs. See docs/smtp.md.
#![forbid(unsafe_code)]

pub mod command;
pub mod data;
pub mod handler;
pub mod inbound;
pub mod lines;
pub mod listener;
pub mod message;
pub mod reply;
pub mod session;
pub mod settings;
pub mod submission;
pub mod tls;
pub mod verdicts;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use herald_engine::Engine;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use inbound::Inbound;
pub use listener::SmtpListener;
pub use settings::SmtpSettings;
use submission::Submission;

/// The configured listeners, bound (ports known) and not yet serving.
pub struct SmtpServers {
    submission: Option<SmtpListener<Submission>>,
    submission_tls: Option<SmtpListener<Submission>>,
    mx: Option<SmtpListener<Inbound>>,
}

impl SmtpServers {
    /// Binds every configured listener; a listener asking for TLS without a certificate, or
    /// an address that cannot be bound, stops startup.
    pub async fn bind(settings: &SmtpSettings, engine: &Engine) -> anyhow::Result<SmtpServers> {
        let tls = match (&settings.tls_cert, &settings.tls_key) {
            (Some(c), Some(k)) => Some(tls::acceptor(c, k)?),
            (None, None) => None,
            _ => {
                anyhow::bail!("HERALD_TLS_CERT and HERALD_TLS_KEY go together: set both or neither")
            }
        };
        let submission = Arc::new(Submission {
            engine: engine.clone(),
            max_bytes: settings.submission_max_bytes,
        });
        let plain = match &settings.submission_listen {
            Some(a) => Some(bind_one(a, submission.clone(), tls.clone(), false, settings).await?),
            None => None,
        };
        let implicit = match &settings.submission_tls_listen {
            Some(_) if tls.is_none() => {
                anyhow::bail!(
                    "HERALD_SUBMISSION_TLS_LISTEN needs HERALD_TLS_CERT and HERALD_TLS_KEY"
                )
            }
            Some(a) => Some(bind_one(a, submission, tls.clone(), true, settings).await?),
            None => None,
        };
        let mx = match &settings.mx_listen {
            Some(a) => {
                let inbound = Arc::new(Inbound {
                    engine: engine.clone(),
                    auth: verdicts::authenticator(settings.dns_resolver)
                        .context("the DNS resolver of the inbound verdicts")?,
                    hostname: settings.hostname.clone(),
                    max_bytes: settings.mx_max_bytes,
                });
                Some(bind_one(a, inbound, tls.clone(), false, settings).await?)
            }
            None => None,
        };
        for (addr, what) in [
            (plain.as_ref().map(SmtpListener::local_addr), "submission"),
            (
                implicit.as_ref().map(SmtpListener::local_addr),
                "submission (implicit TLS)",
            ),
            (mx.as_ref().map(SmtpListener::local_addr), "inbound MX"),
        ] {
            if let Some(addr) = addr {
                tracing::info!("SMTP {what} listening on {}", addr?);
            }
        }
        Ok(SmtpServers {
            submission: plain,
            submission_tls: implicit,
            mx,
        })
    }

    /// The inbound MX listener's address, if configured.
    pub fn mx_addr(&self) -> Option<SocketAddr> {
        self.mx.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The submission listener's address (STARTTLS), if configured.
    pub fn submission_addr(&self) -> Option<SocketAddr> {
        self.submission.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The implicit-TLS submission listener's address, if configured.
    pub fn submission_tls_addr(&self) -> Option<SocketAddr> {
        self.submission_tls
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// Serves every listener until `stop` changes.
    pub fn spawn(self, stop: watch::Receiver<bool>) -> JoinSet<()> {
        let mut set = JoinSet::new();
        for l in [self.submission, self.submission_tls].into_iter().flatten() {
            set.spawn(l.serve(stop.clone()));
        }
        if let Some(l) = self.mx {
            set.spawn(l.serve(stop.clone()));
        }
        set
    }
}

/// Binds one listener for `handler`.
async fn bind_one<H: handler::Handler>(
    addr: &str,
    handler: Arc<H>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    implicit_tls: bool,
    settings: &SmtpSettings,
) -> anyhow::Result<SmtpListener<H>> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the SMTP listener {addr}"))?;
    Ok(SmtpListener {
        listener,
        handler,
        hostname: settings.hostname.clone(),
        tls,
        implicit_tls,
        idle_timeout: settings.idle_timeout,
        session_timeout: settings.session_timeout,
        max_connections: settings.max_connections,
    })
}
