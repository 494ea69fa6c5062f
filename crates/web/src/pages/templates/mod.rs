//! The templates pages: the list (search, type filter, pages), New template, and a template's
//! editor with its live preview, variables, plain text, Send test and where it is used.
//!
//! - `list`: `templates` (GET list, POST create) and `templates/new`;
//! - `editor`: `templates/{id}` (GET, POST save) and its Send test;
//! - `preview`: the preview fragment and the sandboxed frame (`templates/preview`,
//!   `templates/frame`, `templates/{id}/frame`), rendered by the engine's `preview`, the
//!   rules of a send.

pub mod editor;
pub mod list;
pub mod preview;

use herald_core::kinds::TemplateType;

/// A template type's words and badge tone.
pub fn type_badge(t: TemplateType) -> (&'static str, &'static str) {
    match t {
        TemplateType::Transactional => ("Transactional", "info"),
        TemplateType::Marketing => ("Marketing", "success"),
        TemplateType::Headless => ("Headless", "neutral"),
    }
}

/// The options of the `Type` select: value, words, whether chosen.
pub fn type_options(current: &str) -> Vec<(&'static str, &'static str, bool)> {
    [
        ("TRANSACTIONAL", "Transactional"),
        ("MARKETING", "Marketing"),
        ("HEADLESS", "Headless"),
    ]
    .into_iter()
    .map(|(v, words)| (v, words, v.eq_ignore_ascii_case(current)))
    .collect()
}
