//! A feed entry as a row of the Activity table: what happened in words, its kind, the
//! contact, and links to the email, campaign or workflow it belongs to. The page and the live
//! stream render the same row template, so a live row is the row a reload would show.

use std::collections::HashMap;

use askama::Template;
use herald_api::AppState;
use herald_api::routes::activity::ActivityResponse;
use herald_core::ids::{Uuid, parse_id};
use herald_core::time::parse_iso;
use herald_store::StoreResult;
use herald_store::feed::{FeedEntry, TRACKED_TYPE};
use serde_json::Value;

use crate::format::ago;

/// One link of a row: its visible words and where it goes.
pub struct RowLink {
    pub label: String,
    pub href: String,
}

pub struct Row {
    /// The entry id (the row's `id` is `a-<id>`; the stream's event id).
    pub id: String,
    pub kind: String,
    pub words: String,
    pub tone: &'static str,
    pub email: Option<String>,
    pub contact_href: Option<String>,
    pub links: Vec<RowLink>,
    pub detail: Option<String>,
    pub when: String,
    pub exact: String,
}

/// The rows of the live stream and of the polling fallback.
#[derive(Template)]
#[template(path = "components/activity_rows.html")]
pub struct Rows {
    pub rows: Vec<Row>,
}

/// The kinds the page's filter offers, in the order of a message's life, then the rest. A
/// fixed list: counting the project's distinct kinds would scan all its events on every view.
pub const KINDS: [&str; 13] = [
    "email.sent",
    "email.delivery",
    "email.open",
    "email.click",
    "email.bounce",
    "email.complaint",
    "email.received",
    "contact.subscribed",
    "contact.unsubscribed",
    TRACKED_TYPE,
    "domain.verified",
    "domain.unverified",
    "campaign.stopped",
];

/// A kind as the filter names it ("Email opened").
pub fn kind_words(kind: &str) -> String {
    if kind == TRACKED_TYPE {
        "Tracked events".to_owned()
    } else {
        words(kind, kind)
    }
}

/// What happened, in words, for a feed type (a tracked event's own name after "Event").
fn words(kind: &str, name: &str) -> String {
    let fixed = match kind {
        "email.sent" => "Email sent",
        "email.delivery" => "Email delivered",
        "email.open" => "Email opened",
        "email.click" => "Link clicked",
        "email.bounce" => "Email bounced",
        "email.complaint" => "Marked as spam",
        "email.received" => "Email received",
        "contact.subscribed" => "Subscribed",
        "contact.unsubscribed" => "Unsubscribed",
        "domain.verified" => "Domain verified",
        "domain.unverified" => "Domain lost its verification",
        "campaign.stopped" => "Campaign stopped",
        TRACKED_TYPE => return format!("Event {name}"),
        _ => {
            if let Some(rest) = kind.strip_prefix("segment.") {
                if let Some(slug) = rest.strip_suffix(".entry") {
                    return format!("Entered segment {slug}");
                }
                if let Some(slug) = rest.strip_suffix(".exit") {
                    return format!("Left segment {slug}");
                }
            }
            return kind.to_owned();
        }
    };
    fixed.to_owned()
}

fn tone(kind: &str) -> &'static str {
    match kind {
        "email.bounce"
        | "email.complaint"
        | "domain.unverified"
        | "campaign.stopped"
        | "contact.unsubscribed" => "danger",
        "email.delivery" | "email.open" | "email.click" | "domain.verified"
        | "contact.subscribed" => "success",
        TRACKED_TYPE => "info",
        _ => "",
    }
}

/// The string at `key` of an entry's data, if any.
fn data_str<'a>(data: &'a Value, key: &str) -> Option<&'a str> {
    data.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Turns the API's entries into rows, with the campaigns' names (one read for the page).
pub async fn rows(
    state: &AppState,
    project: Uuid,
    base: &str,
    entries: Vec<ActivityResponse>,
) -> StoreResult<Vec<Row>> {
    let ids: Vec<Uuid> = entries
        .iter()
        .filter_map(|e| e.campaign_id.as_deref().and_then(parse_id))
        .chain(
            entries
                .iter()
                .filter_map(|e| data_str(&e.data, "campaignId").and_then(parse_id)),
        )
        .collect();
    let names: HashMap<Uuid, String> = if ids.is_empty() {
        HashMap::new()
    } else {
        state
            .store
            .campaign_names(project, &ids)
            .await?
            .into_iter()
            .collect()
    };
    let now = state.engine.now();
    Ok(entries
        .into_iter()
        .map(|e| row(base, &names, now, e))
        .collect())
}

/// The rows of store entries (the live stream), through the API's view of an entry.
pub async fn rows_of_entries(
    state: &AppState,
    project: Uuid,
    base: &str,
    entries: impl IntoIterator<Item = FeedEntry>,
) -> StoreResult<Vec<Row>> {
    let entries = entries.into_iter().map(ActivityResponse::from).collect();
    rows(state, project, base, entries).await
}

fn row(base: &str, names: &HashMap<Uuid, String>, now: i64, e: ActivityResponse) -> Row {
    let at = parse_iso(&e.created_at).unwrap_or(now);
    let (when, exact) = ago(at, now);
    let name = data_str(&e.data, "name").unwrap_or("").to_owned();
    let contact_href = e.contact_id.as_ref().map(|c| format!("{base}contacts/{c}"));
    let mut links = Vec::new();
    if let (Some(c), Some(m)) = (&e.contact_id, &e.message_id) {
        links.push(RowLink {
            label: "Email".to_owned(),
            href: format!("{base}contacts/{c}#email-{m}"),
        });
    }
    let campaign = e
        .campaign_id
        .clone()
        .or_else(|| data_str(&e.data, "campaignId").map(str::to_owned));
    if let Some(c) = campaign {
        let label = parse_id(&c)
            .and_then(|id| names.get(&id))
            .map_or_else(|| "Campaign".to_owned(), |n| format!("Campaign {n}"));
        links.push(RowLink {
            label,
            href: format!("{base}campaigns/{c}"),
        });
    }
    if let Some(w) = data_str(&e.data, "workflowId").filter(|w| parse_id(w).is_some()) {
        links.push(RowLink {
            label: "Workflow".to_owned(),
            href: format!("{base}workflows/{w}"),
        });
    }
    let detail = match e.kind.as_str() {
        "email.click" => data_str(&e.data, "url").map(str::to_owned),
        "email.bounce" | "campaign.stopped" => data_str(&e.data, "reason")
            .or_else(|| data_str(&e.data, "diagnostic"))
            .or_else(|| data_str(&e.data, "message"))
            .map(str::to_owned),
        "domain.verified" | "domain.unverified" => data_str(&e.data, "domain").map(str::to_owned),
        "email.received" => data_str(&e.data, "subject").map(str::to_owned),
        _ => None,
    };
    Row {
        words: words(&e.kind, &name),
        tone: tone(&e.kind),
        id: e.id,
        kind: if e.kind == TRACKED_TYPE { name } else { e.kind },
        email: e.email,
        contact_href,
        links,
        detail,
        when,
        exact,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_as_words() {
        assert_eq!(words("email.open", "email.open"), "Email opened");
        assert_eq!(words("event", "signup"), "Event signup");
        assert_eq!(words("segment.vip.entry", ""), "Entered segment vip");
        assert_eq!(words("something.new", ""), "something.new");
    }
}
