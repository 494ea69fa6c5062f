//! Workflow rules with no I/O (DECISIONS.md "Workflows"): step types and their configs,
//! transition branches, execution statuses, and the graph rules (no cycles, EXIT has no
//! outgoing transition, a plain step at most one, CONDITION one `yes` and one `no`,
//! WAIT_FOR_EVENT one plain and one `timeout`).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::filter::Operator;
use crate::ids::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepType {
    Trigger,
    SendEmail,
    Delay,
    WaitForEvent,
    Condition,
    Webhook,
    UpdateContact,
    Exit,
}

impl StepType {
    pub const ALL: [StepType; 8] = [
        StepType::Trigger,
        StepType::SendEmail,
        StepType::Delay,
        StepType::WaitForEvent,
        StepType::Condition,
        StepType::Webhook,
        StepType::UpdateContact,
        StepType::Exit,
    ];
    /// The types a request may add (the TRIGGER step comes with the workflow).
    pub const EXPECTED: &'static str =
        "SEND_EMAIL, DELAY, WAIT_FOR_EVENT, CONDITION, WEBHOOK, UPDATE_CONTACT or EXIT";

    pub fn as_str(self) -> &'static str {
        match self {
            StepType::Trigger => "TRIGGER",
            StepType::SendEmail => "SEND_EMAIL",
            StepType::Delay => "DELAY",
            StepType::WaitForEvent => "WAIT_FOR_EVENT",
            StepType::Condition => "CONDITION",
            StepType::Webhook => "WEBHOOK",
            StepType::UpdateContact => "UPDATE_CONTACT",
            StepType::Exit => "EXIT",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }

    /// The branches its outgoing transitions carry (`None`: one plain transition).
    pub fn branches(self) -> &'static [Option<Branch>] {
        match self {
            StepType::Condition => &[Some(Branch::Yes), Some(Branch::No)],
            StepType::WaitForEvent => &[None, Some(Branch::Timeout)],
            StepType::Exit => &[],
            _ => &[None],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Branch {
    Yes,
    No,
    Timeout,
}

impl Branch {
    pub fn as_str(self) -> &'static str {
        match self {
            Branch::Yes => "yes",
            Branch::No => "no",
            Branch::Timeout => "timeout",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Branch::Yes, Branch::No, Branch::Timeout]
            .into_iter()
            .find(|b| b.as_str().eq_ignore_ascii_case(s))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecutionStatus {
    Running,
    Waiting,
    Completed,
    Exited,
    Failed,
    Cancelled,
}

impl ExecutionStatus {
    pub const ALL: [ExecutionStatus; 6] = [
        ExecutionStatus::Running,
        ExecutionStatus::Waiting,
        ExecutionStatus::Completed,
        ExecutionStatus::Exited,
        ExecutionStatus::Failed,
        ExecutionStatus::Cancelled,
    ];
    pub const EXPECTED: &'static str = "RUNNING, WAITING, COMPLETED, EXITED, FAILED or CANCELLED";

    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Waiting => "WAITING",
            ExecutionStatus::Completed => "COMPLETED",
            ExecutionStatus::Exited => "EXITED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::Cancelled => "CANCELLED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }

    /// RUNNING or WAITING: the execution still has work (it blocks re-entry and deletion).
    pub fn is_active(self) -> bool {
        matches!(self, ExecutionStatus::Running | ExecutionStatus::Waiting)
    }
}

impl TryFrom<String> for ExecutionStatus {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| format!("unknown execution status {s:?}"))
    }
}

/// The state of one entry of an execution's step history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepStatus {
    /// The step is under way: a DELAY or WAIT_FOR_EVENT waiting for its time or event.
    Waiting,
    Completed,
    /// A SEND_EMAIL whose recipient could not be mailed (unsubscribed, suppressed).
    Skipped,
    /// A WAIT_FOR_EVENT whose event did not come in time.
    TimedOut,
    Failed,
}

