//! What every handler can reach.

use std::ops::Deref;
use std::sync::Arc;

use herald_core::secret::{KeyPurpose, derive};
use herald_engine::Engine;
use herald_store::Store;

use crate::auth::password::PasswordPool;
use crate::auth::session::SessionKeys;
use crate::body_budget::BodyBudget;
use crate::rate_limit::Limiter;

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
    /// Password hashes computed at once (threads of the hashing pool).
    pub password_hash_threads: usize,
    /// Sign-ins and sign-ups that may wait for a hashing thread; more answer 429.
    pub password_hash_queue: usize,
    /// Bytes of large request bodies (declared over 64 KiB) read at once; more wait.
    pub body_budget_bytes: usize,
    /// Sender of Herald's own account mail.
    pub system_from: String,
    /// Sign-in waits for a verified address (403 EMAIL_VERIFICATION_REQUIRED).
    pub require_email_verification: bool,
    /// Unauthenticated account routes: requests per minute per client address and route.
    pub auth_rate_limit_per_minute: u32,
    /// Peers trusted to name the client in `X-Forwarded-For`.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub security: SecurityThresholds,
    /// OAuth sign-in providers (none configured by default).
    pub oauth: crate::oauth::OAuthSettings,
}

/// Bounce and complaint rates (fractions) reported as warning / critical.
#[derive(Clone, Copy, Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityThresholds {
    pub bounce_warning: f64,
    pub bounce_critical: f64,
    pub complaint_warning: f64,
    pub complaint_critical: f64,
}

pub struct Inner {
    pub store: Store,
    pub engine: Engine,
    pub settings: ApiSettings,
    pub limiter: Limiter,
    /// Unauthenticated account routes, per client address and route.
    pub auth_limiter: Limiter<(std::net::IpAddr, &'static str)>,
    pub sessions: SessionKeys,
    pub passwords: PasswordPool,
    pub body_budget: BodyBudget,
    /// Signs and checks the `state` of OAuth sign-in.
    pub oauth_states: herald_core::oauth_state::StateKey,
    /// Calls to OAuth providers (10 s timeout, no redirects).
    pub oauth_http: reqwest::Client,
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
    /// Fails only when the password hashing threads or the HTTP client cannot be started.
    pub fn new(
        store: Store,
        engine: Engine,
        settings: ApiSettings,
        secret: &[u8],
    ) -> std::io::Result<Self> {
        let secure = settings.public_url.starts_with("https://");
        let sessions = SessionKeys::new(secret, secure, engine.settings.clock.clone());
        let passwords =
            PasswordPool::new(settings.password_hash_threads, settings.password_hash_queue)?;
        Ok(AppState(Arc::new(Inner {
            limiter: Limiter::for_store(&store, settings.rate_limit_per_minute),
            auth_limiter: Limiter::for_store(&store, settings.auth_rate_limit_per_minute),
            store,
            engine,
            sessions,
            passwords,
            body_budget: BodyBudget::new(settings.body_budget_bytes),
            oauth_states: herald_core::oauth_state::StateKey::new(&derive(
                secret,
                KeyPurpose::OAuthState,
            )),
            oauth_http: crate::oauth::provider_api::http_client().map_err(std::io::Error::other)?,
            settings,
        })))
    }
}
