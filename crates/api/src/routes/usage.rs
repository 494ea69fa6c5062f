//! Where a custom field or an event name is referenced: the segments whose filter tree and the
//! campaigns whose audience filter name it (`/contacts/fields/:field/usage`,
//! `/events/:eventName/usage`), and the workflows whose trigger or steps name it. Trees are
//! parsed with `herald_core::filter` and asked with its predicates, so a reference means the
//! same as it does when the tree is evaluated.

use herald_core::filter::Filter;
use herald_core::ids::Uuid;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct UsageRef {
    pub id: String,
    pub name: String,
}

/// The segments and campaigns of the project whose tree satisfies `uses`.
pub async fn filter_usage(
    state: &AppState,
    project_id: Uuid,
    uses: impl Fn(&Filter) -> bool,
) -> ApiResult<(Vec<UsageRef>, Vec<UsageRef>)> {
    let hit = |raw: Option<&serde_json::Value>| {
        raw.and_then(|v| Filter::parse(v).ok())
            .is_some_and(|f| uses(&f))
    };
    let segments = state
        .store
        .list_segments(project_id)
        .await?
        .into_iter()
        .filter(|s| hit(s.filters.as_ref()))
        .map(|s| UsageRef {
            id: s.id.to_string(),
            name: s.name,
        })
        .collect();
    let campaigns = state
        .store
        .filtered_campaigns(project_id)
        .await?
        .into_iter()
        .filter(|c| hit(c.content.audience_filter.as_ref()))
        .map(|c| UsageRef {
            id: c.id.to_string(),
            name: c.content.name,
        })
        .collect();
    Ok((segments, campaigns))
}

/// What a workflow reference is searched for.
pub enum WorkflowRef<'a> {
    /// The trigger's or a WAIT_FOR_EVENT step's event name.
    Event(&'a str),
    /// A custom field: a CONDITION on `data.<key>` (or inside it) or an UPDATE_CONTACT of it.
    Field(&'a str),
}

/// The project's workflows that reference `what`.
pub async fn workflow_usage(
    state: &AppState,
    project_id: Uuid,
    what: WorkflowRef<'_>,
) -> ApiResult<Vec<UsageRef>> {
    use herald_core::workflow::StepType;
    let mut out = Vec::new();
    for id in state.store.workflow_ids(project_id).await? {
        let Some(w) = state.store.workflow(project_id, id).await? else {
            continue;
        };
        let uses = w.steps.iter().any(|s| match &what {
            WorkflowRef::Event(name) => {
                matches!(s.step_type, StepType::Trigger | StepType::WaitForEvent)
                    && s.config["eventName"].as_str() == Some(name)
            }
            WorkflowRef::Field(key) => match s.step_type {
                StepType::Condition => s.config["field"].as_str().is_some_and(|f| {
                    f.strip_prefix("data.")
                        .is_some_and(|k| k == *key || k.starts_with(&format!("{key}.")))
                }),
                StepType::UpdateContact => s.config["data"].get(*key).is_some(),
                _ => false,
            },
        });
        if uses {
            out.push(UsageRef {
                id: w.id.to_string(),
                name: w.name,
            });
        }
    }
    Ok(out)
}
