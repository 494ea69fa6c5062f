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
    links_keeping(
        base,
        &[],
        anchor,
        after,
        back,
        next_after.map(|n| n.to_string()),
    )
}

/// [`links`] for a page with filters (`keep`, repeated in every link) and any cursor string
/// (`next`, the API's cursor of the next page).
pub fn links_keeping(
    base: &str,
    keep: &[(&str, &str)],
    anchor: &str,
    after: Option<&str>,
    back: &str,
    next: Option<String>,
) -> (Option<String>, Option<String>) {
    let trail: Vec<&str> = back.split(',').filter(|s| !s.is_empty()).collect();
    let after = after.filter(|a| !a.is_empty());
    let link = |after: &str, back: &str| {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in keep.iter().filter(|(_, v)| !v.is_empty()) {
            s.append_pair(k, v);
        }
        if !after.is_empty() {
            s.append_pair("after", after);
        }
        if !back.is_empty() {
            s.append_pair("back", back);
        }
        format!("{base}?{}#{anchor}", s.finish())
    };
    let next = next.map(|n| {
        let mut t = trail.clone();
        t.push(after.unwrap_or("first"));
        link(&n, &t.join(","))
    });
    let previous = after.map(|_| match trail.split_last() {
        Some((p, rest)) => link(if *p == "first" { "" } else { p }, &rest.join(",")),
        None => link("", ""),
    });
    (previous, next)
}

/// "Page N" of a page after the first: the trail holds one entry per page before it (the
/// second page's trail is `first`).
pub fn page_number(back: &str) -> usize {
    back.split(',').filter(|s| !s.is_empty()).count() + 1
}
