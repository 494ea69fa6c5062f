//! The lists behind the address checks: disposable domains and IANA's top-level domains (data
//! files shipped in the binary, `crates/core/data/`, see docs/verify.md for updating them),
//! and the short hand-kept lists of personal mailbox providers, relay (alias) services and
//! role mailboxes.
//!
//! Every entry is lower-case ASCII; domains are compared in their ASCII (A-label) form.

use std::collections::HashSet;
use std::sync::OnceLock;

/// disposable-email-domains/disposable-email-domains, `disposable_email_blocklist.conf`.
const DISPOSABLE_DATA: &str = include_str!("../../data/disposable_domains.txt");
/// IANA's `tlds-alpha-by-domain.txt`.
const TLD_DATA: &str = include_str!("../../data/tlds-alpha-by-domain.txt");

/// Consumer mailbox providers: an address there belongs to a person, not an organisation.
pub const PERSONAL_PROVIDERS: &[&str] = &[
    "gmail.com",
    "googlemail.com",
    "outlook.com",
    "outlook.de",
    "outlook.fr",
    "outlook.es",
    "outlook.it",
    "hotmail.com",
    "hotmail.co.uk",
    "hotmail.de",
    "hotmail.fr",
    "hotmail.es",
    "hotmail.it",
    "live.com",
    "live.co.uk",
    "live.de",
    "live.fr",
    "msn.com",
    "yahoo.com",
    "yahoo.co.uk",
    "yahoo.de",
    "yahoo.fr",
    "yahoo.es",
    "yahoo.it",
    "yahoo.co.jp",
    "ymail.com",
    "rocketmail.com",
    "icloud.com",
    "me.com",
    "mac.com",
    "aol.com",
    "proton.me",
    "protonmail.com",
    "protonmail.ch",
    "pm.me",
    "gmx.com",
    "gmx.de",
    "gmx.net",
    "gmx.at",
    "gmx.ch",
    "web.de",
    "mail.com",
    "email.com",
    "t-online.de",
    "freenet.de",
    "posteo.de",
    "mailbox.org",
    "orange.fr",
    "free.fr",
    "laposte.net",
    "sfr.fr",
    "libero.it",
    "virgilio.it",
    "tutanota.com",
    "tutanota.de",
    "tuta.io",
    "fastmail.com",
    "hey.com",
    "zoho.com",
    "yandex.com",
    "yandex.ru",
    "mail.ru",
    "bk.ru",
    "inbox.ru",
    "list.ru",
    "rambler.ru",
    "qq.com",
    "163.com",
    "126.com",
    "naver.com",
    "daum.net",
    "seznam.cz",
    "wp.pl",
    "o2.pl",
    "interia.pl",
    "comcast.net",
    "verizon.net",
    "att.net",
    "sbcglobal.net",
    "btinternet.com",
    "sky.com",
    "rediffmail.com",
];

/// Providers that typo detection compares against, most used first (a tie goes to the first).
/// Only names of five or more letters: one edit away from a short name (`aol`, `gmx`) is
/// too often another real domain.
pub const TYPO_PROVIDERS: &[&str] = &[
    "gmail.com",
    "yahoo.com",
    "hotmail.com",
    "outlook.com",
    "icloud.com",
    "googlemail.com",
    "protonmail.com",
    "hotmail.co.uk",
    "yahoo.co.uk",
    "ymail.com",
    "comcast.net",
    "verizon.net",
    "t-online.de",
    "freenet.de",
    "orange.fr",
    "libero.it",
    "yandex.ru",
    "rocketmail.com",
    "fastmail.com",
    "tutanota.com",
];

/// Top-level domains a mistyped one is compared against, most used first.
pub const COMMON_TLDS: &[&str] = &[
    "com", "net", "org", "de", "uk", "fr", "it", "es", "nl", "io", "co", "edu", "gov", "info",
    "ru", "ca", "au", "ch", "at", "be", "pl", "se", "jp", "br", "in",
];

