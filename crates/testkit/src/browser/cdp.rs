//! A Chrome DevTools Protocol connection: JSON commands over one WebSocket, answered by id;
//! events kept per target session so a page can read the ones it cares about (console
//! errors, CSP reports).
//!
//! Only the few commands the page helpers use are sent; the protocol itself is Chromium's
//! (<https://chromedevtools.github.io/devtools-protocol/>). Sessions are "flat": a command
//! for a page carries that page's `sessionId` on the browser's one socket.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// How long a command may take before the test fails instead of hanging.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;
type Events = Arc<Mutex<HashMap<String, Vec<Value>>>>;

/// One WebSocket to a browser; cheap to clone.
#[derive(Clone)]
pub struct Cdp {
    next_id: Arc<AtomicU64>,
    pending: Pending,
    events: Events,
    outgoing: mpsc::UnboundedSender<String>,
}

impl Cdp {
    /// Connects to a browser's `ws://.../devtools/browser/...` endpoint.
    pub async fn connect(ws_url: &str) -> anyhow::Result<Cdp> {
        let (socket, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .with_context(|| format!("connecting to Chromium's DevTools at {ws_url}"))?;
        let (mut write, mut read) = socket.split();
        let (outgoing, mut queue) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(text) = queue.recv().await {
                if write.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let events: Events = Arc::default();
        let (p, e) = (pending.clone(), events.clone());
        tokio::spawn(async move {
            while let Some(Ok(msg)) = read.next().await {
                let Message::Text(text) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                dispatch(v, &p, &e);
            }
            // The socket closed: every command still waiting fails instead of hanging.
            if let Ok(mut pending) = p.lock() {
                for (_, tx) in pending.drain() {
                    let _ = tx.send(Err("the browser closed the DevTools connection".into()));
                }
            }
        });
        Ok(Cdp {
            next_id: Arc::new(AtomicU64::new(1)),
            pending,
            events,
            outgoing,
        })
    }

    /// Sends `method` with `params` (to the page of `session`, or to the browser) and returns
    /// its result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .insert(id, tx);
        self.outgoing
            .send(msg.to_string())
            .map_err(|_| anyhow!("the DevTools connection is closed"))?;
        match tokio::time::timeout(COMMAND_TIMEOUT, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(e))) => bail!("{method}: {e}"),
            Ok(Err(_)) => bail!("{method}: the DevTools connection closed"),
            Err(_) => bail!("{method}: no answer within {COMMAND_TIMEOUT:?}"),
        }
    }

    /// The events received so far for `session` (and forgets them).
    pub fn take_events(&self, session: &str) -> Vec<Value> {
        self.events
            .lock()
            .map(|mut e| e.remove(session).unwrap_or_default())
            .unwrap_or_default()
    }
}

fn dispatch(v: Value, pending: &Pending, events: &Events) {
    if let Some(id) = v.get("id").and_then(Value::as_u64) {
        let result = match v.get("error") {
            Some(err) => Err(err.to_string()),
            None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
        };
        if let Some(tx) = pending.lock().ok().and_then(|mut p| p.remove(&id)) {
            let _ = tx.send(result);
        }
        return;
    }
    if let Some(session) = v.get("sessionId").and_then(Value::as_str)
        && let Ok(mut e) = events.lock()
    {
        e.entry(session.to_owned()).or_default().push(v);
    }
}
