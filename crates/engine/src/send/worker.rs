//! The delivery worker.
//!
//! Guarantees: a claimed send job marks its message SENDING before the handoff; when the
//! transport accepts, the message becomes SENT, `email.sent` is recorded and the job is acked
//! in one transaction, so a retried job finds the message SENT and does not send it again.
//! Transient failures (4xx, connection errors) retry with exponential backoff up to
//! `send_max_attempts`; permanent ones (5xx) fail the message with the reply kept. A worker
//! that dies mid-handoff leaves its job leased; once the lease expires the job is claimed
//! again and the message is sent (at-least-once for that window; with the local outbox the
//! file's presence makes it exactly-once). Leases are extended while a send is in progress.

use std::sync::Arc;
use std::time::Duration;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_mail::transport::{Envelope, Transport, TransportError};
use herald_store::StoreResult;
use herald_store::jobs::{self, Job};
use herald_store::messages::{self, FAILED, Message, PENDING, SENDING, SENT, SUPPRESSED};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;

use super::accept::SEND_JOB;
use super::compose::compose;
use crate::Engine;

/// Jobs claimed per query.
const CLAIM_BATCH: usize = 64;

pub async fn run_sender(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    let concurrency = engine.settings.send_concurrency;
    let permits = Arc::new(Semaphore::new(concurrency));
    let (done_tx, done_rx) = mpsc::channel::<SentDone>(1024);
    let completer = tokio::spawn(run_completer(engine.clone(), done_rx));
    let mut tasks = JoinSet::new();
    // Claim in batches: one claim per several deliveries, not one per finished delivery.
    let batch = (concurrency / 4).clamp(1, CLAIM_BATCH);
    loop {
        if *shutdown.borrow() {
            break;
        }
        while tasks.try_join_next().is_some() {}
        let free = permits.available_permits().min(CLAIM_BATCH);
        if free < batch && !tasks.is_empty() {
            tokio::select! {
                _ = tasks.join_next() => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        let lease = engine.settings.send_lease.as_millis() as i64;
        let claimed = engine
            .store
            .claim_jobs(SEND_JOB, free as u32, engine.now(), lease)
            .await;
        let jobs = match claimed {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::error!(error = %e, "claiming send jobs failed");
                if crate::sleep_or_shutdown(&mut shutdown, Duration::from_secs(1)).await {
                    break;
                }
                continue;
            }
        };
        if jobs.is_empty() {
            // Sleep until the next job is due, new work is queued here, or a delivery in hand
            // finishes (it may have scheduled a retry sooner than anything else).
            let wait = idle_wait(&engine).await;
            tokio::select! {
                _ = engine.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        for job in jobs {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let (engine, done) = (engine.clone(), done_tx.clone());
            tasks.spawn(async move {
                deliver(&engine, job, &done).await;
                drop(permit);
            });
        }
    }
    // Let sends in hand finish (they are bounded by the transport's timeouts), then record them.
    while tasks.join_next().await.is_some() {}
    drop(done_tx);
    let _ = completer.await;
}

/// A delivery the relay accepted, waiting to be recorded with others.
struct SentDone {
    job_id: Uuid,
    message_id: Uuid,
    project_id: Uuid,
    contact_id: Option<Uuid>,
    template_id: Option<Uuid>,
    subject: String,
    reply: String,
    started_at: Millis,
    first_attempt: bool,
}

/// Records accepted deliveries in groups: SENT, history, `email.sent` and the job ack of many
/// messages commit in one transaction, so the single SQLite writer is not the bottleneck.
async fn run_completer(engine: Engine, mut rx: mpsc::Receiver<SentDone>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < 256 {
            match rx.try_recv() {
                Ok(d) => batch.push(d),
                Err(_) => break,
            }
        }
        if let Err(e) = record_sent(&engine, &batch).await {
            // The jobs stay leased and are claimed again when their leases expire.
            tracing::error!(error = %e, count = batch.len(), "recording sent messages failed");
        }
    }
}

async fn record_sent(engine: &Engine, batch: &[SentDone]) -> StoreResult<()> {
    let records: Vec<messages::SentRecord<'_>> = batch
        .iter()
        .map(|d| messages::SentRecord {
            message_id: d.message_id,
            project_id: d.project_id,
            contact_id: d.contact_id,
            template_id: d.template_id,
            subject: &d.subject,
            reply: &d.reply,
            started_at: d.started_at,
            first_attempt: d.first_attempt,
        })
        .collect();
    let job_ids: Vec<Uuid> = batch.iter().map(|d| d.job_id).collect();
    let mut tx = engine.store.begin().await?;
    messages::record_sent(&mut tx, &records, engine.now()).await?;
    jobs::complete_many(&mut tx, &job_ids).await?;
    tx.commit().await
}

/// Sleeps until the next job is due, but at most a second (other nodes may enqueue).
async fn idle_wait(engine: &Engine) -> Duration {
    match engine.store.next_job_due(SEND_JOB).await {
        Ok(Some(due)) => Duration::from_millis((due - engine.now()).clamp(5, 1000) as u64),
        _ => Duration::from_secs(1),
    }
}

fn message_id_of(job: &Job) -> Option<Uuid> {
    job.payload.0.get("messageId")?.as_str()?.parse().ok()
}

async fn deliver(engine: &Engine, job: Job, done: &mpsc::Sender<SentDone>) {
    if let Err(e) = try_deliver(engine, &job, done).await {
        // The job stays leased; it is claimed again when the lease expires.
        tracing::error!(job = %job.id, error = %e, "delivery bookkeeping failed");
    }
}

async fn try_deliver(engine: &Engine, job: &Job, done: &mpsc::Sender<SentDone>) -> StoreResult<()> {
    let now = engine.now();
    let message = match message_id_of(job) {
        Some(id) => engine.store.message(id).await?,
        None => None,
    };
    let Some(msg) = message else {
        let mut tx = engine.store.begin().await?;
        jobs::fail(&mut tx, job.id, "the job names no existing message", now).await?;
        return tx.commit().await;
    };
    if [SENT, FAILED, SUPPRESSED].contains(&msg.status.as_str()) {
        // Done already (e.g. the ack of an earlier run was lost): ack without sending again.
        let mut tx = engine.store.begin().await?;
        jobs::complete(&mut tx, job.id).await?;
        return tx.commit().await;
    }
    let key = msg.id.to_string();
    if let Transport::Outbox(outbox) = &engine.transport
        && outbox.path_for(&key).is_ok_and(|p| p.exists())
    {
        return finish_sent(
            engine,
            job,
            &msg,
            "recovered: the message was already in the outbox",
        )
        .await;
    }
    // No write before the handoff: SENT, its history and the ack are recorded together
    // afterwards. The status stays PENDING (or SENDING while retrying) until then.
    let first_attempt = msg.status == PENDING;
    engine.throttle.acquire(msg.project_id).await;
    let raw = match build_signed(engine, &msg).await {
        Ok(raw) => raw,
        Err(reason) => return finish_failed(engine, job, &msg, &reason).await,
    };
    let envelope = Envelope {
        mail_from: msg.from_email.clone(),
        rcpt_to: vec![msg.to_email.clone()],
    };
    let result = with_heartbeat(engine, job, engine.transport.send(&key, &envelope, &raw)).await;
    crate::metrics::relay_reply(&result);
    match result {
        Ok(reply) => {
            crate::metrics::message_sent(msg.created_at, engine.now());
            engine.throttle.reward(msg.project_id);
            let sent = SentDone {
                job_id: job.id,
                message_id: msg.id,
                project_id: msg.project_id,
                contact_id: msg.contact_id,
                template_id: msg.template_id,
                subject: msg.subject,
                reply,
                started_at: now,
                first_attempt,
            };
            if done.send(sent).await.is_err() {
                tracing::error!(message = %msg.id, "the completion recorder stopped; the job will be retried");
            }
            Ok(())
        }
        Err(TransportError::Permanent(reply)) => finish_failed(engine, job, &msg, &reply).await,
        Err(TransportError::Transient(reply)) => {
            if reply.starts_with('4') {
                engine.throttle.penalize(msg.project_id);
            }
            if job.attempts >= job.max_attempts {
                let reason = format!("gave up after {} attempts: {reply}", job.attempts);
                return finish_failed(engine, job, &msg, &reason).await;
            }
            crate::metrics::message_retried();
            let delay = backoff(engine.settings.send_retry_base, job.attempts);
            let detail = format!(
                "attempt {} failed: {reply}; retrying in {:.1} s",
                job.attempts,
                delay.as_secs_f64()
            );
            let now = engine.now();
            let mut tx = engine.store.begin().await?;
            messages::set_status(&mut tx, msg.id, SENDING, Some(&reply), true, now).await?;
            if first_attempt {
                messages::add_history(&mut tx, msg.id, SENDING, None, now).await?;
            }
            messages::add_history(&mut tx, msg.id, SENDING, Some(&detail), now).await?;
            jobs::retry(
                &mut tx,
                job.id,
                now + delay.as_millis() as Millis,
                &reply,
                now,
            )
            .await?;
            tx.commit().await
        }
    }
}

/// `base * 2^(attempt-1)`, at most an hour, with ±20% jitter so retries do not march in step.
fn backoff(base: Duration, attempt: i32) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.clamp(1, 16).saturating_sub(1));
    let capped = exp.min(Duration::from_secs(3600));
    let jitter = 0.8 + rand::random::<f64>() * 0.4;
    capped.mul_f64(jitter)
}

