//! The timestamped HMAC signature of the inbound webhooks: the generic feedback format's
//! `Herald-Signature` and Stripe's `Stripe-Signature` are the same scheme,
//! `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
//!
//! Invariants: any of several `v1` values may match (secret rotation), each compared in
//! constant time; other schemes (`v0`) are ignored; a `t` more than [`TOLERANCE_SECS`] from
//! now is refused, so a captured request cannot be replayed later.

use crate::mac::{self, hmac_sha256};
use crate::time::Millis;

/// Seconds a signature's `t` may differ from now (Stripe's default tolerance).
pub const TOLERANCE_SECS: i64 = 300;

/// Why a signature was refused; each caller words it for its own header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Missing,
    Malformed,
    Stale,
    Mismatch,
}

/// The hex `v1` value a sender computes for `body` at `t`.
pub fn v1(secret: &[u8], t: i64, body: &[u8]) -> String {
    hex::encode(signed(secret, t, body))
}

/// Checks a header value against the raw body; returns the `v1` value that matched (lower-case
/// hex), which identifies the request for replay detection.
pub fn verify(
    header: Option<&str>,
    body: &[u8],
    secret: &[u8],
    now: Millis,
) -> Result<String, Fault> {
    let header = header.ok_or(Fault::Missing)?;
    let mut t: Option<i64> = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        let (k, v) = part.trim().split_once('=').ok_or(Fault::Malformed)?;
        match k.trim() {
            "t" => t = Some(v.trim().parse().map_err(|_| Fault::Malformed)?),
            "v1" => candidates.push(hex::decode(v.trim()).map_err(|_| Fault::Malformed)?),
            _ => {}
        }
    }
    let t = t.ok_or(Fault::Malformed)?;
    if candidates.is_empty() {
        return Err(Fault::Malformed);
    }
    if (now.div_euclid(1000) - t).abs() > TOLERANCE_SECS {
        return Err(Fault::Stale);
    }
    let expected = signed(secret, t, body);
    candidates
        .into_iter()
        .find(|c| mac::equal(c, &expected))
        .map(hex::encode)
        .ok_or(Fault::Mismatch)
}

/// The MAC of `"<t>.<body>"`.
fn signed(secret: &[u8], t: i64, body: &[u8]) -> [u8; mac::TAG_LEN] {
    hmac_sha256(secret, &[t.to_string().as_bytes(), b".", body])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_until_it_is_stale_or_altered() {
        let now = 1_700_000_000_000;
        let t = now / 1000;
        let header = format!("t={t},v0=zz,v1=00,v1={}", v1(b"k", t, b"body"));
        assert_eq!(
            verify(Some(&header), b"body", b"k", now),
            Ok(v1(b"k", t, b"body"))
        );
        assert_eq!(
            verify(Some(&header), b"other", b"k", now),
            Err(Fault::Mismatch)
        );
        let later = now + (TOLERANCE_SECS + 1) * 1000;
        assert_eq!(
            verify(Some(&header), b"body", b"k", later),
            Err(Fault::Stale)
        );
        assert_eq!(
            verify(Some("t=1"), b"body", b"k", now),
            Err(Fault::Malformed)
        );
        assert_eq!(
            verify(Some("v1=zz,t=1"), b"", b"k", now),
            Err(Fault::Malformed)
        );
        assert_eq!(verify(None, b"body", b"k", now), Err(Fault::Missing));
    }
}
