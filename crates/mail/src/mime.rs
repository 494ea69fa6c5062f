//! Building RFC 5322 / MIME messages from an [`OutgoingMessage`].
//!
//! Invariants of [`build`]'s output:
//! - 7-bit ASCII with CRLF line endings; non-ASCII header text is RFC 2047 encoded, filenames
//!   RFC 2231 encoded; text/html bodies are 7bit, quoted-printable or base64 as lettre finds
//!   best (after normalising their line endings to CRLF and dropping NULs); attachments are
//!   always base64. Header lines are folded and no line is longer than 998 bytes (checked,
//!   [`MimeError::LineTooLong`]).
//! - Structure: `multipart/alternative` (text/plain, then text/html); when inline parts
//!   (attachments with a `content_id`) exist it is wrapped in `multipart/related`; when regular
//!   attachments exist the whole is wrapped in `multipart/mixed`. With only one of text/html
//!   non-empty, that single part replaces the alternative.
//! - Exactly one each of `From`, `To`, `Subject`, `Date`, `Message-ID`, `MIME-Version`; custom
//!   headers can never duplicate or replace these (or other structural headers): custom
//!   headers follow `herald_core::headers::custom_header`, the rule the API validates with
//!   (reserved names are [`MimeError::ReservedHeader`]; `In-Reply-To` and `References` pass).
//! - No value supplied by the caller can inject a header: the subject, display names and
//!   custom header values follow `herald_core::rules::header_text` (no C0 control but tab,
//!   [`MimeError::InvalidCharacters`]); CR or LF in an address, Message-ID, Content-ID,
//!   filename or unsubscribe URL is an error.
//! - `List-Unsubscribe: <url>` and, when `one_click`, `List-Unsubscribe-Post:
//!   List-Unsubscribe=One-Click` (RFC 8058); both are DKIM-signed by [`crate::dkim`].

use std::borrow::Cow;
use std::time::SystemTime;

use chrono::Datelike;
use lettre::message::header::ContentTransferEncoding;
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{
    Attachment as LettreAttachment, Body, Mailbox as LettreMailbox, MultiPart, SinglePart,
};
use lettre::{Address, Message};

/// A display name and address.
#[derive(Clone, Debug)]
pub struct Mailbox {
    pub name: Option<String>,
    pub email: String,
}

/// A file attached to the message; `content_id: Some(..)` makes it an inline part
/// (referenced from the HTML as `cid:<content_id>`).
#[derive(Clone, Debug)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub content: Vec<u8>,
    /// Without angle brackets.
    pub content_id: Option<String>,
}

/// RFC 2369 / RFC 8058 unsubscribe headers.
#[derive(Clone, Debug)]
pub struct ListUnsubscribe {
    pub url: String,
    pub one_click: bool,
}

/// Everything needed to build one message for one recipient.
#[derive(Clone, Debug)]
pub struct OutgoingMessage {
    /// Without angle brackets, e.g. "0192...@example.com".
    pub message_id: String,
    pub date: chrono::DateTime<chrono::Utc>,
    pub from: Mailbox,
    pub to: Mailbox,
    /// An address, optionally with a display name ("Name <a@b>").
    pub reply_to: Option<String>,
    pub subject: String,
    pub html: String,
    pub text: String,
    /// Custom headers, validated upstream by the same rule (`herald_core::headers`), which is
    /// checked again here.
    pub headers: Vec<(String, String)>,
    pub list_unsubscribe: Option<ListUnsubscribe>,
    pub attachments: Vec<Attachment>,
}

/// Why a message could not be built. Every variant is a problem with the input.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum MimeError {
    #[error("invalid email address in {field}: {value:?}")]
    InvalidAddress { field: &'static str, value: String },
    #[error("CR or LF not allowed in {0}")]
    LineBreak(String),
    #[error("invalid header name {0:?}")]
    InvalidHeaderName(String),
    #[error("header {0:?} is set by Herald and cannot be given as a custom header")]
    ReservedHeader(String),
    #[error("{0}")]
    InvalidCharacters(String),
    #[error("header {0:?}: {1}")]
    InvalidHeaderValue(String, String),
    #[error("invalid Message-ID {0:?}")]
    InvalidMessageId(String),
    #[error("invalid Content-ID {0:?}")]
    InvalidContentId(String),
    #[error("invalid content type {0:?}")]
    InvalidContentType(String),
    #[error("invalid unsubscribe URL {0:?}")]
    InvalidUnsubscribeUrl(String),
    #[error("date out of range (years 1970 to 9999): {0}")]
    InvalidDate(String),
    #[error("a header line is longer than 998 bytes")]
    LineTooLong,
    #[error("cannot build message: {0}")]
    Build(String),
}

