//! Email verification rules (`POST /v1/verify`), with no I/O: what the address says about
//! itself ([`check_address`]) and the verdict once the domain's DNS facts are known
//! ([`verdict`]). The engine looks the DNS facts up and caches them; docs/verify.md defines
//! every field.
//!
//! Invariants:
//! - `valid` is exactly: the syntax is valid, the domain accepts mail (an MX record, or an A or
//!   AAAA record as the implicit MX of RFC 5321 §5.1, and no null MX of RFC 7505), and the
//!   domain is not disposable. Typos, role addresses and aliases are reported, not refused.
//! - `reasons` holds one human-readable sentence per problem found, in a fixed order (syntax,
//!   typo, disposable, DNS, role), and is empty when there is none.
//! - `isTypo` is true exactly when `suggestedEmail` is present.
//! - An address that fails the syntax check gets no DNS lookup and every other flag false.

mod lists;
mod typo;

use crate::email::{EmailAddress, domain_to_ascii};

/// What the address alone says: syntax and the list-based checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressChecks {
    /// The address lower-cased and trimmed when its syntax is valid, else the input trimmed.
    pub email: String,
    /// Why the syntax is invalid; `None` when it is valid.
    pub syntax_error: Option<String>,
    /// The domain as DNS names it (IDNA A-labels); `None` when the syntax is invalid.
    pub ascii_domain: Option<String>,
    pub is_disposable: bool,
    pub is_alias: bool,
    pub is_plus_addressed: bool,
    pub is_personal: bool,
    pub is_role: bool,
    /// The address the user probably meant, when the domain looks mistyped.
    pub suggested_email: Option<String>,
}

/// What DNS says about a domain (looked up by the engine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainFacts {
    /// The name answers at least one of A, AAAA, MX or NS.
    pub exists: bool,
    /// The domain has MX records other than a null MX.
    pub has_mx: bool,
    /// The domain's only MX is the null MX (`0 .`, RFC 7505): it accepts no mail.
    pub null_mx: bool,
    /// The domain itself has an A or AAAA record.
    pub has_address: bool,
    /// `www.<domain>` has an A or AAAA record (directly or through a CNAME).
    pub www_has_address: bool,
}

impl DomainFacts {
    /// RFC 5321 §5.1: mail goes to the MX hosts, or to the domain's own address when it has no
    /// MX at all; a null MX says the domain takes no mail.
    pub fn accepts_mail(&self) -> bool {
        !self.null_mx && (self.has_mx || self.has_address)
    }

    /// A web server's address is published for the domain or its `www` name.
    pub fn has_website(&self) -> bool {
        self.has_address || self.www_has_address
    }
}

/// The verification result (SPEC.md "Email verification result", plus `suggested_email`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verification {
    pub email: String,
    pub valid: bool,
    pub is_disposable: bool,
    pub is_alias: bool,
    pub is_typo: bool,
    pub is_plus_addressed: bool,
    pub is_personal_email: bool,
    pub domain_exists: bool,
    pub has_website: bool,
    pub has_mx_records: bool,
    pub reasons: Vec<String>,
    pub suggested_email: Option<String>,
}

