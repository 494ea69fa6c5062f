//! Black-box tests over HTTP against the real server, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]

mod helpers;
mod mail_setup;

mod acceptance;
mod account_limits;
mod account_members;
mod account_pages;
mod account_projects;
mod account_security;
mod account_setup;
mod account_tokens;
mod accounts;
mod activity;
mod attachments;
mod contacts;
mod crash;
mod cross_site;
mod domains;
mod edge;
mod errors;
mod events;
mod feedback;
mod feedback_sns;
mod fields;
mod header_rules;
mod international;
mod isolation;
mod leases;
mod memory;
mod metrics;
mod nul_input;
mod openapi;
mod outbox;
mod plunk_node;
mod retention;
mod secrets;
mod sending;
mod templates;
mod track;
mod track_crash;
mod tracking;
mod verify;
