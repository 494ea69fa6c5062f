//! Black-box tests over HTTP against the real server, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]

mod helpers;
mod mail_setup;

mod accounts;
mod contacts;
mod crash;
mod cross_site;
mod domains;
mod errors;
mod fields;
mod outbox;
mod secrets;
mod sending;
mod templates;
