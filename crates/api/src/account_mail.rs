//! Herald's own account mail (verification, password reset, invitation): a single-use token
//! is stored hashed and its link is mailed through the ordinary send pipeline
//! (`Engine::accept_send`) from `HERALD_SYSTEM_FROM`, as a message of the system project.
//!
//! Invariants:
//! - At most [`account::MAILS_PER_WINDOW`] account mails per address and hour; more are
//!   dropped silently, so the answer never tells whether an address has an account.
//! - Only the token's SHA-256 is stored; the token itself exists only in the mail.

use herald_core::account::{self, SYSTEM_PROJECT_ID};
use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;
use herald_core::kinds::{Role, TemplateType, TokenKind};
use herald_core::template::html_escape;
use herald_engine::send::accept::{Recipient, SendPlan};
use herald_engine::send::merge::Merged;
use herald_store::account_tokens::NewToken;

use crate::auth::keys::{hash_secret, random_hex};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Whom a token is for, beyond the address it is mailed to.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokenFor {
    pub user: Option<Uuid>,
    pub project: Option<(Uuid, Role)>,
}

/// The SHA-256 under which a mailed token is stored.
pub fn token_hash(token: &str) -> String {
    hash_secret(token)
}

/// Mails a new token of `kind` to `to`, unless the address already had its share of account
/// mail this hour. `Ok(false)` when the mail was dropped for that reason.
pub async fn send_token_mail(
    state: &AppState,
    kind: TokenKind,
    to: &EmailAddress,
    whom: TokenFor,
    project_name: Option<&str>,
) -> ApiResult<bool> {
    let now = state.engine.now();
    let sent = state
        .store
        .account_mails_since(to.as_str(), now - account::MAIL_WINDOW_MS)
        .await?;
    if sent >= account::MAILS_PER_WINDOW {
        tracing::info!(
            kind = kind.as_str(),
            "account mail dropped: hourly limit of the address"
        );
        return Ok(false);
    }
    let token = random_hex(32);
    state
        .store
        .insert_account_token(&NewToken {
            token_hash: token_hash(&token),
            kind,
            email: to.as_str().to_owned(),
            user_id: whom.user,
            project_id: whom.project.map(|(p, _)| p),
            role: whom.project.map(|(_, r)| r),
            created_at: now,
            expires_at: now + account::token_lifetime(kind),
        })
        .await?;
    let (subject, body) = compose(&state.settings.public_url, kind, &token, project_name);
    let from = EmailAddress::parse(&state.settings.system_from).map_err(|e| {
        ApiError::from(anyhow::anyhow!("HERALD_SYSTEM_FROM is not an address: {e}"))
    })?;
    let plan = SendPlan {
        project_id: SYSTEM_PROJECT_ID,
        recipients: vec![Recipient {
            email: to.clone(),
            name: None,
        }],
        message: Merged {
            subject,
            body,
            from,
            from_name: Some("Herald".to_owned()),
            reply_to: None,
            template_id: None,
            // Sent as written: no footer, no tracking, no unsubscribe link.
            template_type: Some(TemplateType::Headless),
        },
        subscribed: None,
        data: Default::default(),
        headers: Vec::new(),
        attachments: Vec::new(),
        idempotency_key: None,
        ignore_subscription: false,
    };
    state
        .engine
        .accept_send(&plan)
        .await
        .map_err(|e| ApiError::from(anyhow::anyhow!("queueing account mail: {e}")))?;
    Ok(true)
}

/// Subject and HTML body of an account mail. The body is a template of the send pipeline:
/// the only data in it (a hex token, the escaped project name) holds no `{{`.
fn compose(
    public_url: &str,
    kind: TokenKind,
    token: &str,
    project_name: Option<&str>,
) -> (String, String) {
    let (subject, intro, path, label) = match kind {
        TokenKind::VerifyEmail => (
            "Verify your email address".to_owned(),
            "Confirm that this address is yours.".to_owned(),
            "verify-email?token=",
            "Verify email",
        ),
        TokenKind::PasswordReset => (
            "Reset your password".to_owned(),
            "Someone asked to reset the password of this account. If it was not you, ignore \
             this mail."
                .to_owned(),
            "reset-password?token=",
            "Choose a new password",
        ),
        TokenKind::Invitation => {
            let name = project_name.unwrap_or("a project");
            (
                format!("You are invited to {name}"),
                format!(
                    "You are invited to join {} on Herald.",
                    html_escape(name).replace("{{", "{ {")
                ),
                "signup?invitation=",
                "Accept the invitation",
            )
        }
    };
    let url = format!("{public_url}/{path}{token}");
    let body = format!(
        "<p>{intro}</p>\n<p><a href=\"{url}\">{label}</a></p>\n<p>{url}</p>\n",
        url = html_escape(&url)
    );
    (subject.replace("{{", "{ {"), body)
}
