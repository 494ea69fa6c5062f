//! `EmailAddress`: a trimmed, lower-cased address that passed syntax checks. Once a value of
//! this type exists it is safe to put in a header (no CR, LF or other control characters).
//!
//! International addresses: the domain may be given in Unicode (`user@bücher.example`); it is
//! stored as given (lower-cased) and must convert to IDNA A-labels. What goes on the wire
//! (SMTP envelope and headers) is [`with_ascii_domain`]'s form, `user@xn--bcher-kva.example`,
//! computed in this one place. A non-ASCII local part cannot be converted: it needs a relay
//! that offers SMTPUTF8 (RFC 6531).

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EmailAddress(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    #[error("email is required")]
    Empty,
    #[error("email is longer than 254 characters")]
    TooLong,
    #[error("email contains control characters or whitespace")]
    ControlCharacters,
    #[error("email is not a valid address")]
    Invalid,
}

impl EmailAddress {
    pub fn parse(raw: &str) -> Result<Self, EmailError> {
        let s = raw.trim();
        if s.is_empty() {
            return Err(EmailError::Empty);
        }
        if s.len() > 254 {
            return Err(EmailError::TooLong);
        }
        if s.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(EmailError::ControlCharacters);
        }
        let (local, domain) = s.rsplit_once('@').ok_or(EmailError::Invalid)?;
        if !valid_local(local) || !valid_domain(domain) || domain_to_ascii(domain).is_err() {
            return Err(EmailError::Invalid);
        }
        Ok(Self(s.to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn local_part(&self) -> &str {
        self.0.rsplit_once('@').map(|(l, _)| l).unwrap_or("")
    }

    pub fn domain(&self) -> &str {
        self.0.rsplit_once('@').map(|(_, d)| d).unwrap_or("")
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The address with its domain as IDNA A-labels: the form for SMTP and headers.
    pub fn ascii_domain_form(&self) -> String {
        with_ascii_domain(&self.0).unwrap_or_else(|_| self.0.clone())
    }

    /// True when the local part is not ASCII, so sending needs SMTPUTF8.
    pub fn needs_smtputf8(&self) -> bool {
        !self.local_part().is_ascii()
    }
}

/// `local@domain` with the domain converted to IDNA A-labels (`bücher.example` becomes
/// `xn--bcher-kva.example`); the local part is kept as given. An ASCII domain is returned
/// unchanged (also an address literal such as `[127.0.0.1]`).
pub fn with_ascii_domain(address: &str) -> Result<String, EmailError> {
    let (local, domain) = address.rsplit_once('@').ok_or(EmailError::Invalid)?;
    if domain.is_ascii() {
        return Ok(address.to_owned());
    }
    Ok(format!("{local}@{}", domain_to_ascii(domain)?))
}

/// A domain as IDNA A-labels (UTS 46, strict: letters, digits and hyphens, DNS lengths).
pub fn domain_to_ascii(domain: &str) -> Result<String, EmailError> {
    let ascii = idna::domain_to_ascii_strict(domain).map_err(|_| EmailError::Invalid)?;
    if valid_domain(&ascii) {
        Ok(ascii)
    } else {
        Err(EmailError::Invalid)
    }
}

impl fmt::Display for EmailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn valid_local(local: &str) -> bool {
    const SPECIALS: &str = "!#$%&'*+/=?^_`{|}~.-";
    !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || SPECIALS.contains(c))
}

/// A host name of at least two labels: letters, digits and hyphens, no label starting or
/// ending with a hyphen. Used for the domain of addresses and for sender domains.
pub fn valid_domain(domain: &str) -> bool {
    let domain = domain.strip_suffix('.').unwrap_or(domain);
    let labels: Vec<&str> = domain.split('.').collect();
    domain.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
        && labels
            .last()
            .is_some_and(|tld| !tld.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_and_lowercases() {
        let e = EmailAddress::parse("  Ada@Example.COM ").unwrap();
        assert_eq!(e.as_str(), "ada@example.com");
        assert_eq!(e.domain(), "example.com");
        assert_eq!(e.local_part(), "ada");
    }

    #[test]
    fn rejects_bad_addresses() {
        for bad in [
            "",
            "plain",
            "a@b",
            "a@@b.com",
            "a b@c.com",
            "a@b.com\r\nBcc: x@y.com",
            "a\n@b.com",
            ".a@b.com",
            "a..b@c.com",
            "a@-b.com",
            "a@b..com",
            "a@1.2.3.4",
        ] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn international_domains_become_a_labels() {
        let e = EmailAddress::parse("User@Bücher.Example").unwrap();
        assert_eq!(e.as_str(), "user@bücher.example");
        assert_eq!(e.ascii_domain_form(), "user@xn--bcher-kva.example");
        assert!(!e.needs_smtputf8());
        let e = EmailAddress::parse("josé@例え.テスト").unwrap();
        assert_eq!(e.ascii_domain_form(), "josé@xn--r8jz45g.xn--zckzah");
        assert!(e.needs_smtputf8());
        assert_eq!(with_ascii_domain("a@example.com").unwrap(), "a@example.com");
        assert_eq!(with_ascii_domain("a@[127.0.0.1]").unwrap(), "a@[127.0.0.1]");
        // A Unicode label that is not a valid IDN, or too long once converted.
        assert!(EmailAddress::parse("a@b\u{200d}c.example").is_err());
        assert!(EmailAddress::parse(&format!("a@{}.example", "ü".repeat(60))).is_err());
    }

    #[test]
    fn accepts_plus_and_subdomains() {
        for good in [
            "a+tag@mail.example.co.uk",
            "o'brien@example.ie",
            "x@xn--bcher-kva.example",
        ] {
            assert!(EmailAddress::parse(good).is_ok(), "{good:?} refused");
        }
    }
}
