//! The connection's bytes, with one change: a response that hyper writes itself gets the
//! error envelope and `X-Request-Id`, like every response of the service.
//!
//! hyper answers some requests without ever calling the service: 400 for a request it cannot
//! parse (a NUL or another invalid byte in a header, a bad request line), 414 for a URI over
//! its fixed 64 KiB limit, 431 for too many or too large headers. None of these can be
//! configured away (the URI limit is a constant), and hyper offers no hook for them, so this
//! wrapper recognises such a response on its way out and writes the envelope instead.
//!
//! Why this is safe: the recognised shape is exact and only hyper produces it. It is a
//! response head at the start of a write, status 400 or above, `content-length: 0`, and no
//! `x-request-id` header; every response of the service passes through the envelope
//! middleware, which always adds `x-request-id`. hyper writes such a response in one buffer
//! (this wrapper does not claim vectored writes, so hyper flattens head and body) and then
//! closes the connection, so nothing follows it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct EnvelopeIo<T> {
    inner: T,
    /// The replacement still to be written, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<T> EnvelopeIo<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            pending: None,
        }
    }
}

impl<T: AsyncWrite + Unpin> EnvelopeIo<T> {
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, done)) = &mut self.pending {
            if *done == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *done += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for EnvelopeIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for EnvelopeIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        if let Some((head_len, replacement)) = replace_bare_error(buf) {
            this.pending = Some((replacement, 0));
            // The replacement is buffered; what is left goes out on the next write or flush.
            let _ = this.poll_drain(cx)?;
            return Poll::Ready(Ok(head_len));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// For a bare error response of hyper's at the start of `buf`: its length and the envelope
/// response to write instead.
fn replace_bare_error(buf: &[u8]) -> Option<(usize, Vec<u8>)> {
    let rest = buf
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| buf.strip_prefix(b"HTTP/1.0 "))?;
    let status: u16 = std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok()?;
    let status = StatusCode::from_u16(status).ok()?;
    if status.as_u16() < 400 {
        return None;
    }
    let head_len = find(buf, b"\r\n\r\n")? + 4;
    let original = String::from_utf8_lossy(&buf[..head_len]);
    let head = original.to_ascii_lowercase();
    if head.contains("\r\nx-request-id:") || !head.contains("\r\ncontent-length: 0\r\n") {
        return None;
    }
    let (code, message) = match status {
        StatusCode::URI_TOO_LONG => (
            "URI_TOO_LONG",
            "The request URI is longer than this server accepts (64 KiB)",
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            "HEADERS_TOO_LARGE",
            "The request has too many headers, or headers too large",
        ),
        StatusCode::BAD_REQUEST => (
            "BAD_REQUEST",
            "The request could not be parsed: a malformed request line or header (such as a NUL or control byte in a header)",
        ),
        _ => ("BAD_REQUEST", "The request could not be handled"),
    };
    let request_id = uuid::Uuid::now_v7().to_string();
    let body = herald_api::envelope::error_json(status, code, message, &request_id);
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    // Keep hyper's other headers (date), replace the length, add ours.
    for line in original.split("\r\n").skip(1).filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if !lower.starts_with("content-length:") && !lower.starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\nx-request-id: {request_id}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    tracing::info!(
        status = status.as_u16(),
        request_id,
        "refused a request hyper could not parse"
    );
    Some((head_len, out.into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bare_error_heads_are_replaced() {
        let bare = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 16:00:00 GMT\r\n\r\n";
        let (len, out) = replace_bare_error(bare).expect("replaced");
        assert_eq!(len, bare.len());
        let out = String::from_utf8(out).expect("utf-8");
        assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{out}");
        assert!(out.contains("\r\nx-request-id: "), "{out}");
        assert!(out.contains("\r\ndate: Mon, 23 Nov 2026"), "{out}");
        assert!(out.contains("\"URI_TOO_LONG\""), "{out}");
        let served = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nx-request-id: x\r\n\r\n";
        assert!(replace_bare_error(served).is_none());
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert!(replace_bare_error(ok).is_none());
        let cont = b"HTTP/1.1 100 Continue\r\n\r\n";
        assert!(replace_bare_error(cont).is_none());
        assert!(replace_bare_error(b"{\"HTTP/1.1 400\"}").is_none());
    }
}
