//! Transactional sending: accepting (`accept`), composing (`compose`), delivering (`worker`),
//! with the node's lease heartbeat (`leases`) and the group-commit recorder (`record`).

pub mod accept;
pub mod compose;
mod leases;
mod record;
pub mod worker;

pub use accept::{AcceptError, Accepted, AttachmentIn, Recipient, SendPlan};
