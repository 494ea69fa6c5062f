//! The tokens of the public links Herald puts in mail: the open pixel, click redirects and the
//! unsubscribe, subscribe and manage pages.
//!
//! Format: `base64url(ciphertext || tag)` without padding, where
//! - `payload = version (1) || kind || project id || message or contact id || rest`
//!   (`rest`: the URL of a click; the message id of a list page, when known);
//! - `tag = HMAC-SHA256(LinkSigning key, payload)` truncated to 16 bytes;
//! - `ciphertext = AES-256-CTR(LinkEncryption key, iv = tag, payload)`.
//!
//! Invariants:
//! - Both keys come from the server secret by HKDF ([`crate::secret`], their own salt and
//!   labels); the secret itself is never used.
//! - A key ring: the current secret's keys make every token; they and those of each retired
//!   secret ([`LinkTokens::with_retired`]) read them. So a rotated secret keeps the links in
//!   mail already sent working until the operator drops the retired secrets; dropped, their
//!   tokens are [`BadToken`] like any forgery.
//! - No id or URL is readable in a token, and none can be made or altered without the keys:
//!   [`LinkTokens::decode`] recomputes the tag over the decrypted payload and compares it in
//!   constant time; any mismatch, truncation or unknown kind is the one opaque [`BadToken`].
//! - Tokens are deterministic (the tag is the IV, a synthetic-IV construction): the same link
//!   of the same message always gets the same token, so composing a message again (a retry)
//!   gives the same bytes, and equal tokens reveal only that their payloads are equal.
//! - Decoding never panics and reads at most [`MAX_TOKEN_LEN`] characters.

use std::sync::Arc;

use aws_lc_rs::cipher::{
    AES_256, DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey,
};
use aws_lc_rs::iv::FixedLength;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::mac::{self, MacKey};
use crate::secret::{KeyPurpose, derive};

/// Longest token accepted (a click token grows with its URL).
pub const MAX_TOKEN_LEN: usize = 12 * 1024;
/// Longest URL a click token carries; a longer link is left as it is.
pub const MAX_URL_LEN: usize = 8 * 1024;

const VERSION: u8 = 1;
const TAG_LEN: usize = 16;
const HEAD_LEN: usize = 2 + 16 + 16;

/// Which list page a token opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListPage {
    Unsubscribe,
    Subscribe,
    Manage,
}

impl ListPage {
    /// The first segment of the page's path (`/unsubscribe/<token>`).
    pub fn path(self) -> &'static str {
        match self {
            ListPage::Unsubscribe => "unsubscribe",
            ListPage::Subscribe => "subscribe",
            ListPage::Manage => "manage",
        }
    }

    fn kind(self) -> u8 {
        match self {
            ListPage::Unsubscribe => 3,
            ListPage::Subscribe => 4,
            ListPage::Manage => 5,
        }
    }
}

/// What a token stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkToken {
    /// The open pixel of a message.
    Open { project_id: Uuid, message_id: Uuid },
    /// A tracked link of a message, with the URL it redirects to.
    Click {
        project_id: Uuid,
        message_id: Uuid,
        url: String,
    },
    /// A list page of a contact; `message_id` names the message the link came in, if any.
    Page {
        page: ListPage,
        project_id: Uuid,
        contact_id: Uuid,
        message_id: Option<Uuid>,
    },
}

/// A token that is malformed, altered, or made with another secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the link is invalid or has been altered")]
pub struct BadToken;

/// The keys of one secret.
struct Keys {
    mac: MacKey,
    encrypt: EncryptingKey,
    decrypt: DecryptingKey,
}

impl Keys {
    fn new(server_secret: &[u8]) -> Keys {
        let mac = derive(server_secret, KeyPurpose::LinkSigning);
        let cipher = derive(server_secret, KeyPurpose::LinkEncryption);
        let unbound = || UnboundCipherKey::new(&AES_256, &cipher.0);
        // A 32-byte key is always a valid AES-256 key, and AES-256 always supports CTR.
        #[allow(clippy::expect_used)]
        let (encrypt, decrypt) = (
            EncryptingKey::ctr(unbound().expect("AES-256 key")).expect("AES-256-CTR"),
            DecryptingKey::ctr(unbound().expect("AES-256 key")).expect("AES-256-CTR"),
        );
        Keys {
            mac: MacKey::new(&mac.0),
            encrypt,
            decrypt,
        }
    }