async fn build_signed(engine: &Engine, msg: &Message) -> Result<Vec<u8>, String> {
    let domain = msg
        .from_email
        .rsplit_once('@')
        .map(|(_, d)| d.to_owned())
        .unwrap_or_default();
    let signer = match engine.dkim_signer(msg.project_id, &domain).await {
        Ok(Some(s)) => s,
        Ok(None) => return Err(format!("the sender domain {domain} is no longer verified")),
        Err(e) => return Err(format!("the DKIM key of {domain} is unusable: {e:#}")),
    };
    let msg = msg.clone();
    let now = engine.now();
    tokio::task::spawn_blocking(move || compose(&msg, &signer, now).map_err(|e| e.0))
        .await
        .unwrap_or_else(|e| Err(format!("composing the message failed: {e}")))
}

/// Runs the send while extending the job's lease, so a slow handoff is not taken over.
async fn with_heartbeat<T>(
    engine: &Engine,
    job: &Job,
    send: impl std::future::Future<Output = T>,
) -> T {
    let lease = engine.settings.send_lease;
    let mut tick = tokio::time::interval(lease / 3);
    tick.tick().await;
    tokio::pin!(send);
    loop {
        tokio::select! {
            out = &mut send => return out,
            _ = tick.tick() => {
                let until = engine.now() + lease.as_millis() as Millis;
                if let Err(e) = engine.store.extend_lease(job.id, until).await {
                    tracing::warn!(job = %job.id, error = %e, "extending a send lease failed");
                }
            }
        }
    }
}

