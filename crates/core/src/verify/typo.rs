//! Typo detection: is a domain one or two keystrokes away from a common provider or a common
//! top-level domain? Distances are Damerau-Levenshtein (a swap of two neighbours is one edit,
//! so `gmial` is one edit from `gmail`).
//!
//! Invariants:
//! - A personal provider's own domain is never a typo (`ymail.com` is not `gmail.com`).
//! - A top-level domain delegated in the root zone is never corrected (`.co` stays `.co`); an
//!   unknown one (`.con`) is corrected to the common TLD one edit away, if any.
//! - A domain is corrected to a provider at most one edit away (two for domains of ten or
//!   more characters), and only to providers whose name has five or more letters.

use strsim::damerau_levenshtein;

use super::lists::{self, COMMON_TLDS, PERSONAL_PROVIDERS, TYPO_PROVIDERS};

/// Domains shorter than this may be one edit from a provider; longer ones two.
const LONG_DOMAIN: usize = 10;

/// The domain the user probably meant, when `domain` (ASCII, lower-case) looks mistyped.
pub fn corrected_domain(domain: &str) -> Option<String> {
    if lists::contains(PERSONAL_PROVIDERS, domain) {
        return None;
    }
    let fixed_tld = fix_tld(domain);
    let candidate = fixed_tld.as_deref().unwrap_or(domain);
    if lists::contains(PERSONAL_PROVIDERS, candidate) {
        return fixed_tld;
    }
    match nearest_provider(candidate) {
        Some(provider) => Some(provider.to_owned()),
        None => fixed_tld,
    }
}

/// `domain` with its top-level domain corrected, when that TLD does not exist and a common one
/// is one edit away.
fn fix_tld(domain: &str) -> Option<String> {
    let (name, tld) = domain.rsplit_once('.')?;
    if lists::is_known_tld(tld) {
        return None;
    }
    let (_, best) = COMMON_TLDS
        .iter()
        .map(|common| (damerau_levenshtein(tld, common), *common))
        .filter(|(distance, _)| *distance == 1)
        .min_by_key(|(distance, _)| *distance)?;
    Some(format!("{name}.{best}"))
}

/// The closest common provider within the allowed distance (the first of equals).
fn nearest_provider(domain: &str) -> Option<&'static str> {
    let limit = if domain.len() < LONG_DOMAIN { 1 } else { 2 };
    TYPO_PROVIDERS
        .iter()
        .map(|provider| (damerau_levenshtein(domain, provider), *provider))
        .filter(|(distance, _)| (1..=limit).contains(distance))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, provider)| provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_and_tlds_one_edit_away_are_corrected() {
        for (typed, meant) in [
            ("gmial.com", "gmail.com"),
            ("gmail.con", "gmail.com"),
            ("gmial.con", "gmail.com"),
            ("gmai.com", "gmail.com"),
            ("gmail.co", "gmail.com"),
            ("yahooo.com", "yahoo.com"),
            ("hotmial.com", "hotmail.com"),
            ("hotmial.con", "hotmail.com"),
            ("outlok.com", "outlook.com"),
            ("icloud.cmo", "icloud.com"),
            ("example.con", "example.com"),
            ("example.ocm", "example.com"),
            ("example.nte", "example.net"),
        ] {
            assert_eq!(corrected_domain(typed).as_deref(), Some(meant), "{typed}");
        }
    }

    #[test]
    fn intended_domains_are_left_alone() {
        for domain in [
            "gmail.com",
            "ymail.com",
            "mail.com",
            "email.com",
            "gmx.de",
            "web.de",
            "aol.com",
            "example.co",
            "example.com",
            "example.new",
            "company.io",
            "herald.test",
            "xn--bcher-kva.example",
        ] {
            assert_eq!(corrected_domain(domain), None, "{domain}");
        }
    }
}