    fn tag(&self, payload: &[u8]) -> [u8; TAG_LEN] {
        let full = self.mac.sign(&[payload]);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// The payload of `sealed` (ciphertext) under the IV `tag`, if these keys made it.
    fn open(&self, sealed: &[u8], tag: [u8; TAG_LEN]) -> Option<Vec<u8>> {
        let mut raw = sealed.to_vec();
        let context = DecryptionContext::Iv128(FixedLength::from(tag));
        let payload = self.decrypt.decrypt(&mut raw, context).ok()?;
        mac::equal(&self.tag(payload), &tag).then(|| payload.to_vec())
    }
}

/// Makes and reads link tokens with keys derived from the server secret (and reads those of
/// retired secrets). Cheap to clone.
#[derive(Clone)]
pub struct LinkTokens {
    /// The current secret's keys first, then the retired secrets' in the order given.
    keys: Arc<Vec<Keys>>,
}

impl std::fmt::Debug for LinkTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkTokens(<redacted>)")
    }
}

impl LinkTokens {
    pub fn new(server_secret: &[u8]) -> Self {
        Self::with_retired(server_secret, &[] as &[&[u8]])
    }

    /// Tokens made with `server_secret`, read with it or any of `retired`.
    pub fn with_retired<S: AsRef<[u8]>>(server_secret: &[u8], retired: &[S]) -> Self {
        let mut keys = vec![Keys::new(server_secret)];
        keys.extend(
            retired
                .iter()
                .map(AsRef::as_ref)
                .filter(|r| *r != server_secret)
                .map(Keys::new),
        );
        Self {
            keys: Arc::new(keys),
        }
    }

    /// The current secret's keys (the ring is never empty).
    fn current(&self) -> &Keys {
        &self.keys[0]
    }

    /// The token of `link`.
    pub fn encode(&self, link: &LinkToken) -> String {
        let mut payload = serialize(link);
        let keys = self.current();
        let tag = keys.tag(&payload);
        // CTR accepts any length and a 16-byte IV; encryption cannot fail for these inputs.
        if keys
            .encrypt
            .less_safe_encrypt(
                &mut payload,
                EncryptionContext::Iv128(FixedLength::from(tag)),
            )
            .is_err()
        {
            unreachable!("AES-256-CTR encrypts any length");
        }
        payload.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(payload)
    }

    /// Reads a token; [`BadToken`] for anything this server did not make.
    pub fn decode(&self, token: &str) -> Result<LinkToken, BadToken> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(BadToken);
        }
        let mut raw = URL_SAFE_NO_PAD
            .decode(token.trim().as_bytes())
            .map_err(|_| BadToken)?;
        if raw.len() < HEAD_LEN + TAG_LEN {
            return Err(BadToken);
        }
        let tag_bytes = raw.split_off(raw.len() - TAG_LEN);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&tag_bytes);
        let payload = self
            .keys
            .iter()
            .find_map(|k| k.open(&raw, tag))
            .ok_or(BadToken)?;
        parse(&payload)
    }
}

fn serialize(link: &LinkToken) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD_LEN + 16);
    let mut head = |kind: u8, project: &Uuid, id: &Uuid| {
        out.push(VERSION);
        out.push(kind);
        out.extend_from_slice(project.as_bytes());
        out.extend_from_slice(id.as_bytes());
    };
    match link {
        LinkToken::Open {
            project_id,
            message_id,
        } => head(1, project_id, message_id),
        LinkToken::Click {
            project_id,
            message_id,
            url,
        } => {
            head(2, project_id, message_id);
            out.extend_from_slice(url.as_bytes());
        }
        LinkToken::Page {
            page,
            project_id,
            contact_id,
            message_id,
        } => {
            head(page.kind(), project_id, contact_id);
            if let Some(m) = message_id {
                out.extend_from_slice(m.as_bytes());
            }
        }
    }
    out
}

fn uuid_at(bytes: &[u8], at: usize) -> Result<Uuid, BadToken> {
    bytes
        .get(at..at + 16)
        .and_then(|b| Uuid::from_slice(b).ok())
        .ok_or(BadToken)
}

