//! The progress of contact jobs (imports and bulk actions) as a page fragment: a progress bar
//! while they run (htmx polls the fragment every second), the result when they end: rows
//! imported, updated and refused with their line numbers and reasons; contacts changed,
//! unchanged and failed.

use askama::Template;
use axum::response::Response;
use herald_api::AppState;
use herald_api::routes::contact_jobs::{JobResponse, job_status};
use serde::Deserialize;
use serde_json::Value;

use crate::format::count;
use crate::pages::not_found;
use crate::render::ok;
use crate::session::ProjectPage;

#[derive(Deserialize, Default)]
pub struct JobsQuery {
    #[serde(default)]
    pub bulk: String,
    #[serde(default)]
    pub import: String,
}

pub struct RowError {
    pub row: String,
    pub error: String,
}

#[derive(Template)]
#[template(path = "components/jobs.html")]
struct JobsFragment {
    /// The fragment's own URL while a job runs (htmx polls it); None when all have ended.
    poll: Option<String>,
    title: &'static str,
    progress: i64,
    running: bool,
    failed: Option<String>,
    /// Result lines ("12 imported"), shown when done.
    lines: Vec<String>,
    errors: Vec<RowError>,
    /// The contacts page without the job: the list as the ended job left it.
    list_href: String,
}

fn num(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn running(j: &JobResponse) -> bool {
    j.state == "waiting" || j.state == "active"
}

pub async fn fragment(state: &AppState, page: &ProjectPage, q: &JobsQuery) -> Response {
    let bulk = !q.bulk.is_empty();
    let raw = if bulk {
        q.bulk.as_str()
    } else {
        q.import.as_str()
    };
    let mut jobs = Vec::new();
    for id in raw.split(',').filter(|s| !s.is_empty()).take(100) {
        match job_status(state, page.id(), id, bulk).await {
            Ok(j) => jobs.push(j),
            Err(e) => return not_found::api_error(&e),
        }
    }
    let any_running = jobs.iter().any(running);
    let progress = if jobs.is_empty() {
        100
    } else {
        jobs.iter().map(|j| i64::from(j.progress)).sum::<i64>() / jobs.len() as i64
    };
    let failed = jobs
        .iter()
        .find_map(|j| j.failed_reason.clone().filter(|_| j.state == "failed"));
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    if !any_running {
        let results: Vec<&Value> = jobs.iter().filter_map(|j| j.result.as_ref()).collect();
        let sum = |key: &str| results.iter().map(|r| num(r, key)).sum::<i64>();
        if bulk {
            lines.push(format!("{} changed", count(sum("successCount"))));
            lines.push(format!("{} already so", count(sum("unchangedCount"))));
            lines.push(format!("{} failed", count(sum("failureCount"))));
        } else {
            lines.push(format!("{} imported", count(sum("created"))));
            lines.push(format!("{} updated", count(sum("updated"))));
            lines.push(format!("{} refused", count(sum("skipped"))));
        }
        for r in &results {
            for e in r
                .get("errors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let row = match (e.get("row"), e.get("contactId")) {
                    (Some(Value::Number(n)), _) => format!("Line {n}"),
                    (_, Some(Value::String(id))) => id.clone(),
                    _ => String::new(),
                };
                let error = e
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                errors.push(RowError { row, error });
            }
        }
        errors.truncate(200);
    }
    let poll = any_running.then(|| {
        let mut s = form_urlencoded::Serializer::new(String::new());
        if bulk {
            s.append_pair("bulk", &q.bulk);
        } else {
            s.append_pair("import", &q.import);
        }
        format!("{}/jobs?{}", page.href("contacts"), s.finish())
    });
    ok(&JobsFragment {
        poll,
        title: if bulk { "Bulk action" } else { "Import" },
        progress,
        running: any_running,
        failed,
        lines,
        errors,
        list_href: page.href("contacts"),
    })
}