const MAX_LINE: usize = 998;
const MAX_URL: usize = 900;

/// The header character rule of `herald_core::rules` for a header-bound string.
fn header_text(what: &str, value: &str) -> Result<(), MimeError> {
    herald_core::rules::header_text(value, what)
        .map_err(|v| MimeError::InvalidCharacters(v.message))
}

/// The custom-header rule of `herald_core::headers`, the one the API answered 422 with.
fn custom_header(name: &str, value: &str) -> Result<HeaderValue, MimeError> {
    herald_core::headers::custom_header(name, value).map_err(|v| match v.code {
        "reserved_header" => MimeError::ReservedHeader(name.to_owned()),
        "invalid_header_name" => MimeError::InvalidHeaderName(name.to_owned()),
        _ => MimeError::InvalidHeaderValue(name.to_owned(), v.message),
    })?;
    raw_header(name, value)
}

fn no_line_break(what: &str, value: &str) -> Result<(), MimeError> {
    if value.contains(['\r', '\n']) {
        Err(MimeError::LineBreak(what.to_owned()))
    } else {
        Ok(())
    }
}

fn mailbox(field: &'static str, m: &Mailbox) -> Result<LettreMailbox, MimeError> {
    no_line_break(field, &m.email)?;
    let address: Address = m
        .email
        .trim()
        .parse()
        .map_err(|_| MimeError::InvalidAddress {
            field,
            value: m.email.clone(),
        })?;
    let name = match &m.name {
        Some(n) => {
            header_text(&format!("the display name of {field}"), n)?;
            let n = n.trim();
            (!n.is_empty()).then(|| n.to_owned())
        }
        None => None,
    };
    Ok(LettreMailbox::new(name, address))
}

/// `id-left "@" id-right` of printable ASCII without brackets or whitespace (RFC 5322 msg-id).
fn check_msg_id(value: &str) -> bool {
    let printable = value
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"' | b'\\' | b'(' | b')'));
    match value.split_once('@') {
        Some((l, r)) => printable && !l.is_empty() && !r.is_empty() && !r.contains('@'),
        None => false,
    }
}

/// RFC 5322 field name: printable ASCII except ':'.
fn check_header_name(name: &str) -> Result<HeaderName, MimeError> {
    let ok = !name.is_empty()
        && name.len() <= 76
        && name.bytes().all(|b| (33..=126).contains(&b) && b != b':');
    if !ok {
        return Err(MimeError::InvalidHeaderName(name.to_owned()));
    }
    HeaderName::new_from_ascii(name.to_owned())
        .map_err(|_| MimeError::InvalidHeaderName(name.to_owned()))
}

fn raw_header(name: &str, value: &str) -> Result<HeaderValue, MimeError> {
    no_line_break(name, value)?;
    Ok(HeaderValue::new(check_header_name(name)?, value.to_owned()))
}

fn system_time(date: &chrono::DateTime<chrono::Utc>) -> Result<SystemTime, MimeError> {
    if !(1970..=9999).contains(&date.year()) {
        return Err(MimeError::InvalidDate(date.to_rfc3339()));
    }
    Ok(SystemTime::from(*date))
}

