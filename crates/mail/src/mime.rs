//! Building RFC 5322 / MIME messages from an [`OutgoingMessage`].
//!
//! Invariants of [`build`]'s output:
//! - 7-bit ASCII with CRLF line endings; non-ASCII header text is RFC 2047 encoded, filenames
//!   RFC 2231 encoded; text/html bodies are 7bit, quoted-printable or base64 as lettre finds
//!   best (after normalising their line endings to CRLF and dropping NULs); attachments are
//!   always base64. Header lines are folded and no line is longer than 998 bytes, whatever the
//!   length of a value: one that cannot be folded at its spaces is written as RFC 2047
//!   encoded-words ([`crate::header_text`]); the whole output is checked
//!   ([`MimeError::LineTooLong`]).
//! - Addresses (From, To, Reply-To) carry their domain as IDNA A-labels (punycode,
//!   [`herald_core::email::with_ascii_domain`]). A non-ASCII local part stays UTF-8 (RFC 6532):
//!   such a message is the only kind that is not 7-bit, and needs a relay offering SMTPUTF8.
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
//! - Memory: the output is one buffer, sized once. lettre formats the message with a random
//!   placeholder for each attachment's body, and each attachment's base64 lines (76
//!   characters, CRLF between, as lettre writes them) are then encoded straight into the
//!   output in its place; the buffer keeps [`HEADER_ROOM`] spare for the DKIM signature.

use std::borrow::Cow;
use std::time::SystemTime;

use chrono::Datelike;
use lettre::message::header::ContentTransferEncoding;
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{
    Attachment as LettreAttachment, Body, Mailbox as LettreMailbox, MultiPart, SinglePart,
};
use lettre::{Address, Message};

use crate::header_text::header_value;

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
    /// Custom headers, validated upstream; CR/LF and reserved names are still refused here.
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

const MAX_LINE: usize = crate::header_text::MAX_LINE;
/// Longest custom header name (lettre's limit; the API allows no more).
const MAX_HEADER_NAME: usize = 76;
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

/// The address with its domain as A-labels, as lettre's type.
fn address(field: &'static str, email: &str) -> Result<Address, MimeError> {
    let invalid = || MimeError::InvalidAddress {
        field,
        value: email.to_owned(),
    };
    herald_core::email::with_ascii_domain(email.trim())
        .map_err(|_| invalid())?
        .parse()
        .map_err(|_| invalid())
}

fn mailbox(field: &'static str, m: &Mailbox) -> Result<LettreMailbox, MimeError> {
    no_line_break(field, &m.email)?;
    let address = address(field, &m.email)?;
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

/// RFC 5322 field name: printable ASCII except ':', short enough to leave room for a value
/// on its line.
fn check_header_name(name: &str) -> Result<HeaderName, MimeError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_HEADER_NAME
        && name.bytes().all(|b| (33..=126).contains(&b) && b != b':');
    if !ok {
        return Err(MimeError::InvalidHeaderName(name.to_owned()));
    }
    HeaderName::new_from_ascii(name.to_owned())
        .map_err(|_| MimeError::InvalidHeaderName(name.to_owned()))
}

fn raw_header(name: &str, value: &str) -> Result<HeaderValue, MimeError> {
    no_line_break(name, value)?;
    Ok(header_value(check_header_name(name)?, value))
}

fn system_time(date: &chrono::DateTime<chrono::Utc>) -> Result<SystemTime, MimeError> {
    if !(1970..=9999).contains(&date.year()) {
        return Err(MimeError::InvalidDate(date.to_rfc3339()));
    }
    Ok(SystemTime::from(*date))
}

fn attachment_part(a: &Attachment, placeholder: &Placeholder) -> Result<SinglePart, MimeError> {
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
    // CR or NUL, which relays are free to rewrite). The part carries its placeholder's bytes;
    // [`build`] writes the real content in its place.
    let body = Body::new_with_encoding(placeholder.to_vec(), ContentTransferEncoding::Base64)
        .map_err(|_| MimeError::Build("cannot base64-encode an attachment".into()))?;
    Ok(builder.body(body, content_type))
}

