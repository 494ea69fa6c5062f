//! LIKE patterns from user text: `%`, `_` and `\` match themselves (statements use
//! `ESCAPE '\'`).

/// Escapes the LIKE wildcards of `text`.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A case-insensitive "contains" pattern (callers compare against lower-cased columns).
pub(crate) fn contains(search: &str) -> String {
    format!("%{}%", escape(&search.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_escaped() {
        assert_eq!(contains("A_b%"), "%a\\_b\\%%");
        assert_eq!(escape("a\\b"), "a\\\\b");
    }
}
