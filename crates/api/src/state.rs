//! What every handler can reach.

use std::ops::Deref;
use std::sync::Arc;

use herald_engine::Engine;
use herald_store::Store;

use crate::auth::session::SessionKeys;
use crate::rate_limit::RateLimiter;

/// Settings the API reads (a subset of the server configuration).
#[derive(Clone, Debug)]
pub struct ApiSettings {
    pub disable_signups: bool,
    pub rate_limit_per_minute: u32,
    pub public_url: String,
    /// Largest request body in bytes for ordinary endpoints.
    pub max_body_bytes: usize,
    /// Bearer token of `GET /metrics`; `None` turns the endpoint off.
    pub metrics_token: Option<String>,
}

pub struct Inner {
    pub store: Store,
    pub engine: Engine,
    pub settings: ApiSettings,
    pub limiter: RateLimiter,
    pub sessions: SessionKeys,
}

#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    pub fn new(store: Store, engine: Engine, settings: ApiSettings, secret: &[u8]) -> Self {
        let secure = settings.public_url.starts_with("https://");
        let sessions = SessionKeys::new(secret, secure, engine.settings.clock.clone());
        AppState(Arc::new(Inner {
            store,
            engine,
            limiter: RateLimiter::new(settings.rate_limit_per_minute),
            sessions,
            settings,
        }))
    }
}
