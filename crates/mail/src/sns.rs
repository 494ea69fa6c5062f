//! Amazon SNS messages (how Amazon SES reports bounces, complaints and deliveries): parsing,
//! the rules for the URLs they name, and signature verification. No I/O: fetching the
//! certificate and confirming subscriptions is the engine's.
//!
//! Invariants:
//! - A `SigningCertURL` is used only when it is `https://sns.<region>.amazonaws.com/<...>.pem`
//!   (or `.amazonaws.com.cn`), no user info, no port but 443; a `SubscribeURL` only with the
//!   same host rule. Anything else is refused before any request is made.
//! - `SignatureVersion` 1 is SHA1withRSA and 2 SHA256withRSA over the canonical string of the
//!   message's type (AWS "Verifying the signatures of Amazon SNS messages"); any other version,
//!   a signature that is not base64, or a key that is not RSA is refused.
//! - [`SnsMessage::prepare`] does every check that needs no certificate (version, canonical
//!   string, base64), so a caller refuses such messages before fetching anything.

use pki_types::pem::PemObject;
use pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, SignatureVerificationAlgorithm,
};
use serde::Deserialize;

/// An SNS HTTP(S) message as posted to a subscribed endpoint.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SnsMessage {
    #[serde(rename = "Type")]
    pub kind: String,
    pub message_id: String,
    pub topic_arn: String,
    pub message: String,
    pub timestamp: String,
    pub signature_version: String,
    pub signature: String,
    #[serde(rename = "SigningCertURL", alias = "SigningCertUrl")]
    pub signing_cert_url: String,
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default, rename = "SubscribeURL", alias = "SubscribeUrl")]
    pub subscribe_url: Option<String>,
}

/// Why an SNS message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnsError {
    #[error("the SNS message is not valid JSON of the SNS format: {0}")]
    Malformed(String),
    #[error("the URL {0:?} is not an Amazon SNS URL (https://sns.<region>.amazonaws.com/...)")]
    ForeignUrl(String),
    #[error("SNS SignatureVersion {0:?} is not supported (1 or 2)")]
    UnsupportedVersion(String),
    #[error("the SNS signature does not verify against the signing certificate")]
    BadSignature,
    #[error("the SNS signing certificate cannot be read: {0}")]
    BadCertificate(String),
}

impl SnsMessage {
    pub fn parse(body: &[u8]) -> Result<Self, SnsError> {
        serde_json::from_slice(body).map_err(|e| SnsError::Malformed(e.to_string()))
    }

    /// The canonical string SNS signs for this message type.
    pub fn string_to_sign(&self) -> Result<String, SnsError> {
        let mut out = String::new();
        let mut add = |k: &str, v: &str| {
            out.push_str(k);
            out.push('\n');
            out.push_str(v);
            out.push('\n');
        };
        match self.kind.as_str() {
            "Notification" => {
                add("Message", &self.message);
                add("MessageId", &self.message_id);
                if let Some(s) = &self.subject {
                    add("Subject", s);
                }
                add("Timestamp", &self.timestamp);
                add("TopicArn", &self.topic_arn);
                add("Type", &self.kind);
            }
            "SubscriptionConfirmation" | "UnsubscribeConfirmation" => {
                let missing = |f: &str| SnsError::Malformed(format!("{f} is missing"));
                add("Message", &self.message);
                add("MessageId", &self.message_id);
                add(
                    "SubscribeURL",
                    self.subscribe_url
                        .as_deref()
                        .ok_or_else(|| missing("SubscribeURL"))?,
                );
                add("Timestamp", &self.timestamp);
                add(
                    "Token",
                    self.token.as_deref().ok_or_else(|| missing("Token"))?,
                );
                add("TopicArn", &self.topic_arn);
                add("Type", &self.kind);
            }
            other => return Err(SnsError::Malformed(format!("unknown Type {other:?}"))),
        }
        Ok(out)
    }

    /// Everything that can be checked without the certificate: a known `SignatureVersion`,
    /// a canonical string for the message's type (its required fields present), and a base64
    /// signature. The caller runs this before fetching anything.
    pub fn prepare(&self) -> Result<Signed, SnsError> {
        let sha256 = match self.signature_version.as_str() {
            "1" => false,
            "2" => true,
            v => {
                return Err(SnsError::UnsupportedVersion(
                    v.chars().take(20).collect::<String>(),
                ));
            }
        };
        let canonical = self.string_to_sign()?;
        use base64::Engine as _;
        let signature = base64::engine::general_purpose::STANDARD
            .decode(self.signature.trim())
            .map_err(|_| SnsError::BadSignature)?;
        Ok(Signed {
            alg: RsaPkcs1 { sha256 },
            canonical,
            signature,
        })
    }

    /// Verifies the signature with the certificate (DER) fetched from `SigningCertURL`.
    pub fn verify(&self, cert_der: &[u8]) -> Result<(), SnsError> {
        self.prepare()?.verify(cert_der)
    }
}

