//! The cross-site rule for cookie-authenticated writes (DECISIONS.md "Accounts").
//!
//! Invariants:
//! - Only writes (POST/PUT/PATCH/DELETE) that carry the session cookie are checked; API keys
//!   and bearer tokens are never affected (a browser does not attach them by itself).
//! - `Sec-Fetch-Site` decides first: present and not `same-origin`/`none` is refused.
//! - Then `Origin`: present and not the public URL's origin (scheme, host and port, default
//!   ports folded, case-insensitive) is refused; `Origin: null` is refused too.
//! - A request with neither header (scripts, curl) passes.

use axum::http::HeaderMap;

/// The origin of a URL as browsers serialize it (`scheme://host[:port]`, lower case, default
/// port dropped, user info never part of it), by the URL Standard's parser. A URL that does
/// not parse, or has an opaque origin, is `"null"`, which [`refusal`] never accepts.
pub fn origin_of(url: &str) -> String {
    url::Url::parse(url.trim())
        .map_or_else(|_| "null".to_owned(), |u| u.origin().ascii_serialization())
}

/// Why a cookie-authenticated write is cross-site, or `None` when it may proceed.
/// `public_origin` is [`origin_of`] the public URL.
pub fn refusal(headers: &HeaderMap, public_origin: &str) -> Option<&'static str> {
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("").trim().to_ascii_lowercase();
        if site != "same-origin" && site != "none" {
            return Some("Cross-site requests with the session cookie are refused");
        }
    }
    if let Some(origin) = headers.get("origin") {
        let origin = origin_of(origin.to_str().unwrap_or(""));
        if origin == "null" || origin != public_origin {
            return Some("Requests with the session cookie must come from the public URL's origin");
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn origins_fold_case_default_ports_and_paths() {
        assert_eq!(
            origin_of("HTTPS://Mail.Example.com:443/herald"),
            "https://mail.example.com"
        );
        assert_eq!(origin_of("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(origin_of("http://a.test:80"), "http://a.test");
        assert_ne!(origin_of("https://a.test"), origin_of("http://a.test"));
        assert_eq!(origin_of("https://user:pw@a.test/x"), "https://a.test");
        assert_eq!(origin_of("not a url"), "null");
        assert_eq!(origin_of("data:text/plain,x"), "null");
    }

    #[test]
    fn null_origins_never_match_even_an_unparsable_public_url() {
        let public = origin_of("not a url");
        assert_eq!(public, "null");
        for o in ["null", "data:text/plain,x", "garbage"] {
            let h = {
                let mut h = HeaderMap::new();
                h.insert("origin", o.parse().unwrap());
                h
            };
            assert!(refusal(&h, &public).is_some(), "{o}");
        }
    }

    #[test]
    fn the_rule_as_decided() {
        let public = origin_of("https://mail.example.com");
        let pass = [
            headers(&[]),
            headers(&[("sec-fetch-site", "same-origin")]),
            headers(&[("sec-fetch-site", "none")]),
            headers(&[("origin", "https://mail.example.com")]),
            headers(&[
                ("sec-fetch-site", "same-origin"),
                ("origin", "https://MAIL.example.com:443"),
            ]),
        ];
        for h in pass {
            assert_eq!(refusal(&h, &public), None, "{h:?}");
        }
        let refuse = [
            headers(&[("sec-fetch-site", "cross-site")]),
            headers(&[("sec-fetch-site", "same-site")]),
            headers(&[("origin", "https://evil.example")]),
            headers(&[("origin", "http://mail.example.com")]),
            headers(&[("origin", "null")]),
            headers(&[
                ("sec-fetch-site", "same-origin"),
                ("origin", "https://evil.example"),
            ]),
        ];
        for h in refuse {
            assert!(refusal(&h, &public).is_some(), "{h:?}");
        }
    }
}