impl StepStatus {
    pub const ALL: [StepStatus; 5] = [
        StepStatus::Waiting,
        StepStatus::Completed,
        StepStatus::Skipped,
        StepStatus::TimedOut,
        StepStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Waiting => "WAITING",
            StepStatus::Completed => "COMPLETED",
            StepStatus::Skipped => "SKIPPED",
            StepStatus::TimedOut => "TIMED_OUT",
            StepStatus::Failed => "FAILED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether the entry is still open (it gets a `completedAt` when it closes).
    pub fn is_open(self) -> bool {
        self == StepStatus::Waiting
    }
}

impl TryFrom<String> for StepStatus {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| format!("unknown step status {s:?}"))
    }
}

/// Longest workflow and step names, in characters.
pub const NAME_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 2000;
/// The longest DELAY: a year in any unit.
const DELAY_MAX_DAYS: i64 = 366;

/// A config problem: the path below `config` (empty: `config` itself), a message and a code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
    pub code: &'static str,
}

fn problem(path: &str, message: impl Into<String>, code: &'static str) -> ConfigError {
    ConfigError {
        path: path.to_owned(),
        message: message.into(),
        code,
    }
}

fn text<'a>(
    cfg: &'a Map<String, Value>,
    key: &str,
    required: bool,
    errors: &mut Vec<ConfigError>,
) -> Option<&'a str> {
    match cfg.get(key) {
        None | Some(Value::Null) if required => {
            errors.push(problem(key, format!("{key} is required"), "required"));
            None
        }
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        Some(_) => {
            errors.push(problem(
                key,
                format!("{key} must be a non-empty string"),
                "invalid_value",
            ));
            None
        }
    }
}

fn positive(
    cfg: &Map<String, Value>,
    key: &str,
    required: bool,
    max: i64,
    errors: &mut Vec<ConfigError>,
) -> Option<i64> {
    match cfg.get(key) {
        None | Some(Value::Null) if required => {
            errors.push(problem(key, format!("{key} is required"), "required"));
            None
        }
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64().filter(|n| (1..=max).contains(n)) {
            Some(n) => Some(n),
            None => {
                let message = format!("{key} must be a whole number from 1 to {max}");
                errors.push(problem(key, message, "invalid_value"));
                None
            }
        },
    }
}

