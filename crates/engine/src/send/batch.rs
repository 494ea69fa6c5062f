//! Acceptance by group commit: concurrent `/v1/send` and `/v1/track` requests and inbound
//! messages share one write transaction.
//!
//! Requests (a [`Work`]: a send, a tracked event of [`crate::track`], or a received message of
//! [`crate::inbound`]) are handed to one
//! batcher task. It takes the first waiting request and every
//! other request already waiting (at most [`MAX_REQUESTS`] requests, [`MAX_RECIPIENTS`]
//! recipients, [`MAX_BLOB_BYTES`] of attachments), writes them in one transaction and commits
//! once. There is no timer: a request arriving alone is written at once, and requests that
//! arrive while a commit is in progress form the next batch, so a request waits at most for
//! the batch in progress plus its own.
//!
//! Guarantees:
//! - On PostgreSQL a batch of plain tracks of new contacts is one statement committed on its
//!   own (`batch_fresh`); its requests whose contact existed take the usual path after it.
//! - A request is answered only after the transaction holding its rows committed
//!   (acknowledged = committed); if the commit fails, every request of the batch gets the error.
//! - One request's failure never fails or rolls back the others. An `Idempotency-Key`
//!   conflict writes nothing (the claim is the request's first statement). Any other error
//!   rolls the shared transaction back and the batch is written again with a savepoint per
//!   request: the failing request is undone and answered with its error, the others commit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use herald_core::clock::SharedClock;
use herald_store::{Dialect, Store, StoreError, Tx};
use tokio::sync::{Mutex, Semaphore, mpsc, oneshot};

use super::accept::{AcceptError, AcceptRequest, Accepted, Staged};
use crate::inbound::{InboundPlan, ReceivedIn};
use crate::track::{TrackPlan, TrackRows, Tracked};

/// Most requests in one transaction.
pub const MAX_REQUESTS: usize = 256;
/// Most recipients (messages) in one transaction.
pub const MAX_RECIPIENTS: usize = 1024;
/// Most attachment bytes in one transaction, so one batch never holds the writer for long.
pub const MAX_BLOB_BYTES: usize = 16 * 1024 * 1024;
/// Batches written at once on PostgreSQL, each on a connection of its own. A batch's
/// statements are round trips one after another, so a single writer is bound by latency, not
/// by the server; SQLite has one writer and one batch at a time.
pub const POSTGRES_WRITERS: usize = 4;
/// Of those, batches that start with a track written at once on PostgreSQL. A batch of plain
/// tracks is one statement (`batch_fresh`), so a writer is no longer bound by round trips but
/// by each statement's own cost on the server: fewer, bigger batches take less of it per
/// request (`track --concurrent` beside `/postgres`: 1.15-1.30 with four, 1.33-1.53 with
/// two; docs/benchmarks.md).
pub const POSTGRES_TRACK_WRITERS: usize = 2;
/// Times a batch chosen as a deadlock victim on PostgreSQL is written again whole before it
/// falls back to a savepoint per request.
const TRANSIENT_RETRIES: usize = 3;

/// One request of a batch.
pub(crate) enum Work {
    /// Boxed: a send is larger than a track, and both travel through the same queue.
    Send(Box<AcceptRequest>),
    Track(TrackPlan),
    Inbound(Box<InboundPlan>),
}

/// What a written request answers.
#[derive(Debug)]
pub(crate) enum Done {
    Sent(Vec<Accepted>),
    Tracked(Tracked),
    Received(Vec<ReceivedIn>),
}

pub(crate) type Answer = Result<Done, AcceptError>;

impl Work {
    /// Recipients (messages) this request writes.
    fn recipients(&self) -> usize {
        match self {
            Work::Send(r) => r.recipients.len(),
            Work::Track(_) => 1,
            Work::Inbound(m) => m.recipients(),
        }
    }

    /// Attachment bytes this request writes.
    fn blob_bytes(&self) -> usize {
        match self {
            Work::Send(r) => r.blob_bytes(),
            Work::Track(_) => 0,
            Work::Inbound(m) => m.blob_bytes(),
        }
    }
}

/// The rows of a batch's requests, written together by [`Rows::flush`].
#[derive(Default)]
struct Rows<'a> {
    sends: Staged<'a>,
    tracks: TrackRows,
}

