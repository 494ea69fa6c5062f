//! The public links Herald writes into mail, `{PUBLIC_URL}/<path>/<token>`: the open pixel,
//! click redirects and the list pages, each with a signed, encrypted token
//! ([`herald_core::link_token`]).
//!
//! Invariant: a link to one of Herald's own public paths is never wrapped in a click redirect
//! ([`MailLinks::is_own`]), so list-page links in a body stay as they are.

use herald_core::ids::Uuid;
use herald_core::link_token::{LinkToken, LinkTokens, ListPage};

/// Makes the public URLs of a server. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MailLinks {
    pub tokens: LinkTokens,
    /// `HERALD_PUBLIC_URL` without a trailing slash.
    public_url: String,
}

/// The list-page URLs of one contact (template variables of every message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageUrls {
    pub unsubscribe: String,
    pub subscribe: String,
    pub manage: String,
}

impl MailLinks {
    pub fn new(server_secret: &[u8], public_url: &str) -> Self {
        Self::with_retired(server_secret, &[] as &[&[u8]], public_url)
    }

    /// Links made with `server_secret`, and those made with a `retired` secret still read
    /// ([`LinkTokens::with_retired`]).
    pub fn with_retired<S: AsRef<[u8]>>(
        server_secret: &[u8],
        retired: &[S],
        public_url: &str,
    ) -> Self {
        Self {
            tokens: LinkTokens::with_retired(server_secret, retired),
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    fn url(&self, path: &str, link: &LinkToken) -> String {
        format!("{}/{path}/{}", self.public_url, self.tokens.encode(link))
    }

    /// `{PUBLIC_URL}/t/open/<token>`.
    pub fn open_url(&self, project_id: Uuid, message_id: Uuid) -> String {
        let link = LinkToken::Open {
            project_id,
            message_id,
        };
        self.url("t/open", &link)
    }

    /// `{PUBLIC_URL}/t/click/<token>` redirecting to `url`.
    pub fn click_url(&self, project_id: Uuid, message_id: Uuid, url: &str) -> String {
        let link = LinkToken::Click {
            project_id,
            message_id,
            url: url.to_owned(),
        };
        self.url("t/click", &link)
    }

    /// `{PUBLIC_URL}/<page>/<token>` for a contact, naming the message it came in if known.
    pub fn page_url(
        &self,
        page: ListPage,
        project_id: Uuid,
        contact_id: Uuid,
        message_id: Option<Uuid>,
    ) -> String {
        let link = LinkToken::Page {
            page,
            project_id,
            contact_id,
            message_id,
        };
        self.url(page.path(), &link)
    }

    /// The three list-page URLs of a contact.
    pub fn page_urls(
        &self,
        project_id: Uuid,
        contact_id: Uuid,
        message_id: Option<Uuid>,
    ) -> PageUrls {
        let url = |p| self.page_url(p, project_id, contact_id, message_id);
        PageUrls {
            unsubscribe: url(ListPage::Unsubscribe),
            subscribe: url(ListPage::Subscribe),
            manage: url(ListPage::Manage),
        }
    }

    /// Whether `url` points at one of Herald's own public paths (never click-tracked).
    pub fn is_own(&self, url: &str) -> bool {
        let n = self.public_url.len();
        let (Some(head), Some(rest)) = (url.get(..n), url.get(n..)) else {
            return false;
        };
        head.eq_ignore_ascii_case(&self.public_url)
            && ["/t/", "/unsubscribe/", "/subscribe/", "/manage/"]
                .iter()
                .any(|p| rest.starts_with(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_carry_tokens_and_own_links_are_recognised() {
        let links = MailLinks::new(b"secret-secret-secret-secret-secret", "https://m.example/");
        let (p, m, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let urls = links.page_urls(p, c, Some(m));
        assert!(
            urls.unsubscribe
                .starts_with("https://m.example/unsubscribe/")
        );
        assert!(urls.manage.starts_with("https://m.example/manage/"));
        let token = urls.subscribe.rsplit('/').next().expect("token");
        assert_eq!(
            links.tokens.decode(token),
            Ok(LinkToken::Page {
                page: ListPage::Subscribe,
                project_id: p,
                contact_id: c,
                message_id: Some(m)
            })
        );
        for own in [
            &urls.unsubscribe,
            &links.open_url(p, m),
            "HTTPS://M.EXAMPLE/manage/x",
        ] {
            assert!(links.is_own(own), "{own}");
        }
        for other in [
            "https://m.example/",
            "https://m.example.evil/unsubscribe/x",
            "https://other.example/unsubscribe/x",
            "https://m.example/unsubscribe-not",
        ] {
            assert!(!links.is_own(other), "{other}");
        }
    }
}
