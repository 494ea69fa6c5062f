//! A step's form: its values read from a stored step or a posted form, and written as the
//! API's `config` (the API checks it: `herald_core::workflow::check_config` through
//! `routes::workflows`). Controls are named by the API's field paths (`name`,
//! `config.templateId`, `config.amount`, ...), so a refusal's `field` names its control.
//!
//! The page converts only what a form cannot type: numbers (a value that does not read as
//! one is sent as typed, for the API to refuse), a WAIT_FOR_EVENT timeout given with a unit
//! (sent in seconds), WEBHOOK headers as `Name: value` lines, JSON typed into a textarea (a
//! body, UPDATE_CONTACT's data; not JSON: sent as the text), and a CONDITION's value typed by
//! its field through the filter builder's own row ([`crate::filter_builder::row_tree`]).

use herald_core::workflow::StepType;
use serde_json::{Map, Value, json};

use crate::filter_builder::{Catalogue, Input, Row, row_tree};
use crate::form::FormData;

/// The values of a step's form as typed (strings), for every type; a type uses its own.
#[derive(Clone, Debug, Default)]
pub struct StepForm {
    pub name: String,
    pub template_id: String,
    pub amount: String,
    pub unit: String,
    pub event_name: String,
    pub timeout: String,
    pub timeout_unit: String,
    /// A CONDITION's field (`contact.email`, `data.plan`, or `event` with `cond_event`).
    pub cond_field: String,
    pub cond_event: String,
    pub cond_operator: String,
    pub cond_value: String,
    pub url: String,
    pub method: String,
    pub headers: String,
    pub body: String,
    pub data: String,
    pub subscribed: String,
    pub reason: String,
}

