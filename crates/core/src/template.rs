//! The template language used in subjects and bodies: `{{key}}`, dotted paths `{{a.b.c}}` and
//! fallbacks `{{key ?? "default"}}`, with whitespace allowed inside the braces.
//!
//! Invariants:
//! - Parsing never fails and never panics: any text that is not a well-formed tag (an unclosed
//!   `{{`, a stray `}}`, `{{ not a tag }}`) is kept as literal text, byte for byte.
//! - Parsing and rendering are linear in the size of the source (up to a log factor), whatever
//!   the input, so a hostile template cannot stall a send.
//! - Literal text is never escaped. With [`Escape::Html`] every substituted value and every
//!   default is HTML-escaped; with [`Escape::None`] (subjects) nothing is.
//! - A value is "missing" only when it is absent, `null` or the empty string; `0` and `false`
//!   render as `0` and `false`.
//!
//! A path is one or more non-empty, dot-separated segments; whitespace, braces, quotes, `?`,
//! `<`, `>`, `&`, `=`, `,`, `;`, `(`, `)` and `|` cannot appear in it. Lookup of a path first
//! tries a top-level key equal to the whole path (so a key literally named `a.b` works), then
//! walks nested objects segment by segment; arrays are not indexed.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Map, Value};

/// How substituted values are escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// HTML bodies: values and defaults are HTML-escaped.
    Html,
    /// Subjects and plain text: values are inserted as they are.
    None,
}

/// A parsed template, ready to be rendered many times.
#[derive(Clone, Debug)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var {
        path: String,
        default: Option<String>,
    },
}

impl Template {
    /// Parses `src`. Never fails: anything that is not a valid tag stays literal text.
    pub fn parse(src: &str) -> Template {
        Parser::new(src).parse()
    }

    /// Renders the template with `vars` as the top-level variables.
    pub fn render(&self, vars: &Map<String, Value>, escape: Escape) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Var { path, default } => {
                    let text = lookup(vars, path)
                        .and_then(value_text)
                        .or_else(|| default.as_deref().map(Cow::Borrowed))
                        .unwrap_or_default();
                    match escape {
                        Escape::Html => push_escaped(&mut out, &text),
                        Escape::None => out.push_str(&text),
                    }
                }
            }
        }
        out
    }

    /// Variable paths referenced by the template, in order, deduplicated (e.g. "data.plan", "firstName").
    pub fn variables(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut paths = Vec::new();
        for part in &self.parts {
            if let Part::Var { path, .. } = part
                && seen.insert(path.as_str())
            {
                paths.push(path.clone());
            }
        }
        paths
    }

    /// Variable paths referenced by the template, in order, deduplicated, each with the
    /// fallback of its first tag that has one (`{{firstName ?? "there"}}` → `Some("there")`).
    pub fn variables_with_fallbacks(&self) -> Vec<(String, Option<String>)> {
        let mut paths: Vec<(String, Option<String>)> = Vec::new();
        let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for part in &self.parts {
            if let Part::Var { path, default } = part {
                match index.get(path.as_str()) {
                    Some(&i) => {
                        let slot = &mut paths[i].1;
                        if slot.is_none() {
                            slot.clone_from(default);
                        }
                    }
                    None => {
                        index.insert(path.as_str(), paths.len());
                        paths.push((path.clone(), default.clone()));
                    }
                }
            }
        }
        paths
    }

    /// True when the template has no tags at all, so rendering returns the source unchanged.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }
}

/// Parses and renders `src` in one go.
pub fn render(src: &str, vars: &Map<String, Value>, escape: Escape) -> String {
    Template::parse(src).render(vars, escape)
}

/// The text a tag `{{path}}` without fallback renders from `vars` (unescaped), or `None` when
/// the value is missing (absent, `null` or the empty string).
pub fn value_of(vars: &Map<String, Value>, path: &str) -> Option<String> {
    lookup(vars, path).and_then(value_text).map(Cow::into_owned)
}

/// Escapes `& < > " '` for safe use in HTML text and attribute values.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped(&mut out, s);
    out
}

fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
}

