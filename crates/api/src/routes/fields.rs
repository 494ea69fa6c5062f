//! Custom fields of a project's contacts: listing with type and coverage, distinct values,
//! usage, and removal from every contact.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::fields::{STANDARD_FIELDS, custom_key_from_path, display_name};

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::query::{Bounded, Query};
use crate::routes::usage::{UsageRef, WorkflowRef, filter_usage, workflow_usage};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_fields))
        .routes(routes!(field_values))
        .routes(routes!(field_usage))
        .routes(routes!(delete_field))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldInfo {
    /// `email`, `subscribed`, ... or `data.<key>` for custom fields.
    pub field: String,
    /// string, number, boolean or date.
    #[serde(rename = "type")]
    pub field_type: String,
    pub is_custom: bool,
    /// Share of contacts with the field set, 0..1.
    pub coverage: f64,
}

#[derive(Serialize, ToSchema)]
pub struct FieldList {
    pub fields: Vec<FieldInfo>,
}

/// Standard fields and the custom fields in use, with type and coverage.
#[utoipa::path(get, path = "/contacts/fields", tag = "contacts", responses((status = 200, body = FieldList)))]
async fn list_fields(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<FieldList>> {
    let total = state.store.count_contacts(auth.id(), None, None).await?;
    let custom = state.store.custom_fields(auth.id()).await?;
    let keys: Vec<String> = custom.iter().map(|f| f.key.clone()).collect();
    let counts = state.store.field_counts(auth.id(), &keys).await?;
    let share = |n: i64| {
        if total == 0 {
            0.0
        } else {
            n as f64 / total as f64
        }
    };
    let mut fields: Vec<FieldInfo> = STANDARD_FIELDS
        .iter()
        .map(|(name, t)| FieldInfo {
            field: (*name).to_owned(),
            field_type: t.as_str().to_owned(),
            is_custom: false,
            coverage: share(total),
        })
        .collect();
    fields.extend(custom.iter().map(|f| FieldInfo {
        field: display_name(&f.key),
        field_type: f.field_type.as_str().to_owned(),
        is_custom: true,
        coverage: share(counts.get(&f.key).copied().unwrap_or(0)),
    }));
    Ok(Json(FieldList { fields }))
}

/// Resolves a path's field name to a known custom key, or answers why not.
async fn known_custom_key(state: &AppState, auth: &ProjectAuth, field: &str) -> ApiResult<String> {
    if STANDARD_FIELDS.iter().any(|(n, _)| *n == field) {
        return Err(ApiError::field(
            "field",
            format!("{field} is a standard field; this applies to custom fields (data.<name>)"),
            "standard_field",
        ));
    }
    let key = custom_key_from_path(field);
    let known = state.store.custom_fields(auth.id()).await?;
    if known
        .iter()
        .any(|f| f.key == key || f.key.starts_with(&format!("{key}.")))
    {
        Ok(key.to_owned())
    } else {
        Err(ApiError::not_found(
            "NOT_FOUND",
            &format!("Field {}", display_name(key)),
        ))
    }
}

#[derive(Serialize, ToSchema)]
pub struct FieldValues {
    pub field: String,
    /// Distinct stored values as they were given: any JSON value but `null` (usually a
    /// string, number or boolean).
    #[schema(schema_with = stored_values_schema)]
    pub values: Vec<Value>,
}

/// An array of non-null JSON values (what contact `data` may hold).
fn stored_values_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let any_but_null = SchemaType::from_iter([
        Type::String,
        Type::Number,
        Type::Boolean,
        Type::Object,
        Type::Array,
    ]);
    ArrayBuilder::new()
        .items(ObjectBuilder::new().schema_type(any_but_null))
        .build()
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct FieldValuesQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Bounded<1, 1000, 100>,
}

/// Distinct values of a custom field.
#[utoipa::path(get, path = "/contacts/fields/{field}/values", tag = "contacts",
    params(("field" = String, Path, description = "data.<name> or <name>"), FieldValuesQuery),
    responses((status = 200, body = FieldValues), (status = 404)))]
async fn field_values(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(field): Path<String>,
    Query(q): Query<FieldValuesQuery>,
) -> ApiResult<Json<FieldValues>> {
    let limit = q.limit.get();
    let key = known_custom_key(&state, &auth, &field).await?;
    let values = state.store.field_values(auth.id(), &key, limit).await?;
    Ok(Json(FieldValues {
        field: display_name(&key),
        values,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct FieldUsage {
    pub field: String,
    pub segments: Vec<UsageRef>,
    pub campaigns: Vec<UsageRef>,
    pub workflows: Vec<UsageRef>,
}

/// Segments and campaigns whose filter references the field, and workflows whose CONDITION or
/// UPDATE_CONTACT steps do.
#[utoipa::path(get, path = "/contacts/fields/{field}/usage", tag = "contacts",
    params(("field" = String, Path)), responses((status = 200, body = FieldUsage), (status = 404), (status = 422, description = "A standard field (this applies to custom fields)")))]
async fn field_usage(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(field): Path<String>,
) -> ApiResult<Json<FieldUsage>> {
    let key = known_custom_key(&state, &auth, &field).await?;
    let (segments, campaigns) = filter_usage(&state, auth.id(), |f| f.uses_data_key(&key)).await?;
    Ok(Json(FieldUsage {
        field: display_name(&key),
        segments,
        campaigns,
        workflows: workflow_usage(&state, auth.id(), WorkflowRef::Field(&key)).await?,
    }))
}

/// Removes the field from every contact of the project.
#[utoipa::path(delete, path = "/contacts/fields/{field}", tag = "contacts",
    params(("field" = String, Path)), responses((status = 204), (status = 404), (status = 422, description = "A standard field (this applies to custom fields)")))]
async fn delete_field(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(field): Path<String>,
) -> ApiResult<StatusCode> {
    let key = known_custom_key(&state, &auth, &field).await?;
    state
        .store
        .delete_field(auth.id(), &key, state.engine.now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
