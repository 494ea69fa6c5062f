//! One listening socket: accepts connections up to the cap (more get `421 4.3.2` and are
//! closed), bounds each session's total time, and does the TLS handshakes (implicit TLS at
//! connect, or after STARTTLS). Stops accepting when the stop signal fires; sessions in
//! progress finish on their own within their timeouts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

use crate::handler::Handler;
use crate::reply::Reply;
use crate::session::{self, Carry, Ended, SessionConfig};

pub struct SmtpListener<H> {
    pub(crate) listener: TcpListener,
    pub(crate) handler: Arc<H>,
    pub(crate) hostname: String,
    pub(crate) tls: Option<TlsAcceptor>,
    /// TLS from the first byte (submission on 465).
    pub(crate) implicit_tls: bool,
    pub(crate) idle_timeout: Duration,
    pub(crate) session_timeout: Duration,
    pub(crate) max_connections: usize,
}

impl<H: Handler> SmtpListener<H> {
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub async fn serve(self, mut stop: watch::Receiver<bool>) {
        let slots = Arc::new(Semaphore::new(self.max_connections));
        let cfg = Arc::new(SessionConfig {
            hostname: self.hostname.clone(),
            starttls: self.tls.is_some() && !self.implicit_tls,
            tls_configured: self.tls.is_some(),
            idle_timeout: self.idle_timeout,
        });
        loop {
            let (mut stream, peer) = tokio::select! {
                _ = stop.changed() => return,
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!("SMTP accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                tokio::spawn(async move {
                    let r = Reply::new(421, "4.3.2", "Too many connections, try again later");
                    let _ = stream.write_all(&r.to_bytes()).await;
                });
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (h, cfg, tls) = (self.handler.clone(), cfg.clone(), self.tls.clone());
            let (implicit, total) = (self.implicit_tls, self.session_timeout);
            tokio::spawn(async move {
                let run = connection(&*h, &cfg, tls, implicit, stream, peer);
                match tokio::time::timeout(total, run).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::debug!(%peer, "SMTP session ended: {e}"),
                    Err(_) => tracing::debug!(%peer, "SMTP session passed its total time"),
                }
                drop(slot);
            });
        }
    }
}

async fn connection<H: Handler>(
    h: &H,
    cfg: &SessionConfig,
    tls: Option<TlsAcceptor>,
    implicit: bool,
    mut stream: TcpStream,
    peer: SocketAddr,
) -> std::io::Result<()> {
    let mut carry = Carry { commands: 0 };
    let handshake = |acceptor: Option<TlsAcceptor>, s: TcpStream| async move {
        let acceptor = acceptor.ok_or_else(|| std::io::Error::other("no TLS configured"))?;
        tokio::time::timeout(cfg.idle_timeout, acceptor.accept(s))
            .await
            .map_err(|_| std::io::Error::other("TLS handshake timed out"))?
    };
    if implicit {
        let mut s = handshake(tls, stream).await?;
        session::greet(&mut s, &cfg.hostname).await?;
        session::run(h, cfg, s, peer, true, &mut carry).await?;
        return Ok(());
    }
    session::greet(&mut stream, &cfg.hostname).await?;
    if let Ended::StartTls(s) = session::run(h, cfg, stream, peer, false, &mut carry).await? {
        let s = handshake(tls, s).await?;
        session::run(h, cfg, s, peer, true, &mut carry).await?;
    }
    Ok(())
}
