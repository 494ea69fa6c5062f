//! The graph's view: [`layout`](super::layout) positions with each step's type, summary,
//! active executions and problem (a deleted template, a step no path reaches, a refused
//! change), the links and "+" of the page, and an execution's path (steps it went through,
//! the transitions it took, where it is).

use std::collections::{HashMap, HashSet};

use herald_core::ids::Uuid;
use herald_core::workflow::{Branch, StepType};
use herald_store::workflows::{Step, Workflow};
use serde_json::Value;

use super::layout::{self, EdgeIn, NODE_H, NODE_W, StepIn};
use super::{clip, type_words};
use crate::filter_builder::Catalogue;
use crate::format::count;

/// What the graph shows besides the workflow itself.
#[derive(Default)]
pub struct Marks {
    /// Template names by id (a SEND_EMAIL naming another is a deleted template).
    pub templates: HashMap<String, String>,
    /// RUNNING and WAITING executions per step.
    pub active: HashMap<Uuid, i64>,
    /// The step whose form the panel shows.
    pub selected: Option<Uuid>,
    /// The open end or transition the panel adds a step at.
    pub adding: Option<(Uuid, Option<Branch>)>,
    /// An execution's steps in the order it went through them, and where it is now.
    pub path: Vec<Uuid>,
    pub current: Option<Uuid>,
    /// A refused change of a step, shown on it.
    pub refused: Option<(Uuid, String)>,
}

pub struct NodeView {
    pub href: String,
    /// The box's element id: links name it as their fragment, so that the browser scrolls
    /// the graph (and the page) back to the step after the reload.
    pub anchor: String,
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub tx: i32,
    pub right: i32,
    pub line1: i32,
    pub line2: i32,
    pub line3: i32,
    pub class: String,
    pub kind_words: &'static str,
    pub title: String,
    /// The third line: the problem if any, else the summary when the title is the name.
    pub detail: String,
    pub problem: bool,
    pub waiting: String,
    /// Everything in words: the link's accessible name and tooltip.
    pub label: String,
}

pub struct PlusView {
    pub x: i32,
    pub y: i32,
    pub href: String,
    pub label: String,
    pub selected: bool,
}

pub struct LinkView {
    pub path: String,
    pub class: &'static str,
    pub label: Option<(i32, i32, &'static str)>,
    pub plus: PlusView,
}

pub struct EndView {
    pub path: String,
    pub label: Option<(i32, i32, &'static str)>,
    pub plus: PlusView,
}

pub struct GraphView {
    pub width: i32,
    pub height: i32,
    pub nodes: Vec<NodeView>,
    pub links: Vec<LinkView>,
    pub ends: Vec<EndView>,
    /// Where the "Not connected" caption goes.
    pub orphans_y: Option<i32>,
    /// A summary for screen readers: the steps in words.
    pub desc: String,
}

fn branch_words(b: Option<Branch>) -> Option<&'static str> {
    b.map(|b| match b {
        Branch::Yes => "Yes",
        Branch::No => "No",
        Branch::Timeout => "Timeout",
    })
}

fn plural(n: i64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", count(n))
    }
}