/// Finds the value at `path`: an exact top-level key first, then a walk through nested objects.
fn lookup<'a>(vars: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = vars.get(path) {
        return Some(v);
    }
    let mut segments = path.split('.');
    let mut current = vars.get(segments.next()?)?;
    for segment in segments {
        current = current.as_object()?.get(segment)?;
    }
    Some(current)
}

/// The text of a value, or `None` when it counts as missing (null or empty string).
fn value_text(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Number(n) => Some(Cow::Owned(number_text(n))),
        Value::Array(_) | Value::Object(_) => Some(Cow::Owned(value.to_string())),
    }
}

/// Integers print without a fraction, even when stored as a float (`3.0` → `3`).
fn number_text(n: &serde_json::Number) -> String {
    // Below 2^53 every integral f64 is exact, so the cast loses nothing.
    const EXACT_LIMIT: f64 = 9_007_199_254_740_992.0;
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < EXACT_LIMIT => {
            (f as i64).to_string()
        }
        _ => n.to_string(),
    }
}

/// Characters allowed in a variable path. Anything else (quotes, braces, `?`, spaces, markup)
/// ends the path, so stray text between braces is not mistaken for a tag.
fn is_path_char(c: char) -> bool {
    !c.is_whitespace()
        && !c.is_control()
        && !matches!(
            c,
            '{' | '}' | '?' | '"' | '\'' | '<' | '>' | '&' | '=' | ',' | ';' | '(' | ')' | '|'
        )
}

fn is_valid_path(path: &str) -> bool {
    !path.is_empty() && path.split('.').all(|segment| !segment.is_empty())
}

struct Parser<'a> {
    src: &'a str,
    /// Byte offsets of every `}}` (overlapping, so `}}}` yields two), of `"` and of `'`.
    /// Looking these up by binary search keeps parsing linear on adversarial input.
    closes: Vec<usize>,
    double_quotes: Vec<usize>,
    single_quotes: Vec<usize>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        let bytes = src.as_bytes();
        let mut closes = Vec::new();
        let mut double_quotes = Vec::new();
        let mut single_quotes = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'}' if bytes.get(i + 1) == Some(&b'}') => closes.push(i),
                b'"' => double_quotes.push(i),
                b'\'' => single_quotes.push(i),
                _ => {}
            }
        }
        Parser {
            src,
            closes,
            double_quotes,
            single_quotes,
        }
    }

    fn parse(&self) -> Template {
        let mut parts = Vec::new();
        let mut literal_start = 0;
        let mut cursor = 0;
        while let Some(offset) = self.src[cursor..].find("{{") {
            let open = cursor + offset;
            match self.tag_at(open) {
                Some((part, end)) => {
                    if literal_start < open {
                        parts.push(Part::Literal(self.src[literal_start..open].to_string()));
                    }
                    parts.push(part);
                    literal_start = end;
                    cursor = end;
                }
                // Not a tag: keep the first `{` as text and look again one byte later, so that
                // `{{{name}}}` still finds the tag `{{name}}` inside.
                None => cursor = open + 1,
            }
        }
        if literal_start < self.src.len() {
            parts.push(Part::Literal(self.src[literal_start..].to_string()));
        }
        Template { parts }
    }

    /// Parses a tag starting at the `{{` at `open`; returns it and the offset just past `}}`.
    fn tag_at(&self, open: usize) -> Option<(Part, usize)> {
        let mut pos = self.skip_whitespace(open + 2);
        let path_start = pos;
        pos = self.skip_while(pos, is_path_char);
        let path = &self.src[path_start..pos];
        if !is_valid_path(path) {
            return None;
        }
        pos = self.skip_whitespace(pos);
        let rest = &self.src[pos..];
        if rest.starts_with("}}") {
            let part = Part::Var {
                path: path.to_string(),
                default: None,
            };
            return Some((part, pos + 2));
        }
        if !rest.starts_with("??") {
            return None;
        }
        let default_start = self.skip_whitespace(pos + 2);
        let (default, end) = self
            .quoted_default(default_start)
            .or_else(|| self.bare_default(default_start))?;
        let part = Part::Var {
            path: path.to_string(),
            default: Some(default),
        };
        Some((part, end))
    }

    /// `"text"` or `'text'` followed by optional whitespace and `}}`.
    fn quoted_default(&self, start: usize) -> Option<(String, usize)> {
        let quotes = match self.src.as_bytes().get(start)? {
            b'"' => &self.double_quotes,
            b'\'' => &self.single_quotes,
            _ => return None,
        };
        let close_quote = next_at_or_after(quotes, start + 1)?;
        let after = self.skip_whitespace(close_quote + 1);
        if !self.src[after..].starts_with("}}") {
            return None;
        }
        Some((self.src[start + 1..close_quote].to_string(), after + 2))
    }

    /// Everything up to the next `}}`, trimmed.
    fn bare_default(&self, start: usize) -> Option<(String, usize)> {
        let close = next_at_or_after(&self.closes, start)?;
        Some((self.src[start..close].trim().to_string(), close + 2))
    }

    fn skip_whitespace(&self, pos: usize) -> usize {
        self.skip_while(pos, char::is_whitespace)
    }

    fn skip_while(&self, pos: usize, keep: impl Fn(char) -> bool) -> usize {
        let rest = &self.src[pos..];
        rest.find(|c: char| !keep(c))
            .map_or(self.src.len(), |offset| pos + offset)
    }
}

