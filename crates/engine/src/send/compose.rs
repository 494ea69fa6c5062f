//! Turns a stored message into the exact bytes handed to the transport: MIME with a text part
//! derived from the HTML, tracking and the unsubscribe footer and header added
//! ([`super::decorate`]), the custom headers and attachments, DKIM-signed with the sending
//! domain's key. CPU-bound (RSA signing); callers run it off the async threads.
//!
//! Attachments are read by reference: the message's metadata names each one's SHA-256 and the
//! caller passes the blobs it read (`Store::message_blobs`). Their bytes move into the MIME
//! builder, which base64-encodes them straight into the message's one buffer; the signature is
//! inserted at its front ([`DkimSigner::sign_in_place`]). So a composed message is one buffer
//! the size of the message, and the blobs are dropped before it is handed over. A message whose
//! body was purged by retention cannot be composed.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use herald_core::time::Millis;
use herald_mail::dkim::DkimSigner;
use herald_mail::mime::{Attachment, Mailbox, OutgoingMessage, build};
use herald_store::blobs::Blob;
use herald_store::messages::Message;

use super::decorate::Decorated;

/// A problem that retrying cannot fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ComposeError(pub String);

pub fn compose(
    msg: &Message,
    body: Decorated,
    blobs: Vec<Blob>,
    signer: Option<&DkimSigner>,
    now: Millis,
) -> Result<Vec<u8>, ComposeError> {
    if msg.body_purged_at.is_some() {
        return Err(ComposeError(
            "the message's body was purged by retention".into(),
        ));
    }
    let headers = msg
        .headers
        .0
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let items: &[serde_json::Value] = msg.attachments.0.as_array().map_or(&[], Vec::as_slice);
    let mut blobs = blobs;
    let attachments = items
        .iter()
        .enumerate()
        .map(|(i, a)| attachment(a, &mut blobs, &items[i + 1..]))
        .collect::<Result<Vec<_>, _>>()?;
    drop(blobs);
    let out = OutgoingMessage {
        message_id: msg.message_id_header.clone(),
        date: herald_core::time::to_datetime(now),
        from: Mailbox {
            name: msg.from_name.clone(),
            email: msg.from_email.clone(),
        },
        to: Mailbox {
            name: msg.to_name.clone(),
            email: msg.to_email.clone(),
        },
        reply_to: msg.reply_to.clone(),
        subject: msg.subject.clone(),
        text: body.text,
        html: body.html,
        headers,
        list_unsubscribe: body.list_unsubscribe,
        attachments,
    };
    let mut raw =
        build(&out).map_err(|e| ComposeError(format!("could not build the message: {e}")))?;
    // The attachments' bytes are in `raw` now.
    drop(out);
    let Some(signer) = signer else {
        // Only Herald's own account mail from a domain no project verified.
        return Ok(raw);
    };
    signer
        .sign_in_place(&mut raw)
        .map_err(|e| ComposeError(format!("could not DKIM-sign the message: {e:#}")))?;
    Ok(raw)
}

/// One attachment: its bytes from the blob its `sha256` names (or, for rows written before
/// blobs existed, from its inline base64 `content`). The bytes move out of `blobs` unless an
/// attachment in `later` names the same blob.
fn attachment(
    v: &serde_json::Value,
    blobs: &mut [Blob],
    later: &[serde_json::Value],
) -> Result<Attachment, ComposeError> {
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    let content = match field("sha256") {
        Some(sha) => {
            let again = later
                .iter()
                .any(|l| l.get("sha256").and_then(|x| x.as_str()) == Some(sha.as_str()));
            blobs.iter_mut().find(|b| b.sha256 == sha).map(|b| {
                if again {
                    b.content.clone()
                } else {
                    std::mem::take(&mut b.content)
                }
            })
        }
        None => field("content").and_then(|c| STANDARD.decode(c).ok()),
    }
    .ok_or_else(|| ComposeError("a stored attachment is unreadable".into()))?;
    Ok(Attachment {
        filename: field("filename").unwrap_or_else(|| "attachment".into()),
        content_type: field("contentType").unwrap_or_else(|| "application/octet-stream".into()),
        content,
        content_id: field("contentId")
            .filter(|_| field("disposition").as_deref() == Some("inline")),
    })
}