/// Checks the syntax and everything the address alone tells.
pub fn check_address(raw: &str) -> AddressChecks {
    let address = EmailAddress::parse(raw);
    let ascii_domain = address
        .as_ref()
        .ok()
        .and_then(|a| domain_to_ascii(a.domain()).ok());
    let (address, domain) = match (address, ascii_domain) {
        (Ok(address), Some(domain)) => (address, domain),
        (result, _) => {
            let why = result.err().map_or_else(
                || "the domain is not a valid host name".to_owned(),
                |e| e.to_string(),
            );
            return AddressChecks {
                email: raw.trim().to_owned(),
                syntax_error: Some(why),
                ascii_domain: None,
                is_disposable: false,
                is_alias: false,
                is_plus_addressed: false,
                is_personal: false,
                is_role: false,
                suggested_email: None,
            };
        }
    };
    let local = address.local_part();
    let is_plus_addressed = local.find('+').is_some_and(|at| at > 0);
    let is_alias = is_plus_addressed
        || (lists::contains(lists::DOTLESS_PROVIDERS, &domain) && local.contains('.'))
        || lists::contains(lists::RELAY_DOMAINS, &domain);
    let mailbox = local.split('+').next().unwrap_or(local);
    AddressChecks {
        is_disposable: lists::is_disposable(&domain),
        is_alias,
        is_plus_addressed,
        is_personal: lists::contains(lists::PERSONAL_PROVIDERS, &domain),
        is_role: lists::ROLE_LOCAL_PARTS.contains(&mailbox),
        suggested_email: typo::corrected_domain(&domain).map(|d| format!("{local}@{d}")),
        email: address.into_string(),
        syntax_error: None,
        ascii_domain: Some(domain),
    }
}

