//! Herald's own account mail (verification, password reset, invitation): a single-use token
//! is stored hashed and its link is mailed through the ordinary send pipeline
//! (`Engine::accept_send`) from `HERALD_SYSTEM_FROM`, as a message of the system project.
//!
//! Invariants:
//! - At most [`account::MAILS_PER_WINDOW`] account mails per address and hour; more are
//!   dropped silently, so the answer never tells whether an address has an account.
//! - Only the token's SHA-256 is stored; the token itself exists only in the mail.
//! - A mail is in the language of the request that caused it ([`crate::language`]), and its
//!   link carries that language (`&lang=de`) to the page it opens.

use herald_core::account::{self, SYSTEM_PROJECT_ID};
use herald_core::account_i18n::AccountStrings;
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
    lang: &'static AccountStrings,
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
    let (subject, body) = compose(&state.settings.public_url, kind, &token, project_name, lang);
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

/// Subject and HTML body of an account mail in `lang`. The body is a template of the send
/// pipeline: the only data in it (a hex token, the escaped project name) holds no `{{`.
fn compose(
    public_url: &str,
    kind: TokenKind,
    token: &str,
    project_name: Option<&str>,
    lang: &AccountStrings,
) -> (String, String) {
    let name = project_name.unwrap_or("Herald");
    let (subject, intro, path, label) = match kind {
        TokenKind::VerifyEmail => (
            lang.verify_subject.to_owned(),
            html_escape(lang.verify_intro),
            "app/verify-email?token=",
            lang.verify_link,
        ),
        TokenKind::PasswordReset => (
            lang.reset_subject.to_owned(),
            html_escape(lang.reset_intro),
            "app/reset-password?token=",
            lang.reset_link,
        ),
        TokenKind::Invitation => (
            lang.invite_subject.replace("{project}", name),
            html_escape(lang.invite_intro)
                .replace("{project}", &html_escape(name).replace("{{", "{ {")),
            "app/signup?invitation=",
            lang.invite_link,
        ),
    };
    let url = format!("{public_url}/{path}{token}&lang={}", lang.code);
    let body = format!(
        "<p>{intro}</p>\n<p><a href=\"{url}\">{label}</a></p>\n<p>{url}</p>\n",
        url = html_escape(&url),
        label = html_escape(label),
    );
    (subject.replace("{{", "{ {"), body)
}

#[cfg(test)]
mod tests {
    use herald_core::account_i18n;

    use super::*;

    #[test]
    fn mails_are_in_the_language_asked_and_their_links_carry_it() {
        let de = account_i18n::for_code("de");
        let (subject, body) = compose(
            "https://h.example",
            TokenKind::Invitation,
            "ab12",
            Some("<Acme>"),
            de,
        );
        assert_eq!(subject, "Sie sind zu <Acme> eingeladen");
        assert!(body.contains("&lt;Acme&gt; auf Herald"), "{body}");
        assert!(
            body.contains("https://h.example/app/signup?invitation=ab12&amp;lang=de"),
            "{body}"
        );
        let (subject, body) = compose(
            "https://h.example",
            TokenKind::VerifyEmail,
            "cd34",
            None,
            account_i18n::english(),
        );
        assert_eq!(subject, "Verify your email address");
        assert!(
            body.contains("https://h.example/app/verify-email?token=cd34&amp;lang=en"),
            "{body}"
        );
    }
}
