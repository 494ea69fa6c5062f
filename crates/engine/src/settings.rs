//! Settings of the engine (a part of the server configuration).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use herald_core::clock::SharedClock;

#[derive(Clone)]
pub struct EngineSettings {
    /// Base of links in mail.
    pub public_url: String,
    /// DKIM selectors are this prefix plus 8 random hex characters, unique per domain claim.
    pub dkim_selector_prefix: String,
    /// The SPF mechanism senders must publish, e.g. `include:amazonses.com` or `ip4:203.0.113.7`.
    pub spf_mechanism: String,
    /// Host that receives bounces; when set, domains also get an MX record for it.
    pub return_path_host: Option<String>,
    pub domain_check_interval: Duration,
    /// `None`: the system's resolver.
    pub dns_resolver: Option<SocketAddr>,
    pub dns_timeout: Duration,
    /// `None`: the local outbox.
    pub smtp_url: Option<String>,
    pub outbox_dir: PathBuf,
    pub smtp_max_connections: usize,
    /// Messages per second per project (0 = unlimited).
    pub send_rate_per_second: u32,
    /// Concurrent deliveries of this node.
    pub send_concurrency: usize,
    /// Bytes the node's deliveries in flight may hold (their messages' estimated sizes,
    /// [`crate::send::budget`]); more wait. A message larger than this goes alone.
    pub send_memory_budget: usize,
    /// Delivery attempts before a message fails for good.
    pub send_max_attempts: u32,
    /// First retry delay; doubled for each further attempt.
    pub send_retry_base: Duration,
    /// How long a claimed send job is reserved for its worker; the node's heartbeat renews
    /// it every third of this while the job is held, so a dead node's work is taken over
    /// within this time.
    pub send_lease: Duration,
    /// The longest an idle worker waits before looking for work again when no wake-up came
    /// (`cluster_wake`): the fallback that bounds a lost notification's cost.
    pub idle_poll: Duration,
    /// Days a message's body and attachments are kept (0 = forever).
    pub retention_days: u32,
    /// Where "now" comes from (the system clock; tests pass a test clock; on PostgreSQL
    /// corrected by the database's clock, `db_clock`).
    pub clock: SharedClock,
    /// This node's name (`HERALD_NODE_NAME`): who ran each periodic task, in `/metrics`.
    pub node_name: String,
    /// Key of the generic signed feedback format (`Herald-Signature`); `None` refuses it (401).
    pub feedback_secret: Option<String>,
    /// SNS topics whose notifications are accepted (empty: SNS is refused).
    pub sns_topic_arns: Vec<String>,
    /// TEST ONLY: a PEM certificate file the SNS verifier trusts when it is fetched from a
    /// loopback `http://127.0.0.1:<port>/` URL, so tests can sign SNS messages without AWS.
    pub sns_test_certificate: Option<PathBuf>,
    /// Rows of a CSV import committed per transaction (its checkpoint and progress step).
    pub import_batch_rows: usize,
    /// Contacts per campaign fan-out transaction (its checkpoint and progress step).
    pub campaign_page_size: u32,
    /// Where uploaded images are stored (the local implementation of the upload storage).
    pub uploads_dir: PathBuf,
    /// Largest uploaded image in bytes.
    pub upload_max_bytes: usize,
    /// When a bounce or complaint disables its project (docs/accounts.md "Security").
    pub reputation: herald_core::security::CriticalRates,
    /// Let workflow WEBHOOK steps call private, loopback and link-local addresses.
    pub webhook_allow_private: bool,
    /// How long a WEBHOOK call may take.
    pub webhook_timeout: Duration,
    /// The payment provider; `None`: payments answer 501.
    pub stripe: Option<crate::payments::StripeSettings>,
}

