//! One router per resource, merged in [`crate::router`].

pub mod accounts;
pub mod contacts;
pub mod events;
pub mod fields;
pub mod health;
