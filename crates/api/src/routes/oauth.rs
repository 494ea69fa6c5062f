//! OAuth sign-in routes (docs/accounts.md "OAuth"): the configured providers, the redirect to
//! a provider, and the callback that signs in. Unauthenticated; the start and the callback
//! count against the per-client limit of the account routes (`auth::client_limit`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use herald_core::oauth_state::StateError;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::keys::random_hex;
use crate::error::{ApiError, ApiResult};
use crate::extract::RawQuery;
use crate::oauth::{Provider, ProviderSettings, provider_api, sign_in};
use crate::routes::accounts::start_session;
use crate::state::AppState;

/// The cookie binding a flow's `state` to the browser that started it.
pub const STATE_COOKIE: &str = "herald_oauth_state";
const STATE_COOKIE_PATH: &str = "/auth/oauth";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(oauth_config))
        .routes(routes!(start))
        .routes(routes!(callback))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthProviderResponse {
    /// `github` or `google`.
    pub id: String,
    pub name: String,
    /// Where a browser goes to sign in with this provider.
    pub authorize_url: String,
}

#[derive(Serialize, ToSchema)]
pub struct OAuthConfigResponse {
    /// The configured providers (empty when none is).
    pub providers: Vec<OAuthProviderResponse>,
}

/// The OAuth providers this server is configured for.
#[utoipa::path(get, path = "/auth/oauth-config", tag = "account",
    responses((status = 200, body = OAuthConfigResponse)))]
async fn oauth_config(State(state): State<AppState>) -> Json<OAuthConfigResponse> {
    let providers = state
        .settings
        .oauth
        .configured()
        .into_iter()
        .map(|p| OAuthProviderResponse {
            id: p.id().to_owned(),
            name: p.name().to_owned(),
            authorize_url: format!("/auth/oauth/{}", p.id()),
        })
        .collect();
    Json(OAuthConfigResponse { providers })
}

/// A configured provider, else 404.
fn configured<'a>(state: &'a AppState, id: &str) -> ApiResult<(Provider, &'a ProviderSettings)> {
    Provider::parse(id)
        .and_then(|p| state.settings.oauth.get(p).map(|s| (p, s)))
        .ok_or_else(|| {
            ApiError::not_found("NOT_FOUND", "OAuth provider")
                .with_suggestion("GET /auth/oauth-config lists the configured providers")
        })
}

fn redirect_uri(state: &AppState, p: Provider) -> String {
    format!(
        "{}/auth/oauth/{}/callback",
        state.settings.public_url,
        p.id()
    )
}

fn state_cookie(state: &AppState, value: String, max_age_secs: i64) -> String {
    Cookie::build((STATE_COOKIE, value))
        .path(STATE_COOKIE_PATH)
        .http_only(true)
        .same_site(SameSite::Lax)
        .max_age(cookie::time::Duration::seconds(max_age_secs))
        .secure(state.settings.public_url.starts_with("https://"))
        .build()
        .to_string()
}

/// A 302 to `location` setting `cookies`.
fn redirect(location: &str, cookies: &[String]) -> ApiResult<Response> {
    let mut res = StatusCode::FOUND.into_response();
    let h = res.headers_mut();
    let value = |v: &str| {
        HeaderValue::from_str(v).map_err(|e| ApiError::internal(format!("a header value: {e}")))
    };
    h.insert(header::LOCATION, value(location)?);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    for c in cookies {
        h.append(header::SET_COOKIE, value(c)?);
    }
    Ok(res)
}

/// Starts signing in with a provider: redirects to its sign-in page.
#[utoipa::path(get, path = "/auth/oauth/{provider}", tag = "account",
    params(("provider" = String, Path, description = "`github` or `google`")),
    responses((status = 302, description = "To the provider's sign-in page; sets the `herald_oauth_state` cookie",
        headers(("location" = String, description = "The provider's authorize URL")))))]
async fn start(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<Response> {
    let (provider, settings) = configured(&state, &id)?;
    let nonce = random_hex(16);
    let signed = state
        .oauth_states
        .issue(provider.id(), &nonce, state.engine.now());
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", &settings.client_id)
        .append_pair("redirect_uri", &redirect_uri(&state, provider))
        .append_pair("scope", provider.scope())
        .append_pair("state", &signed)
        .finish();
    let sep = if settings.auth_url.contains('?') {
        '&'
    } else {
        '?'
    };
    let location = format!("{}{sep}{query}", settings.auth_url);
    let lifetime = herald_core::oauth_state::LIFETIME_MS / 1000;
    redirect(&location, &[state_cookie(&state, nonce, lifetime)])
}

fn cookie_nonce(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == STATE_COOKIE)
        .map(|c| c.value().to_owned())
}

fn refused_state(e: StateError) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "OAUTH_STATE_INVALID",
        format!("The sign-in could not be completed: {e}"),
    )
    .with_suggestion("Start signing in again from the same browser")
}

/// The provider sends the browser back here: checks the state, reads the account's verified
/// email, signs in (creating or linking the account) and redirects to the dashboard.
#[utoipa::path(get, path = "/auth/oauth/{provider}/callback", tag = "account",
    params(("provider" = String, Path, description = "`github` or `google`"),
        ("code" = Option<String>, Query, description = "The provider's authorization code"),
        ("state" = Option<String>, Query, description = "The state `GET /auth/oauth/{provider}` sent"),
        ("error" = Option<String>, Query, description = "The provider's error, e.g. `access_denied`")),
    responses((status = 302, description = "Signed in: to the dashboard, with the session cookie",
            headers(("location" = String, description = "The public URL"))),
        (status = 400, description = "OAUTH_STATE_INVALID (tampered, expired, or from another browser), OAUTH_ACCESS_DENIED, or no code"),
        (status = 403, description = "OAUTH_EMAIL_NOT_VERIFIED, or FORBIDDEN: sign-ups are disabled"),
        (status = 502, description = "OAUTH_PROVIDER_ERROR: the provider refused or failed"),
        (status = 504, description = "OAUTH_PROVIDER_ERROR: the provider did not answer in time")))]
async fn callback(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: RawQuery,
) -> ApiResult<Response> {
    let (provider, settings) = configured(&state, &id)?;
    if let Some(error) = query.get("error") {
        let (code, message) = match error {
            "access_denied" => (
                "OAUTH_ACCESS_DENIED",
                format!("Signing in with {} was cancelled", provider.name()),
            ),
            _ => (
                "OAUTH_PROVIDER_ERROR",
                format!("{} answered the error {error:?}", provider.name()),
            ),
        };
        return Err(ApiError::new(StatusCode::BAD_REQUEST, code, message));
    }
    let signed = query.get("state").unwrap_or_default();
    state
        .oauth_states
        .check(
            signed,
            provider.id(),
            cookie_nonce(&headers).as_deref(),
            state.engine.now(),
        )
        .map_err(refused_state)?;
    let code = query
        .get("code")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ApiError::bad_request("The provider sent no code"))?;
    let account = provider_api::fetch_account(
        &state.oauth_http,
        provider,
        settings,
        code,
        &redirect_uri(&state, provider),
    )
    .await?;
    let user = sign_in::user_for(&state, provider, &account).await?;
    let session = start_session(&state, user.id).await?;
    let home = format!("{}/", state.settings.public_url);
    redirect(&home, &[session, state_cookie(&state, String::new(), 0)])
}
