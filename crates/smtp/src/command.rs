//! The SMTP command parser (RFC 5321 section 4.1, with the ESMTP parameters Herald offers).
//! Pure: one line in (without its CRLF), a [`Command`] or the reply to a bad one out.

use crate::reply::Reply;

/// ESMTP parameters of MAIL or RCPT (`SIZE=100`, `SMTPUTF8`), keys upper-cased.
pub type Params = Vec<(String, Option<String>)>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Ehlo(String),
    Helo(String),
    /// `MAIL FROM:<path> params`: the path without its angle brackets (empty for `<>`).
    Mail {
        path: String,
        params: Params,
    },
    Rcpt {
        path: String,
        params: Params,
    },
    Data,
    Rset,
    Noop,
    Quit,
    StartTls,
    Auth {
        mechanism: String,
        initial: Option<String>,
    },
    Vrfy,
    Help,
}

/// Parses one command line.
pub fn parse(line: &str) -> Result<Command, Reply> {
    let (verb, rest) = match line.find(' ') {
        Some(i) => (&line[..i], line[i + 1..].trim()),
        None => (line, ""),
    };
    let no_args = |c: Command| {
        if rest.is_empty() {
            Ok(c)
        } else {
            Err(Reply::syntax("This command takes no arguments"))
        }
    };
    match verb.to_ascii_uppercase().as_str() {
        "EHLO" | "HELO" => {
            let host = rest.split(' ').next().unwrap_or("").to_owned();
            if host.is_empty() {
                return Err(Reply::syntax("EHLO needs a domain or address literal"));
            }
            Ok(if verb.eq_ignore_ascii_case("EHLO") {
                Command::Ehlo(host)
            } else {
                Command::Helo(host)
            })
        }
        "MAIL" => {
            let (path, params) = path_and_params(rest, "FROM:")?;
            Ok(Command::Mail { path, params })
        }
        "RCPT" => {
            let (path, params) = path_and_params(rest, "TO:")?;
            if path.is_empty() {
                return Err(Reply::new(
                    501,
                    "5.1.3",
                    "An empty recipient is not allowed",
                ));
            }
            Ok(Command::Rcpt { path, params })
        }
        "DATA" => no_args(Command::Data),
        "RSET" => no_args(Command::Rset),
        "QUIT" => no_args(Command::Quit),
        "STARTTLS" => no_args(Command::StartTls),
        "NOOP" => Ok(Command::Noop),
        "VRFY" | "EXPN" => Ok(Command::Vrfy),
        "HELP" => Ok(Command::Help),
        "AUTH" => {
            let mut parts = rest.split(' ').filter(|p| !p.is_empty());
            let mechanism = parts
                .next()
                .ok_or_else(|| Reply::syntax("AUTH needs a mechanism"))?
                .to_ascii_uppercase();
            let initial = parts.next().map(str::to_owned);
            if parts.next().is_some() {
                return Err(Reply::syntax("AUTH takes a mechanism and one response"));
            }
            Ok(Command::Auth { mechanism, initial })
        }
        _ => Err(Reply::new(500, "5.5.1", "Command not recognized")),
    }
}

/// `FROM:<path> K=V K` (a space after the colon is tolerated, as many clients send one).
fn path_and_params(rest: &str, keyword: &str) -> Result<(String, Params), Reply> {
    let bad = || Reply::syntax(&format!("Syntax: {keyword}<address> [parameters]"));
    if rest.len() < keyword.len() || !rest[..keyword.len()].eq_ignore_ascii_case(keyword) {
        return Err(bad());
    }
    let rest = rest[keyword.len()..].trim_start();
    if !rest.starts_with('<') {
        return Err(bad());
    }
    let close = rest.find('>').ok_or_else(bad)?;
    let mut path = &rest[1..close];
    // A source route (`<@a,@b:user@c>`) is ignored, as RFC 5321 section 4.1.1.3 allows.
    if path.starts_with('@')
        && let Some(i) = path.find(':')
    {
        path = &path[i + 1..];
    }
    if path.contains(['<', '>', ' ']) {
        return Err(bad());
    }
    let mut params = Vec::new();
    for p in rest[close + 1..].split(' ').filter(|p| !p.is_empty()) {
        let (k, v) = match p.split_once('=') {
            Some((k, v)) => (k, Some(v.to_owned())),
            None => (p, None),
        };
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(bad());
        }
        params.push((k.to_ascii_uppercase(), v));
    }
    Ok((path.to_owned(), params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_envelope_commands() {
        assert_eq!(
            parse("MAIL FROM:<a@b.c> SIZE=100 BODY=8BITMIME"),
            Ok(Command::Mail {
                path: "a@b.c".into(),
                params: vec![
                    ("SIZE".into(), Some("100".into())),
                    ("BODY".into(), Some("8BITMIME".into()))
                ]
            })
        );
        assert_eq!(
            parse("mail from: <>"),
            Ok(Command::Mail {
                path: String::new(),
                params: vec![]
            })
        );
        assert_eq!(
            parse("RCPT TO:<@relay:x@y.z>"),
            Ok(Command::Rcpt {
                path: "x@y.z".into(),
                params: vec![]
            })
        );
        assert_eq!(
            parse("ehlo client.example"),
            Ok(Command::Ehlo("client.example".into()))
        );
        assert_eq!(
            parse("AUTH PLAIN AGhlcmFsZAB4"),
            Ok(Command::Auth {
                mechanism: "PLAIN".into(),
                initial: Some("AGhlcmFsZAB4".into())
            })
        );
    }

    #[test]
    fn refuses_garbage() {
        for line in [
            "",
            "GARBAGE",
            "MAIL",
            "MAIL FROM:a@b.c",
            "MAIL FROM:<a@b.c",
            "RCPT TO:<>",
            "DATA now",
            "EHLO",
            "\u{0}\u{1}",
            "MAIL FROM:<a@b.c> =x",
        ] {
            let r = parse(line).expect_err(line);
            assert!(r.code >= 500, "{line}: {r:?}");
        }
    }
}
