//! Real network peers for tests, on loopback: an SMTP sink that speaks SMTP over TCP, a DNS
//! server answering from zones the test writes, a cluster of `herald serve` processes, and a
//! PostgreSQL server of a test's own. Nothing here is mocked at the API level.
#![forbid(unsafe_code)]

pub mod browser;
pub mod cluster;
pub mod dkim_check;
pub mod dns_server;
pub mod pg_server;
pub mod smtp_sink;
