//! Cursor pages of a table (a segment's members, a campaign's recipients): `?after=<id>` is
//! the page after that row, `back` the `after` of the pages before (comma-separated, `first`
//! for the first), so Previous needs no count and no offset.

use herald_core::ids::Uuid;

/// The Previous and Next links of the page at `after` (with the trail `back`) under `base`,
/// ending in `#anchor`; Next when `next_after` (the last row's id) says there is more.
pub fn links(
    base: &str,
    anchor: &str,
    after: Option<&str>,
    back: &str,
    next_after: Option<Uuid>,
) -> (Option<String>, Option<String>) {
    let trail: Vec<&str> = back.split(',').filter(|s| !s.is_empty()).collect();
    let after = after.filter(|a| !a.is_empty());
    let link = |after: &str, back: &str| {
        let mut s = form_urlencoded::Serializer::new(String::new());
        if !after.is_empty() {
            s.append_pair("after", after);
        }
        if !back.is_empty() {
            s.append_pair("back", back);
        }
        format!("{base}?{}#{anchor}", s.finish())
    };
    let next = next_after.map(|n| {
        let mut t = trail.clone();
        t.push(after.unwrap_or("first"));
        link(&n.to_string(), &t.join(","))
    });
    let previous = after.map(|_| match trail.split_last() {
        Some((p, rest)) => link(if *p == "first" { "" } else { p }, &rest.join(",")),
        None => link("", ""),
    });
    (previous, next)
}

/// "Page N" of a page after the first (the trail's length tells N).
pub fn page_number(back: &str) -> usize {
    back.split(',').filter(|s| !s.is_empty()).count() + 2
}
