//! Identifiers: UUID v7 (time-ordered), so keyset pagination by id is also by creation time.

pub use uuid::Uuid;

/// A new time-ordered identifier.
pub fn new_id() -> Uuid {
    Uuid::now_v7()
}

/// Parses an id from a path segment; anything malformed is simply "not an id".
pub fn parse_id(s: &str) -> Option<Uuid> {
    Uuid::parse_str(s).ok()
}
