//! What delivery adds to a stored message's body: tracked links and the open pixel, and for
//! MARKETING mail the localised unsubscribe footer (HTML and text) and `List-Unsubscribe`.
//!
//! Rules (DECISIONS.md "Tracking and list pages"):
//! - Tracking (project mode and the mail's type, [`TrackingMode::tracks`]; never HEADLESS):
//!   each http(s) link of the HTML part becomes `{PUBLIC_URL}/t/click/<token>` except links to
//!   Herald's own public paths (list pages), and the pixel
//!   `<img src="{PUBLIC_URL}/t/open/<token>" width="1" height="1" alt="">` is inserted before
//!   `</body>` (or appended). The text part keeps the original URLs.
//! - MARKETING mail to a contact gets the footer (in the contact's `locale`, else the project's
//!   language) with its unsubscribe link in both parts, and `List-Unsubscribe` with
//!   `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (signed by DKIM). TRANSACTIONAL and
//!   HEADLESS mail get neither.
//! - Pure and deterministic (tokens are deterministic), so a retry composes the same bytes.
//!   The stored body (`GET /emails/:id`) stays as rendered, without these additions.

use herald_core::html_text::html_to_text;
use herald_core::link_rewrite::{insert_before_body_end, rewrite_links};
use herald_core::link_token::{ListPage, MAX_URL_LEN};
use herald_core::list_i18n::{self, Strings};
use herald_core::template::html_escape;
use herald_mail::mime::ListUnsubscribe;
use herald_store::delivery::DeliveryContext;
use herald_store::messages::Message;

use crate::links::MailLinks;

/// The parts of a message as they go out.
#[derive(Clone, Debug)]
pub struct Decorated {
    pub html: String,
    pub text: String,
    pub list_unsubscribe: Option<ListUnsubscribe>,
}

/// Decorates `msg` for delivery; `ctx` is `None` when its project is gone (nothing added).
pub fn decorate(msg: &Message, links: &MailLinks, ctx: Option<&DeliveryContext>) -> Decorated {
    let mut out = Decorated {
        html: msg.html.clone(),
        text: html_to_text(&msg.html),
        list_unsubscribe: None,
    };
    let Some(ctx) = ctx else {
        return out;
    };
    let kind = msg.template_type;
    let tracked = ctx.tracking.tracks(kind);
    if tracked {
        out.html = rewrite_links(&out.html, |url| {
            (url.len() <= MAX_URL_LEN && !links.is_own(url))
                .then(|| links.click_url(msg.project_id, msg.id, url))
        });
    }
    if let (true, Some(contact_id)) = (kind.has_unsubscribe(), msg.contact_id) {
        let strings = list_i18n::choose(ctx.locale.as_deref(), &ctx.language);
        let url = links.page_url(
            ListPage::Unsubscribe,
            msg.project_id,
            contact_id,
            Some(msg.id),
        );
        out.html = insert_before_body_end(&out.html, &html_footer(strings, &url));
        out.text.push_str(&text_footer(strings, &url));
        out.list_unsubscribe = Some(ListUnsubscribe {
            url,
            one_click: true,
        });
    }
    if tracked {
        let pixel = format!(
            r#"<img src="{}" width="1" height="1" alt="">"#,
            links.open_url(msg.project_id, msg.id)
        );
        out.html = insert_before_body_end(&out.html, &pixel);
    }
    out
}

fn html_footer(s: &Strings, url: &str) -> String {
    format!(
        concat!(
            r#"<div lang="{lang}" style="margin:32px 0 0;padding:16px 0 0;border-top:1px solid #e5e7eb;"#,
            r#"color:#6b7280;font-size:12px;line-height:1.5;text-align:center">"#,
            r#"<p style="margin:0">{notice}</p>"#,
            r#"<p style="margin:4px 0 0"><a href="{url}" style="color:#6b7280">{label}</a></p></div>"#
        ),
        lang = s.code,
        notice = html_escape(s.footer_notice),
        url = html_escape(url),
        label = html_escape(s.footer_unsubscribe),
    )
}

fn text_footer(s: &Strings, url: &str) -> String {
    format!(
        "\n\n-- \n{}\n{}: {url}\n",
        s.footer_notice, s.footer_unsubscribe
    )
}

