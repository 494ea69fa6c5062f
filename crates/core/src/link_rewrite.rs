//! Rewriting the links of an HTML body (click tracking) and inserting snippets (the open pixel,
//! the unsubscribe footer) before its end.
//!
//! Invariants of [`rewrite_links`]:
//! - Only the `href` attribute of `<a>` and `<area>` tags is ever changed, and only when its
//!   value, entities decoded and trimmed, starts with `http://` or `https://` (any case) and
//!   the caller's function returns a replacement. `mailto:`, `tel:`, `#...`, relative and
//!   other links, and every other byte of the input, come out exactly as they went in.
//! - Comments, `<script>` and `<style>` contents are copied untouched (a link in them is not
//!   rewritten); an unterminated tag or comment copies the rest of the input untouched.
//! - A replacement is written double-quoted with `&` and `"` escaped, whatever quoting the
//!   original used (double, single or none), so it can never break out of the attribute.
//! - Never panics; linear in the input (times a closing-tag name's length).

use crate::html_text::decode_entities;

/// `html` with the `href` of each http(s) link replaced by `replace(url)` when that returns
/// `Some` (`url` is the link's target with entities decoded and surrounding spaces trimmed).
pub fn rewrite_links(html: &str, mut replace: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 4);
    // `copied` is where the next verbatim copy starts.
    let mut copied = 0;
    let mut pos = 0;
    while let Some(offset) = html[pos..].find('<') {
        let lt = pos + offset;
        let rest = &html[lt..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            match comment.find("-->") {
                Some(end) => pos = lt + 4 + end + 3,
                None => break,
            }
            continue;
        }
        let Some(tag) = scan_tag(html, lt) else {
            pos = lt + 1;
            continue;
        };
        let Some(end) = tag.end else {
            break; // unterminated: the rest is copied as it is
        };
        pos = end;
        match tag.name.as_str() {
            "script" | "style" if !tag.closing => {
                // Skip to the closing tag; with none, the rest is copied as it is.
                match find_ci(html, end, &format!("</{}", tag.name)) {
                    Some(close) => pos = close,
                    None => break,
                }
            }
            "a" | "area" if !tag.closing => {
                let Some((start, stop)) = tag.href else {
                    continue;
                };
                let url = decode_entities(&html[start..stop]);
                let url = url.trim();
                if !is_http(url) {
                    continue;
                }
                let Some(new) = replace(url) else {
                    continue;
                };
                out.push_str(&html[copied..tag.value_start]);
                out.push('"');
                out.push_str(&new.replace('&', "&amp;").replace('"', "&quot;"));
                out.push('"');
                copied = tag.value_end;
            }
            _ => {}
        }
    }
    out.push_str(&html[copied..]);
    out
}

/// `html` with `snippet` inserted before its last `</body>` (any case), or appended.
pub fn insert_before_body_end(html: &str, snippet: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let at = lower.rfind("</body").unwrap_or(html.len());
    let mut out = String::with_capacity(html.len() + snippet.len());
    out.push_str(&html[..at]);
    out.push_str(snippet);
    out.push_str(&html[at..]);
    out
}

/// Whether `url` is an absolute http(s) URL.
pub fn is_http(url: &str) -> bool {
    let b = url.as_bytes();
    let starts = |p: &str| b.len() > p.len() && b[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    starts("http://") || starts("https://")
}

struct ScannedTag {
    name: String,
    closing: bool,
    /// The `href` value without its quotes.
    href: Option<(usize, usize)>,
    /// The `href` value with its quotes (what a replacement overwrites).
    value_start: usize,
    value_end: usize,
    /// Offset just past `>`; `None` when the tag never ends.
    end: Option<usize>,
}

/// Scans the tag at `lt`; `None` when `<` does not start a tag (`a < b`).
fn scan_tag(html: &str, lt: usize) -> Option<ScannedTag> {
    let bytes = html.as_bytes();
    let mut pos = lt + 1;
    let closing = bytes.get(pos) == Some(&b'/');
    if closing {
        pos += 1;
    }
    if !bytes.get(pos).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let name_start = pos;
    while bytes
        .get(pos)
        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':'))
    {
        pos += 1;
    }
    let mut tag = ScannedTag {
        name: html[name_start..pos].to_ascii_lowercase(),
        closing,
        href: None,
        value_start: 0,
        value_end: 0,
        end: None,
    };
    loop {
        while bytes
            .get(pos)
            .is_some_and(|b| b.is_ascii_whitespace() || *b == b'/')
        {
            pos += 1;
        }
        match bytes.get(pos) {
            None => return Some(tag),
            Some(b'>') => {
                tag.end = Some(pos + 1);
                return Some(tag);
            }
            Some(_) => {}
        }
        let attr_start = pos;
        while bytes
            .get(pos)
            .is_some_and(|b| !b.is_ascii_whitespace() && !matches!(b, b'=' | b'>' | b'/'))
        {
            pos += 1;
        }
        if pos == attr_start {
            pos += 1; // a stray '=': skip it
            continue;
        }
        let attr = &html[attr_start..pos];
        let mut after = pos;
        while bytes.get(after).is_some_and(u8::is_ascii_whitespace) {
            after += 1;
        }
        if bytes.get(after) != Some(&b'=') {
            continue;
        }
        pos = after + 1;
        while bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
            pos += 1;
        }
        let value_start = pos;
        let (start, stop) = match bytes.get(pos) {
            None => return Some(tag),
            Some(&quote) if quote == b'"' || quote == b'\'' => {
                let Some(close) = html[pos + 1..].find(char::from(quote)) else {
                    return Some(tag); // unterminated value: the tag never ends
                };
                let close = pos + 1 + close;
                pos = close + 1;
                (value_start + 1, close)
            }
            Some(_) => {
                while bytes
                    .get(pos)
                    .is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>')
                {
                    pos += 1;
                }
                (value_start, pos)
            }
        };
        if attr.eq_ignore_ascii_case("href") && tag.href.is_none() {
            tag.href = Some((start, stop));
            tag.value_start = value_start;
            tag.value_end = pos;
        }
    }
}