/// The first offset in the sorted `positions` that is `>= from`.
fn next_at_or_after(positions: &[usize], from: usize) -> Option<usize> {
    let index = positions.partition_point(|&p| p < from);
    positions.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn vars(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("test vars must be an object"),
        }
    }

    #[test]
    fn variables_come_with_their_first_fallback() {
        let t =
            Template::parse(r#"{{ name }} {{plan ?? "free"}} {{name ?? "there"}} {{plan ?? "x"}}"#);
        assert_eq!(
            t.variables_with_fallbacks(),
            [
                ("name".to_owned(), Some("there".to_owned())),
                ("plan".to_owned(), Some("free".to_owned())),
            ]
        );
        let v = vars(json!({"a": {"b": 0}, "e": "", "s": "<x>"}));
        assert_eq!(value_of(&v, "a.b").as_deref(), Some("0"));
        assert_eq!(value_of(&v, "e"), None);
        assert_eq!(value_of(&v, "s").as_deref(), Some("<x>"));
        assert_eq!(value_of(&v, "missing"), None);
    }

    fn html(src: &str, v: Value) -> String {
        render(src, &vars(v), Escape::Html)
    }

    fn plain(src: &str, v: Value) -> String {
        render(src, &vars(v), Escape::None)
    }

    #[test]
    fn substitutes_a_simple_key() {
        assert_eq!(
            html("Hi {{firstName}}!", json!({"firstName": "Ada"})),
            "Hi Ada!"
        );
    }

    #[test]
    fn allows_whitespace_inside_the_braces() {
        let v = json!({"name": "Ada"});
        assert_eq!(html("{{  name  }}", v.clone()), "Ada");
        assert_eq!(html("{{\n\tname\n}}", v.clone()), "Ada");
        assert_eq!(html("{{ name ?? 'x' }}", v), "Ada");
    }

    #[test]
    fn walks_dotted_paths_through_objects() {
        let v = json!({"data": {"plan": {"name": "Pro"}}});
        assert_eq!(html("{{data.plan.name}}", v.clone()), "Pro");
        assert_eq!(html("[{{data.plan.missing}}]", v.clone()), "[]");
        assert_eq!(html("[{{data.plan.name.deeper}}]", v), "[]");
    }

    #[test]
    fn an_exact_top_level_key_wins_over_the_walk() {
        let v = json!({"a.b": "literal", "a": {"b": "nested"}});
        assert_eq!(html("{{a.b}}", v), "literal");
        assert_eq!(html("{{a.b}}", json!({"a": {"b": "nested"}})), "nested");
    }

    #[test]
    fn arrays_are_not_walked_by_index() {
        assert_eq!(html("[{{items.0}}]", json!({"items": ["x"]})), "[]");
    }

    #[test]
    fn fallback_quotes_are_stripped() {
        let v = json!({});
        assert_eq!(html(r#"{{name ?? "friend"}}"#, v.clone()), "friend");
        assert_eq!(html("{{name ?? 'friend'}}", v.clone()), "friend");
        assert_eq!(html(r#"{{name??"friend"}}"#, v.clone()), "friend");
        assert_eq!(html(r#"{{name ?? "  padded "}}"#, v.clone()), "  padded ");
        assert_eq!(html(r#"{{name ?? ""}}"#, v), "");
    }

    #[test]
    fn an_unquoted_fallback_is_taken_literally_trimmed() {
        let v = json!({});
        assert_eq!(
            html("{{name ??   dear friend  }}", v.clone()),
            "dear friend"
        );
        assert_eq!(html("{{name ?? }}", v.clone()), "");
        assert_eq!(html(r#"{{name ?? "a" b}}"#, v.clone()), "&quot;a&quot; b");
        assert_eq!(plain(r#"{{name ?? "unclosed}}"#, v), "\"unclosed");
    }

    #[test]
    fn a_quoted_fallback_may_contain_braces() {
        assert_eq!(plain(r#"{{x ?? "}}"}}!"#, json!({})), "}}!");
        assert_eq!(plain("{{x ?? '{{y}}'}}", json!({})), "{{y}}");
    }

    #[test]
    fn fallback_applies_to_missing_null_and_empty_string() {
        let src = "{{v ?? 'd'}}";
        assert_eq!(html(src, json!({})), "d");
        assert_eq!(html(src, json!({"v": null})), "d");
        assert_eq!(html(src, json!({"v": ""})), "d");
        assert_eq!(html(src, json!({"v": " "})), " ");
    }

    #[test]
    fn zero_and_false_are_values_not_missing() {
        let src = "{{v ?? 'd'}}";
        assert_eq!(html(src, json!({"v": 0})), "0");
        assert_eq!(html(src, json!({"v": false})), "false");
        assert_eq!(html(src, json!({"v": true})), "true");
        assert_eq!(html(src, json!({"v": 0.0})), "0");
    }

    #[test]
    fn missing_without_fallback_renders_empty() {
        assert_eq!(html("a{{v}}b", json!({})), "ab");
        assert_eq!(html("a{{v}}b", json!({"v": null})), "ab");
    }

    #[test]
    fn numbers_render_like_json_without_integral_fractions() {
        assert_eq!(html("{{n}}", json!({"n": 42})), "42");
        assert_eq!(html("{{n}}", json!({"n": -7})), "-7");
        assert_eq!(html("{{n}}", json!({"n": u64::MAX})), u64::MAX.to_string());
        assert_eq!(html("{{n}}", json!({"n": 3.0})), "3");
        assert_eq!(html("{{n}}", json!({"n": -2.0})), "-2");
        assert_eq!(html("{{n}}", json!({"n": 2.5})), "2.5");
        assert_eq!(html("{{n}}", json!({"n": 1e300})), "1e+300");
    }

    #[test]
    fn objects_and_arrays_render_as_compact_json() {
        assert_eq!(
            plain("{{o}}", json!({"o": {"a": [1, "x"]}})),
            r#"{"a":[1,"x"]}"#
        );
        assert_eq!(plain("{{a}}", json!({"a": [true, null]})), "[true,null]");
        assert_eq!(
            html("{{o}}", json!({"o": {"a": "<"}})),
            "{&quot;a&quot;:&quot;&lt;&quot;}"
        );
    }

    #[test]
    fn html_escape_escapes_the_five_characters() {
        assert_eq!(
            html_escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(html_escape("plain é"), "plain é");
    }

    #[test]
    fn html_mode_escapes_values_and_defaults() {
        let v = json!({"x": "<b>Tom & \"Jerry\"</b>"});
        assert_eq!(
            html("{{x}}", v),
            "&lt;b&gt;Tom &amp; &quot;Jerry&quot;&lt;/b&gt;"
        );
        assert_eq!(html("{{y ?? '<i>'}}", json!({})), "&lt;i&gt;");
    }

    #[test]
    fn none_mode_inserts_values_and_defaults_raw() {
        assert_eq!(
            plain("{{x}}", json!({"x": "Tom & <Jerry>"})),
            "Tom & <Jerry>"
        );
        assert_eq!(plain("{{y ?? '<i>'}}", json!({})), "<i>");
    }

    #[test]
    fn literal_text_is_never_escaped() {
        assert_eq!(
            html("<p class=\"a\">&amp; {{x}}</p>", json!({"x": "&"})),
            "<p class=\"a\">&amp; &amp;</p>"
        );
    }

    #[test]
    fn malformed_tags_render_literally() {
        let v = json!({"a": "A"});
        for src in [
            "{{",
            "{{a",
            "{{a}",
            "}}",
            "}}}}",
            "{",
            "{{}}",
            "{{ }}",
            "{{a b}}",
            "{{a ?}}",
            "{{a ?? 'x'",
            "{{.a}}",
            "{{a.}}",
            "{{a..b}}",
            "{{\"a\"}}",
            "{{<b>}}",
        ] {
            assert_eq!(html(src, v.clone()), src, "source {src:?}");
        }
    }

    #[test]
    fn nested_braces_find_the_innermost_tag() {
        let v = json!({"a": "A"});
        assert_eq!(html("{{{a}}}", v.clone()), "{A}");
        assert_eq!(html("{{{{a}}}}", v.clone()), "{{A}}");
        assert_eq!(html("{{ {{a}}", v.clone()), "{{ A");
        assert_eq!(html("{{a}}}}", v), "A}}");
    }

    #[test]
    fn unicode_around_and_inside_tags() {
        let v = json!({"prénom": "Zoë", "data": {"城市": "東京"}});
        assert_eq!(html("¡Hola {{prénom}}! 🎉", v.clone()), "¡Hola Zoë! 🎉");
        assert_eq!(html("{{data.城市}}", v.clone()), "東京");
        assert_eq!(html("{{x ?? «ami»}}", v), "«ami»");
    }

    #[test]
    fn variables_are_listed_in_order_without_duplicates() {
        let t =
            Template::parse("{{firstName}} {{ data.plan ?? 'free' }} {{firstName}} {{bad tag}}");
        assert_eq!(t.variables(), ["firstName", "data.plan"]);
        assert!(Template::parse("no tags {{").variables().is_empty());
    }

    #[test]
    fn a_parsed_template_renders_repeatedly() {
        let t = Template::parse("Hi {{name ?? 'there'}}");
        assert!(!t.is_static());
        assert!(Template::parse("static {{ text").is_static());
        assert_eq!(
            t.render(&vars(json!({"name": "Ada"})), Escape::None),
            "Hi Ada"
        );
        assert_eq!(t.render(&Map::new(), Escape::None), "Hi there");
    }

    #[test]
    fn adversarial_inputs_stay_fast() {
        let inputs = [
            "{{a ?? '".repeat(20_000),
            "{{a ?? \"".repeat(20_000),
            "{{a ?? ".repeat(20_000),
            "{".repeat(100_000),
            "}".repeat(100_000),
        ];
        for src in inputs {
            assert_eq!(html(&src, json!({})), src);
        }
    }

    proptest! {
        #[test]
        fn render_never_panics(src in any::<String>(), value in any::<String>()) {
            let mut v = Map::new();
            v.insert("a".into(), Value::String(value));
            let _ = render(&src, &v, Escape::Html);
            let _ = render(&src, &v, Escape::None);
            let _ = Template::parse(&src).variables();
        }

        #[test]
        fn render_never_panics_on_brace_heavy_input(
            src in r#"[{}a-c. ?"'\n]{0,40}"#,
        ) {
            let v = vars(json!({"a": 1, "b": {"c": "x"}}));
            let _ = render(&src, &v, Escape::Html);
        }

        #[test]
        fn text_without_tags_renders_to_itself(src in any::<String>()) {
            prop_assume!(!src.contains("{{"));
            let v = vars(json!({"a": "A"}));
            prop_assert_eq!(render(&src, &v, Escape::Html), src.clone());
            prop_assert!(Template::parse(&src).is_static());
        }

        #[test]
        fn escaped_values_are_inert(payload in any::<String>()) {
            let value = format!("<script>{payload}</script>\"'");
            let v = vars(json!({ "x": value }));
            let out = render("<p>{{x}}</p>", &v, Escape::Html);
            let inner = &out["<p>".len()..out.len() - "</p>".len()];
            prop_assert!(!inner.contains(['<', '>', '"', '\'']));
            prop_assert!(inner.starts_with("&lt;script&gt;"));
        }
    }
}