/// The result for an address whose domain's DNS facts are `facts` (`None` when the syntax is
/// invalid and nothing was looked up).
pub fn verdict(checks: &AddressChecks, facts: Option<&DomainFacts>) -> Verification {
    let facts = facts.copied().unwrap_or_default();
    let domain = checks.ascii_domain.as_deref().unwrap_or("");
    let mut reasons = Vec::new();
    if let Some(why) = &checks.syntax_error {
        reasons.push(format!("The address is not valid: {why}"));
    }
    if let Some(suggested) = &checks.suggested_email {
        reasons.push(format!(
            "The domain looks like a typo: did you mean {suggested}?"
        ));
    }
    if checks.is_disposable {
        reasons.push(format!(
            "{domain} is a disposable (throwaway) email provider"
        ));
    }
    if checks.syntax_error.is_none() {
        if !facts.exists {
            reasons.push(format!("The domain {domain} does not exist"));
        } else if facts.null_mx {
            reasons.push(format!(
                "The domain {domain} publishes a null MX record: it accepts no email"
            ));
        } else if !facts.accepts_mail() {
            reasons.push(format!(
                "The domain {domain} has no MX or A record, so it cannot receive email"
            ));
        }
    }
    if checks.is_role {
        reasons.push("This is a role address (a team or system mailbox, not a person)".to_owned());
    }
    let has_mx_records = facts.exists && facts.accepts_mail();
    Verification {
        email: checks.email.clone(),
        valid: checks.syntax_error.is_none() && has_mx_records && !checks.is_disposable,
        is_disposable: checks.is_disposable,
        is_alias: checks.is_alias,
        is_typo: checks.suggested_email.is_some(),
        is_plus_addressed: checks.is_plus_addressed,
        is_personal_email: checks.is_personal,
        domain_exists: facts.exists,
        has_website: facts.exists && facts.has_website(),
        has_mx_records,
        reasons,
        suggested_email: checks.suggested_email.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIL: DomainFacts = DomainFacts {
        exists: true,
        has_mx: true,
        null_mx: false,
        has_address: true,
        www_has_address: true,
    };

    #[test]
    fn a_plain_address_at_a_mail_domain_is_valid_with_no_reasons() {
        let checks = check_address("  Ada@Example.COM ");
        assert_eq!(checks.email, "ada@example.com");
        let v = verdict(&checks, Some(&MAIL));
        assert!(v.valid && v.domain_exists && v.has_mx_records && v.has_website);
        assert!(!v.is_disposable && !v.is_alias && !v.is_typo && !v.is_personal_email);
        assert!(v.reasons.is_empty(), "{:?}", v.reasons);
        assert_eq!(v.suggested_email, None);
    }

    #[test]
    fn bad_syntax_is_one_reason_and_nothing_else() {
        let checks = check_address("not an address");
        assert!(checks.ascii_domain.is_none());
        let v = verdict(&checks, None);
        assert!(!v.valid && !v.domain_exists && !v.has_mx_records);
        assert_eq!(v.email, "not an address");
        assert_eq!(v.reasons.len(), 1);
        assert!(
            v.reasons[0].starts_with("The address is not valid"),
            "{v:?}"
        );
    }

    #[test]
    fn plus_addresses_gmail_dots_and_relays_are_aliases() {
        let plus = check_address("ada+news@example.com");
        assert!(plus.is_plus_addressed && plus.is_alias);
        let leading = check_address("+news@example.com");
        assert!(!leading.is_plus_addressed && !leading.is_alias);
        let dots = check_address("a.da@gmail.com");
        assert!(dots.is_alias && !dots.is_plus_addressed && dots.is_personal);
        let dots_elsewhere = check_address("a.da@example.com");
        assert!(!dots_elsewhere.is_alias);
        assert!(check_address("x1y2@privaterelay.appleid.com").is_alias);
    }

    #[test]
    fn role_addresses_are_reported_but_stay_valid() {
        for role in [
            "admin@example.com",
            "info+x@example.com",
            "NoReply@example.com",
        ] {
            let checks = check_address(role);
            assert!(checks.is_role, "{role}");
            let v = verdict(&checks, Some(&MAIL));
            assert!(v.valid, "{role}");
            assert_eq!(v.reasons.len(), 1, "{v:?}");
            assert!(v.reasons[0].contains("role address"));
        }
        assert!(!check_address("adam@example.com").is_role);
    }

    #[test]
    fn disposable_domains_are_invalid() {
        let checks = check_address("x@mailinator.com");
        let v = verdict(&checks, Some(&MAIL));
        assert!(v.is_disposable && !v.valid && v.has_mx_records);
        assert_eq!(
            v.reasons,
            ["mailinator.com is a disposable (throwaway) email provider"]
        );
    }

    #[test]
    fn typos_suggest_the_meant_address() {
        let v = verdict(&check_address("ada@gamil.com"), Some(&MAIL));
        assert!(v.is_typo && v.valid);
        assert_eq!(v.suggested_email.as_deref(), Some("ada@gmail.com"));
        assert!(
            v.reasons[0].contains("did you mean ada@gmail.com?"),
            "{v:?}"
        );
    }

    #[test]
    fn mail_falls_back_to_the_address_record_and_respects_a_null_mx() {
        let a_only = DomainFacts {
            has_mx: false,
            www_has_address: false,
            ..MAIL
        };
        let v = verdict(&check_address("a@example.com"), Some(&a_only));
        assert!(v.valid && v.has_mx_records && v.has_website);
        let null = DomainFacts {
            has_mx: false,
            null_mx: true,
            ..MAIL
        };
        let v = verdict(&check_address("a@example.com"), Some(&null));
        assert!(!v.valid && !v.has_mx_records && v.domain_exists);
        assert!(v.reasons[0].contains("null MX"), "{v:?}");
        let ns_only = DomainFacts {
            exists: true,
            ..DomainFacts::default()
        };
        let v = verdict(&check_address("a@example.com"), Some(&ns_only));
        assert!(!v.valid && !v.has_mx_records && !v.has_website && v.domain_exists);
        assert!(v.reasons[0].contains("no MX or A record"), "{v:?}");
        let v = verdict(
            &check_address("a@example.com"),
            Some(&DomainFacts::default()),
        );
        assert_eq!(v.reasons, ["The domain example.com does not exist"]);
    }

    #[test]
    fn international_domains_are_checked_in_their_ascii_form() {
        let checks = check_address("user@Bücher.example");
        assert_eq!(checks.email, "user@bücher.example");
        assert_eq!(
            checks.ascii_domain.as_deref(),
            Some("xn--bcher-kva.example")
        );
        // A trailing dot is refused as by every other endpoint, so no list sees one.
        assert!(check_address("x@mailinator.com.").syntax_error.is_some());
    }
}