/// Checks a step's config for its type. Returns what the store keeps (the config as given,
/// `unit` lower-cased), or every problem at once. Whether a SEND_EMAIL template exists in the
/// project is the caller's check (it needs the store).
pub fn check_config(step: StepType, config: &Value) -> Result<Value, Vec<ConfigError>> {
    let empty = Map::new();
    let cfg = match config {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => {
            return Err(vec![problem(
                "",
                "config must be an object",
                "invalid_type",
            )]);
        }
    };
    let mut errors = Vec::new();
    let mut out = cfg.clone();
    match step {
        StepType::Trigger => {}
        StepType::SendEmail => {
            if let Some(t) = text(cfg, "templateId", true, &mut errors)
                && Uuid::parse_str(t).is_err()
            {
                errors.push(problem(
                    "templateId",
                    "templateId must be an id",
                    "invalid_id",
                ));
            }
        }
        StepType::Delay => {
            let unit = text(cfg, "unit", true, &mut errors).map(str::to_ascii_lowercase);
            let per_day = match unit.as_deref() {
                Some("minutes" | "minute") => Some(24 * 60),
                Some("hours" | "hour") => Some(24),
                Some("days" | "day") => Some(1),
                Some(_) => {
                    errors.push(problem(
                        "unit",
                        "unit must be minutes, hours or days",
                        "invalid_value",
                    ));
                    None
                }
                None => None,
            };
            positive(
                cfg,
                "amount",
                true,
                DELAY_MAX_DAYS * per_day.unwrap_or(24 * 60),
                &mut errors,
            );
            if let Some(u) = unit {
                let plural = if u.ends_with('s') { u } else { format!("{u}s") };
                out.insert("unit".into(), Value::String(plural));
            }
        }
        StepType::WaitForEvent => {
            text(cfg, "eventName", true, &mut errors);
            positive(cfg, "timeout", false, DELAY_MAX_DAYS * 86_400, &mut errors);
        }
        StepType::Condition => {
            if let Some(field) = text(cfg, "field", true, &mut errors) {
                let known = ["contact.email", "contact.subscribed"].contains(&field)
                    || field.strip_prefix("data.").is_some_and(|k| !k.is_empty())
                    || field.strip_prefix("event.").is_some_and(|k| !k.is_empty());
                if !known {
                    let message = "field must be contact.email, contact.subscribed, data.<key> or event.<key>";
                    errors.push(problem("field", message, "invalid_value"));
                }
            }
            if let Some(op) = text(cfg, "operator", true, &mut errors) {
                match Operator::parse(op) {
                    None => errors.push(problem(
                        "operator",
                        format!("unknown operator {op:?}"),
                        "invalid_value",
                    )),
                    Some(o) if o.needs_value() && cfg.get("value").is_none_or(Value::is_null) => {
                        errors.push(problem("value", format!("{op} needs a value"), "required"));
                    }
                    Some(_) => {}
                }
            }
        }
        StepType::Webhook => {
            if let Some(url) = text(cfg, "url", true, &mut errors) {
                let rest = url
                    .strip_prefix("https://")
                    .or_else(|| url.strip_prefix("http://"));
                let ok = rest.is_some_and(|r| {
                    let host = r.split(['/', '?', '#']).next().unwrap_or("");
                    !host.is_empty() && !url.chars().any(char::is_whitespace)
                });
                if !ok {
                    errors.push(problem(
                        "url",
                        "url must be an http or https URL",
                        "invalid_url",
                    ));
                }
            }
            if let Some(m) = text(cfg, "method", false, &mut errors) {
                let upper = m.to_ascii_uppercase();
                if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&upper.as_str()) {
                    out.insert("method".into(), Value::String(upper));
                } else {
                    errors.push(problem(
                        "method",
                        "method must be GET, POST, PUT, PATCH or DELETE",
                        "invalid_value",
                    ));
                }
            }
            match cfg.get("headers") {
                None | Some(Value::Null) => {}
                Some(Value::Object(h)) => {
                    for (k, v) in h {
                        let name_ok = crate::headers::header_name(k).is_ok();
                        if !name_ok || !v.is_string() {
                            let message = "headers are names to string values";
                            errors.push(problem(&format!("headers.{k}"), message, "invalid_value"));
                        }
                    }
                }
                Some(_) => errors.push(problem(
                    "headers",
                    "headers must be an object",
                    "invalid_type",
                )),
            }
        }
        StepType::UpdateContact => {
            if cfg
                .get("data")
                .is_some_and(|d| !d.is_object() && !d.is_null())
            {
                errors.push(problem("data", "data must be an object", "invalid_type"));
            }
            if cfg
                .get("subscribed")
                .is_some_and(|s| !s.is_boolean() && !s.is_null())
            {
                errors.push(problem(
                    "subscribed",
                    "subscribed must be true or false",
                    "invalid_type",
                ));
            }
        }
        StepType::Exit => {
            text(cfg, "reason", false, &mut errors);
        }
    }
    if errors.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(errors)
    }
}

/// A workflow's graph as the rules see it.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub steps: HashMap<Uuid, StepType>,
    /// (from, to, branch)
    pub edges: Vec<(Uuid, Uuid, Option<Branch>)>,
}

/// Why a transition cannot be added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphError {
    /// The request field at fault (`fromStepId`, `toStepId`, `branch`).
    pub field: &'static str,
    pub message: String,
}

impl Graph {
    /// Whether `from -> to` (with `branch`) may be added.
    pub fn check_edge(
        &self,
        from: Uuid,
        to: Uuid,
        branch: Option<Branch>,
    ) -> Result<(), GraphError> {
        let err = |field, message: &str| {
            Err(GraphError {
                field,
                message: message.to_owned(),
            })
        };
        let Some(&from_type) = self.steps.get(&from) else {
            return err("fromStepId", "the step is not in this workflow");
        };
        let Some(&to_type) = self.steps.get(&to) else {
            return err("toStepId", "the step is not in this workflow");
        };
        if to_type == StepType::Trigger {
            return err("toStepId", "nothing leads into the TRIGGER step");
        }
        if from_type == StepType::Exit {
            return err("fromStepId", "an EXIT step has no outgoing transition");
        }
        if !from_type.branches().contains(&branch) {
            let message = match from_type {
                StepType::Condition => "a CONDITION step's transitions carry branch yes or no",
                StepType::WaitForEvent => {
                    "a WAIT_FOR_EVENT step's transitions carry no branch or branch timeout"
                }
                _ => "only CONDITION and WAIT_FOR_EVENT steps take a branch",
            };
            return err("branch", message);
        }
        if self
            .edges
            .iter()
            .any(|(f, _, b)| *f == from && *b == branch)
        {
            return err(
                "fromStepId",
                match branch {
                    Some(_) => "the step already has a transition on this branch",
                    None => "the step already has its outgoing transition",
                },
            );
        }
        if from == to || self.reaches(to, from) {
            return err("toStepId", "the transition would make a cycle");
        }
        Ok(())
    }

