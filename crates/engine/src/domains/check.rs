//! Verifying sender domains: on demand ([`crate::Engine::verify_domain`]) and by the periodic
//! job ([`run_periodic_checks`]).
//!
//! Invariants:
//! - A check that could not reach a conclusion (resolver timeout or failure) writes nothing:
//!   the domain keeps its state, records and error. (The periodic job has already moved the
//!   domain's `next_check_at` when it claimed it, so it simply tries again one interval later.)
//! - A conclusive check records every record's state; a flip of `verified` is written together
//!   with its `domain.verified` / `domain.unverified` activity entry.
//! - A domain another project has verified is never verified here: the pre-check says so
//!   clearly, and the database's partial unique index settles races.
//! - Each domain is re-checked between one interval and one interval plus one tick after its
//!   last check, by exactly one node (claims are compare-and-set on `next_check_at`); the look
//!   for due domains itself runs on one node per tick (`periodic`).
//! - The job stops promptly on shutdown; checks in flight are abandoned, not recorded.

use std::time::Duration;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_mail::dns::{DnsError, DomainCheck, RecordState};
use herald_store::StoreError;
use herald_store::domains::{CheckOutcome, CheckRecord, Domain};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::{DomainError, DomainView, is_reserved};
use crate::Engine;

/// Reason recorded when a reserved domain is verified without DNS.
pub const RESERVED_VERIFIED_REASON: &str =
    "reserved test domain: verified without DNS because the transport is the local outbox";
const RESERVED_REFUSED_REASON: &str =
    "reserved test domains can only be verified while the transport is the local outbox";
/// Domains claimed (and checked concurrently) per round of the periodic job.
const BATCH: u32 = 16;

pub(crate) fn interval_millis(engine: &Engine) -> Millis {
    Millis::try_from(engine.settings.domain_check_interval.as_millis()).unwrap_or(Millis::MAX / 4)
}

/// What a check concluded.
struct Conclusion {
    verified: bool,
    last_check: Option<serde_json::Value>,
    reason: String,
}

fn describe(state: &RecordState, what: &str) -> Option<String> {
    match state {
        RecordState::Found => None,
        RecordState::Missing => Some(format!("{what} record missing")),
        RecordState::WrongValue { .. } => Some(format!("{what} record has a wrong value")),
    }
}

fn conclude(check: &DomainCheck) -> Conclusion {
    let problems: Vec<String> = [describe(&check.dkim, "DKIM"), describe(&check.spf, "SPF")]
        .into_iter()
        .flatten()
        .collect();
    let mut states = serde_json::Map::new();
    let entries = [
        ("dkim", Some(&check.dkim)),
        ("spf", Some(&check.spf)),
        ("dmarc", Some(&check.dmarc)),
        ("returnPath", check.return_path.as_ref()),
    ];
    for (key, state) in entries {
        if let Some(value) = state.and_then(|s| serde_json::to_value(s).ok()) {
            states.insert(key.to_owned(), value);
        }
    }
    Conclusion {
        verified: check.verified(),
        last_check: Some(serde_json::Value::Object(states)),
        reason: if problems.is_empty() {
            "DKIM and SPF records found".to_owned()
        } else {
            problems.join("; ")
        },
    }
}