#[cfg(test)]
mod tests {
    use herald_core::kinds::{TemplateType, TrackingMode};
    use herald_core::link_token::LinkToken;
    use serde_json::json;

    use super::*;

    fn message(kind: TemplateType, html: &str) -> Message {
        crate::send::test_message::message(kind, html, json!([]))
    }

    fn ctx(tracking: TrackingMode, locale: Option<&str>) -> DeliveryContext {
        DeliveryContext {
            tracking,
            language: "en".into(),
            locale: locale.map(str::to_owned),
        }
    }

    const BODY: &str = r#"<html><body><p><a href="https://shop.example/x?a=1&amp;b=2">Shop</a> <a href="mailto:hi@shop.example">Mail</a></p></body></html>"#;

    #[test]
    fn tracked_marketing_mail_gets_links_pixel_footer_and_header() {
        let links = MailLinks::new(b"0123456789abcdef0123456789abcdef", "https://h.example");
        let msg = message(TemplateType::Marketing, BODY);
        let d = decorate(&msg, &links, Some(&ctx(TrackingMode::Enabled, Some("de"))));
        assert!(!d.html.contains("https://shop.example"), "{}", d.html);
        assert!(d.html.contains(r#"href="mailto:hi@shop.example""#));
        let click = d
            .html
            .split("https://h.example/t/click/")
            .nth(1)
            .expect("click");
        let token = &click[..click.find('"').expect("quote")];
        match links.tokens.decode(token) {
            Ok(LinkToken::Click {
                url, message_id, ..
            }) => {
                assert_eq!(url, "https://shop.example/x?a=1&b=2");
                assert_eq!(message_id, msg.id);
            }
            other => panic!("{other:?}"),
        }
        let pixel = d
            .html
            .find(r#"<img src="https://h.example/t/open/"#)
            .expect("pixel");
        let footer = d
            .html
            .find("Sie erhalten diese E-Mail")
            .expect("German footer");
        assert!(footer < pixel && pixel < d.html.find("</body>").expect("body end"));
        let lu = d.list_unsubscribe.expect("List-Unsubscribe");
        assert!(lu.one_click && lu.url.starts_with("https://h.example/unsubscribe/"));
        assert!(d.html.contains(&lu.url), "the footer links the same page");
        assert!(
            d.text.contains(&format!("Abmelden: {}", lu.url)),
            "{}",
            d.text
        );
        assert!(
            d.text.contains("Shop (https://shop.example/x?a=1&b=2)"),
            "{}",
            d.text
        );
    }

    #[test]
    fn modes_and_kinds_decide() {
        let links = MailLinks::new(b"0123456789abcdef0123456789abcdef", "https://h.example");
        let tracked = |kind, mode| {
            let d = decorate(&message(kind, BODY), &links, Some(&ctx(mode, None)));
            (d.html.contains("/t/open/"), d.list_unsubscribe.is_some())
        };
        use TemplateType::*;
        use TrackingMode::*;
        assert_eq!(tracked(Transactional, Enabled), (true, false));
        assert_eq!(tracked(Transactional, MarketingOnly), (false, false));
        assert_eq!(tracked(Marketing, MarketingOnly), (true, true));
        assert_eq!(tracked(Marketing, Disabled), (false, true));
        assert_eq!(tracked(Headless, Enabled), (false, false));
        let headless = decorate(&message(Headless, BODY), &links, Some(&ctx(Enabled, None)));
        assert_eq!(headless.html, BODY);
        let mut orphan = message(Marketing, BODY);
        orphan.contact_id = None;
        let d = decorate(&orphan, &links, Some(&ctx(Disabled, None)));
        assert!(d.list_unsubscribe.is_none() && d.html == BODY);
    }

    #[test]
    fn list_page_links_in_the_body_are_not_tracked() {
        let links = MailLinks::new(b"0123456789abcdef0123456789abcdef", "https://h.example");
        let body = r#"<a href="https://h.example/unsubscribe/abc">u</a>"#;
        let d = decorate(
            &message(TemplateType::Transactional, body),
            &links,
            Some(&ctx(TrackingMode::Enabled, None)),
        );
        assert!(d.html.starts_with(body), "{}", d.html);
    }
}
