//! Real network peers for tests, on loopback: an SMTP sink that speaks SMTP over TCP and a DNS
//! server answering from zones the test writes. Nothing here is mocked at the API level.
#![forbid(unsafe_code)]

pub mod browser;
pub mod dkim_check;
pub mod dns_server;
pub mod smtp_sink;