/// A message whose cheap checks passed ([`SnsMessage::prepare`]): what remains is the
/// signature against the certificate.
#[derive(Debug)]
pub struct Signed {
    alg: RsaPkcs1,
    canonical: String,
    signature: Vec<u8>,
}

impl Signed {
    /// Verifies the signature with the certificate (DER) fetched from `SigningCertURL`.
    pub fn verify(&self, cert_der: &[u8]) -> Result<(), SnsError> {
        let der = CertificateDer::from(cert_der);
        let cert = webpki::EndEntityCert::try_from(&der)
            .map_err(|e| SnsError::BadCertificate(format!("{e:?}")))?;
        cert.verify_signature(&self.alg, self.canonical.as_bytes(), &self.signature)
            .map_err(|_| SnsError::BadSignature)
    }
}

/// The first certificate of a PEM file, as DER.
pub fn pem_certificate(pem: &[u8]) -> Result<Vec<u8>, SnsError> {
    CertificateDer::from_pem_slice(pem)
        .map(|c| c.as_ref().to_vec())
        .map_err(|e| SnsError::BadCertificate(format!("{e:?}")))
}

/// Whether `host` is an SNS endpoint: `sns.<region>.amazonaws.com(.cn)`.
fn sns_host(host: &str) -> bool {
    let Some(rest) = host.strip_prefix("sns.") else {
        return false;
    };
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"));
    region.is_some_and(|r| {
        !r.is_empty()
            && r.len() <= 32
            && r.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

/// A URL SNS names that Herald may request: https on an SNS host (default port, no user
/// info); `pem` additionally requires a path ending in `.pem`.
pub fn allowed_sns_url(raw: &str, pem: bool) -> Result<url::Url, SnsError> {
    let foreign = || SnsError::ForeignUrl(raw.chars().take(200).collect());
    let url = url::Url::parse(raw).map_err(|_| foreign())?;
    let ok = url.scheme() == "https"
        && url.username().is_empty()
        && url.password().is_none()
        && url.port().is_none()
        && url.host_str().is_some_and(sns_host)
        && (!pem || url.path().ends_with(".pem"));
    if ok { Ok(url) } else { Err(foreign()) }
}

/// RSA PKCS#1 v1.5 verification with SHA-1 (SNS version 1) or SHA-256 (version 2), through
/// aws-lc-rs; plugged into webpki, which parses the certificate and its key.
#[derive(Debug)]
struct RsaPkcs1 {
    sha256: bool,
}

impl SignatureVerificationAlgorithm for RsaPkcs1 {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        pki_types::alg_id::RSA_ENCRYPTION
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        pki_types::alg_id::RSA_PKCS1_SHA256
    }

    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        use aws_lc_rs::signature;
        let params = if self.sha256 {
            &signature::RSA_PKCS1_2048_8192_SHA256
        } else {
            &signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY
        };
        signature::UnparsedPublicKey::new(params, public_key)
            .verify(message, signature)
            .map_err(|_| InvalidSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sns_hosts_are_allowed() {
        for ok in [
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
            "https://sns.cn-north-1.amazonaws.com.cn/x.pem",
        ] {
            assert!(allowed_sns_url(ok, true).is_ok(), "{ok}");
        }
        for bad in [
            "http://sns.us-east-1.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com.evil.test/x.pem",
            "https://evil.test/sns.us-east-1.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com@evil.test/x.pem",
            "https://user@sns.us-east-1.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com:8443/x.pem",
            "https://sqs.us-east-1.amazonaws.com/x.pem",
            "https://sns.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com/x.txt",
            "https://sns.US_EAST.amazonaws.com/x.pem",
            "not a url",
        ] {
            assert!(allowed_sns_url(bad, true).is_err(), "{bad}");
        }
        assert!(
            allowed_sns_url(
                "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=x",
                false
            )
            .is_ok()
        );
    }

    #[test]
    fn canonical_strings_follow_the_message_type() {
        let mut m = SnsMessage {
            kind: "Notification".into(),
            message_id: "id".into(),
            topic_arn: "arn".into(),
            message: "hello".into(),
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            signature_version: "1".into(),
            signature: String::new(),
            signing_cert_url: String::new(),
            subject: None,
            token: None,
            subscribe_url: None,
        };
        assert_eq!(
            m.string_to_sign().ok().as_deref(),
            Some(
                "Message\nhello\nMessageId\nid\nTimestamp\n2026-01-01T00:00:00.000Z\nTopicArn\narn\nType\nNotification\n"
            )
        );
        m.kind = "SubscriptionConfirmation".into();
        assert!(
            m.string_to_sign().is_err(),
            "Token and SubscribeURL are required"
        );
        m.token = Some("t".into());
        m.subscribe_url = Some("u".into());
        assert!(
            m.string_to_sign()
                .is_ok_and(|s| s.contains("SubscribeURL\nu\n") && s.contains("Token\nt\n"))
        );
        assert!(matches!(
            m.verify(b"junk"),
            Err(SnsError::BadCertificate(_))
        ));
        m.signature_version = "3".into();
        assert!(matches!(
            m.verify(b"junk"),
            Err(SnsError::UnsupportedVersion(_))
        ));
    }
}
