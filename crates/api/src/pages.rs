//! Server-rendered HTML of the list pages (unsubscribe, subscribe, manage).
//!
//! Invariants:
//! - No JavaScript: every action is a plain `<form method="post">` with a `<button>`.
//! - Accessible markup: `<html lang>` in the page's language, one `<h1>`, a `<main>` landmark,
//!   form controls with `<label for>` and a `<fieldset>`/`<legend>` for the choice, status
//!   messages with `role="status"`.
//! - Every value that comes from data (the contact's address, a token) is HTML-escaped.
//! - Responses are never cached or indexed and send no referrer (the URL holds a token);
//!   the content security policy allows no script, only inline style and same-origin forms.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::list_i18n::Strings;
use herald_core::template::html_escape;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;\
background:#f9fafb;color:#111827;margin:0;padding:48px 16px;line-height:1.5}\
main{max-width:32rem;margin:0 auto;background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:32px}\
h1{font-size:1.5rem;margin:0 0 16px}fieldset{border:1px solid #d1d5db;border-radius:6px;margin:0 0 16px;padding:12px 16px}\
legend{font-weight:600;padding:0 4px}.choice{margin:6px 0}\
button{font:inherit;background:#111827;color:#fff;border:0;border-radius:6px;padding:10px 18px;cursor:pointer}\
button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid #2563eb;outline-offset:2px}\
a{color:#1d4ed8}";

/// A whole page: `lang`, a title that is also the one `<h1>`, and the already-escaped main
/// content.
pub fn document(lang: &str, title: &str, main: &str) -> String {
    let title = html_escape(title);
    format!(
        "<!doctype html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex\">\n<title>{title}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n<main>\n<h1>{title}</h1>\n{main}\n</main>\n</body>\n</html>\n",
        lang = html_escape(lang),
    )
}

/// `text` with `{email}` replaced by the escaped address, as a paragraph.
pub fn paragraph(text: &str, email: &str) -> String {
    format!(
        "<p>{}</p>",
        html_escape(text).replace(
            "{email}",
            &format!("<strong>{}</strong>", html_escape(email))
        )
    )
}

/// A status message (announced by screen readers).
pub fn status(text: &str, email: &str) -> String {
    paragraph(text, email).replacen("<p>", "<p role=\"status\">", 1)
}

/// A form posting to `action` with one button (and hidden fields).
pub fn button_form(action: &str, label: &str, hidden: &[(&str, &str)]) -> String {
    let fields: String = hidden
        .iter()
        .map(|(n, v)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                html_escape(n),
                html_escape(v)
            )
        })
        .collect();
    format!(
        "<form method=\"post\" action=\"{}\">{fields}<button type=\"submit\">{}</button></form>",
        html_escape(action),
        html_escape(label)
    )
}

/// A link paragraph.
pub fn link(href: &str, label: &str) -> String {
    format!(
        "<p><a href=\"{}\">{}</a></p>",
        html_escape(href),
        html_escape(label)
    )
}

/// The manage form: a subscribed / unsubscribed choice and a save button.
pub fn manage_form(action: &str, s: &Strings, subscribed: bool) -> String {
    let radio = |id: &str, value: &str, checked: bool, label: &str| {
        format!(
            "<div class=\"choice\"><input type=\"radio\" id=\"{id}\" name=\"subscribed\" value=\"{value}\"{}>\
             <label for=\"{id}\">{}</label></div>",
            if checked { " checked" } else { "" },
            html_escape(label)
        )
    };
    format!(
        "<form method=\"post\" action=\"{}\"><fieldset><legend>{}</legend>{}{}</fieldset>\
         <button type=\"submit\">{}</button></form>",
        html_escape(action),
        html_escape(s.manage_legend),
        radio("subscribed-yes", "true", subscribed, s.manage_on),
        radio("subscribed-no", "false", !subscribed, s.manage_off),
        html_escape(s.manage_save)
    )
}

/// An HTML response with the page headers.
pub fn respond(status: StatusCode, html: String) -> Response {
    let mut res = (status, html).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert("x-robots-tag", HeaderValue::from_static("noindex"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_core::list_i18n;

    #[test]
    fn pages_escape_data_and_have_one_heading() {
        let doc = document(
            "de",
            "Abmelden",
            &paragraph("Hallo {email}", "<x>@example.org"),
        );
        assert!(doc.contains("<html lang=\"de\">"));
        assert_eq!(doc.matches("<h1>").count(), 1);
        assert!(
            doc.contains("<strong>&lt;x&gt;@example.org</strong>"),
            "{doc}"
        );
        assert!(!doc.contains("<script"));
        let form = manage_form("/manage/t\"x", list_i18n::english(), false);
        assert!(form.contains("action=\"/manage/t&quot;x\""), "{form}");
        assert!(form.contains("<label for=\"subscribed-no\">"));
        assert!(form.contains("value=\"false\" checked"), "{form}");
    }
}
