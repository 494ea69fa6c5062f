//! One router per resource, merged in [`crate::router`].

pub mod account_pages;
pub mod account_tokens;
pub mod accounts;
pub mod activity;
pub mod contacts;
pub mod domains;
pub mod emails;
pub mod events;
pub mod fields;
pub mod health;
pub mod list_pages;
pub mod members;
pub mod not_implemented;
pub mod project_admin;
pub mod security;
pub mod send;
pub mod send_attachments;
pub mod send_parse;
pub mod templates;
pub mod track;
pub mod tracking;
pub mod verify;
pub mod webhooks;