    /// Whether `to` is reachable from `from`.
    fn reaches(&self, from: Uuid, to: Uuid) -> bool {
        let mut seen = HashSet::new();
        let mut todo = vec![from];
        while let Some(s) = todo.pop() {
            if s == to {
                return true;
            }
            if seen.insert(s) {
                todo.extend(
                    self.edges
                        .iter()
                        .filter(|(f, ..)| *f == s)
                        .map(|(_, t, _)| *t),
                );
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id() -> Uuid {
        crate::ids::new_id()
    }

    #[test]
    fn configs_are_checked_per_type() {
        assert!(
            check_config(StepType::Delay, &json!({"amount": 2, "unit": "Day"}))
                .is_ok_and(|v| v["unit"] == "days")
        );
        let e = check_config(StepType::Delay, &json!({"amount": 0, "unit": "weeks"})).unwrap_err();
        let paths: Vec<&str> = e.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["unit", "amount"]);
        assert!(check_config(StepType::SendEmail, &json!({})).is_err());
        assert!(
            check_config(
                StepType::SendEmail,
                &json!({"templateId": id().to_string()})
            )
            .is_ok()
        );
        assert!(
            check_config(
                StepType::Condition,
                &json!({"field": "data.plan", "operator": "equals", "value": "pro"})
            )
            .is_ok()
        );
        let e = check_config(
            StepType::Condition,
            &json!({"field": "plan", "operator": "equals"}),
        )
        .unwrap_err();
        let paths: Vec<&str> = e.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["field", "value"]);
        assert!(check_config(StepType::Webhook, &json!({"url": "ftp://x"})).is_err());
        assert!(
            check_config(
                StepType::Webhook,
                &json!({"url": "https://hooks.example/x", "method": "post"})
            )
            .is_ok_and(|v| v["method"] == "POST")
        );
        assert!(
            check_config(
                StepType::WaitForEvent,
                &json!({"eventName": "paid", "timeout": 3600})
            )
            .is_ok()
        );
        assert!(check_config(StepType::UpdateContact, &json!({"subscribed": "yes"})).is_err());
        assert!(check_config(StepType::Exit, &json!(null)).is_ok());
        assert!(check_config(StepType::Exit, &json!([1])).is_err());
    }

    #[test]
    fn graph_rules() {
        let (t, c, a, b, x) = (id(), id(), id(), id(), id());
        let mut g = Graph::default();
        for (s, ty) in [
            (t, StepType::Trigger),
            (c, StepType::Condition),
            (a, StepType::SendEmail),
            (b, StepType::Delay),
            (x, StepType::Exit),
        ] {
            g.steps.insert(s, ty);
        }
        assert!(g.check_edge(t, c, None).is_ok());
        g.edges.push((t, c, None));
        assert_eq!(g.check_edge(t, a, None).unwrap_err().field, "fromStepId");
        assert_eq!(g.check_edge(c, a, None).unwrap_err().field, "branch");
        assert!(g.check_edge(c, a, Some(Branch::Yes)).is_ok());
        g.edges.push((c, a, Some(Branch::Yes)));
        g.edges.push((c, b, Some(Branch::No)));
        g.edges.push((a, x, None));
        assert_eq!(g.check_edge(x, b, None).unwrap_err().field, "fromStepId");
        assert_eq!(
            g.check_edge(b, c, None).unwrap_err().message,
            "the transition would make a cycle"
        );
        assert_eq!(g.check_edge(b, t, None).unwrap_err().field, "toStepId");
        assert!(g.check_edge(b, x, None).is_ok());
        assert_eq!(
            g.check_edge(a, b, Some(Branch::Timeout)).unwrap_err().field,
            "branch"
        );
    }
}
