//! The language of Herald's account pages and mails, from the request that shows or causes
//! them: a `lang` query parameter (the links in account mail carry it), else the request's
//! `Accept-Language`, else English ([`herald_core::account_i18n::choose`]).

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::header::ACCEPT_LANGUAGE;
use axum::http::request::Parts;
use herald_core::account_i18n::{self, AccountStrings};

/// The request's language for account pages and mails.
#[derive(Clone, Copy, Debug)]
pub struct RequestLanguage(pub &'static AccountStrings);

impl<S: Send + Sync> FromRequestParts<S> for RequestLanguage {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        let explicit = parts.uri.query().and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "lang")
                .map(|(_, v)| v.into_owned())
        });
        let accept = parts
            .headers
            .get(ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok());
        Ok(RequestLanguage(account_i18n::choose(
            explicit.as_deref(),
            accept,
        )))
    }
}