/// Raw bytes of an attachment's placeholder: 45 random bytes, 60 base64 characters on one
/// line, which no other text of the message can contain by chance.
type Placeholder = [u8; 45];

fn new_placeholder() -> Placeholder {
    let mut raw = [0u8; 48];
    for chunk in raw.chunks_mut(16) {
        chunk.copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    let mut out = [0u8; 45];
    out.copy_from_slice(&raw[..45]);
    out
}

/// Length of `len` bytes in base64 as attachments are written: lines of 76 characters
/// separated by CRLF, none after the last.
pub fn base64_lines_len(len: usize) -> usize {
    let chars = len.div_ceil(3) * 4;
    chars + chars.div_ceil(BASE64_LINE).saturating_sub(1) * 2
}

const BASE64_LINE: usize = 76;

/// Appends `content` in base64 as [`base64_lines_len`] describes (lettre's layout), written
/// straight into `out`.
fn push_base64_lines(out: &mut Vec<u8>, content: &[u8]) {
    use base64::Engine as _;
    const LINE_INPUT: usize = BASE64_LINE / 4 * 3;
    let start = out.len();
    out.resize(start + base64_lines_len(content.len()), 0);
    let mut at = start;
    for (i, line) in content.chunks(LINE_INPUT).enumerate() {
        if i > 0 {
            out[at..at + 2].copy_from_slice(b"\r\n");
            at += 2;
        }
        // The slice is exactly the line's encoded length, so this cannot fail.
        at += base64::engine::general_purpose::STANDARD
            .encode_slice(line, &mut out[at..])
            .unwrap_or(0);
    }
    out.truncate(at);
}

/// Builds the final bytes from `skeleton` (the formatted message, each attachment's body a
/// placeholder), writing each attachment's base64 in place of its placeholder: one buffer,
/// sized once, with room left for a DKIM-Signature header ([`HEADER_ROOM`]).
fn splice(skeleton: &[u8], parts: &[(String, &Attachment)]) -> Result<Vec<u8>, MimeError> {
    let mut found = Vec::with_capacity(parts.len());
    for (marker, a) in parts {
        let at = memchr::memmem::find(skeleton, marker.as_bytes())
            .ok_or_else(|| MimeError::Build("an attachment part went missing".into()))?;
        found.push((at, marker.len(), *a));
    }
    found.sort_by_key(|(at, _, _)| *at);
    let size = skeleton.len()
        + found
            .iter()
            .map(|(_, marker, a)| base64_lines_len(a.content.len()).saturating_sub(*marker))
            .sum::<usize>();
    let mut out = Vec::with_capacity(size + HEADER_ROOM);
    let mut copied = 0;
    for (at, marker, a) in found {
        out.extend_from_slice(&skeleton[copied..at]);
        push_base64_lines(&mut out, &a.content);
        copied = at + marker;
    }
    out.extend_from_slice(&skeleton[copied..]);
    Ok(out)
}

/// Spare capacity [`build`] leaves after the message, so that a DKIM-Signature header
/// ([`crate::dkim::DkimSigner::sign_in_place`]) fits without reallocating the buffer.
pub const HEADER_ROOM: usize = 2048;

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
        .raw_header(header_value(
            HeaderName::new_from_ascii_str("Subject"),
            &msg.subject,
        ))
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
        let email = address("Reply-To", mb.email.as_ref())?;
        builder = builder.reply_to(LettreMailbox::new(mb.name, email));
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
    let mut parts = Vec::with_capacity(msg.attachments.len());
    for a in &msg.attachments {
        let placeholder = new_placeholder();
        let part = attachment_part(a, &placeholder)?;
        {
            use base64::Engine as _;
            parts.push((
                base64::engine::general_purpose::STANDARD.encode(placeholder),
                a,
            ));
        }
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
    let skeleton = message.formatted();
    drop(message);
    // The attachments' lines are 76 characters: only the skeleton can have a long line.
    if has_long_line(&skeleton) {
        return Err(MimeError::LineTooLong);
    }
    splice(&skeleton, &parts)
}

#[cfg(test)]
mod tests;
