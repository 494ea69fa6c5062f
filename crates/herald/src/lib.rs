//! The `herald` binary's library: configuration and the application (used by the CLI and by
//! the black-box tests, which start it on port 0).
#![forbid(unsafe_code)]

pub mod app;
pub mod config;
pub mod rotate;

pub use app::Application;
pub use config::Config;
