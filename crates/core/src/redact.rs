//! Hiding credentials in what is printed (`Debug`, `herald config`, logs).
//!
//! Invariants:
//! - [`url_password`] keeps the user name (useful to tell databases apart) and replaces the
//!   password, in the userinfo and in `password=`/`sslpassword=` query parameters, by `***`.
//! - [`url_userinfo`] replaces the whole userinfo by `***`: for relay URLs, where the user name
//!   itself is often the API token.
//! - Neither ever returns any byte of the hidden part; input that is not `scheme://...` is
//!   returned unchanged only when it has no `@` (else it is hidden entirely).

pub const HIDDEN: &str = "***";

fn split(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    // The userinfo ends at the last '@' before the query (a password may hold '@' or '/').
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let at = rest[..end].rfind('@')?;
    Some((scheme, &rest[..at], &rest[at + 1..]))
}

/// `scheme://user:***@host/...`, passwords in the query hidden too.
pub fn url_password(url: &str) -> String {
    let out = match split(url) {
        Some((scheme, userinfo, tail)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:{HIDDEN}@{tail}"),
            None => format!("{scheme}://{userinfo}@{tail}"),
        },
        None if url.contains("://") || !url.contains('@') => url.to_owned(),
        None => return HIDDEN.to_owned(),
    };
    hide_query_passwords(&out)
}

/// `scheme://***@host/...`: no part of the userinfo survives.
pub fn url_userinfo(url: &str) -> String {
    let out = match split(url) {
        Some((scheme, _, tail)) => format!("{scheme}://{HIDDEN}@{tail}"),
        None if url.contains("://") || !url.contains('@') => url.to_owned(),
        None => return HIDDEN.to_owned(),
    };
    hide_query_passwords(&out)
}

fn hide_query_passwords(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                format!("{k}={HIDDEN}")
            }
            _ => p.to_owned(),
        })
        .collect();
    format!("{base}?{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_users_kept() {
        assert_eq!(
            url_password("postgres://herald:hunter2@db:5432/herald"),
            "postgres://herald:***@db:5432/herald"
        );
        assert_eq!(
            url_password("postgres://h:p@ss/w@rd@db/x?sslmode=require&password=hunter2"),
            "postgres://h:***@db/x?sslmode=require&password=***"
        );
        assert_eq!(url_password("sqlite://./data/h.db"), "sqlite://./data/h.db");
        assert_eq!(url_password("postgres://u@db/x"), "postgres://u@db/x");
    }

    #[test]
    fn userinfo_is_hidden_whole() {
        for url in [
            "smtp://apikey:SG.secret@relay:587",
            "smtps://tok-123-secret@relay:465",
            "smtp://u:p%40ss@relay:587?tls=none",
        ] {
            let r = url_userinfo(url);
            assert!(r.starts_with("smtp") && r.contains("://***@relay:"), "{r}");
            for secret in ["SG.secret", "apikey", "tok-123", "p%40ss"] {
                assert!(!r.contains(secret), "{r}");
            }
        }
        assert_eq!(url_userinfo("smtp://relay:25"), "smtp://relay:25");
        assert_eq!(url_userinfo("user:pw@relay"), "***");
    }
}
