//! Wire types of the Segments resource.

use herald_core::time::iso;
use herald_store::segments::Segment;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::routes::contacts::ContactResponse;

/// A segment; the tree is shown as `filters` and, for clients of the other naming, `condition`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SegmentResponse {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// DYNAMIC or STATIC.
    #[serde(rename = "type")]
    pub segment_type: String,
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub condition: Option<Value>,
    pub track_membership: bool,
    /// Cached count (refreshed on create, PATCH, compute, refresh and member changes).
    pub member_count: i64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Segment> for SegmentResponse {
    fn from(s: Segment) -> Self {
        Self {
            id: s.id.to_string(),
            name: s.name,
            description: s.description,
            segment_type: s.segment_type.as_str().to_owned(),
            condition: s.filters.clone(),
            filters: s.filters,
            track_membership: s.track_membership,
            member_count: s.member_count,
            created_at: iso(s.created_at),
            updated_at: iso(s.updated_at),
        }
    }
}

/// Body of create and patch. Create: `name` required; `type` DYNAMIC (needs `condition` or
/// `filters`; the default when a tree is given) or STATIC (rejects a tree).
#[derive(Deserialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRequest {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub segment_type: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub condition: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Value>,
    pub track_membership: Option<bool>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SegmentContacts {
    pub contacts: Vec<ContactResponse>,
    pub total: i64,
    pub page: u32,
    pub page_size: u32,
    pub total_pages: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembersRequest {
    pub emails: Vec<String>,
    /// Create contacts that do not exist yet (default false).
    pub create_missing: Option<bool>,
    /// `subscribed` of contacts created here (default true).
    pub subscribed: Option<bool>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveMembersRequest {
    pub emails: Vec<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembersResponse {
    /// Contacts that became members (or stopped being members, on DELETE).
    pub changed: u64,
    /// Contacts created (createMissing).
    pub created: u64,
    /// Emails without a contact in the project (not created).
    pub not_found: Vec<String>,
    pub member_count: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComputeResponse {
    pub member_count: i64,
    pub entered: u64,
    pub exited: u64,
}
