//! `POST /v1/verify` (secret key): checks one address (syntax, disposable, personal, role,
//! alias, typo, and the domain's DNS) and answers the SPEC.md verification result in the
//! public envelope. The rules live in `herald_core::verify`, the lookups and their cache in
//! the engine (docs/verify.md).
//!
//! An address that is not an address is a result (`valid: false` with the reason), not an
//! error: only a body without a non-blank string `email` is a 422. A resolver that cannot answer is a
//! 504/502 rather than a result that would call a good domain bad.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use herald_core::verify::Verification;
use herald_engine::verify::VerifyError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

/// The longest `email` read; longer strings are refused before any check (no address is
/// longer than 254 characters).
const EMAIL_INPUT_MAX: usize = 1_024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(verify))
}

#[derive(Deserialize, ToSchema)]
pub struct VerifyRequest {
    /// The address to check (required; read as optional so a missing one is reported on
    /// the field `email`).
    #[schema(value_type = String, required, min_length = 1, max_length = 1024)]
    pub email: Option<String>,
}

/// SPEC.md "Email verification result", plus `suggestedEmail`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationResult {
    /// The address checked: lower-cased and trimmed when its syntax is valid.
    pub email: String,
    /// Syntax valid, the domain accepts mail (MX, or A/AAAA as the implicit MX) and is not
    /// disposable.
    pub valid: bool,
    /// The domain is on the shipped list of disposable (throwaway) providers.
    pub is_disposable: bool,
    /// Plus-addressed, dots in a Gmail address, or a relay service's alias.
    pub is_alias: bool,
    /// The domain looks mistyped; `suggestedEmail` holds the likely address.
    pub is_typo: bool,
    /// The local part carries a `+tag`.
    pub is_plus_addressed: bool,
    /// The domain is a consumer mailbox provider (Gmail, Outlook, Yahoo, iCloud, Proton, ...).
    pub is_personal_email: bool,
    /// The domain answers A, AAAA, MX or NS.
    pub domain_exists: bool,
    /// The domain or `www.` the domain has an A or AAAA record (no HTTP request is made).
    pub has_website: bool,
    /// The domain accepts mail: MX records, or an A/AAAA record when it has no MX (RFC 5321
    /// §5.1); false for a null MX (RFC 7505).
    pub has_mx_records: bool,
    /// One human-readable sentence per problem; empty when none.
    pub reasons: Vec<String>,
    /// The address the user probably meant, when `isTypo`; otherwise null.
    pub suggested_email: Option<String>,
}

impl From<Verification> for VerificationResult {
    fn from(v: Verification) -> Self {
        Self {
            email: v.email,
            valid: v.valid,
            is_disposable: v.is_disposable,
            is_alias: v.is_alias,
            is_typo: v.is_typo,
            is_plus_addressed: v.is_plus_addressed,
            is_personal_email: v.is_personal_email,
            domain_exists: v.domain_exists,
            has_website: v.has_website,
            has_mx_records: v.has_mx_records,
            reasons: v.reasons,
            suggested_email: v.suggested_email,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct VerifyResponse {
    pub success: bool,
    pub data: VerificationResult,
}

/// Verifies an email address.
#[utoipa::path(post, path = "/v1/verify", tag = "public", request_body = VerifyRequest,
    responses((status = 200, body = VerifyResponse),
        (status = 502, description = "DNS_ERROR: the resolver failed"),
        (status = 504, description = "DNS_TIMEOUT: the resolver did not answer in time")))]
async fn verify(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(req): ApiJson<VerifyRequest>,
) -> ApiResult<(StatusCode, Json<VerifyResponse>)> {
    if auth.user.is_some() {
        // SPEC.md: /v1/verify takes the secret key, not a dashboard session.
        return Err(ApiError::unauthorized(
            "INVALID_API_KEY",
            "POST /v1/verify needs the project's secret key",
        )
        .with_suggestion("Send Authorization: Bearer sk_..."));
    }
    let email = req.email.unwrap_or_default();
    if email.trim().is_empty() {
        return Err(ApiError::field("email", "email is required", "required"));
    }
    if email.chars().count() > EMAIL_INPUT_MAX {
        return Err(ApiError::field(
            "email",
            format!("email must be at most {EMAIL_INPUT_MAX} characters"),
            "too_long",
        ));
    }
    let verification = state.engine.verify_email(&email).await.map_err(|e| {
        let message = e.to_string();
        let suggestion =
            "Try again later; if it persists, check the resolver set in HERALD_DNS_RESOLVER";
        match e {
            VerifyError::DnsTimeout => {
                ApiError::new(StatusCode::GATEWAY_TIMEOUT, "DNS_TIMEOUT", message)
            }
            VerifyError::Dns(_) => ApiError::new(StatusCode::BAD_GATEWAY, "DNS_ERROR", message),
        }
        .with_suggestion(suggestion)
    })?;
    Ok((
        StatusCode::OK,
        Json(VerifyResponse {
            success: true,
            data: verification.into(),
        }),
    ))
}
