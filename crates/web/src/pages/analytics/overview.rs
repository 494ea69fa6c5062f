//! Overview: sends, deliveries, opens, clicks and bounces per UTC day of the range (the API's
//! time series), their totals, and the open and click rates of the range and of each day.

use herald_api::AppState;
use herald_api::error::ApiError;

use super::{Range, daily};
use crate::chart::{Chart, ChartKind, ChartView, ValueFormat};
use crate::format::{count, percent};
use crate::session::ProjectPage;

pub struct Card {
    pub label: &'static str,
    pub value: String,
    pub detail: String,
}

/// One day of the series, as the table under the charts shows it.
pub struct Day {
    pub label: String,
    pub at: String,
    pub sent: String,
    pub delivered: String,
    pub opened: String,
    pub clicked: String,
    pub bounced: String,
}

pub struct Overview {
    pub cards: Vec<Card>,
    pub sends: ChartView,
    pub engagement: ChartView,
    pub rates: ChartView,
    pub days: Vec<Day>,
}

fn rate(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        part as f64 * 100.0 / whole as f64
    } else {
        0.0
    }
}

pub async fn build(state: &AppState, page: &ProjectPage, r: &Range) -> Result<Overview, ApiError> {
    let points = daily(state, page, r).await?;
    let labels = Range::labels(&points);
    let total = |f: fn(&herald_api::routes::analytics::SeriesPoint) -> i64| -> i64 {
        points.iter().map(f).sum()
    };
    let (sent, delivered, opened, clicked, bounced) = (
        total(|p| p.sent),
        total(|p| p.delivered),
        total(|p| p.opened),
        total(|p| p.clicked),
        total(|p| p.bounced),
    );
    let of_sent = |n: i64| {
        if sent > 0 {
            format!("{} of sent", percent(n, sent))
        } else {
            String::new()
        }
    };
    let cards = vec![
        Card {
            label: "Sent",
            value: count(sent),
            detail: String::new(),
        },
        Card {
            label: "Delivered",
            value: count(delivered),
            detail: of_sent(delivered),
        },
        Card {
            label: "Opens",
            value: count(opened),
            detail: String::new(),
        },
        Card {
            label: "Open rate",
            value: percent(opened, sent),
            detail: "opens per email sent".to_owned(),
        },
        Card {
            label: "Clicks",
            value: count(clicked),
            detail: String::new(),
        },
        Card {
            label: "Click rate",
            value: percent(clicked, sent),
            detail: "clicks per email sent".to_owned(),
        },
        Card {
            label: "Bounces",
            value: count(bounced),
            detail: of_sent(bounced),
        },
    ];
    let sends = Chart::new("sends", ChartKind::Bar, "Emails sent per day")
        .labels(labels.clone())
        .series("Sent", points.iter().map(|p| p.sent as f64))
        .view();
    let engagement = Chart::new("engagement", ChartKind::Line, "Opens and clicks per day")
        .labels(labels.clone())
        .series("Opens", points.iter().map(|p| p.opened as f64))
        .series("Clicks", points.iter().map(|p| p.clicked as f64))
        .view();
    let rates = Chart::new("rates", ChartKind::Line, "Open and click rate per day")
        .labels(labels.clone())
        .series("Open rate", points.iter().map(|p| rate(p.opened, p.sent)))
        .series("Click rate", points.iter().map(|p| rate(p.clicked, p.sent)))
        .format(ValueFormat::Percent)
        .view();
    let days = points
        .iter()
        .zip(labels)
        .rev()
        .map(|(p, label)| Day {
            label,
            at: p.at.clone(),
            sent: count(p.sent),
            delivered: count(p.delivered),
            opened: count(p.opened),
            clicked: count(p.clicked),
            bounced: count(p.bounced),
        })
        .collect();
    Ok(Overview {
        cards,
        sends,
        engagement,
        rates,
        days,
    })
}
