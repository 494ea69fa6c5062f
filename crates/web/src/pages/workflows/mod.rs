//! The workflows pages: the list (enabled state, execution counts, Create workflow) and a
//! workflow's page: its graph drawn top to bottom (laid out here, [`layout`], drawn as SVG),
//! each step's form in the side panel, a "+" to add a step at every open end and on every
//! transition, enable / disable, start for a contact, and the executions with each one's
//! path through the graph.
//!
//! - `list`: `workflows` (GET, POST create);
//! - `page`: `workflows/{id}` (GET; `?step=`, `?add=&branch=&type=`, `?execution=` choose
//!   what the side panel shows);
//! - `actions`: the posts of the page (`settings`, `enabled`, `start`, `add`,
//!   `steps/{step}`, `steps/{step}/delete`);
//! - `graph`: the graph's view (texts, counts, problems, the execution's path) over
//!   [`layout`]; `step_form`: a step's form values, to and from the API's config.
//!
//! Every rule is the API's: the pages call `herald_api::routes::workflows` (`create`,
//! `change`, `add_workflow_step`, `insert_step`, `change_step`, `remove_step`, `start`,
//! `workflow_of`), so a refusal is the API's message, shown beside the field it names.

pub mod actions;
pub mod graph;
pub mod layout;
pub mod list;
pub mod page;
pub mod step_form;

use herald_core::workflow::{ExecutionStatus, StepType};

/// A step type in words.
pub fn type_words(t: StepType) -> &'static str {
    match t {
        StepType::Trigger => "Trigger",
        StepType::SendEmail => "Send email",
        StepType::Delay => "Delay",
        StepType::WaitForEvent => "Wait for event",
        StepType::Condition => "Condition",
        StepType::Webhook => "Webhook",
        StepType::UpdateContact => "Update contact",
        StepType::Exit => "Exit",
    }
}

/// What each type does, for the "add a step" chooser.
pub fn type_hint(t: StepType) -> &'static str {
    match t {
        StepType::Trigger => "Starts the workflow when its event is tracked.",
        StepType::SendEmail => "Sends a template to the contact.",
        StepType::Delay => "Waits minutes, hours or days.",
        StepType::WaitForEvent => "Waits until the contact does something, or a timeout.",
        StepType::Condition => "Goes one way or the other: yes or no.",
        StepType::Webhook => "Calls a URL of yours, signed.",
        StepType::UpdateContact => "Changes the contact's data or subscription.",
        StepType::Exit => "Ends the workflow here.",
    }
}

/// An execution status's words and badge tone.
pub fn status_badge(s: ExecutionStatus) -> (&'static str, &'static str) {
    match s {
        ExecutionStatus::Running => ("Running", "info"),
        ExecutionStatus::Waiting => ("Waiting", "warning"),
        ExecutionStatus::Completed => ("Completed", "success"),
        ExecutionStatus::Exited => ("Exited", "neutral"),
        ExecutionStatus::Failed => ("Failed", "danger"),
        ExecutionStatus::Cancelled => ("Cancelled", "neutral"),
    }
}

/// `text` cut to `max` characters with an ellipsis (the SVG's boxes have a fixed width).
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}
