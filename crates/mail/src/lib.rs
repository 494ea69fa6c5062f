//! Mail infrastructure with no database: DKIM keys and signatures, sealing secrets at rest,
//! the DNS records a sender domain needs and checking them, MIME building, transports, and
//! Amazon SNS feedback messages (parsing and signature verification).
#![forbid(unsafe_code)]

pub mod dkim;
pub mod dns;
pub mod header_text;
pub mod inbound;
pub mod mime;
pub mod outbox;
pub mod seal;
mod smtp_session;
pub mod sns;
pub mod transport;