fn attachment_part(a: &Attachment) -> Result<SinglePart, MimeError> {
    no_line_break("attachment filename", &a.filename)?;
    no_line_break("attachment content type", &a.content_type)?;
    let content_type = ContentType::parse(a.content_type.trim())
        .map_err(|_| MimeError::InvalidContentType(a.content_type.clone()))?;
    let filename = if a.filename.trim().is_empty() {
        "attachment".to_owned()
    } else {
        a.filename.trim().to_owned()
    };
    let builder = match &a.content_id {
        Some(cid) => {
            let cid = cid.trim().trim_start_matches('<').trim_end_matches('>');
            let ok = !cid.is_empty()
                && cid.bytes().all(|b| {
                    b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"' | b'\\' | b'(' | b')')
                });
            if !ok {
                return Err(MimeError::InvalidContentId(cid.to_owned()));
            }
            LettreAttachment::new_inline_with_name(cid.to_owned(), filename)
        }
        None => LettreAttachment::new(filename),
    };
    // Always base64: the bytes arrive exactly as given (a "7bit" binary could carry bare LF,
    // CR or NUL, which relays are free to rewrite).
    let body = Body::new_with_encoding(a.content.clone(), ContentTransferEncoding::Base64)
        .map_err(|_| MimeError::Build("cannot base64-encode an attachment".into()))?;
    Ok(builder.body(body, content_type))
}

/// Text for a body part: every line ending (CRLF, bare CR, bare LF) becomes CRLF and NUL
/// characters are dropped, so the 7bit / quoted-printable encodings stay valid and lettre has
/// no line endings left to fix (its own fix-up inserts one byte at a time). Built from `str`
/// searches, which run on memchr.
fn normalize_text(s: &str) -> String {
    let mut t = Cow::Borrowed(s);
    if t.contains('\0') {
        t = Cow::Owned(t.replace('\0', ""));
    }
    if t.contains('\r') {
        t = Cow::Owned(t.replace("\r\n", "\n").replace('\r', "\n"));
    }
    t.replace('\n', "\r\n")
}

/// True when some line (CRLF-terminated) is longer than 998 bytes.
fn has_long_line(raw: &[u8]) -> bool {
    match std::str::from_utf8(raw) {
        Ok(text) => text.split('\n').any(|line| line.len() > MAX_LINE + 1),
        Err(_) => raw
            .split(|&b| b == b'\n')
            .any(|line| line.len() > MAX_LINE + 1),
    }
}

/// A MIME node: single part or multipart.
enum Node {
    Single(SinglePart),
    Multi(MultiPart),
}

impl Node {
    /// Wraps `self` as the first child of `container`, followed by `rest`.
    fn wrap(self, container: lettre::message::MultiPartBuilder, rest: Vec<SinglePart>) -> Node {
        let mut multi = match self {
            Node::Single(p) => container.singlepart(p),
            Node::Multi(m) => container.multipart(m),
        };
        for p in rest {
            multi = multi.singlepart(p);
        }
        Node::Multi(multi)
    }
}

