//! What the listeners are configured with (`HERALD_SUBMISSION_*`, `HERALD_MX_*`,
//! `HERALD_TLS_*`, `HERALD_SMTP_*`; see docs/smtp.md).

use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct SmtpSettings {
    /// The name in the greeting and the EHLO reply.
    pub hostname: String,
    /// Submission with STARTTLS (unset: off).
    pub submission_listen: Option<String>,
    /// Submission with implicit TLS (unset: off; needs the certificate).
    pub submission_tls_listen: Option<String>,
    /// Inbound MX (unset: off).
    pub mx_listen: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub submission_max_bytes: usize,
    pub mx_max_bytes: usize,
    /// The resolver of the inbound verdicts (`HERALD_DNS_RESOLVER`; unset: the system's).
    pub dns_resolver: Option<std::net::SocketAddr>,
    /// Longest wait for the client's next line.
    pub idle_timeout: Duration,
    /// Longest session.
    pub session_timeout: Duration,
    /// Open connections per listener; more are answered 421 and closed.
    pub max_connections: usize,
}

impl Default for SmtpSettings {
    fn default() -> Self {
        SmtpSettings {
            hostname: "localhost".into(),
            submission_listen: None,
            submission_tls_listen: None,
            mx_listen: None,
            tls_cert: None,
            tls_key: None,
            submission_max_bytes: 10 * 1024 * 1024,
            mx_max_bytes: 25 * 1024 * 1024,
            dns_resolver: None,
            idle_timeout: Duration::from_secs(300),
            session_timeout: Duration::from_secs(1800),
            max_connections: 500,
        }
    }
}
