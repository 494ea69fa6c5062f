//! Transactional sending: accepting (`accept`), composing (`compose`) and delivering (`worker`).

pub mod accept;
pub mod batch;
pub mod compose;
pub mod worker;

pub use accept::{AcceptError, Accepted, AttachmentIn, Recipient, SendPlan};