fn parse(p: &[u8]) -> Result<LinkToken, BadToken> {
    if p.first() != Some(&VERSION) {
        return Err(BadToken);
    }
    let project_id = uuid_at(p, 2)?;
    let id = uuid_at(p, 18)?;
    let rest = &p[HEAD_LEN..];
    let page = |page: ListPage| -> Result<LinkToken, BadToken> {
        let message_id = match rest.len() {
            0 => None,
            16 => Some(uuid_at(rest, 0)?),
            _ => return Err(BadToken),
        };
        Ok(LinkToken::Page {
            page,
            project_id,
            contact_id: id,
            message_id,
        })
    };
    match p[1] {
        1 if rest.is_empty() => Ok(LinkToken::Open {
            project_id,
            message_id: id,
        }),
        2 => Ok(LinkToken::Click {
            project_id,
            message_id: id,
            url: String::from_utf8(rest.to_vec()).map_err(|_| BadToken)?,
        }),
        3 => page(ListPage::Unsubscribe),
        4 => page(ListPage::Subscribe),
        5 => page(ListPage::Manage),
        _ => Err(BadToken),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECRET: &[u8] = b"test-secret-test-secret-test-secret-0123";

    fn samples() -> Vec<LinkToken> {
        let (p, m, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        vec![
            LinkToken::Open {
                project_id: p,
                message_id: m,
            },
            LinkToken::Click {
                project_id: p,
                message_id: m,
                url: "https://example.com/a?b=c&d=é#x".into(),
            },
            LinkToken::Page {
                page: ListPage::Unsubscribe,
                project_id: p,
                contact_id: c,
                message_id: Some(m),
            },
            LinkToken::Page {
                page: ListPage::Manage,
                project_id: p,
                contact_id: c,
                message_id: None,
            },
            LinkToken::Page {
                page: ListPage::Subscribe,
                project_id: p,
                contact_id: c,
                message_id: None,
            },
        ]
    }

    #[test]
    fn round_trips_and_is_deterministic() {
        let t = LinkTokens::new(SECRET);
        for link in samples() {
            let token = t.encode(&link);
            assert_eq!(t.decode(&token), Ok(link.clone()));
            assert_eq!(token, t.encode(&link), "deterministic");
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{token}"
            );
        }
    }

    #[test]
    fn ids_and_urls_are_not_readable() {
        let t = LinkTokens::new(SECRET);
        for link in samples() {
            let raw = URL_SAFE_NO_PAD.decode(t.encode(&link)).expect("base64");
            let (project_id, id) = match &link {
                LinkToken::Open {
                    project_id,
                    message_id,
                }
                | LinkToken::Click {
                    project_id,
                    message_id,
                    ..
                } => (*project_id, *message_id),
                LinkToken::Page {
                    project_id,
                    contact_id,
                    ..
                } => (*project_id, *contact_id),
            };
            for needle in [
                project_id.as_bytes().as_slice(),
                id.as_bytes().as_slice(),
                b"example.com".as_slice(),
            ] {
                assert!(!raw.windows(needle.len()).any(|w| w == needle));
            }
        }
    }

    #[test]
    fn tampering_truncation_and_other_secrets_are_refused() {
        let t = LinkTokens::new(SECRET);
        let other = LinkTokens::new(b"another secret, another server..........");
        for link in samples() {
            let token = t.encode(&link);
            assert_eq!(other.decode(&token), Err(BadToken));
            let raw = URL_SAFE_NO_PAD.decode(&token).expect("base64");
            for i in 0..raw.len() {
                let mut bad = raw.clone();
                bad[i] ^= 0x01;
                assert_eq!(
                    t.decode(&URL_SAFE_NO_PAD.encode(&bad)),
                    Err(BadToken),
                    "byte {i}"
                );
            }
            assert_eq!(t.decode(&token[..token.len() - 2]), Err(BadToken));
            assert_eq!(t.decode(&format!("{token}A")), Err(BadToken));
        }
        for junk in [
            "",
            "x",
            "!!!!",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(t.decode(junk), Err(BadToken));
        }
        assert_eq!(t.decode(&"A".repeat(MAX_TOKEN_LEN + 1)), Err(BadToken));
    }

    #[test]
    fn a_ring_signs_with_the_newest_and_reads_with_all_until_dropped() {
        const NEW: &[u8] = b"the secret after the rotation, 0123456789";
        let before = LinkTokens::new(SECRET);
        let ring = LinkTokens::with_retired(NEW, &[SECRET]);
        let dropped = LinkTokens::new(NEW);
        for link in samples() {
            let old_token = before.encode(&link);
            assert_eq!(ring.decode(&old_token), Ok(link.clone()), "retired reads");
            assert_eq!(dropped.decode(&old_token), Err(BadToken), "dropped refuses");
            let new_token = ring.encode(&link);
            assert_ne!(new_token, old_token, "the newest secret signs");
            assert_eq!(dropped.decode(&new_token), Ok(link.clone()));
            assert_eq!(before.decode(&new_token), Err(BadToken));
        }
        // The current secret listed as retired too changes nothing.
        let same = LinkTokens::with_retired(NEW, &[NEW]);
        assert_eq!(same.keys.len(), 1);
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_text_never_panics(s in ".{0,200}") {
            let t = LinkTokens::new(SECRET);
            let _ = t.decode(&s);
        }

        #[test]
        fn any_url_round_trips(url in ".{0,300}") {
            let t = LinkTokens::new(SECRET);
            let link = LinkToken::Click { project_id: Uuid::nil(), message_id: Uuid::max(), url };
            prop_assert_eq!(t.decode(&t.encode(&link)), Ok(link));
        }
    }
}
