//! Herald's workers and use-case services that need more than the database: sender domains
//! (DKIM keys, DNS verification, the periodic re-check) and the delivery pipeline (send queue,
//! MIME, DKIM signing, transports). The API calls into an [`Engine`]; `herald serve` also
//! starts its background workers, which stop cleanly on shutdown.
#![forbid(unsafe_code)]

pub mod accounts;
pub mod campaigns;
pub mod cluster_wake;
pub mod contact_jobs;
pub mod contact_search;
pub mod cpu_pool;
pub mod db_clock;
pub mod domains;
pub mod due_jobs;
pub mod feedback;
pub mod inbound;
mod job_lease;
pub mod links;
pub mod list_pages;
pub mod metrics;
pub mod payments;
pub mod periodic;
pub mod retention;
pub mod secret_rotation;
pub mod segments;
pub mod send;
pub mod settings;
pub mod throttle;
pub mod track;
pub mod uploads;
pub mod verify;
pub mod workflows;

use std::sync::Arc;

use herald_mail::dns::DnsChecker;
use herald_mail::seal::Sealer;
use herald_mail::transport::Transport;
use herald_store::Store;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use settings::{
    DEFAULT_SEND_CONCURRENCY, DEFAULT_SEND_MEMORY_BUDGET, DEFAULT_SMTP_MAX_CONNECTIONS,
    EngineSettings,
};

pub struct EngineInner {
    pub store: Store,
    pub settings: EngineSettings,
    /// Seals DKIM private keys at rest (key derived from the server secret).
    pub sealer: Sealer,
    pub dns: DnsChecker,
    pub transport: Transport,
    pub throttle: throttle::Throttle,
    /// Wakes the delivery worker when a send is queued on this node.
    pub wake: tokio::sync::Notify,
    /// Wakes the contact-job worker when an import or bulk job is queued on this node.
    pub contact_jobs_wake: tokio::sync::Notify,
    /// Wake-ups for the other nodes (`cluster_wake`).
    pub outgoing_wakes: cluster_wake::Outgoing,
    /// When the job queues have work (`due_jobs`).
    pub due_jobs: due_jobs::DueJobs,
    /// Where uploaded images are kept.
    pub uploads: std::sync::Arc<dyn uploads::ImageStorage>,
    /// Group-commits concurrent `/v1/send` and `/v1/track` requests.
    pub acceptor: send::batch::Acceptor,
    /// DNS facts of recipient domains for `/v1/verify`, per domain for a few minutes.
    pub verify_cache: verify::DomainCache,
    /// Tracking and list-page links (tokens keyed from the server secret).
    pub links: links::MailLinks,
    /// Verifies Amazon SNS notifications (certificates, HTTP client).
    pub sns: feedback::sns::SnsState,
    /// The base of each project's WEBHOOK signing secret.
    pub webhook_key: herald_core::secret::DerivedKey,
    /// The payment provider, when one is configured (Stripe).
    pub payments: Option<Arc<dyn payments::PaymentProvider>>,
}

/// Shared handle to the services; cheap to clone.
#[derive(Clone)]
pub struct Engine(pub Arc<EngineInner>);

impl std::ops::Deref for Engine {
    type Target = EngineInner;
    fn deref(&self) -> &EngineInner {
        &self.0
    }
}

impl Engine {
    pub fn new(store: Store, settings: EngineSettings, secret: &[u8]) -> anyhow::Result<Engine> {
        Self::with_retired_secrets(store, settings, secret, &[])
    }

    /// [`Engine::new`] whose links made under a `retired` secret (before `herald
    /// rotate-secret`) still open; everything new is made with `secret`.
    pub fn with_retired_secrets(
        store: Store,
        settings: EngineSettings,
        secret: &[u8],
        retired: &[Vec<u8>],
    ) -> anyhow::Result<Engine> {
        let dns = DnsChecker::new(settings.dns_resolver, settings.dns_timeout)?;
        let transport = Transport::from_config(
            settings.smtp_url.as_deref(),
            &settings.outbox_dir,
            settings.smtp_max_connections,
        )?;
        let sns = feedback::sns::SnsState::new(settings.sns_test_certificate.as_deref())?;
        let payments = match &settings.stripe {
            Some(s) => Some(Arc::new(payments::Stripe::new(s.clone())?) as Arc<_>),
            None => None,
        };
        Ok(Engine(Arc::new(EngineInner {
            sns,
            payments,
            sealer: Sealer::for_dkim(secret),
            webhook_key: herald_core::secret::derive(
                secret,
                herald_core::secret::KeyPurpose::WebhookSigning,
            ),
            dns,
            transport,
            throttle: throttle::Throttle::for_store(&store, settings.send_rate_per_second),
            wake: tokio::sync::Notify::new(),
            contact_jobs_wake: tokio::sync::Notify::new(),
            outgoing_wakes: Default::default(),
            due_jobs: Default::default(),
            uploads: std::sync::Arc::new(uploads::LocalImageStorage::new(
                settings.uploads_dir.clone(),
            )),
            acceptor: send::batch::Acceptor::new(send::batch::BatchContext {
                store: store.clone(),
                clock: settings.clock.clone(),
                max_attempts: i32::try_from(settings.send_max_attempts).unwrap_or(i32::MAX),
            }),
            verify_cache: verify::DomainCache::default(),
            links: links::MailLinks::with_retired(secret, retired, &settings.public_url),
            store,
            settings,
        })))
    }

    /// The current time, from the configured [`herald_core::clock::Clock`].
    pub fn now(&self) -> herald_core::time::Millis {
        self.settings.clock.now()
    }

    /// Starts the background workers; they stop when `shutdown` turns true.
    pub fn spawn_workers(&self, shutdown: watch::Receiver<bool>) -> JoinSet<()> {
        let mut set = JoinSet::new();
        set.spawn(domains::run_periodic_checks(self.clone(), shutdown.clone()));
        set.spawn(retention::run_retention(self.clone(), shutdown.clone()));
        set.spawn(segments::run_reevaluations(self.clone(), shutdown.clone()));
        set.spawn(segments::run_recompute(self.clone(), shutdown.clone()));
        set.spawn(contact_search::run_email_index(
            self.clone(),
            shutdown.clone(),
        ));
        set.spawn(campaigns::run_campaigns(self.clone(), shutdown.clone()));
        set.spawn(campaigns::run_completion(self.clone(), shutdown.clone()));
        set.spawn(workflows::run_workflows(self.clone(), shutdown.clone()));
        for kind in [
            herald_core::contact_jobs::IMPORT_KIND,
            herald_core::contact_jobs::BULK_KIND,
        ] {
            set.spawn(contact_jobs::run_contact_jobs(
                self.clone(),
                kind,
                shutdown.clone(),
            ));
        }
        set.spawn(due_jobs::run_probe(self.clone(), shutdown.clone()));
        set.spawn(cluster_wake::run_listener(self.clone(), shutdown.clone()));
        set.spawn(send::worker::run_sender(self.clone(), shutdown));
        set
    }
}

/// Waits until `shutdown` is true or `d` has passed; true when shutting down.
pub async fn sleep_or_shutdown(
    shutdown: &mut watch::Receiver<bool>,
    d: std::time::Duration,
) -> bool {
    if *shutdown.borrow() {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(d) => *shutdown.borrow(),
        r = shutdown.changed() => r.is_err() || *shutdown.borrow(),
    }
}