impl Engine {
    /// Checks a domain of the project now and records the result.
    pub async fn verify_domain(
        &self,
        project_id: Uuid,
        id: Uuid,
    ) -> Result<DomainView, DomainError> {
        let domain = self
            .store
            .domain(project_id, id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let outcome = self.check_and_record(&domain).await?;
        Ok(self.domain_view(outcome.domain))
    }

    /// Looks the records up (or applies the reserved-domain rule) and records the outcome.
    async fn check_and_record(&self, domain: &Domain) -> Result<CheckOutcome, DomainError> {
        let conclusion = if is_reserved(&domain.domain) {
            let allowed = self.transport.is_local_outbox();
            Conclusion {
                verified: allowed,
                last_check: None,
                reason: if allowed {
                    RESERVED_VERIFIED_REASON
                } else {
                    RESERVED_REFUSED_REASON
                }
                .to_owned(),
            }
        } else {
            let found = self
                .dns
                .check_domain(
                    &domain.domain,
                    &domain.selector,
                    &domain.dkim_public_key,
                    &self.settings.spf_mechanism,
                    self.settings.return_path_host.as_deref(),
                )
                .await;
            match found {
                Ok(check) => conclude(&check),
                Err(DnsError::Timeout) => return Err(DomainError::DnsTimeout),
                Err(DnsError::Failed(e)) => return Err(DomainError::Dns(e)),
            }
        };
        let taken = format!("{} is already verified by another project", domain.domain);
        let mut verified = conclusion.verified;
        let mut error = (!verified).then(|| conclusion.reason.clone());
        if verified
            && self
                .store
                .domain_verified_elsewhere(&domain.domain, domain.id)
                .await?
        {
            verified = false;
            error = Some(taken.clone());
        }
        let now = self.now();
        let record = CheckRecord {
            verified,
            last_check: conclusion.last_check.as_ref(),
            last_error: error.as_deref(),
            reason: error.as_deref().unwrap_or(&conclusion.reason),
            next_check_at: now + interval_millis(self),
            now,
        };
        let outcome = match self.store.record_domain_check(domain.id, &record).await {
            // Another project verified it between our pre-check and the write.
            Err(StoreError::Conflict(_)) if verified => {
                let record = CheckRecord {
                    verified: false,
                    last_error: Some(&taken),
                    reason: &taken,
                    ..record
                };
                self.store.record_domain_check(domain.id, &record).await
            }
            other => other,
        };
        let outcome = match outcome {
            Err(StoreError::NotFound) => return Err(DomainError::NotFound),
            other => other?,
        };
        if let Some(now_verified) = outcome.changed {
            let reason = outcome
                .domain
                .last_error
                .as_deref()
                .unwrap_or(&conclusion.reason);
            tracing::info!(domain = %domain.domain, project = %domain.project_id, verified = now_verified,
                reason, "sender domain verification changed");
        }
        Ok(outcome)
    }
}

/// Re-checks every domain that is due, each `domain_check_interval`, until shutdown. The look
/// for due domains runs once per tick (a quarter of the interval, 20 ms to 30 s) in the
/// cluster (`periodic`); each due domain is claimed on its own as well.
pub async fn run_periodic_checks(engine: Engine, shutdown: watch::Receiver<bool>) {
    let tick = (engine.settings.domain_check_interval / 4)
        .clamp(Duration::from_millis(20), Duration::from_secs(30));
    let worker = engine.clone();
    let stop = shutdown.clone();
    crate::periodic::run_each_period(
        engine,
        crate::periodic::PeriodicTask::DomainRecheck,
        tick,
        Duration::ZERO,
        shutdown,
        move || {
            let engine = worker.clone();
            let mut stop = stop.clone();
            async move {
                match check_due_domains(&engine, &mut stop).await {
                    Ok(interrupted) => interrupted,
                    Err(e) => {
                        tracing::warn!(error = %format!("{e:#}"), "periodic domain check failed");
                        false
                    }
                }
            }
        },
    )
    .await;
}

/// Claims and checks due domains in batches; `Ok(true)` when shutdown interrupted it.
async fn check_due_domains(
    engine: &Engine,
    shutdown: &mut watch::Receiver<bool>,
) -> anyhow::Result<bool> {
    loop {
        let now = engine.now();
        let batch = engine
            .store
            .claim_due_domains(now, now + interval_millis(engine), BATCH)
            .await?;
        let full = batch.len() == BATCH as usize;
        let mut checks = JoinSet::new();
        for domain in batch {
            let engine = engine.clone();
            checks.spawn(async move {
                let result = engine.check_and_record(&domain).await;
                (domain, result)
            });
        }
        loop {
            tokio::select! {
                next = checks.join_next() => match next {
                    None => break,
                    Some(Ok((domain, Err(e)))) => {
                        tracing::warn!(domain = %domain.domain, error = %e, "domain check inconclusive; state unchanged");
                    }
                    Some(Ok((_, Ok(_)))) => {}
                    Some(Err(e)) => tracing::warn!(error = %e, "domain check task failed"),
                },
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        return Ok(true);
                    }
                }
            }
        }
        if !full {
            return Ok(false);
        }
    }
}
