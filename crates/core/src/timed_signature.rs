//! The timestamped HMAC signature of the inbound webhooks: the generic feedback format's
//! `Herald-Signature` and Stripe's `Stripe-Signature` are the same scheme,
//! `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
//!
//! Invariants: any of several `v1` values may match (secret rotation), each compared in
//! constant time; other schemes (`v0`) are ignored; a `t` more than [`TOLERANCE_SECS`] from
//! now is refused, so a captured request cannot be replayed later.

use hmac::{Hmac, Mac};
use sha2::Sha256;

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
    keyed(secret, t, body)
        .map(|mac| hex_lower(&mac.finalize().into_bytes()))
        .unwrap_or_default()
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
            "v1" => candidates.push(unhex(v.trim()).ok_or(Fault::Malformed)?),
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
    for c in candidates {
        let mac = keyed(secret, t, body).ok_or(Fault::Mismatch)?;
        if mac.verify_slice(&c).is_ok() {
            return Ok(hex_lower(&c));
        }
    }
    Err(Fault::Mismatch)
}

/// The MAC of `"<t>.<body>"` (HMAC takes keys of any length, so this is always `Some`).
fn keyed(secret: &[u8], t: i64, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).ok()?;
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(mac)
}

fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
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