impl<'a> Rows<'a> {
    /// Work done for the whole batch before its requests are staged one by one: its new
    /// contacts and its sends' suppression list entries ([`super::batch_contacts`]).
    async fn prepare(
        &mut self,
        reqs: &[&'a Work],
        tx: &mut Tx,
        now: i64,
    ) -> Result<(), StoreError> {
        super::batch_contacts::prepare(reqs, &mut self.sends, &mut self.tracks, tx, now).await
    }

    async fn stage(&mut self, work: &'a Work, tx: &mut Tx, now: i64) -> Answer {
        match work {
            Work::Send(r) => r.stage(tx, &mut self.sends, now).await.map(Done::Sent),
            Work::Track(t) => t.stage(tx, &mut self.tracks, now).await.map(Done::Tracked),
            Work::Inbound(m) => Ok(Done::Received(m.stage(tx, now).await?)),
        }
    }

    async fn flush(&self, tx: &mut Tx, max_attempts: i32, now: i64) -> Result<(), StoreError> {
        self.sends.flush(tx, max_attempts, now).await?;
        self.tracks.flush(tx, now).await
    }
}

/// The answer of a different kind than the request (a bug, never expected).
pub(crate) fn mismatch() -> AcceptError {
    AcceptError::Store(StoreError::Other(anyhow::anyhow!(
        "the acceptance batcher answered a different kind of request"
    )))
}

struct Pending {
    req: Work,
    reply: oneshot::Sender<Answer>,
}

/// What a batch needs from the engine (not the engine itself, so the task ends with it).
#[derive(Clone)]
pub(crate) struct BatchContext {
    pub store: Store,
    pub clock: SharedClock,
    pub max_attempts: i32,
}

/// The handle requests are submitted through; the batcher task starts on first use.
pub struct Acceptor {
    ctx: BatchContext,
    queue: OnceLock<mpsc::Sender<Pending>>,
    stats: Arc<Stats>,
}

/// Counters of the batcher (for tests and diagnostics).
#[derive(Debug, Default)]
pub struct Stats {
    pub batches: AtomicU64,
    pub requests: AtomicU64,
    /// Batches of tracks written by one statement on PostgreSQL (`batch_fresh`).
    pub one_statement: AtomicU64,
}

impl Acceptor {
    pub(crate) fn new(ctx: BatchContext) -> Self {
        Self {
            ctx,
            queue: OnceLock::new(),
            stats: Arc::default(),
        }
    }

    /// (transactions committed or attempted, requests written) so far.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.stats.batches.load(Ordering::Relaxed),
            self.stats.requests.load(Ordering::Relaxed),
        )
    }

    /// Batches of tracks written by one statement on PostgreSQL (`batch_fresh`) so far.
    pub fn one_statement_batches(&self) -> u64 {
        self.stats.one_statement.load(Ordering::Relaxed)
    }

    /// Writes `reqs` as one batch, bypassing the queue (what the batcher does with requests
    /// that arrive together).
    pub(crate) async fn write_now(&self, reqs: &[&Work]) -> Vec<Answer> {
        write_batch(&self.ctx, &self.stats, reqs).await
    }

    /// Writes a send with whatever else is waiting; answers after the commit.
    pub(crate) async fn submit(&self, req: AcceptRequest) -> Result<Vec<Accepted>, AcceptError> {
        match self.submit_work(Work::Send(Box::new(req))).await? {
            Done::Sent(accepted) => Ok(accepted),
            _ => Err(mismatch()),
        }
    }

    /// Writes `req` with whatever else is waiting; answers after the commit.
    pub(crate) async fn submit_work(&self, req: Work) -> Answer {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(4 * MAX_REQUESTS);
            let writers = match self.ctx.store.dialect() {
                Dialect::Sqlite => 1,
                Dialect::Postgres => POSTGRES_WRITERS,
            };
            let track_turns = match self.ctx.store.dialect() {
                Dialect::Sqlite => None,
                Dialect::Postgres => Some(Arc::new(Semaphore::new(POSTGRES_TRACK_WRITERS))),
            };
            let rx = Arc::new(Mutex::new(rx));
            for _ in 0..writers {
                let (ctx, stats) = (self.ctx.clone(), self.stats.clone());
                tokio::spawn(run(ctx, stats, rx.clone(), track_turns.clone()));
            }
            tx
        });
        let (reply, answer) = oneshot::channel();
        if queue.send(Pending { req, reply }).await.is_err() {
            return Err(stopped());
        }
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }
}

fn stopped() -> AcceptError {
    AcceptError::Store(StoreError::Other(anyhow::anyhow!(
        "the acceptance batcher stopped"
    )))
}

/// One writer: takes the waiting requests as a batch (the queue is shared by the writers, one
/// gathering at a time), writes them, answers them, and again. A batch starting with a track
/// first waits for one of `track_turns` (PostgreSQL), still holding the queue: the requests
/// arriving meanwhile join it.
async fn run(
    ctx: BatchContext,
    stats: Arc<Stats>,
    rx: Arc<Mutex<mpsc::Receiver<Pending>>>,
    track_turns: Option<Arc<Semaphore>>,
) {
    // A request that did not fit the previous batch starts this writer's next one.
    let mut carry: Option<Pending> = None;
    loop {
        let (batch, turn) = {
            let mut rx = rx.lock().await;
            let first = match carry.take() {
                Some(p) => p,
                None => match rx.recv().await {
                    Some(p) => p,
                    None => return,
                },
            };
            let turn = match (&first.req, &track_turns) {
                (Work::Track(_), Some(turns)) => turns.clone().acquire_owned().await.ok(),
                _ => None,
            };
            let mut recipients = first.req.recipients();
            let mut bytes = first.req.blob_bytes();
            let mut batch = vec![first];
            while batch.len() < MAX_REQUESTS {
                let Ok(next) = rx.try_recv() else { break };
                recipients += next.req.recipients();
                bytes += next.req.blob_bytes();
                if recipients > MAX_RECIPIENTS || bytes > MAX_BLOB_BYTES {
                    carry = Some(next);
                    break;
                }
                batch.push(next);
            }
            (batch, turn)
        };
        let reqs: Vec<&Work> = batch.iter().map(|p| &p.req).collect();
        let answers = write_batch(&ctx, &stats, &reqs).await;
        drop(turn);
        for (p, answer) in batch.into_iter().zip(answers) {
            // The requester may have gone (client disconnected): its rows are committed anyway.
            let _ = p.reply.send(answer);
        }
    }
}