/// Every field, the relay URL's userinfo (its credential) hidden.
impl std::fmt::Debug for EngineSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineSettings")
            .field("public_url", &self.public_url)
            .field("dkim_selector_prefix", &self.dkim_selector_prefix)
            .field("spf_mechanism", &self.spf_mechanism)
            .field("return_path_host", &self.return_path_host)
            .field("domain_check_interval", &self.domain_check_interval)
            .field("dns_resolver", &self.dns_resolver)
            .field("dns_timeout", &self.dns_timeout)
            .field(
                "smtp_url",
                &self
                    .smtp_url
                    .as_deref()
                    .map(herald_core::redact::url_userinfo),
            )
            .field("outbox_dir", &self.outbox_dir)
            .field("smtp_max_connections", &self.smtp_max_connections)
            .field("send_rate_per_second", &self.send_rate_per_second)
            .field("send_concurrency", &self.send_concurrency)
            .field("send_memory_budget", &self.send_memory_budget)
            .field("send_max_attempts", &self.send_max_attempts)
            .field("send_retry_base", &self.send_retry_base)
            .field("send_lease", &self.send_lease)
            .field("idle_poll", &self.idle_poll)
            .field("node_name", &self.node_name)
            .field(
                "feedback_secret",
                &self.feedback_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("sns_topic_arns", &self.sns_topic_arns)
            .field("sns_test_certificate", &self.sns_test_certificate)
            .field("import_batch_rows", &self.import_batch_rows)
            .field("campaign_page_size", &self.campaign_page_size)
            .field("uploads_dir", &self.uploads_dir)
            .field("upload_max_bytes", &self.upload_max_bytes)
            .field("webhook_allow_private", &self.webhook_allow_private)
            .field("webhook_timeout", &self.webhook_timeout)
            .field("stripe", &self.stripe)
            .finish_non_exhaustive()
    }
}

/// Deliveries of a node in flight at once, and connections to the relay. 64 and 32 rather
/// than 32 and 16: more deliveries in flight fill the time a delivery waits for the relay or
/// the recorder (a 1,000,000-contact campaign delivered about a sixth more per second), while
/// `/v1/send` accepted during delivery stays near or above its target, 0.50 of the perf
/// baseline's `/sqlite` (docs/benchmarks.md, `send` and `send --concurrent`).
pub const DEFAULT_SEND_CONCURRENCY: usize = 64;
pub const DEFAULT_SMTP_MAX_CONNECTIONS: usize = 32;
/// Bytes a node's deliveries in flight may hold: a few messages with large attachments at
/// once (one with a 5 MB attachment costs about 12 MB while composed, 7 MB while handed over),
/// while small messages never wait for it (docs/sending.md "Delivery memory").
pub const DEFAULT_SEND_MEMORY_BUDGET: usize = 64 * 1024 * 1024;

impl EngineSettings {
    /// Defaults for a data directory (used by tests and as the base of the configuration).
    pub fn for_data_dir(data_dir: &std::path::Path, public_url: &str) -> Self {
        Self {
            public_url: public_url.to_owned(),
            dkim_selector_prefix: "herald".into(),
            spf_mechanism: "a".into(),
            return_path_host: None,
            domain_check_interval: Duration::from_secs(300),
            dns_resolver: None,
            dns_timeout: Duration::from_secs(5),
            smtp_url: None,
            outbox_dir: data_dir.join("outbox"),
            smtp_max_connections: DEFAULT_SMTP_MAX_CONNECTIONS,
            send_rate_per_second: 0,
            send_concurrency: DEFAULT_SEND_CONCURRENCY,
            send_memory_budget: DEFAULT_SEND_MEMORY_BUDGET,
            send_max_attempts: 8,
            send_retry_base: Duration::from_secs(30),
            send_lease: Duration::from_secs(10),
            idle_poll: Duration::from_secs(1),
            retention_days: 30,
            clock: herald_core::clock::system(),
            node_name: crate::periodic::default_node_name(),
            feedback_secret: None,
            sns_topic_arns: Vec::new(),
            sns_test_certificate: None,
            import_batch_rows: 2000,
            campaign_page_size: 1000,
            uploads_dir: data_dir.join("uploads"),
            upload_max_bytes: 5 * 1024 * 1024,
            reputation: Default::default(),
            webhook_allow_private: false,
            webhook_timeout: Duration::from_secs(10),
            stripe: None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_hides_the_relay_credential() {
        let mut s = super::EngineSettings::for_data_dir(std::path::Path::new("/tmp"), "http://x");
        s.smtp_url = Some("smtp://apikey:SG.topsecret@relay.example:587".into());
        let d = format!("{s:?}");
        assert!(!d.contains("topsecret") && !d.contains("apikey"), "{d}");
        assert!(d.contains("relay.example:587"), "{d}");
        s.stripe = Some(crate::payments::StripeSettings {
            secret_key: "sk_test_topsecret".into(),
            webhook_secret: "whsec_topsecret".into(),
            price_id: "price_1".into(),
            api_base: "https://api.stripe.com".into(),
            timeout: std::time::Duration::from_secs(10),
        });
        let d = format!("{s:?}");
        assert!(!d.contains("topsecret"), "{d}");
        assert!(d.contains("price_1"), "{d}");
    }
}
