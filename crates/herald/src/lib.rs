//! The `herald` binary's library: configuration and the application (used by the CLI and by
//! the black-box tests, which start it on port 0).
// Unsafe only in `allocator.rs` (one allocator option, set through its C API) and in
// `scheduling.rs` (the threads' scheduling policy, through libc).
#![deny(unsafe_code)]

pub mod allocator;
pub mod app;
pub mod config;
pub mod demo;
pub mod edge_io;
pub mod node_secret;
pub mod rotate;
pub mod scheduling;
pub mod server;
pub mod single_node;

pub use app::Application;
pub use config::Config;

/// mimalloc returns memory freed after a burst (argon2 hashes, large bodies) to the system
/// within milliseconds; glibc's malloc kept gigabytes in per-thread arenas (docs/benchmarks.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
