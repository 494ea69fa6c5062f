//! Request rules of the Workflows resource: names, the trigger, step types and positions.
//! Step configs are checked by `herald_core::workflow::check_config`; its problems are
//! reported under `config.<path>`.

use herald_core::workflow::{ConfigError, DESCRIPTION_MAX, NAME_MAX, StepType};
use serde_json::Value;

use super::wire::{StepRequest, WorkflowRequest};
use crate::error::{ApiError, ApiResult, FieldError};

/// A workflow request after validation (`description: Some(None)` clears it).
pub struct CheckedWorkflow {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub trigger_config: Option<Value>,
    pub enabled: Option<bool>,
    pub allow_reentry: Option<bool>,
}

fn name_rule(field: &str, raw: &str, errors: &mut Vec<FieldError>) -> Option<String> {
    let n = raw.trim();
    if n.is_empty() || n.chars().count() > NAME_MAX || n.chars().any(char::is_control) {
        let message = format!("{field} is 1 to {NAME_MAX} characters without control characters");
        errors.push(FieldError::new(field, message, "invalid_value"));
        None
    } else {
        Some(n.to_owned())
    }
}

/// Applies the rules; `create` makes `name` and `triggerConfig.eventName` required.
pub fn check_workflow(req: WorkflowRequest, create: bool) -> ApiResult<CheckedWorkflow> {
    let mut errors = Vec::new();
    let name = match req.name.as_deref() {
        None if create => {
            errors.push(FieldError::new("name", "name is required", "required"));
            None
        }
        None => None,
        Some(raw) => name_rule("name", raw, &mut errors),
    };
    let description = req.description.map(|d| {
        if d.chars().count() > DESCRIPTION_MAX {
            let message = format!("description is at most {DESCRIPTION_MAX} characters");
            errors.push(FieldError::new("description", message, "too_long"));
        }
        Some(d).filter(|d| !d.trim().is_empty())
    });
    if req
        .trigger_type
        .as_deref()
        .is_some_and(|t| !t.eq_ignore_ascii_case("EVENT"))
    {
        errors.push(FieldError::new(
            "triggerType",
            "triggerType is EVENT",
            "invalid_value",
        ));
    }
    let trigger_config = match req.trigger_config {
        None if create => {
            errors.push(FieldError::new(
                "triggerConfig.eventName",
                "triggerConfig.eventName is required",
                "required",
            ));
            None
        }
        None => None,
        Some(v) => match v.get("eventName").and_then(Value::as_str).map(str::trim) {
            Some(e) if !e.is_empty() && e.chars().count() <= NAME_MAX => {
                Some(serde_json::json!({"eventName": e}))
            }
            _ => {
                errors.push(FieldError::new(
                    "triggerConfig.eventName",
                    format!(
                        "triggerConfig.eventName is an event name of 1 to {NAME_MAX} characters"
                    ),
                    "invalid_value",
                ));
                None
            }
        },
    };
    if errors.is_empty() {
        Ok(CheckedWorkflow {
            name,
            description,
            trigger_config,
            enabled: req.enabled,
            allow_reentry: req.allow_reentry,
        })
    } else {
        Err(ApiError::validation(errors))
    }
}

/// Config problems as a 422 under `config.`.
pub fn config_errors(problems: Vec<ConfigError>) -> ApiError {
    ApiError::validation(
        problems
            .into_iter()
            .map(|p| {
                let field = if p.path.is_empty() {
                    "config".to_owned()
                } else {
                    format!("config.{}", p.path)
                };
                FieldError::new(field, p.message, p.code)
            })
            .collect(),
    )
}

/// A step name (optional; blank clears it).
pub fn step_name(raw: Option<&str>) -> ApiResult<Option<String>> {
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(None);
    };
    let mut errors = Vec::new();
    let n = name_rule("name", raw, &mut errors);
    if errors.is_empty() {
        Ok(n)
    } else {
        Err(ApiError::validation(errors))
    }
}

/// A canvas position `{x, y}` (numbers), if given.
pub fn position(raw: Option<&Value>) -> ApiResult<Option<Value>> {
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(p)
            if p.get("x").is_some_and(Value::is_number)
                && p.get("y").is_some_and(Value::is_number) =>
        {
            Ok(Some(serde_json::json!({"x": p["x"], "y": p["y"]})))
        }
        Some(_) => Err(ApiError::field(
            "position",
            "position is {x, y} with numbers",
            "invalid_value",
        )),
    }
}

/// The type, name and position of a new step (its config is checked by type afterwards).
pub fn check_new_step(req: &StepRequest) -> ApiResult<(StepType, Option<String>, Option<Value>)> {
    let step_type = match req.step_type.as_deref() {
        None => return Err(ApiError::field("type", "type is required", "required")),
        Some(t) => match StepType::parse(t) {
            Some(StepType::Trigger) => {
                return Err(ApiError::field(
                    "type",
                    "the TRIGGER step comes with the workflow",
                    "invalid_value",
                ));
            }
            Some(st) => st,
            None => {
                return Err(ApiError::field(
                    "type",
                    format!("type must be {}", StepType::EXPECTED),
                    "invalid_value",
                ));
            }
        },
    };
    Ok((
        step_type,
        step_name(req.name.as_deref())?,
        position(req.position.as_ref())?,
    ))
}
