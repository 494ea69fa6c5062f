//! One module per page (or group of small pages); each handler is as thin as the API's.

pub mod account;
pub mod activity;
pub mod analytics;
pub mod auth;
pub mod campaigns;
pub mod contact;
pub mod contacts;
pub mod home;
pub mod jobs;
pub mod not_found;
pub mod projects;
pub mod segment;
pub mod segments;
pub mod settings;
pub mod settings_billing;
pub mod templates;
pub mod workflows;
