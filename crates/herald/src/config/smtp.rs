//! The SMTP part of the configuration: the listeners' settings (docs/smtp.md).

use std::time::Duration;

use herald_smtp::SmtpSettings;

use super::Config;

impl Config {
    pub fn smtp_settings(&self) -> SmtpSettings {
        let host = self
            .public_url
            .split("://")
            .nth(1)
            .unwrap_or("")
            .split(['/', ':'])
            .next()
            .unwrap_or("");
        let hostname = match self.smtp_server_hostname.trim() {
            "" if host.is_empty() => "localhost".to_owned(),
            "" => host.to_owned(),
            h => h.to_owned(),
        };
        let secs = |s: f64, default: u64| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .unwrap_or(Duration::from_secs(default))
        };
        SmtpSettings {
            hostname,
            submission_listen: self.submission_listen.clone(),
            submission_tls_listen: self.submission_tls_listen.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            submission_max_bytes: self.submission_max_bytes,
            mx_listen: self.mx_listen.clone(),
            mx_max_bytes: self.mx_max_bytes,
            dns_resolver: self.dns_resolver,
            idle_timeout: secs(self.smtp_server_idle_timeout_secs, 300),
            session_timeout: secs(self.smtp_server_session_timeout_secs, 1800),
            max_connections: self.smtp_server_max_connections.max(1),
        }
    }
}