/// Domains of relay services that hand out forwarding aliases of a real mailbox (Apple Hide My
/// Email, Firefox Relay, DuckDuckGo Email Protection, SimpleLogin, addy.io, Proton Pass).
pub const RELAY_DOMAINS: &[&str] = &[
    "privaterelay.appleid.com",
    "mozmail.com",
    "duck.com",
    "simplelogin.com",
    "simplelogin.fr",
    "aleeas.com",
    "slmail.me",
    "anonaddy.com",
    "anonaddy.me",
    "addy.io",
    "passmail.net",
    "passinbox.com",
];

/// Providers that ignore dots in the local part (`a.b@gmail.com` is `ab@gmail.com`).
pub const DOTLESS_PROVIDERS: &[&str] = &["gmail.com", "googlemail.com"];

/// Local parts of mailboxes that belong to a function or a team rather than a person.
pub const ROLE_LOCAL_PARTS: &[&str] = &[
    "abuse",
    "accounting",
    "accounts",
    "admin",
    "administrator",
    "alerts",
    "billing",
    "careers",
    "contact",
    "do-not-reply",
    "donotreply",
    "enquiries",
    "feedback",
    "help",
    "helpdesk",
    "hostmaster",
    "hr",
    "info",
    "inquiries",
    "jobs",
    "legal",
    "mailer-daemon",
    "marketing",
    "media",
    "newsletter",
    "no-reply",
    "no_reply",
    "noreply",
    "notifications",
    "office",
    "postmaster",
    "press",
    "privacy",
    "root",
    "sales",
    "security",
    "service",
    "support",
    "sysadmin",
    "team",
    "webmaster",
];

fn parse_list(data: &'static str) -> HashSet<String> {
    data.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// The disposable domains, parsed on first use.
fn disposable() -> &'static HashSet<String> {
    static SET: OnceLock<HashSet<String>> = OnceLock::new();
    SET.get_or_init(|| parse_list(DISPOSABLE_DATA))
}

/// IANA's top-level domains, parsed on first use.
fn tlds() -> &'static HashSet<String> {
    static SET: OnceLock<HashSet<String>> = OnceLock::new();
    SET.get_or_init(|| parse_list(TLD_DATA))
}

/// True when `domain` (ASCII, lower-case) or a parent of it below the TLD is on the
/// disposable list, so `x.mailinator.com` counts like `mailinator.com`.
pub fn is_disposable(domain: &str) -> bool {
    let set = disposable();
    let mut rest = domain;
    loop {
        if set.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return false,
        }
    }
}

/// True when `tld` (ASCII, any case) is delegated in the root zone.
pub fn is_known_tld(tld: &str) -> bool {
    tlds().contains(&tld.to_ascii_lowercase())
}

/// True when `domain` is exactly one of `list`.
pub fn contains(list: &[&str], domain: &str) -> bool {
    list.contains(&domain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_files_load() {
        assert!(disposable().len() > 1_000);
        assert!(is_disposable("mailinator.com"));
        assert!(is_disposable("inbox.mailinator.com"));
        assert!(!is_disposable("gmail.com"));
        assert!(!is_disposable("com"));
        assert!(tlds().len() > 1_000);
        for tld in ["com", "COM", "de", "io", "new", "xn--p1ai"] {
            assert!(is_known_tld(tld), "{tld}");
        }
        for tld in ["con", "cmo", "comm", "nte"] {
            assert!(!is_known_tld(tld), "{tld}");
        }
    }

    #[test]
    fn lists_are_lower_case_ascii() {
        for list in [
            PERSONAL_PROVIDERS,
            TYPO_PROVIDERS,
            COMMON_TLDS,
            RELAY_DOMAINS,
            ROLE_LOCAL_PARTS,
        ] {
            for entry in list {
                assert!(
                    entry.is_ascii() && *entry == entry.to_ascii_lowercase(),
                    "{entry}"
                );
            }
        }
        for provider in TYPO_PROVIDERS {
            assert!(PERSONAL_PROVIDERS.contains(provider), "{provider}");
        }
    }
}
