//! The use cases behind Herald's public links: the open pixel, click redirects, and the
//! unsubscribe, subscribe and manage pages (rendered by the API).
//!
//! Invariants:
//! - Every link is a token made by [`crate::links::MailLinks`]; one that does not decode, or
//!   decodes to another kind than the route expects, is [`PageError::BadLink`] (and a click
//!   never redirects). A valid token names its project, and every read and write here is
//!   scoped to that project.
//! - Opens and clicks are recorded once per message ([`herald_store::tracking`]); a failure to
//!   record is logged and never withholds the pixel or the redirect.
//! - Subscription changes go through the contact update path of the store, which records
//!   `contact.subscribed` / `contact.unsubscribed` only when the state flips: a page used twice
//!   changes nothing the second time.

use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::link_rewrite::is_http;
use herald_core::link_token::{LinkToken, ListPage};
use herald_core::list_i18n::{self, Strings};
use herald_store::StoreError;
use herald_store::accounts::Project;
use herald_store::contacts::{Contact, ContactUpdate};

use crate::Engine;

/// Why a list page cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("the link is invalid or has been altered")]
    BadLink,
    #[error("this contact no longer exists")]
    Gone,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whom a list page is for.
#[derive(Clone, Debug)]
pub struct PageSubject {
    pub project: Project,
    pub contact: Contact,
    /// The message whose link was followed, if the link came in one.
    pub message_id: Option<Uuid>,
    /// The contact's `locale`, else the project's language, else English.
    pub strings: &'static Strings,
}

impl Engine {
    /// Records the first open of the message a pixel token names; anything else is ignored
    /// (the pixel is answered all the same).
    pub async fn record_open_link(&self, token: &str) {
        let Ok(LinkToken::Open {
            project_id,
            message_id,
        }) = self.links.tokens.decode(token)
        else {
            return;
        };
        if let Err(e) = self
            .store
            .record_open(project_id, message_id, self.now())
            .await
        {
            tracing::error!(error = %e, message = %message_id, "recording an open failed");
        }
    }

    /// The URL a click token redirects to, after recording the first click (and open).
    pub async fn follow_click(&self, token: &str) -> Result<String, PageError> {
        let Ok(LinkToken::Click {
            project_id,
            message_id,
            url,
        }) = self.links.tokens.decode(token)
        else {
            return Err(PageError::BadLink);
        };
        // Tokens are only made for http(s) links; checked again so a redirect is never
        // to another scheme.
        if !is_http(&url) {
            return Err(PageError::BadLink);
        }
        if let Err(e) = self
            .store
            .record_click(project_id, message_id, &url, self.now())
            .await
        {
            tracing::error!(error = %e, message = %message_id, "recording a click failed");
        }
        Ok(url)
    }

    /// The contact (and project) a `page` token names.
    pub async fn list_page(&self, token: &str, page: ListPage) -> Result<PageSubject, PageError> {
        let Ok(LinkToken::Page {
            page: kind,
            project_id,
            contact_id,
            message_id,
        }) = self.links.tokens.decode(token)
        else {
            return Err(PageError::BadLink);
        };
        if kind != page {
            return Err(PageError::BadLink);
        }
        let project = self
            .store
            .project_by_id(project_id)
            .await?
            .ok_or(PageError::Gone)?;
        let contact = self
            .store
            .contact(project_id, contact_id)
            .await?
            .ok_or(PageError::Gone)?;
        let locale = contact.data.get("locale").and_then(|v| v.as_str());
        let strings = list_i18n::choose(locale, &project.language);
        Ok(PageSubject {
            project,
            contact,
            message_id,
            strings,
        })
    }

    /// Subscribes or unsubscribes the page's contact (events only when the state flips).
    pub async fn set_subscription(
        &self,
        subject: &PageSubject,
        subscribed: bool,
    ) -> Result<Contact, PageError> {
        let patch = DataPatch::default();
        // The message whose link was followed (and its campaign) caused the change.
        let cause = match subject.message_id {
            Some(id) => herald_store::events::Links::message(
                id,
                self.store
                    .message_campaign(subject.project.id, id)
                    .await?
                    .flatten(),
            ),
            None => Default::default(),
        };
        let change = ContactUpdate {
            email: None,
            subscribed: Some(subscribed),
            patch: &patch,
            now: self.now(),
            cause,
        };
        match self
            .store
            .update_contact(subject.project.id, subject.contact.id, &change)
            .await
        {
            Ok(c) => Ok(c),
            Err(StoreError::NotFound) => Err(PageError::Gone),
            Err(e) => Err(e.into()),
        }
    }

    /// The path (`/<page>/<token>`) of another list page of the same contact.
    pub fn page_path(&self, subject: &PageSubject, page: ListPage) -> String {
        let token = self.links.tokens.encode(&LinkToken::Page {
            page,
            project_id: subject.project.id,
            contact_id: subject.contact.id,
            message_id: subject.message_id,
        });
        format!("/{}/{token}", page.path())
    }
}