/// Records one accepted delivery right away (outbox recovery), through the same path as the
/// group commit.
async fn finish_sent(engine: &Engine, job: &Job, msg: &Message, reply: &str) -> StoreResult<()> {
    let done = SentDone {
        job_id: job.id,
        message_id: msg.id,
        project_id: msg.project_id,
        contact_id: msg.contact_id,
        template_id: msg.template_id,
        subject: msg.subject.clone(),
        reply: reply.to_owned(),
        started_at: engine.now(),
        first_attempt: msg.status == PENDING,
    };
    record_sent(engine, std::slice::from_ref(&done)).await
}

async fn finish_failed(engine: &Engine, job: &Job, msg: &Message, reason: &str) -> StoreResult<()> {
    crate::metrics::message_failed();
    let now = engine.now();
    let mut tx = engine.store.begin().await?;
    if msg.status == PENDING {
        messages::add_history(&mut tx, msg.id, SENDING, None, now).await?;
    }
    messages::set_status(&mut tx, msg.id, FAILED, Some(reason), true, now).await?;
    messages::add_history(&mut tx, msg.id, FAILED, Some(reason), now).await?;
    jobs::complete(&mut tx, job.id).await?;
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let base = Duration::from_secs(10);
        let b1 = backoff(base, 1).as_secs_f64();
        let b3 = backoff(base, 3).as_secs_f64();
        assert!((8.0..=12.0).contains(&b1), "{b1}");
        assert!((32.0..=48.0).contains(&b3), "{b3}");
        assert!(backoff(base, 30) <= Duration::from_secs(4320));
    }
}