/// Offset of the first ASCII-case-insensitive `needle` at or after `from`.
fn find_ci(hay: &str, from: usize, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    hay.as_bytes()
        .get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tracked(html: &str) -> String {
        rewrite_links(html, |url| Some(format!("T[{url}]")))
    }

    #[test]
    fn rewrites_http_links_in_any_quoting_and_attribute_order() {
        assert_eq!(
            tracked(r#"<a href="https://a.example/x">A</a>"#),
            r#"<a href="T[https://a.example/x]">A</a>"#
        );
        assert_eq!(
            tracked("<A class='b' HREF='http://b.example/?q=1' target=_blank>B</A>"),
            r#"<A class='b' HREF="T[http://b.example/?q=1]" target=_blank>B</A>"#
        );
        assert_eq!(
            tracked("<a href=https://c.example/p>C</a>"),
            r#"<a href="T[https://c.example/p]">C</a>"#
        );
        assert_eq!(
            tracked("<a\n  title=\"x > y\"\n  href = \" HTTPS://d.example \" >D</a>"),
            "<a\n  title=\"x > y\"\n  href = \"T[HTTPS://d.example]\" >D</a>"
        );
        assert_eq!(
            tracked(r#"<area shape="rect" href="https://e.example">"#),
            r#"<area shape="rect" href="T[https://e.example]">"#
        );
    }

    #[test]
    fn decodes_entities_and_escapes_the_replacement() {
        let mut seen = Vec::new();
        let out = rewrite_links(r#"<a href="https://x.example/?a=1&amp;b=2">x</a>"#, |u| {
            seen.push(u.to_owned());
            Some("https://t.example/?k=\"v\"&z".into())
        });
        assert_eq!(seen, ["https://x.example/?a=1&b=2"]);
        assert_eq!(
            out,
            r#"<a href="https://t.example/?k=&quot;v&quot;&amp;z">x</a>"#
        );
    }

    #[test]
    fn leaves_other_links_and_markup_alone() {
        let html = concat!(
            r#"<p data-href="https://no.example">"#,
            r##"<a href="mailto:a@b.example">m</a> <a href='tel:+1'>t</a> <a href="#top">#</a> "##,
            r#"<a href="/relative">r</a> <a name="x">n</a> <img src="https://img.example/p.png">"#,
            r#"<!-- <a href="https://comment.example">c</a> -->"#,
            r#"<script>var s = '<a href="https://script.example">';</script>"#,
            r#"<style>a[href="https://style.example"]{}</style> 1 < 2 </p>"#,
        );
        assert_eq!(tracked(html), html);
    }

    #[test]
    fn the_callback_may_decline_a_link() {
        let html = r#"<a href="https://keep.example/u">k</a><a href="https://track.example">t</a>"#;
        let out = rewrite_links(html, |u| (!u.contains("keep")).then(|| "T".to_owned()));
        assert_eq!(
            out,
            r#"<a href="https://keep.example/u">k</a><a href="T">t</a>"#
        );
    }

    #[test]
    fn unterminated_markup_is_copied() {
        for html in [
            r#"<a href="https://x.example">ok</a><a href="https://y.example"#,
            r#"<a href="https://x.example">ok</a><!-- <a href="https://z.example">"#,
            r#"<a href="https://x.example">ok</a><a href=https://y.example"#,
        ] {
            let out = tracked(html);
            assert!(
                out.starts_with(r#"<a href="T[https://x.example]">ok</a>"#),
                "{out}"
            );
            assert!(
                out.ends_with(&html[html.find("</a>").unwrap() + 4..]),
                "{out}"
            );
        }
    }

    #[test]
    fn inserts_before_the_last_body_end() {
        assert_eq!(
            insert_before_body_end("<html><BODY>x</Body ></html>", "P"),
            "<html><BODY>xP</Body ></html>"
        );
        assert_eq!(insert_before_body_end("<p>x</p>", "P"), "<p>x</p>P");
    }

    proptest! {
        #[test]
        fn never_panics_and_identity_keeps_the_input(s in r#"[<>a-z ="'/!&;:.-]{0,120}"#) {
            prop_assert_eq!(rewrite_links(&s, |_| None), s.clone());
            let _ = tracked(&s);
        }
    }
}
