//! Black-box tests over HTTP against the real server, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]

mod helpers;

mod accounts;
mod contacts;
mod errors;
mod fields;
