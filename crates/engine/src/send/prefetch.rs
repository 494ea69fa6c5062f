//! What a claimed batch of send jobs needs before delivery, read once per claim: each job's
//! message with its delivery context (one query for the batch), and the DKIM signer of each
//! distinct (project, sender domain) among them (one verified-domain lookup per pair, the key
//! itself cached by [`crate::Engine::dkim_signer`]). Per message, delivery then reads only
//! its lease, right before the handoff.

use std::collections::HashMap;

use herald_core::ids::Uuid;
use herald_mail::dkim::DkimSigner;
use herald_store::StoreResult;
use herald_store::delivery::DeliveryRead;
use herald_store::jobs::Job;

use crate::Engine;

/// The DKIM signer for a message (`None`: Herald's own account mail from a domain no project
/// verified, sent unsigned, DECISIONS.md "Accounts"), or why it cannot be signed (delivery
/// then fails it).
pub(super) type SignerLookup = Result<Option<DkimSigner>, String>;

/// A claimed job with what its delivery reads; `read` is `None` when its message is gone.
pub(super) struct Claimed {
    pub job: Job,
    pub read: Option<DeliveryRead>,
    pub signer: Option<SignerLookup>,
}

pub(super) fn message_id_of(job: &Job) -> Option<Uuid> {
    job.payload.0.get("messageId")?.as_str()?.parse().ok()
}

fn sender_domain(from: &str) -> String {
    from.rsplit_once('@')
        .map(|(_, d)| d.to_owned())
        .unwrap_or_default()
}

pub(super) async fn prefetch(engine: &Engine, jobs: Vec<Job>) -> StoreResult<Vec<Claimed>> {
    let ids: Vec<Uuid> = jobs.iter().filter_map(message_id_of).collect();
    let mut reads = engine.store.messages_for_delivery(&ids).await?;
    let mut signers: HashMap<(Uuid, String), SignerLookup> = HashMap::new();
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let read = message_id_of(&job).and_then(|id| reads.remove(&id));
        let signer = match &read {
            Some(r) if !r.message.status.is_done() && !r.message.simulated => {
                let key = (r.message.project_id, sender_domain(&r.message.from_email));
                if !signers.contains_key(&key) {
                    let found = lookup_signer(engine, key.0, &key.1).await;
                    signers.insert(key.clone(), found);
                }
                signers.get(&key).cloned()
            }
            _ => None,
        };
        out.push(Claimed { job, read, signer });
    }
    Ok(out)
}

async fn lookup_signer(engine: &Engine, project_id: Uuid, domain: &str) -> SignerLookup {
    match engine.dkim_signer(project_id, domain).await {
        Ok(Some(s)) => Ok(Some(s)),
        Ok(None) if project_id == herald_core::account::SYSTEM_PROJECT_ID => Ok(None),
        Ok(None) => Err(format!("the sender domain {domain} is no longer verified")),
        Err(e) => Err(format!("the DKIM key of {domain} is unusable: {e:#}")),
    }
}
