//! Mail infrastructure with no database: DKIM keys and signatures, sealing secrets at rest,
//! the DNS records a sender domain needs and checking them, MIME building, and transports.
#![forbid(unsafe_code)]

pub mod dkim;
pub mod dns;
pub mod header_text;
pub mod mime;
pub mod seal;
pub mod transport;
