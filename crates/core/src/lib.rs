//! Herald's domain rules with no I/O: identifiers, validated values, the custom-field rules,
//! the template language. Everything here is deterministic and safe on any input.
#![forbid(unsafe_code)]

pub mod account;
pub mod account_i18n;
pub mod analytics;
pub mod api_keys;
pub mod billing;
pub mod campaign;
pub mod clock;
pub mod contact_import;
pub mod contact_jobs;
pub mod email;
pub mod events;
pub mod feedback;
pub mod fields;
pub mod filter;
pub mod headers;
pub mod html_text;
pub mod ids;
pub mod image_kind;
pub mod kinds;
pub mod link_rewrite;
pub mod link_token;
pub mod list_i18n;
pub mod mac;
pub mod message_status;
pub mod net;
pub mod oauth_state;
pub mod payments;
pub mod redact;
pub mod rules;
pub mod secret;
pub mod security;
pub mod segments;
pub mod template;
pub mod time;
pub mod timed_signature;
pub mod verify;
pub mod workflow;
pub mod workflow_run;