/// A step's summary from its config, and its problem (a deleted template).
pub fn summary(
    step: &Step,
    trigger: &Value,
    marks: &Marks,
    catalogue: &Catalogue,
) -> (String, Option<String>) {
    let c = &step.config;
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match step.step_type {
        StepType::Trigger => {
            let event = trigger
                .get("eventName")
                .and_then(Value::as_str)
                .unwrap_or("");
            (format!("On {event}"), None)
        }
        StepType::SendEmail => {
            let id = s("templateId");
            match marks.templates.get(&id) {
                Some(name) => (name.clone(), None),
                None => (
                    "Template deleted".to_owned(),
                    Some("Template deleted: choose another".to_owned()),
                ),
            }
        }
        StepType::Delay => {
            let amount = c.get("amount").and_then(Value::as_i64).unwrap_or(0);
            let unit = s("unit");
            let unit = if amount == 1 {
                unit.trim_end_matches('s').to_owned()
            } else {
                unit
            };
            (format!("Wait {amount} {unit}"), None)
        }
        StepType::WaitForEvent => {
            let mut t = format!("Until {}", s("eventName"));
            if let Some(secs) = c.get("timeout").and_then(Value::as_i64) {
                t.push_str(&format!(", at most {}", duration(secs)));
            }
            (t, None)
        }
        StepType::Condition => {
            let field = s("field");
            let name = match field.as_str() {
                "contact.email" => "Email".to_owned(),
                "contact.subscribed" => "Subscribed".to_owned(),
                f => f
                    .strip_prefix("data.")
                    .map(str::to_owned)
                    .unwrap_or_else(|| f.to_owned()),
            };
            let op = s("operator");
            let kind = catalogue.kind_of(if field.starts_with("event.") {
                "event"
            } else {
                &field
            });
            let words = kind
                .operators()
                .iter()
                .find(|(o, _)| *o == op)
                .map_or(op.as_str(), |(_, w)| w);
            let value = match c.get("value") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(v)) => format!(" {v}"),
                Some(v) => format!(" {v}"),
            };
            (format!("{name} {words}{value}"), None)
        }
        StepType::Webhook => {
            let url = s("url");
            let shown = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"))
                .unwrap_or(&url);
            let method = Some(s("method")).filter(|m| !m.is_empty());
            (
                format!("{} {shown}", method.as_deref().unwrap_or("POST")),
                None,
            )
        }
        StepType::UpdateContact => {
            let mut parts = Vec::new();
            if let Some(d) = c.get("data").and_then(Value::as_object) {
                let keys: Vec<&str> = d.keys().map(String::as_str).collect();
                if !keys.is_empty() {
                    parts.push(format!("Set {}", keys.join(", ")));
                }
            }
            match c.get("subscribed").and_then(Value::as_bool) {
                Some(true) => parts.push("Subscribe".to_owned()),
                Some(false) => parts.push("Unsubscribe".to_owned()),
                None => {}
            }
            if parts.is_empty() {
                parts.push("No change".to_owned());
            }
            (parts.join("; "), None)
        }
        StepType::Exit => {
            let r = s("reason");
            (
                if r.is_empty() {
                    "End here".to_owned()
                } else {
                    r
                },
                None,
            )
        }
    }
}

/// Seconds in the largest whole unit ("2 days", "90 minutes").
pub fn duration(secs: i64) -> String {
    for (size, one, many) in [
        (86_400, "day", "days"),
        (3_600, "hour", "hours"),
        (60, "minute", "minutes"),
    ] {
        if secs > 0 && secs % size == 0 {
            return plural(secs / size, one, many);
        }
    }
    plural(secs, "second", "seconds")
}

/// The id of a step's box in the page (`n-<step id>`).
pub fn node_anchor(id: Uuid) -> String {
    format!("n-{id}")
}

