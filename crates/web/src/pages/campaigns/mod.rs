//! The campaigns pages: the list (status filter, pages, New campaign), a draft's editor
//! (`campaigns/new`, `campaigns/{id}` while DRAFT or SCHEDULED: name, subject, sender from
//! the verified domains, reply-to, body written in place or from a template with the
//! templates' live preview, the audience with its live recipient count), its actions (Send
//! test, Send now, Schedule, Cancel campaign, each refusal shown where it belongs), and the
//! report of a campaign that was sent (progress while SENDING, polled; stats with rates, the
//! opens and clicks chart, top links, the recipients by page).
//!
//! - `list`: `campaigns` (GET, POST create) and `campaigns/new`;
//! - `editor`: the form, `campaigns/{id}` (GET, POST save) and `campaigns/count` (the live
//!   recipient count);
//! - `actions`: `campaigns/{id}/test`, `/send`, `/schedule`, `/cancel`;
//! - `report`: the report page and `campaigns/{id}/progress` (the polled fragment).
//!
//! Every rule is the API's: the pages call `herald_api::routes::campaigns` (`create`,
//! `replace`, `send`, `cancel`, `test_send`, `stats`, `recipient_count`), so a refusal is the
//! API's message.

pub mod actions;
pub mod editor;
pub mod list;
pub mod report;

use herald_core::campaign::CampaignStatus;

/// A campaign status's words and badge tone (DESIGN.md "Status badge").
pub fn status_badge(s: CampaignStatus) -> (&'static str, &'static str) {
    match s {
        CampaignStatus::Draft => ("Draft", "neutral"),
        CampaignStatus::Scheduled => ("Scheduled", "info"),
        CampaignStatus::Sending => ("Sending", "warning"),
        CampaignStatus::Sent => ("Sent", "success"),
        CampaignStatus::Cancelled => ("Cancelled", "neutral"),
    }
}

/// "1 contact" / "12,304 contacts".
pub fn contacts(n: i64) -> String {
    if n == 1 {
        "1 contact".to_owned()
    } else {
        format!("{} contacts", crate::format::count(n))
    }
}

/// A time as the pages print it in UTC ("2026-11-28 09:00 UTC"); the script adds the
/// browser's local time beside it.
pub fn utc_words(ms: i64) -> String {
    herald_core::time::to_datetime(ms)
        .format("%Y-%m-%d %H:%M UTC")
        .to_string()
}