fn text(config: &Value, key: &str) -> String {
    match config.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

fn pretty(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

/// Seconds as an amount and the largest unit that divides them.
fn split_seconds(secs: i64) -> (String, String) {
    for (unit, size) in [("days", 86_400), ("hours", 3_600), ("minutes", 60)] {
        if secs > 0 && secs % size == 0 {
            return ((secs / size).to_string(), unit.to_owned());
        }
    }
    (secs.to_string(), "seconds".to_owned())
}

/// A number the builder typed as a float written whole when it is (`3`, not `3.0`).
fn whole(v: Value) -> Value {
    match v.as_f64() {
        Some(f) if v.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
        _ => v,
    }
}

impl StepForm {
    /// A new step's form: the defaults a user most often wants.
    pub fn new_step() -> StepForm {
        StepForm {
            amount: "1".to_owned(),
            unit: "days".to_owned(),
            timeout_unit: "days".to_owned(),
            cond_field: "contact.email".to_owned(),
            cond_operator: "contains".to_owned(),
            method: "POST".to_owned(),
            ..StepForm::default()
        }
    }

    /// The form of a stored step.
    pub fn from_step(name: Option<&str>, config: &Value) -> StepForm {
        let (timeout, timeout_unit) = match config.get("timeout").and_then(Value::as_i64) {
            Some(s) => split_seconds(s),
            None => (String::new(), "days".to_owned()),
        };
        let field = text(config, "field");
        let (cond_field, cond_event) = match field.strip_prefix("event.") {
            Some(key) => ("event".to_owned(), key.to_owned()),
            None => (field, String::new()),
        };
        let headers = config
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .map(|(k, v)| format!("{k}: {}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        StepForm {
            name: name.unwrap_or_default().to_owned(),
            template_id: text(config, "templateId"),
            amount: text(config, "amount"),
            unit: text(config, "unit"),
            event_name: text(config, "eventName"),
            timeout,
            timeout_unit,
            cond_field,
            cond_event,
            cond_operator: text(config, "operator"),
            cond_value: text(config, "value"),
            url: text(config, "url"),
            method: Some(text(config, "method"))
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "POST".to_owned()),
            headers,
            body: pretty(config.get("body")),
            data: pretty(config.get("data")),
            subscribed: text(config, "subscribed"),
            reason: text(config, "reason"),
        }
    }

    /// The form as posted.
    pub fn posted(f: &FormData) -> StepForm {
        StepForm {
            name: f.get("name"),
            template_id: f.get("config.templateId"),
            amount: f.get("config.amount"),
            unit: f.get("config.unit"),
            event_name: f.get("config.eventName"),
            timeout: f.get("config.timeout"),
            timeout_unit: f.get("timeoutUnit"),
            cond_field: f.get("config.field"),
            cond_event: f.get("conditionEvent"),
            cond_operator: f.get("config.operator"),
            cond_value: f.get("config.value"),
            url: f.get("config.url"),
            method: f.get("config.method"),
            headers: f.get("config.headers"),
            body: f.get("config.body"),
            data: f.get("config.data"),
            subscribed: f.get("config.subscribed"),
            reason: f.get("config.reason"),
        }
    }

    /// The CONDITION's one row, as the filter builder holds it.
    pub fn condition_row(&self) -> Row {
        Row::leaf(
            &self.cond_field,
            &self.cond_event,
            &self.cond_operator,
            &self.cond_value,
        )
    }

    /// Makes the CONDITION's operator one its field offers (the first when it is not).
    pub fn fit_condition(&mut self, catalogue: &Catalogue) {
        let ops = catalogue.kind_of(&self.cond_field).condition_operators();
        if !ops.iter().any(|(o, _)| *o == self.cond_operator)
            && let Some((first, _)) = ops.first()
        {
            self.cond_operator = (*first).to_owned();
        }
        if catalogue
            .kind_of(&self.cond_field)
            .input(&self.cond_operator)
            == Input::None
        {
            self.cond_value.clear();
        }
    }

    /// The API's `config` for a step of type `t`.
    pub fn config(&self, t: StepType, catalogue: &Catalogue) -> Value {
        let mut c = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                c.insert(k.to_owned(), v);
            }
        };
        let s = |v: &str| Some(v.trim()).filter(|v| !v.is_empty()).map(|v| json!(v));
        let number = |v: &str| {
            let v = v.trim();
            if v.is_empty() {
                None
            } else {
                Some(v.parse::<i64>().map_or_else(|_| json!(v), |n| json!(n)))
            }
        };
        let json_or_text = |v: &str| {
            let v = v.trim();
            if v.is_empty() {
                None
            } else {
                Some(serde_json::from_str::<Value>(v).unwrap_or_else(|_| json!(v)))
            }
        };
        match t {
            StepType::Trigger => {}
            StepType::SendEmail => put("templateId", s(&self.template_id)),
            StepType::Delay => {
                put("amount", number(&self.amount));
                put("unit", s(&self.unit));
            }
            StepType::WaitForEvent => {
                put("eventName", s(&self.event_name));
                let size = match self.timeout_unit.as_str() {
                    "minutes" => 60,
                    "hours" => 3_600,
                    "days" => 86_400,
                    _ => 1,
                };
                put(
                    "timeout",
                    number(&self.timeout).map(|v| match v.as_i64() {
                        Some(n) => json!(n.saturating_mul(size)),
                        None => v,
                    }),
                );
            }
            StepType::Condition => {
                if let Value::Object(leaf) = row_tree(&self.condition_row(), catalogue) {
                    for (k, v) in leaf {
                        let blank_field = k == "field" && v.as_str().is_some_and(|f| f == "event.");
                        if !(blank_field || k == "field" && v == json!("")) {
                            put(&k, Some(whole(v)));
                        }
                    }
                }
            }
            StepType::Webhook => {
                put("url", s(&self.url));
                put("method", s(&self.method));
                let mut headers = Map::new();
                for line in self.headers.lines().filter(|l| !l.trim().is_empty()) {
                    let (k, v) = line.split_once(':').unwrap_or((line, ""));
                    headers.insert(k.trim().to_owned(), json!(v.trim()));
                }
                if !headers.is_empty() {
                    put("headers", Some(Value::Object(headers)));
                }
                put("body", json_or_text(&self.body));
            }
            StepType::UpdateContact => {
                put("data", json_or_text(&self.data));
                put(
                    "subscribed",
                    match self.subscribed.as_str() {
                        "true" => Some(json!(true)),
                        "false" => Some(json!(false)),
                        _ => None,
                    },
                );
            }
            StepType::Exit => put("reason", s(&self.reason)),
        }
        Value::Object(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Catalogue {
        Catalogue::for_condition(&[herald_store::fields::CustomField {
            key: "logins".to_owned(),
            field_type: herald_core::fields::FieldType::Number,
        }])
    }

    #[test]
    fn a_condition_round_trips_with_its_value_typed_by_its_field() {
        let c = catalogue();
        let stored = json!({"field": "data.logins", "operator": "greaterThan", "value": 3});
        let form = StepForm::from_step(None, &stored);
        assert_eq!(form.cond_value, "3");
        assert_eq!(form.config(StepType::Condition, &c), stored);
        let event = json!({"field": "event.plan", "operator": "equals", "value": "pro"});
        let form = StepForm::from_step(Some("Plan?"), &event);
        assert_eq!(
            (form.cond_field.as_str(), form.cond_event.as_str()),
            ("event", "plan")
        );
        assert_eq!(form.config(StepType::Condition, &c), event);
    }

    #[test]
    fn a_timeout_is_sent_in_seconds_and_shown_in_its_largest_unit() {
        let c = catalogue();
        let stored = json!({"eventName": "purchase", "timeout": 172_800});
        let form = StepForm::from_step(None, &stored);
        assert_eq!(
            (form.timeout.as_str(), form.timeout_unit.as_str()),
            ("2", "days")
        );
        assert_eq!(form.config(StepType::WaitForEvent, &c), stored);
    }

    #[test]
    fn webhook_headers_are_lines_and_bad_input_goes_to_the_api_as_typed() {
        let c = catalogue();
        let mut form = StepForm::new_step();
        form.url = "https://example.com/hook".into();
        form.headers = "X-Team: growth\n\n".into();
        form.body = "{\"a\": 1}".into();
        assert_eq!(
            form.config(StepType::Webhook, &c),
            json!({"url": "https://example.com/hook", "method": "POST",
                   "headers": {"X-Team": "growth"}, "body": {"a": 1}})
        );
        let mut delay = StepForm::new_step();
        delay.amount = "two".into();
        assert_eq!(
            delay.config(StepType::Delay, &c),
            json!({"amount": "two", "unit": "days"})
        );
        let mut update = StepForm::new_step();
        update.data = "not json".into();
        update.subscribed = "false".into();
        assert_eq!(
            update.config(StepType::UpdateContact, &c),
            json!({"data": "not json", "subscribed": false})
        );
    }
}