/// The graph of `w` with `marks`, its links under `base` (the workflow page's path).
pub fn view(w: &Workflow, marks: &Marks, catalogue: &Catalogue, base: &str) -> GraphView {
    let steps: Vec<StepIn> = w
        .steps
        .iter()
        .map(|s| StepIn {
            id: s.id,
            step_type: s.step_type,
        })
        .collect();
    let edges: Vec<EdgeIn> = w
        .transitions
        .iter()
        .map(|t| EdgeIn {
            from: t.from_step_id,
            to: t.to_step_id,
            branch: t.branch,
        })
        .collect();
    let lay = layout::layout(&steps, &edges);
    let by_id: HashMap<Uuid, &Step> = w.steps.iter().map(|s| (s.id, s)).collect();
    let visited: HashSet<Uuid> = marks.path.iter().copied().collect();
    let taken: HashSet<(Uuid, Uuid)> = marks.path.windows(2).map(|p| (p[0], p[1])).collect();
    let name_of = |id: Uuid| {
        by_id
            .get(&id)
            .map(|s| {
                s.name
                    .clone()
                    .unwrap_or_else(|| type_words(s.step_type).to_owned())
            })
            .unwrap_or_default()
    };
    let plus = |from: Uuid, branch: Option<Branch>, x: i32, y: i32, between: bool| {
        let mut href = format!("{base}?add={from}");
        if let Some(b) = branch {
            href.push_str(&format!("&branch={}", b.as_str()));
        }
        href.push_str(&format!("#{}", node_anchor(from)));
        let verb = if between { "Insert" } else { "Add" };
        let on = branch_words(branch)
            .map(|b| format!(" ({b})"))
            .unwrap_or_default();
        PlusView {
            x,
            y,
            href,
            label: format!("{verb} a step after {}{on}", name_of(from)),
            selected: marks.adding == Some((from, branch)),
        }
    };
    let mut desc = Vec::new();
    let nodes = lay
        .nodes
        .iter()
        .filter_map(|n| {
            let s = by_id.get(&n.id)?;
            let (sum, mut problem) = summary(s, &w.trigger_config, marks, catalogue);
            if n.orphan && problem.is_none() {
                problem = Some("Not connected: never runs".to_owned());
            }
            if let Some((id, m)) = &marks.refused
                && *id == s.id
            {
                problem = Some(format!("Not saved: {m}"));
            }
            let kind_words = type_words(s.step_type);
            // A name that only repeats the type (the TRIGGER's "Trigger") gives way to the
            // summary.
            let (title, second) = match s.name.as_deref().filter(|n| *n != kind_words) {
                Some(name) => (name.to_owned(), Some(sum.clone())),
                None => (sum.clone(), None),
            };
            let active = marks.active.get(&s.id).copied().unwrap_or(0);
            let waiting = if active > 0 {
                format!("{} waiting", count(active))
            } else {
                String::new()
            };
            let mut class = format!("wf-node wf-{}", s.step_type.as_str().to_ascii_lowercase());
            for (on, c) in [
                (marks.selected == Some(s.id), " is-selected"),
                (visited.contains(&s.id), " is-visited"),
                (marks.current == Some(s.id), " is-current"),
                (problem.is_some(), " is-problem"),
                (n.orphan, " is-orphan"),
            ] {
                if on {
                    class.push_str(c);
                }
            }
            let mut label = format!("{kind_words}: {title}");
            if let Some(d) = &second {
                label.push_str(&format!(" ({d})"));
            }
            if active > 0 {
                label.push_str(&format!(", {waiting}"));
            }
            if let Some(p) = &problem {
                label.push_str(&format!(". Problem: {p}"));
            }
            desc.push(label.clone());
            Some(NodeView {
                href: format!("{base}?step={}#{}", s.id, node_anchor(s.id)),
                anchor: node_anchor(s.id),
                x: n.x,
                y: n.y,
                w: NODE_W,
                h: NODE_H,
                tx: n.x + 14,
                right: n.x + NODE_W - 12,
                line1: n.y + 22,
                line2: n.y + 45,
                line3: n.y + 65,
                class,
                kind_words,
                title: clip(&title, 26),
                detail: clip(problem.as_deref().or(second.as_deref()).unwrap_or(""), 30),
                problem: problem.is_some(),
                waiting,
                label,
            })
        })
        .collect();
    let links = lay
        .links
        .iter()
        .map(|l| LinkView {
            path: l.path.clone(),
            class: if taken.contains(&(l.from, l.to)) {
                "wf-link is-taken"
            } else {
                "wf-link"
            },
            label: branch_words(l.branch).map(|b| (l.label.0, l.label.1, b)),
            plus: plus(l.from, l.branch, l.insert.0, l.insert.1, true),
        })
        .collect();
    let ends = lay
        .ends
        .iter()
        .map(|e| EndView {
            path: e.path.clone(),
            label: branch_words(e.branch).map(|b| (e.label.0, e.label.1, b)),
            plus: plus(e.from, e.branch, e.x, e.y, false),
        })
        .collect();
    GraphView {
        width: lay.width,
        height: lay.height,
        nodes,
        links,
        ends,
        orphans_y: lay.orphans_top,
        desc: desc.join("; "),
    }
}
