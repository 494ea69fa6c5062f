//! Engagement: the campaigns with the most opens and clicks (`GET
//! /analytics/top-campaigns`'s function), the most clicked links, and the most frequent
//! tracked events (`GET /analytics/top-events`'s function). These count every event the
//! project kept, whatever the range.

use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::analytics::{campaigns_top, events_top};

use crate::format::count;
use crate::session::ProjectPage;

const TOP: u32 = 10;

pub struct Ranked {
    pub name: String,
    pub href: Option<String>,
    pub count: String,
}

pub struct Engagement {
    pub by_opens: Vec<Ranked>,
    pub by_clicks: Vec<Ranked>,
    pub links: Vec<Ranked>,
    pub events: Vec<Ranked>,
}

async fn campaigns(
    state: &AppState,
    page: &ProjectPage,
    metric: &str,
) -> Result<Vec<Ranked>, ApiError> {
    let top = campaigns_top(state, page.id(), Some(metric), TOP).await?;
    Ok(top
        .campaigns
        .into_iter()
        .map(|c| Ranked {
            name: c
                .name
                .unwrap_or_else(|| format!("Deleted campaign {}", c.campaign_id)),
            href: Some(page.href(&format!("campaigns/{}", c.campaign_id))),
            count: count(c.count),
        })
        .collect())
}

pub async fn build(state: &AppState, page: &ProjectPage) -> Result<Engagement, ApiError> {
    let links = state
        .store
        .top_links(page.id(), TOP)
        .await?
        .into_iter()
        .map(|(url, n)| Ranked {
            name: url,
            href: None,
            count: count(n),
        })
        .collect();
    let events = events_top(state, page.id(), TOP)
        .await?
        .events
        .into_iter()
        .map(|e| Ranked {
            href: Some(page.href(&format!(
                "activity?{}",
                form_urlencoded::Serializer::new(String::new())
                    .append_pair("type", "event")
                    .finish()
            ))),
            name: e.name,
            count: count(e.count),
        })
        .collect();
    Ok(Engagement {
        by_opens: campaigns(state, page, "opened").await?,
        by_clicks: campaigns(state, page, "clicked").await?,
        links,
        events,
    })
}