/// Builds the message bytes (RFC 5322, MIME, CRLF, 7-bit).
pub fn build(msg: &OutgoingMessage) -> Result<Vec<u8>, MimeError> {
    let message_id = msg.message_id.trim();
    no_line_break("Message-ID", message_id)?;
    if !check_msg_id(message_id) {
        return Err(MimeError::InvalidMessageId(msg.message_id.clone()));
    }
    header_text("Subject", &msg.subject)?;

    let mut builder = Message::builder()
        .from(mailbox("From", &msg.from)?)
        .to(mailbox("To", &msg.to)?)
        .subject(msg.subject.clone())
        .date(system_time(&msg.date)?)
        .message_id(Some(format!("<{message_id}>")));

    if let Some(reply_to) = &msg.reply_to {
        no_line_break("Reply-To", reply_to)?;
        let mb: LettreMailbox = reply_to
            .trim()
            .parse()
            .map_err(|_| MimeError::InvalidAddress {
                field: "Reply-To",
                value: reply_to.clone(),
            })?;
        builder = builder.reply_to(mb);
    }

    if let Some(lu) = &msg.list_unsubscribe {
        let url = lu.url.trim();
        let ok = !url.is_empty()
            && url.len() <= MAX_URL
            && url.contains(':')
            && url
                .bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"'));
        if !ok {
            return Err(MimeError::InvalidUnsubscribeUrl(lu.url.clone()));
        }
        builder = builder.raw_header(raw_header("List-Unsubscribe", &format!("<{url}>"))?);
        if lu.one_click {
            builder = builder.raw_header(raw_header(
                "List-Unsubscribe-Post",
                "List-Unsubscribe=One-Click",
            )?);
        }
    }

    for (name, value) in &msg.headers {
        builder = builder.raw_header(custom_header(name, value.trim())?);
    }

    let text = normalize_text(&msg.text);
    let html = normalize_text(&msg.html);
    let body = match (text.is_empty(), html.is_empty()) {
        (false, false) => Node::Multi(MultiPart::alternative_plain_html(text, html)),
        (true, false) => Node::Single(SinglePart::html(html)),
        _ => Node::Single(SinglePart::plain(text)),
    };

    let mut inline = Vec::new();
    let mut regular = Vec::new();
    for a in &msg.attachments {
        let part = attachment_part(a)?;
        if a.content_id.is_some() {
            inline.push(part);
        } else {
            regular.push(part);
        }
    }
    let mut root = body;
    if !inline.is_empty() {
        root = root.wrap(MultiPart::related(), inline);
    }
    if !regular.is_empty() {
        root = root.wrap(MultiPart::mixed(), regular);
    }

    let message = match root {
        Node::Single(p) => builder.singlepart(p),
        Node::Multi(m) => builder.multipart(m),
    }
    .map_err(|e| MimeError::Build(e.to_string()))?;
    let out = message.formatted();
    if has_long_line(&out) {
        return Err(MimeError::LineTooLong);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use mail_parser::{MessageParser, MimeHeaders};

    fn base() -> OutgoingMessage {
        OutgoingMessage {
            message_id: "0192f00d-1111-7000-8000-000000000042@mail.example.com".into(),
            date: chrono::Utc.with_ymd_and_hms(2025, 3, 4, 5, 6, 7).unwrap(),
            from: Mailbox {
                name: Some("Acme News".into()),
                email: "news@example.com".into(),
            },
            to: Mailbox {
                name: Some("Jane Doe".into()),
                email: "jane@example.org".into(),
            },
            reply_to: None,
            subject: "Hello".into(),
            html: "<p>Hi</p>".into(),
            text: "Hi".into(),
            headers: vec![],
            list_unsubscribe: None,
            attachments: vec![],
        }
    }

    fn check_wire_format(raw: &[u8]) {
        assert!(raw.is_ascii(), "output must be 7-bit");
        for (i, b) in raw.iter().enumerate() {
            if *b == b'\n' {
                assert!(i > 0 && raw[i - 1] == b'\r', "bare LF at {i}");
            }
            if *b == b'\r' {
                assert_eq!(raw.get(i + 1), Some(&b'\n'), "bare CR at {i}");
            }
        }
        for line in raw.split(|&b| b == b'\n') {
            assert!(line.len() <= 999, "line too long");
        }
    }

    fn count_header(raw: &[u8], name: &str) -> usize {
        let text = String::from_utf8_lossy(raw);
        let head = text.split("\r\n\r\n").next().unwrap();
        head.split("\r\n")
            .filter(|l| {
                l.split_once(':')
                    .is_some_and(|(n, _)| n.eq_ignore_ascii_case(name))
            })
            .count()
    }

    #[test]
    fn simple_alternative_with_headers() {
        let mut m = base();
        m.reply_to = Some("Support <support@example.com>".into());
        m.list_unsubscribe = Some(ListUnsubscribe {
            url: "https://herald.example.com/unsubscribe/abc.def".into(),
            one_click: true,
        });
        m.headers = vec![("X-Campaign-Id".into(), "c-42".into())];
        m.text = "line one\nline two\n".into();
        let raw = build(&m).unwrap();
        check_wire_format(&raw);
        for h in [
            "From",
            "To",
            "Subject",
            "Date",
            "Message-ID",
            "MIME-Version",
        ] {
            assert_eq!(count_header(&raw, h), 1, "{h}");
        }

        let p = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(p.subject(), Some("Hello"));
        let from = p.from().unwrap().first().unwrap();
        assert_eq!(from.name(), Some("Acme News"));
        assert_eq!(from.address(), Some("news@example.com"));
        let to = p.to().unwrap().first().unwrap();
        assert_eq!(to.address(), Some("jane@example.org"));
        assert_eq!(
            p.reply_to().unwrap().first().unwrap().address(),
            Some("support@example.com")
        );
        assert_eq!(
            p.message_id(),
            Some("0192f00d-1111-7000-8000-000000000042@mail.example.com")
        );
        assert_eq!(p.date().unwrap().to_rfc3339(), "2025-03-04T05:06:07Z");
        assert_eq!(
            p.header_raw("List-Unsubscribe").unwrap().trim(),
            "<https://herald.example.com/unsubscribe/abc.def>"
        );
        assert_eq!(
            p.header_raw("List-Unsubscribe-Post").unwrap().trim(),
            "List-Unsubscribe=One-Click"
        );
        assert_eq!(p.header_raw("X-Campaign-Id").unwrap().trim(), "c-42");

        let ct = p.content_type().unwrap();
        assert_eq!(ct.ctype(), "multipart");
        assert_eq!(ct.subtype(), Some("alternative"));
        assert_eq!(p.text_body_count(), 1);
        assert_eq!(p.html_body_count(), 1);
        assert_eq!(
            p.body_text(0).unwrap().replace("\r\n", "\n"),
            "line one\nline two\n"
        );
        assert_eq!(p.body_html(0).unwrap(), "<p>Hi</p>");
        assert_eq!(p.attachment_count(), 0);
        // text/plain comes first.
        let text = String::from_utf8_lossy(&raw);
        assert!(text.find("text/plain").unwrap() < text.find("text/html").unwrap());
    }

    #[test]
    fn no_one_click_header_without_one_click() {
        let mut m = base();
        m.list_unsubscribe = Some(ListUnsubscribe {
            url: "mailto:unsub@example.com".into(),
            one_click: false,
        });
        let raw = build(&m).unwrap();
        let p = MessageParser::default().parse(&raw).unwrap();
        assert!(p.header_raw("List-Unsubscribe").is_some());
        assert!(p.header_raw("List-Unsubscribe-Post").is_none());
    }

    #[test]
    fn unicode_subject_names_and_long_lines() {
        let mut m = base();
        m.subject = "Grüße aus Köln — 日本語のテキスト 🎉 "
            .repeat(6)
            .trim()
            .to_owned();
        m.from.name = Some("Zoë Æther, \"Ltd\"".into());
        m.to.name = Some("Łukasz Żółć".into());
        m.text = format!("{}\nÉtoile ✨\n", "word ".repeat(400));
        m.html = format!("<p>{}</p><p>Ünïcödé</p>", "x".repeat(3000));
        m.headers = vec![("X-Note".into(), "naïve café ".repeat(30))];
        let raw = build(&m).unwrap();
        check_wire_format(&raw);
        let text = String::from_utf8_lossy(&raw);
        assert!(text.contains("Subject: =?utf-8?"), "RFC 2047 subject");

        let p = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(p.subject(), Some(m.subject.as_str()));
        assert_eq!(
            p.from().unwrap().first().unwrap().name(),
            Some("Zoë Æther, \"Ltd\"")
        );
        assert_eq!(p.to().unwrap().first().unwrap().name(), Some("Łukasz Żółć"));
        assert_eq!(
            p.body_text(0).unwrap().replace("\r\n", "\n"),
            m.text.as_str()
        );
        assert_eq!(p.body_html(0).unwrap(), m.html.as_str());
        // Unknown headers are only RFC 2047-decoded when asked for.
        let note = MessageParser::new()
            .header_text(mail_parser::HeaderName::Other("X-Note".into()))
            .parse(&raw)
            .unwrap();
        assert_eq!(
            note.header("X-Note").unwrap().as_text().unwrap().trim(),
            m.headers[0].1.trim()
        );
    }

    #[test]
    fn attachments_inline_and_mixed() {
        let png: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let pdf = b"%PDF-1.4 binary \x00\x01\x02\xff".to_vec();
        let mut m = base();
        m.html = "<p><img src=\"cid:logo@herald\"></p>".into();
        m.attachments = vec![
            Attachment {
                filename: "logo.png".into(),
                content_type: "image/png".into(),
                content: png.clone(),
                content_id: Some("logo@herald".into()),
            },
            Attachment {
                filename: "Rechnung März.pdf".into(),
                content_type: "application/pdf".into(),
                content: pdf.clone(),
                content_id: None,
            },
        ];
        let raw = build(&m).unwrap();
        check_wire_format(&raw);
        let p = MessageParser::default().parse(&raw).unwrap();

        let ct = p.content_type().unwrap();
        assert_eq!((ct.ctype(), ct.subtype()), ("multipart", Some("mixed")));
        let text = String::from_utf8_lossy(&raw);
        let mixed = text.find("multipart/mixed").unwrap();
        let related = text.find("multipart/related").unwrap();
        let alt = text.find("multipart/alternative").unwrap();
        assert!(
            mixed < related && related < alt,
            "mixed > related > alternative"
        );

        assert_eq!(p.text_body_count(), 1);
        assert_eq!(p.html_body_count(), 1);
        assert_eq!(p.body_html(0).unwrap(), m.html.as_str());
        assert_eq!(p.attachment_count(), 2);
        let inline = p
            .attachments()
            .find(|a| a.content_id().is_some())
            .expect("inline part");
        assert_eq!(inline.content_id(), Some("logo@herald"));
        assert_eq!(inline.contents(), png.as_slice());
        assert!(inline.content_disposition().unwrap().is_inline());
        let ct = inline.content_type().unwrap();
        assert_eq!((ct.ctype(), ct.subtype()), ("image", Some("png")));

        let file = p
            .attachments()
            .find(|a| a.content_id().is_none())
            .expect("regular attachment");
        assert_eq!(file.attachment_name(), Some("Rechnung März.pdf"));
        assert_eq!(file.contents(), pdf.as_slice());
        assert!(file.content_disposition().unwrap().is_attachment());
    }

    #[test]
    fn inline_only_is_related_and_attachment_only_is_mixed() {
        let mut m = base();
        m.attachments = vec![Attachment {
            filename: "a.gif".into(),
            content_type: "image/gif".into(),
            content: b"GIF89a".to_vec(),
            content_id: Some("a".into()),
        }];
        let raw = build(&m).unwrap();
        let p = MessageParser::default().parse(&raw).unwrap();
        let ct = p.content_type().unwrap();
        assert_eq!(ct.subtype(), Some("related"));

        m.attachments[0].content_id = None;
        let raw = build(&m).unwrap();
        let p = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(p.content_type().unwrap().subtype(), Some("mixed"));
        assert!(!String::from_utf8_lossy(&raw).contains("multipart/related"));
        assert_eq!(p.attachment(0).unwrap().contents(), b"GIF89a");
    }

    #[test]
    fn line_endings_and_ascii_binary_attachments() {
        let mut m = base();
        m.text = "a\rb\r\nc\nd\0e".into();
        m.html = "<p>\n\r</p>".into();
        let csv = b"id,name\n1,a\r2,b\x00\n".to_vec();
        m.attachments = vec![Attachment {
            filename: "data.csv".into(),
            content_type: "text/csv".into(),
            content: csv.clone(),
            content_id: None,
        }];
        let raw = build(&m).unwrap();
        check_wire_format(&raw);
        let p = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(p.body_text(0).unwrap(), "a\r\nb\r\nc\r\nde");
        assert_eq!(p.attachment(0).unwrap().contents(), csv.as_slice());
    }

    #[test]
    fn single_part_bodies() {
        let mut m = base();
        m.text = String::new();
        let p_raw = build(&m).unwrap();
        let p = MessageParser::default().parse(&p_raw).unwrap();
        assert_eq!(p.content_type().unwrap().subtype(), Some("html"));
        assert_eq!(p.body_html(0).unwrap().trim_end(), "<p>Hi</p>");

        let mut m = base();
        m.html = String::new();
        let p_raw = build(&m).unwrap();
        let p = MessageParser::default().parse(&p_raw).unwrap();
        assert_eq!(p.content_type().unwrap().subtype(), Some("plain"));
        assert_eq!(p.body_text(0).unwrap().trim_end(), "Hi");
    }

    #[test]
    fn threading_headers_pass_and_every_reserved_name_is_refused() {
        let mut m = base();
        m.headers = vec![
            ("In-Reply-To".into(), "<a@example.com>".into()),
            (
                "References".into(),
                "<r@example.com> <a@example.com>".into(),
            ),
        ];
        let raw = build(&m).unwrap();
        let p = MessageParser::default().parse(&raw).unwrap();
        assert_eq!(p.in_reply_to().as_text(), Some("a@example.com"));
        assert_eq!(
            p.references().as_text_list().map(|l| l.len()),
            Some(2),
            "{}",
            String::from_utf8_lossy(&raw)
        );
        for name in herald_core::headers::RESERVED {
            let mut m = base();
            m.headers = vec![(name.to_ascii_lowercase(), "v".into())];
            assert!(
                matches!(build(&m), Err(MimeError::ReservedHeader(_))),
                "{name}"
            );
        }
    }

    #[test]
    fn refuses_injection_and_bad_input() {
        type Case = (OutgoingMessage, fn(&MimeError) -> bool);
        let cases: Vec<Case> = vec![
            (
                OutgoingMessage {
                    headers: vec![("X-Evil".into(), "a\r\nBcc: victim@example.com".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidHeaderValue(..)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("X-Evil\nBcc".into(), "a".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidHeaderName(_)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("X Bad".into(), "a".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidHeaderName(_)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("From".into(), "x@example.com".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::ReservedHeader(_)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("dkim-signature".into(), "v=1".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::ReservedHeader(_)),
            ),
            (
                OutgoingMessage {
                    subject: "hi\nBcc: x@example.com".into(),
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidCharacters(_)),
            ),
            (
                OutgoingMessage {
                    from: Mailbox {
                        name: Some("A\r\nB".into()),
                        email: "a@example.com".into(),
                    },
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidCharacters(_)),
            ),
            (
                OutgoingMessage {
                    to: Mailbox {
                        name: None,
                        email: "not an address".into(),
                    },
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidAddress { field: "To", .. }),
            ),
            (
                OutgoingMessage {
                    reply_to: Some("nope".into()),
                    ..base()
                },
                |e| {
                    matches!(
                        e,
                        MimeError::InvalidAddress {
                            field: "Reply-To",
                            ..
                        }
                    )
                },
            ),
            (
                OutgoingMessage {
                    message_id: "<abc@example.com>".into(),
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidMessageId(_)),
            ),
            (
                OutgoingMessage {
                    message_id: "no-at-sign".into(),
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidMessageId(_)),
            ),
            (
                OutgoingMessage {
                    list_unsubscribe: Some(ListUnsubscribe {
                        url: "https://x.example/u>\r\nBcc: y".into(),
                        one_click: true,
                    }),
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidUnsubscribeUrl(_)),
            ),
            (
                OutgoingMessage {
                    attachments: vec![Attachment {
                        filename: "a.txt".into(),
                        content_type: "not a type".into(),
                        content: vec![],
                        content_id: None,
                    }],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidContentType(_)),
            ),
            (
                OutgoingMessage {
                    attachments: vec![Attachment {
                        filename: "a\r\n.txt".into(),
                        content_type: "text/plain".into(),
                        content: vec![],
                        content_id: None,
                    }],
                    ..base()
                },
                |e| matches!(e, MimeError::LineBreak(_)),
            ),
            (
                OutgoingMessage {
                    attachments: vec![Attachment {
                        filename: "a.png".into(),
                        content_type: "image/png".into(),
                        content: vec![],
                        content_id: Some("a b".into()),
                    }],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidContentId(_)),
            ),
            (
                OutgoingMessage {
                    date: chrono::Utc.with_ymd_and_hms(1960, 1, 1, 0, 0, 0).unwrap(),
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidDate(_)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("X-Long".into(), "y".repeat(1200))],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidHeaderValue(..)),
            ),
            (
                OutgoingMessage {
                    subject: "red \u{1b}[31m alert".into(),
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidCharacters(_)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("X-Note".into(), "a\u{b}b".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidHeaderValue(..)),
            ),
            (
                OutgoingMessage {
                    headers: vec![("X".repeat(77), "v".into())],
                    ..base()
                },
                |e| matches!(e, MimeError::InvalidHeaderName(_)),
            ),
        ];
        for (i, (m, check)) in cases.into_iter().enumerate() {
            match build(&m) {
                Ok(raw) => panic!("case {i} accepted:\n{}", String::from_utf8_lossy(&raw)),
                Err(e) => assert!(check(&e), "case {i}: unexpected error {e:?}"),
            }
        }
    }
}
