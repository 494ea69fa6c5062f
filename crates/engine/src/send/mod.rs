//! Transactional sending: merging a request with its template (`merge`), accepting
//! (`accept`), composing (`compose`, with tracking and the unsubscribe footer from `decorate`), delivering (`worker`, reading each claimed batch at once in `prefetch`, with the node's lease heartbeat in
//! `leases`, its memory budget in `budget` and the group-commit recorder in `record`) and
//! reading back what was sent (`raw`); the editor's `preview` renders by the same rules.

pub mod accept;
pub mod batch;
mod batch_contacts;
mod batch_fresh;
pub mod budget;
pub mod compose;
pub mod decorate;
mod leases;
pub mod merge;
mod prefetch;
pub mod preview;
pub mod raw;
mod record;
mod simulate;
pub mod submit;
#[cfg(test)]
mod test_message;
pub mod worker;

pub use accept::{AcceptError, Accepted, AttachmentIn, Recipient, SendPlan};
pub use merge::{Merged, Missing, SendOverrides, merge_with_template};
pub use raw::RawError;
pub use submit::SubmitError;
