//! The field rules of a campaign (create and replace): name, subject, body, sender and
//! reply-to by the same functions templates use; the audience by its type (a SEGMENT needs a
//! segment of the project, a FILTERED audience a valid filter tree, parsed as segments parse
//! theirs). Every field problem of a request is reported in one 422.

use herald_core::campaign::{AudienceType, DESCRIPTION_MAX};
use herald_core::ids::parse_id;
use herald_store::Store;
use herald_store::campaigns::CampaignContent;

use super::wire::CampaignRequest;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::routes::segments::rules::{Tree, check_tree};
use crate::routes::templates::rules::{
    checked_body, checked_from_name, checked_name, checked_subject, optional_email,
};

fn required(field: &str, errors: &mut Vec<FieldError>) {
    errors.push(FieldError::new(
        field,
        format!("{field} is required"),
        "required",
    ));
}

/// The segment of a SEGMENT audience (`segmentId`): one of the project's, or why not.
pub async fn segment(
    store: &Store,
    project_id: herald_core::ids::Uuid,
    raw: Option<&str>,
) -> ApiResult<Result<herald_core::ids::Uuid, FieldError>> {
    let Some(raw) = raw.filter(|s| !s.is_empty()) else {
        return Ok(Err(FieldError::new(
            "segmentId",
            "segmentId is required when audienceType is SEGMENT",
            "required",
        )));
    };
    Ok(match parse_id(raw) {
        Some(id) if store.segment(project_id, id).await?.is_some() => Ok(id),
        _ => Err(FieldError::new(
            "segmentId",
            format!("segment {raw} does not exist"),
            "segment_not_found",
        )),
    })
}

/// Validates a create or replace body for the project `project_id`.
pub async fn check(
    store: &Store,
    project_id: herald_core::ids::Uuid,
    req: CampaignRequest,
) -> ApiResult<CampaignContent> {
    let mut errors = Vec::new();
    let take = |field: &str, v: Option<String>, errors: &mut Vec<FieldError>| {
        if v.is_none() {
            required(field, errors);
        }
        v
    };
    let name = take("name", req.name, &mut errors).and_then(|v| checked_name(v, &mut errors));
    let subject =
        take("subject", req.subject, &mut errors).and_then(|v| checked_subject(v, &mut errors));
    let body = take("body", req.body, &mut errors).and_then(|v| checked_body(v, &mut errors));
    let from = match req.from {
        None => {
            required("from", &mut errors);
            None
        }
        Some(v) if v.trim().is_empty() => {
            required("from", &mut errors);
            None
        }
        Some(v) => optional_email(Some(v), "from", &mut errors),
    };
    let from_name = checked_from_name(req.from_name, &mut errors);
    let reply_to = optional_email(req.reply_to, "replyTo", &mut errors);
    let description = match req.description {
        Some(d) if d.chars().count() > DESCRIPTION_MAX => {
            let message = format!("description is at most {DESCRIPTION_MAX} characters");
            errors.push(FieldError::new("description", message, "too_long"));
            None
        }
        d => d.filter(|d| !d.trim().is_empty()),
    };
    let raw_type = req
        .audience_type
        .or_else(|| req.type_alias.filter(|t| AudienceType::parse(t).is_some()));
    let audience_type = match raw_type {
        None => {
            required("audienceType", &mut errors);
            None
        }
        Some(t) => AudienceType::parse(&t).or_else(|| {
            let message = format!("audienceType must be {}", AudienceType::EXPECTED);
            errors.push(FieldError::new("audienceType", message, "invalid_value"));
            None
        }),
    };
    let mut segment_id = None;
    if audience_type == Some(AudienceType::Segment) {
        match segment(store, project_id, req.segment_id.as_deref()).await? {
            Ok(id) => segment_id = Some(id),
            Err(e) => errors.push(e),
        }
    }
    let mut audience_filter = None;
    if audience_type == Some(AudienceType::Filtered) {
        match req.audience_filter.filter(|v| !v.is_null()) {
            None => errors.push(FieldError::new(
                "audienceFilter",
                "audienceFilter is required when audienceType is FILTERED",
                "required",
            )),
            Some(raw) => {
                let tree = Tree {
                    key: "audienceFilter",
                    raw: &raw,
                };
                match check_tree(store, project_id, &tree, None).await {
                    Ok(_) => audience_filter = Some(raw),
                    Err(e) if e.errors.is_empty() => return Err(e),
                    Err(e) => errors.extend(e.errors),
                }
            }
        }
    }
    match (name, subject, body, from, audience_type) {
        (Some(name), Some(subject), Some(body), Some(from), Some(audience_type))
            if errors.is_empty() =>
        {
            Ok(CampaignContent {
                name,
                description,
                subject,
                body,
                from_email: from.as_str().to_owned(),
                from_name,
                reply_to: reply_to.map(|r| r.as_str().to_owned()),
                audience_type,
                segment_id,
                audience_filter,
            })
        }
        _ => Err(ApiError::validation(errors)),
    }
}
