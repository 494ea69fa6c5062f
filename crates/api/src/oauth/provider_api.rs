//! The calls to a provider after the browser came back: the code is exchanged for an access
//! token (a form POST to the token URL), then the account's id and verified email are read
//! (GitHub: `/user` and `/user/emails`; Google: the OpenID userinfo endpoint).
//!
//! Invariants: every call has the client's timeout ([`TIMEOUT`]) and follows no redirect; any
//! failure (no answer, a non-2xx status, an `error` in the token answer, an unreadable body)
//! is a [`ProviderError`], answered 502/504 with the envelope, never a panic or a 500.

use std::time::Duration;

use axum::http::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{Provider, ProviderSettings};
use crate::error::ApiError;

/// How long one call to a provider may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The account at the provider.
#[derive(Debug, Clone)]
pub struct ProviderAccount {
    /// The provider's stable user id (GitHub's numeric id, Google's `sub`).
    pub subject: String,
    /// The primary address, only if the provider says it is verified.
    pub verified_email: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{0} did not answer in time")]
    Timeout(&'static str),
    #[error("{provider} refused or failed: {detail}")]
    Failed {
        provider: &'static str,
        detail: String,
    },
}

impl From<ProviderError> for ApiError {
    fn from(e: ProviderError) -> Self {
        tracing::warn!(error = %e, "oauth provider call failed");
        match e {
            ProviderError::Timeout(p) => ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "OAUTH_PROVIDER_ERROR",
                format!("{p} did not answer in time"),
            ),
            ProviderError::Failed { provider, .. } => ApiError::new(
                StatusCode::BAD_GATEWAY,
                "OAUTH_PROVIDER_ERROR",
                format!("Signing in with {provider} failed at {provider}"),
            ),
        }
        .with_suggestion("Try again; if it keeps failing, sign in with email and password")
    }
}

/// The HTTP client of provider calls.
pub fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// Exchanges `code` and reads the account.
pub async fn fetch_account(
    http: &reqwest::Client,
    provider: Provider,
    settings: &ProviderSettings,
    code: &str,
    redirect_uri: &str,
) -> Result<ProviderAccount, ProviderError> {
    let call = Call { http, provider };
    let token = call.exchange(settings, code, redirect_uri).await?;
    match provider {
        Provider::GitHub => call.github_account(&settings.user_url, &token).await,
        Provider::Google => call.google_account(&settings.user_url, &token).await,
    }
}

struct Call<'a> {
    http: &'a reqwest::Client,
    provider: Provider,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    /// GitHub answers 200 with an `error` for a bad code.
    error: Option<String>,
}

#[derive(Deserialize)]
struct GitHubUser {
    id: serde_json::Value,
}

#[derive(Deserialize)]
struct GitHubEmail {
    email: String,
    #[serde(default)]
    primary: bool,
    #[serde(default)]
    verified: bool,
}

#[derive(Deserialize)]
struct GoogleUser {
    sub: String,
    email: Option<String>,
    /// A boolean, or the string `"true"` in older answers.
    email_verified: Option<serde_json::Value>,
}

impl Call<'_> {
    fn failed(&self, detail: impl Into<String>) -> ProviderError {
        ProviderError::Failed {
            provider: self.provider.name(),
            detail: detail.into(),
        }
    }

    async fn exchange(
        &self,
        s: &ProviderSettings,
        code: &str,
        redirect_uri: &str,
    ) -> Result<String, ProviderError> {
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("client_id", &s.client_id)
            .append_pair("client_secret", &s.client_secret)
            .finish();
        let req = self
            .http
            .post(&s.token_url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body);
        let answer: TokenAnswer = self.json(req).await?;
        match (answer.access_token, answer.error) {
            (Some(t), None) if !t.is_empty() => Ok(t),
            (_, Some(e)) => Err(self.failed(format!("token endpoint error {e}"))),
            _ => Err(self.failed("no access_token in the token answer")),
        }
    }

    async fn github_account(
        &self,
        api: &str,
        token: &str,
    ) -> Result<ProviderAccount, ProviderError> {
        let api = api.trim_end_matches('/');
        let user: GitHubUser = self
            .json(self.bearer(&format!("{api}/user"), token))
            .await?;
        let subject = match user.id {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) if !s.is_empty() => s,
            _ => return Err(self.failed("no id in /user")),
        };
        let emails: Vec<GitHubEmail> = self
            .json(self.bearer(&format!("{api}/user/emails"), token))
            .await?;
        let verified_email = emails
            .into_iter()
            .find(|e| e.primary && e.verified)
            .map(|e| e.email);
        Ok(ProviderAccount {
            subject,
            verified_email,
        })
    }

    async fn google_account(
        &self,
        userinfo: &str,
        token: &str,
    ) -> Result<ProviderAccount, ProviderError> {
        let user: GoogleUser = self.json(self.bearer(userinfo, token)).await?;
        if user.sub.is_empty() {
            return Err(self.failed("no sub in userinfo"));
        }
        let verified = matches!(user.email_verified, Some(serde_json::Value::Bool(true)))
            || matches!(&user.email_verified, Some(serde_json::Value::String(s)) if s == "true");
        Ok(ProviderAccount {
            subject: user.sub,
            verified_email: user.email.filter(|_| verified),
        })
    }

    fn bearer(&self, url: &str, token: &str) -> reqwest::RequestBuilder {
        self.http
            .get(url)
            .header(AUTHORIZATION, format!("Bearer {token}"))
    }

    /// Sends `req` (JSON wanted, Herald's user agent: GitHub's API requires one) and reads a
    /// 2xx JSON answer.
    async fn json<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, ProviderError> {
        let res = req
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, concat!("Herald/", env!("CARGO_PKG_VERSION")))
            .send()
            .await
            .map_err(|e| self.transport(&e))?;
        let status = res.status();
        if !status.is_success() {
            return Err(self.failed(format!("HTTP {status}")));
        }
        let bytes = res.bytes().await.map_err(|e| self.transport(&e))?;
        serde_json::from_slice(&bytes).map_err(|e| self.failed(format!("unreadable answer: {e}")))
    }

    fn transport(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            ProviderError::Timeout(self.provider.name())
        } else {
            self.failed(format!("{e}"))
        }
    }
}
