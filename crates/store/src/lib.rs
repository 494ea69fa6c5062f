//! Persistence for Herald on SQLite or PostgreSQL.
//!
//! One [`Store`] serves both engines. SQL is written once where the dialects agree (`$1`
//! placeholders work on both) and per engine where they do not; each query body is expanded
//! for both pool types by the `db_read!`, `db_write!` and `db_tx!` macros, so there is no `Any`
//! driver and no per-backend copy of the business rules (those live in `herald-core`).
//!
//! SQLite runs with one writer connection and a pool of readers (WAL), write transactions
//! beginning `IMMEDIATE`, so writes wait (busy timeout) instead of failing with `SQLITE_BUSY`,
//! even with two processes on one file; PostgreSQL uses one pool sized for the API plus the
//! workers, with a statement timeout (see `engine`).
#![forbid(unsafe_code)]

#[macro_use]
mod engine;
pub mod account_tokens;
pub mod accounts;
pub mod activity;
pub mod analytics;
pub mod audience;
pub mod billing;
pub mod blobs;
pub mod campaign_report;
pub mod campaigns;
mod checkpoint;
pub mod contact_jobs;
pub mod contact_search;
pub mod contacts;
pub mod contacts_batch;
pub mod database_time;
pub mod delivery;
pub mod dkim_keys;
pub mod domains;
#[cfg(test)]
mod engine_tests;
mod error;
pub mod events;
pub mod feed;
pub mod feedback;
pub mod fields;
pub mod growth;
pub mod invitations;
pub mod job_signal;
pub mod jobs;
mod like;
pub mod login_failures;
pub mod members;
pub mod messages;
mod metrics;
pub mod node_secret;
pub mod oauth_identities;
pub mod payments;
pub mod periodic;
pub mod project_reset;
pub mod retention;
mod savepoint;
pub mod security;
pub mod segment_membership;
pub mod segments;
pub mod sessions;
pub mod shared_limits;
pub mod suppressions;
pub mod templates;
pub mod tracked;
pub mod tracked_fresh;
pub mod tracking;
mod ttl_cache;
pub mod wake;
pub mod workflows;
mod write_precedence;
pub use write_precedence::UrgentWrite;

pub use engine::{Dialect, Store, StoreOptions, Tx};
pub use error::{StoreError, StoreResult};
