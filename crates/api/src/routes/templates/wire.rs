//! Wire types of the Templates resource: the template as the API shows it, the list page,
//! the create/patch body (telling `null` from absent for the clearable fields) and usage.

use herald_core::kinds::TemplateType;
use herald_core::time::iso;
use herald_store::templates::Template;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateResponse {
    pub id: String,
    pub name: String,
    pub subject: String,
    /// HTML with `{{variables}}`.
    pub body: String,
    /// TRANSACTIONAL, MARKETING or HEADLESS.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub template_type: TemplateType,
    pub from: Option<String>,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Template> for TemplateResponse {
    fn from(t: Template) -> Self {
        Self {
            id: t.id.to_string(),
            name: t.name,
            subject: t.subject,
            body: t.body,
            template_type: t.template_type,
            from: t.from_email,
            from_name: t.from_name,
            reply_to: t.reply_to,
            created_at: iso(t.created_at),
            updated_at: iso(t.updated_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateList {
    pub templates: Vec<TemplateResponse>,
    /// Matches over all pages.
    pub total: i64,
    pub page: u32,
    pub page_size: u32,
    pub total_pages: i64,
}

/// Body of create and patch. On create `name`, `subject`, `body` and `type` are required; on
/// patch every field is optional, and `null` (or `""`) clears `from`, `fromName`, `replyTo`.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateRequest {
    pub name: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    #[serde(rename = "type")]
    pub template_type: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub from: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub from_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub reply_to: Option<Option<String>>,
}

/// Tells a field sent as `null` (`Some(None)`) from one left out (`None`, by `default`).
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateUsageRef {
    pub id: String,
    pub name: String,
    /// For a workflow step: its workflow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateUsage {
    pub campaigns: Vec<TemplateUsageRef>,
    pub workflow_steps: Vec<TemplateUsageRef>,
}
