//! Wire types of the Campaigns resource: the campaign as the API shows it, the list page, the
//! create/replace body, the send and test bodies, and the statistics.

use herald_core::time::iso;
use herald_store::campaigns::Campaign;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignResponse {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub subject: String,
    /// HTML with `{{variables}}`.
    pub body: String,
    pub from: String,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    /// ALL, SEGMENT or FILTERED (the same value as `type`).
    pub audience_type: String,
    /// The audience type, under the name the list and create responses of SPEC.md use.
    #[serde(rename = "type")]
    pub audience: String,
    pub segment_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub audience_filter: Option<Value>,
    /// DRAFT, SCHEDULED, SENDING, SENT or CANCELLED.
    pub status: String,
    pub scheduled_at: Option<String>,
    /// When sending started.
    pub started_at: Option<String>,
    /// When the last message reached a final state (SENT).
    pub sent_at: Option<String>,
    pub cancelled_at: Option<String>,
    /// Recipients queued so far (the fan-out's progress while SENDING), skipped ones included;
    /// after a stop, what was queued before it.
    pub total_recipients: i64,
    /// Of those, skipped: suppressed addresses, contacts unsubscribed meanwhile.
    pub skipped_recipients: i64,
    /// Why the fan-out stopped before the end of the audience, on its own: `BILLING_LIMIT`,
    /// `AUDIENCE_ERROR` or `FANOUT_ERROR`; null when the audience was sent in full. Not a
    /// cancel: what was queued is delivered and the campaign ends SENT.
    #[schema(value_type = Option<String>, example = "BILLING_LIMIT")]
    pub stopped_reason: Option<&'static str>,
    /// The detail of `stoppedReason`, for people.
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Campaign> for CampaignResponse {
    fn from(c: Campaign) -> Self {
        let audience = c.content.audience_type.as_str().to_owned();
        Self {
            id: c.id.to_string(),
            name: c.content.name,
            description: c.content.description,
            subject: c.content.subject,
            body: c.content.body,
            from: c.content.from_email,
            from_name: c.content.from_name,
            reply_to: c.content.reply_to,
            audience_type: audience.clone(),
            audience,
            segment_id: c.content.segment_id.map(|s| s.to_string()),
            audience_filter: c.content.audience_filter,
            status: c.status.as_str().to_owned(),
            scheduled_at: c.scheduled_at.map(iso),
            started_at: c.started_at.map(iso),
            sent_at: c.finished_at.map(iso),
            cancelled_at: c.cancelled_at.map(iso),
            total_recipients: c.total_recipients,
            skipped_recipients: c.skipped_recipients,
            stopped_reason: c.stopped_reason.map(|r| r.as_str()),
            error: c.fanout_error,
            created_at: iso(c.created_at),
            updated_at: iso(c.updated_at),
        }
    }
}

/// `{success: true, data}`: the wrapping of create and the campaign actions.
#[derive(Serialize, ToSchema)]
pub struct CampaignEnvelope {
    pub success: bool,
    pub data: CampaignResponse,
}

impl From<Campaign> for CampaignEnvelope {
    fn from(c: Campaign) -> Self {
        Self {
            success: true,
            data: c.into(),
        }
    }
}

/// One row of the list.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignSummary {
    pub id: String,
    pub name: String,
    pub subject: String,
    /// The audience type.
    #[serde(rename = "type")]
    pub audience: String,
    pub status: String,
    pub scheduled_at: Option<String>,
    pub total_recipients: i64,
    pub created_at: String,
}

impl From<Campaign> for CampaignSummary {
    fn from(c: Campaign) -> Self {
        Self {
            id: c.id.to_string(),
            name: c.content.name,
            subject: c.content.subject,
            audience: c.content.audience_type.as_str().to_owned(),
            status: c.status.as_str().to_owned(),
            scheduled_at: c.scheduled_at.map(iso),
            total_recipients: c.total_recipients,
            created_at: iso(c.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignList {
    pub campaigns: Vec<CampaignSummary>,
    pub page: u32,
    pub page_size: u32,
    pub total: i64,
    pub total_pages: i64,
}

/// Body of create and replace (PUT): every field of create; `audienceType` may also be sent as
/// `type`.
#[derive(Deserialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRequest {
    pub name: Option<String>,
    pub description: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub from: Option<String>,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub audience_type: Option<String>,
    #[serde(rename = "type")]
    pub type_alias: Option<String>,
    pub segment_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub audience_filter: Option<Value>,
}

/// Body of `POST /campaigns/:id/send` (optional: no body sends now).
#[derive(Deserialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct CampaignSendRequest {
    /// ISO 8601 time in the future: schedule instead of sending now.
    pub scheduled_for: Option<String>,
}

/// Body of `POST /campaigns/:id/test`.
#[derive(Deserialize, ToSchema)]
pub struct CampaignTestRequest {
    pub email: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestResponse {
    pub success: bool,
    pub data: TestSent,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestSent {
    pub message_id: String,
    pub email: String,
}
