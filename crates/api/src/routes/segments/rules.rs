//! Request rules of the Segments resource: name, type, and the filter tree (parsed with the
//! project's inferred field types; `segment.<id>` references must exist in the project and
//! must not lead back to the segment itself).

use herald_core::filter::{Filter, FilterError};
use herald_core::ids::Uuid;
use herald_core::segments::{DESCRIPTION_MAX, NAME_MAX, SegmentType};
use herald_store::Store;
use serde_json::Value;

use super::wire::SegmentRequest;
use crate::error::{ApiError, ApiResult, FieldError};

/// The tree of a request and the name it was sent under (`condition` or `filters`).
pub struct Tree<'a> {
    pub key: &'static str,
    pub raw: &'a Value,
}

pub fn tree(body: &SegmentRequest) -> Option<Tree<'_>> {
    match (&body.condition, &body.filters) {
        (Some(raw), _) if !raw.is_null() => Some(Tree {
            key: "condition",
            raw,
        }),
        (_, Some(raw)) if !raw.is_null() => Some(Tree {
            key: "filters",
            raw,
        }),
        _ => None,
    }
}

pub fn name(raw: Option<&str>, required: bool) -> ApiResult<Option<String>> {
    match raw.map(str::trim) {
        None if required => Err(ApiError::field("name", "name is required", "required")),
        None => Ok(None),
        Some("") => Err(ApiError::field(
            "name",
            "name must not be blank",
            "required",
        )),
        Some(n) if n.chars().count() > NAME_MAX || n.chars().any(char::is_control) => {
            Err(ApiError::field(
                "name",
                format!("name is 1 to {NAME_MAX} characters without control characters"),
                "invalid_value",
            ))
        }
        Some(n) => Ok(Some(n.to_owned())),
    }
}

pub fn description(raw: Option<&str>) -> ApiResult<Option<String>> {
    match raw {
        Some(d) if d.chars().count() > DESCRIPTION_MAX => Err(ApiError::field(
            "description",
            format!("description is at most {DESCRIPTION_MAX} characters"),
            "too_long",
        )),
        d => Ok(d.map(str::to_owned)),
    }
}

pub fn segment_type(raw: Option<&str>) -> ApiResult<Option<SegmentType>> {
    match raw {
        None => Ok(None),
        Some(t) => SegmentType::parse(t)
            .map(Some)
            .ok_or_else(|| ApiError::field("type", "type is DYNAMIC or STATIC", "invalid_value")),
    }
}

fn filter_error(key: &str, e: FilterError) -> ApiError {
    let field = if e.path.is_empty() {
        key.to_owned()
    } else {
        format!("{key}.{}", e.path)
    };
    ApiError::validation(vec![FieldError::new(field, e.message, e.code)])
}

/// Parses and checks a tree for the segment `self_id` (none on create).
pub async fn check_tree(
    store: &Store,
    project_id: Uuid,
    tree: &Tree<'_>,
    self_id: Option<Uuid>,
) -> ApiResult<Filter> {
    let types = store.field_types(project_id).await?;
    let filter = Filter::parse_with_types(tree.raw, &|k| types.get(k).copied())
        .map_err(|e| filter_error(tree.key, e))?;
    for id in filter.segment_refs() {
        if store.segment(project_id, id).await?.is_none() {
            return Err(ApiError::field(
                tree.key,
                format!("segment {id} does not exist"),
                "segment_not_found",
            ));
        }
    }
    if let Some(me) = self_id {
        let defs = store.segment_defs(project_id, &filter).await?;
        if filter.segment_refs().contains(&me) || defs.contains_key(&me) {
            return Err(ApiError::field(
                tree.key,
                "the tree refers back to this segment (a cycle)",
                "segment_cycle",
            ));
        }
    }
    Ok(filter)
}