/// Writes and commits the batch; one answer per request, in order.
async fn write_batch(ctx: &BatchContext, stats: &Stats, reqs: &[&Work]) -> Vec<Answer> {
    // Announced from before the writer is asked for until the commit: the workers' claims and
    // records wait meanwhile (herald_store's write_precedence.rs).
    let _urgent = ctx.store.urgent();
    stats.batches.fetch_add(1, Ordering::Relaxed);
    stats
        .requests
        .fetch_add(reqs.len() as u64, Ordering::Relaxed);
    let Some(fresh) = super::batch_fresh::write(ctx, reqs).await else {
        return write_usual(ctx, reqs).await;
    };
    stats.one_statement.fetch_add(1, Ordering::Relaxed);
    // The requests whose contact existed wrote nothing: the usual path, in their order.
    let rest: Vec<&Work> = reqs
        .iter()
        .zip(&fresh)
        .filter(|(_, answer)| answer.is_none())
        .map(|(work, _)| *work)
        .collect();
    let mut rest = match rest.is_empty() {
        true => Vec::new(),
        false => write_usual(ctx, &rest).await,
    }
    .into_iter();
    fresh
        .into_iter()
        .map(|answer| answer.unwrap_or_else(|| rest.next().unwrap_or_else(|| Err(mismatch()))))
        .collect()
}

/// The usual write of a batch: one transaction for all, retried whole on a deadlock, then a
/// savepoint per request if it still fails.
async fn write_usual(ctx: &BatchContext, reqs: &[&Work]) -> Vec<Answer> {
    let mut shared = write_shared(ctx, reqs).await;
    for _ in 0..TRANSIENT_RETRIES {
        match &shared {
            Err(e) if e.is_transient_conflict() => shared = write_shared(ctx, reqs).await,
            _ => break,
        }
    }
    match shared {
        Ok(answers) => answers,
        Err(e) => {
            if reqs.len() > 1 {
                tracing::warn!(error = %e, requests = reqs.len(),
                    "a batched send failed; writing the batch again with a savepoint per request");
            }
            match write_isolated(ctx, reqs).await {
                Ok(answers) => answers,
                // Each request gets a copy that keeps the cause's kind: a lost database
                // stays a 503 the client may retry, never a 500.
                Err(e) => reqs
                    .iter()
                    .map(|_| Err(AcceptError::Store(e.for_each_request())))
                    .collect(),
            }
        }
    }
}

/// The fast path: every request staged in one transaction, the rows of all written by a few
/// multi-row statements. Any error fails the whole attempt (nothing is committed).
async fn write_shared(ctx: &BatchContext, reqs: &[&Work]) -> Result<Vec<Answer>, StoreError> {
    let now = ctx.clock.now();
    let mut tx = ctx.store.begin().await?;
    let mut rows = Rows::default();
    rows.prepare(reqs, &mut tx, now).await?;
    let mut answers = Vec::with_capacity(reqs.len());
    for req in reqs {
        match rows.stage(req, &mut tx, now).await {
            Ok(done) => answers.push(Ok(done)),
            Err(AcceptError::Store(e)) => return Err(e),
            Err(refused) => answers.push(Err(refused)),
        }
    }
    rows.flush(&mut tx, ctx.max_attempts, now).await?;
    tx.commit().await?;
    Ok(answers)
}

/// The fallback: a savepoint per request, so a failing request is undone alone.
async fn write_isolated(ctx: &BatchContext, reqs: &[&Work]) -> Result<Vec<Answer>, StoreError> {
    let now = ctx.clock.now();
    let mut tx = ctx.store.begin().await?;
    let mut answers = Vec::with_capacity(reqs.len());
    for req in reqs {
        tx.savepoint("accept_one").await?;
        match write_one(&mut tx, req, ctx.max_attempts, now).await {
            Ok(done) => {
                tx.release_savepoint("accept_one").await?;
                answers.push(Ok(done));
            }
            Err(e) => {
                tx.rollback_to_savepoint("accept_one").await?;
                answers.push(Err(e));
            }
        }
    }
    tx.commit().await?;
    Ok(answers)
}

async fn write_one(tx: &mut Tx, req: &Work, max_attempts: i32, now: i64) -> Answer {
    let mut rows = Rows::default();
    let done = rows.stage(req, tx, now).await?;
    rows.flush(tx, max_attempts, now).await?;
    Ok(done)
}
