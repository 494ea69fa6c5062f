//! Transactional sending: merging a request with its template (`merge`), accepting
//! (`accept`), composing (`compose`), delivering (`worker`) and reading back what was sent
//! (`raw`).

pub mod accept;
pub mod compose;
pub mod merge;
pub mod raw;
pub mod worker;

pub use accept::{AcceptError, Accepted, AttachmentIn, Recipient, SendPlan};
pub use merge::{Merged, Missing, SendOverrides, merge_with_template};
pub use raw::RawError;
