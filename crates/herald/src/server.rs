//! The HTTP/1.1 server loop (instead of `axum::serve`, which exposes no timeouts): hyper's
//! connection builder over our own accept loop, so that no client can hold the server.
//!
//! Invariants:
//! - At most `max_connections` connections are served at once; past that, new connections wait
//!   in the kernel's backlog until one closes (nothing is accepted and dropped).
//! - A request head (request line and headers) must arrive whole within `header_timeout`,
//!   counted from the first byte wait: hyper's header read timer, which also runs while a
//!   kept-alive connection waits for its next request.
//! - A kept-alive connection with no request in progress is closed after `idle_timeout`
//!   (a graceful close: a response being written is always finished first).
//! - While a handler reads the request body, a gap of `body_timeout` without a byte fails the
//!   read (`io::ErrorKind::TimedOut`, answered 408 by the API's extractors) and the connection
//!   is closed after that response.
//! - Every response carries the error envelope and `X-Request-Id`, including the ones hyper
//!   writes itself without calling the service ([`crate::edge_io`]).
//! - On shutdown the listener closes at once; open connections finish their request in hand
//!   and close; the loop returns when the last one has.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Sleep;
use tower::ServiceExt;

use crate::edge_io::EnvelopeIo;

/// How long a client may take, and how many may be connected.
#[derive(Clone, Debug)]
pub struct ServerLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains open connections.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) {
    let limits = Arc::new(limits);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (close_tx, close_rx) = watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, peer)) => (stream, peer),
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning on the error.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = stream;
        connections.spawn(connection(
            stream,
            peer,
            router.clone(),
            limits.clone(),
            close_rx.clone(),
            permit,
        ));
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = close_tx.send(true);
    while connections.join_next().await.is_some() {}
}

/// When the connection last started or finished a request, and how many are in progress.
#[derive(Default)]
struct Activity {
    in_flight: AtomicUsize,
    /// Milliseconds since `epoch` of the last start or finish.
    last_ms: AtomicU64,
}

impl Activity {
    fn touch(&self, epoch: Instant) {
        let ms = u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Resolves once no request has been in progress for `idle`.
    async fn idle_for(&self, epoch: Instant, idle: Duration) {
        loop {
            let last = epoch + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let quiet = last.elapsed();
            if self.in_flight.load(Ordering::Relaxed) == 0 && quiet >= idle {
                return;
            }
            tokio::time::sleep(idle.saturating_sub(quiet).max(Duration::from_millis(50))).await;
        }
    }
}

/// Ends a request's activity when dropped (the handler finished or was cancelled).
struct InFlight(Arc<Activity>, Instant);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch(self.1);
    }
}

async fn connection(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    router: Router,
    limits: Arc<ServerLimits>,
    mut close: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let epoch = Instant::now();
    let activity = Arc::new(Activity::default());
    let service = {
        let activity = activity.clone();
        let body_timeout = limits.body_timeout;
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            activity.in_flight.fetch_add(1, Ordering::Relaxed);
            activity.touch(epoch);
            let guard = InFlight(activity.clone(), epoch);
            let mut req = req.map(|body| TimeoutBody::new(body, body_timeout));
            // The peer's address, for the per-client limits of the account routes.
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            let call = router.clone().oneshot(req);
            async move {
                let res = call.await;
                drop(guard);
                res
            }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let conn = http.serve_connection(TokioIo::new(EnvelopeIo::new(stream)), service);
    tokio::pin!(conn);
    let mut closing = *close.borrow();
    if closing {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            _ = close.changed(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = activity.idle_for(epoch, limits.idle_timeout), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A request body whose reads fail with `TimedOut` after `timeout` without a frame.
pub struct TimeoutBody<B> {
    inner: B,
    timeout: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<B> TimeoutBody<B> {
    fn new(inner: B, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            sleep: None,
        }
    }
}

impl<B> Body for TimeoutBody<B>
where
    B: Body + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.sleep = None;
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let timeout = this.timeout;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no request body data for {:.0} s",
                            timeout.as_secs_f64().ceil()
                        ),
                    ))))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
