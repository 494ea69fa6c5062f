//! What Herald reads from a received message (the MX listener, SES receipt notifications):
//! the sender and its name from From, the subject, the text (the text part, else the HTML
//! part as text) and the Message-ID. Pure: no I/O, safe on any input.

use herald_core::email::EmailAddress;
use herald_core::rules::header_safe;
use mail_parser::{MessageParser, PartType};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboundParts {
    pub from: EmailAddress,
    pub from_name: Option<String>,
    pub subject: String,
    pub text: String,
    /// Without angle brackets.
    pub message_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    #[error("the message could not be parsed")]
    Unparsable,
    #[error("the message has no From header with a valid address")]
    NoFrom,
}

pub fn read_inbound(raw: &[u8]) -> Result<InboundParts, InboundError> {
    let msg = MessageParser::default()
        .parse(raw)
        .ok_or(InboundError::Unparsable)?;
    let from = msg
        .from()
        .and_then(|a| a.first())
        .ok_or(InboundError::NoFrom)?;
    let address = from
        .address()
        .and_then(|a| EmailAddress::parse(a).ok())
        .ok_or(InboundError::NoFrom)?;
    let from_name = from
        .name()
        .map(|n| header_safe(n).trim().to_owned())
        .filter(|n| !n.is_empty());
    let subject = header_safe(msg.subject().unwrap_or("")).trim().to_owned();
    let text = match msg.text_bodies().find_map(|p| match &p.body {
        PartType::Text(t) => Some(t.to_string()),
        _ => None,
    }) {
        Some(t) => t,
        None => msg.body_text(0).map(|t| t.into_owned()).unwrap_or_default(),
    };
    Ok(InboundParts {
        from: address,
        from_name,
        subject,
        text,
        message_id: msg.message_id().map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sender_subject_text_and_message_id() {
        let p = read_inbound(
            b"From: \"Alice A\" <alice@example.org>\r\nSubject: Re: hi\r\nMessage-ID: <m1@example.org>\r\n\
Content-Type: text/html\r\n\r\n<p>Yes <b>please</b></p>\r\n",
        )
        .unwrap();
        assert_eq!(p.from.as_str(), "alice@example.org");
        assert_eq!(p.from_name.as_deref(), Some("Alice A"));
        assert_eq!(p.subject, "Re: hi");
        assert!(p.text.contains("Yes please"), "{}", p.text);
        assert_eq!(p.message_id.as_deref(), Some("m1@example.org"));
        assert_eq!(
            read_inbound(b"Subject: x\r\n\r\nbody\r\n"),
            Err(InboundError::NoFrom)
        );
    }
}
