//! A submitted MIME message read into what `/v1/send` takes: sender, reply-to, subject, the
//! HTML body (a text-only message becomes HTML), attachments, and the client's own headers.
//!
//! The reserved-header rule of DECISIONS.md "SMTP": the headers Herald writes itself
//! ([`herald_core::headers::reserved`]) are replaced by Herald's, every other header that
//! follows the custom-header rule is kept as it is; one that breaks it (a name with odd
//! characters, a value over 998 characters) is dropped rather than failing the message.
//! Pure: no I/O, safe on any input.

use herald_core::email::EmailAddress;
use herald_core::headers;
use herald_core::rules::header_safe;
use herald_engine::send::AttachmentIn;
use mail_parser::{MessageParser, MimeHeaders, PartType};

use crate::reply::Reply;

/// What the message says, ready for a send plan.
#[derive(Debug)]
pub struct Submitted {
    pub from: EmailAddress,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub subject: String,
    pub html: String,
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<AttachmentIn>,
    /// Display names of the To/Cc addresses (lowercase address, name).
    pub names: Vec<(String, String)>,
}

/// Headers that describe a hop or the client, not the message: not carried over.
const TRACE: [&str; 4] = [
    "X-Mailer-Queue-Id",
    "Delivered-To",
    "X-Original-To",
    "Authentication-Results",
];

pub fn read(raw: &[u8]) -> Result<Submitted, Reply> {
    let msg = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| Reply::new(554, "5.6.0", "The message could not be parsed"))?;
    let from_addr = msg
        .from()
        .and_then(|a| a.first())
        .ok_or_else(|| Reply::new(550, "5.6.0", "The message has no From header"))?;
    let from = from_addr
        .address()
        .and_then(|a| EmailAddress::parse(a).ok())
        .ok_or_else(|| Reply::new(550, "5.6.0", "The From header holds no valid address"))?;
    let from_name = from_addr
        .name()
        .map(|n| header_safe(n).trim().to_owned())
        .filter(|n| !n.is_empty());
    let reply_to = msg
        .reply_to()
        .and_then(|a| a.first())
        .and_then(|a| a.address())
        .and_then(|a| EmailAddress::parse(a).ok())
        .map(EmailAddress::into_string);
    let subject = header_safe(msg.subject().unwrap_or("")).trim().to_owned();
    let html = match msg.html_bodies().find_map(|p| match &p.body {
        PartType::Html(h) => Some(h.to_string()),
        _ => None,
    }) {
        Some(h) => h,
        None => text_to_html(&msg.body_text(0).unwrap_or_default()),
    };
    let mut names = Vec::new();
    for list in [msg.to(), msg.cc()].into_iter().flatten() {
        for a in list.iter() {
            if let (Some(addr), Some(name)) = (a.address(), a.name()) {
                let name = header_safe(name).trim().to_owned();
                if !name.is_empty() {
                    names.push((addr.to_lowercase(), name));
                }
            }
        }
    }
    let mut kept = Vec::new();
    for (name, value) in msg.headers_raw() {
        if headers::reserved(name) || TRACE.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            continue;
        }
        // Unfold (RFC 5322 section 2.2.3) and drop the space after the colon.
        let value = value.replace("\r\n", "").replace('\n', "");
        let value = value.trim();
        if headers::custom_header(name, value).is_ok() {
            kept.push((name.to_owned(), value.to_owned()));
        }
    }
    let mut attachments = Vec::new();
    for part in msg.attachments() {
        let content_type = part
            .content_type()
            .map(|ct| match ct.subtype() {
                Some(sub) => format!("{}/{}", ct.ctype(), sub),
                None => ct.ctype().to_owned(),
            })
            .filter(|ct| ct.contains('/') && ct.bytes().all(|b| b.is_ascii_graphic()))
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let filename = part
            .attachment_name()
            .map(|n| {
                n.chars()
                    .filter(|c| !c.is_control())
                    .take(255)
                    .collect::<String>()
            })
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("attachment-{}", attachments.len() + 1));
        let content_id = part
            .content_id()
            .map(|c| c.trim_matches(['<', '>']).to_owned())
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_graphic()));
        let inline = content_id.is_some()
            && part
                .content_disposition()
                .is_none_or(|d| d.ctype().eq_ignore_ascii_case("inline"));
        attachments.push(AttachmentIn {
            filename,
            content_type,
            content: bytes::Bytes::copy_from_slice(part.contents()),
            content_id,
            inline,
        });
    }
    Ok(Submitted {
        from,
        from_name,
        reply_to,
        subject,
        html,
        headers: kept,
        attachments,
        names,
    })
}

/// A plain-text body as HTML: escaped, line breaks kept.
fn text_to_html(text: &str) -> String {
    let lines: Vec<String> = text
        .trim_end()
        .lines()
        .map(herald_core::template::html_escape)
        .collect();
    format!(
        "<div style=\"white-space:pre-wrap\">{}</div>",
        lines.join("<br>")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_multipart_message_and_keeps_only_unreserved_headers() {
        let raw = b"From: \"Acme Team\" <hello@acme.test>\r\n\
To: Ada <ada@example.org>\r\n\
Subject: =?utf-8?q?Caf=C3=A9?= news\r\n\
Reply-To: support@acme.test\r\n\
X-Campaign: spring\r\n\x20sale\r\n\
Received: from evil\r\n\
DKIM-Signature: v=1; forged\r\n\
List-Unsubscribe: <https://evil.example>\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=b\r\n\
\r\n\
--b\r\n\
Content-Type: text/plain\r\n\
\r\n\
Hello <there>\r\n\
--b\r\n\
Content-Type: application/pdf; name=a.pdf\r\n\
Content-Disposition: attachment; filename=a.pdf\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
JVBERi0=\r\n\
--b--\r\n";
        let m = read(raw).unwrap();
        assert_eq!(m.from.as_str(), "hello@acme.test");
        assert_eq!(m.from_name.as_deref(), Some("Acme Team"));
        assert_eq!(m.reply_to.as_deref(), Some("support@acme.test"));
        assert_eq!(m.subject, "Café news");
        assert!(m.html.contains("Hello &lt;there&gt;"), "{}", m.html);
        assert_eq!(
            m.headers,
            vec![("X-Campaign".to_owned(), "spring sale".to_owned())]
        );
        assert_eq!(m.attachments.len(), 1);
        assert_eq!(m.attachments[0].filename, "a.pdf");
        assert_eq!(m.attachments[0].content_type, "application/pdf");
        assert_eq!(&m.attachments[0].content[..], b"%PDF-");
        assert_eq!(
            m.names,
            vec![("ada@example.org".to_owned(), "Ada".to_owned())]
        );
    }

    #[test]
    fn a_message_without_from_is_refused() {
        let r = read(b"To: a@b.test\r\nSubject: x\r\n\r\nbody\r\n").unwrap_err();
        assert_eq!(r.code, 550);
    }
}
