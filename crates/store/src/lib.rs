//! Persistence for Herald on SQLite or PostgreSQL.
//!
//! One [`Store`] serves both engines. SQL is written once where the dialects agree (`$1`
//! placeholders work on both) and per engine where they do not; each query body is expanded
//! for both pool types by the `db_read!`, `db_write!` and `db_tx!` macros, so there is no `Any`
//! driver and no per-backend copy of the business rules (those live in `herald-core`).
//!
//! SQLite runs with one writer connection and a pool of readers (WAL), so writes never fail
//! with `SQLITE_BUSY`; PostgreSQL uses one pool for both.
#![forbid(unsafe_code)]

#[macro_use]
mod engine;
pub mod accounts;
pub mod activity;
pub mod blobs;
pub mod contacts;
pub mod domains;
mod error;
pub mod events;
pub mod fields;
pub mod jobs;
mod like;
pub mod messages;
mod metrics;
pub mod retention;
mod savepoint;
pub mod templates;

pub use engine::{Dialect, Store, StoreOptions, Tx};
pub use error::{StoreError, StoreResult};
