//! The request side of the OpenAPI document: what the handlers' annotations cannot say about
//! the input they accept, written into the document in one place so that a request that fits
//! the schemas is one the server takes (schemathesis' `positive_data_acceptance` check, run by
//! `tests/api/openapi.rs`).
//!
//! - A required property of a request body is never `null` (the structs read it as an
//!   `Option` only to report its absence on the field).
//! - Query and path parameters with a closed set of values or a fixed syntax say so:
//!   [`PARAMS`], built from the same enums and limits the handlers parse with.
//! - Custom field names (contact `data` keys) follow `herald_core::fields`; template types
//!   and addresses, event names likewise follow their rules in `core` ([`properties`]).
//! - A query parameter is given at most once ([`crate::extract`] refuses a repeated one).
//!
//! U+0000, refused in every key and string of a request ([`crate::extract`]), is the one rule
//! the schemas leave out: spelling it into every string and every free-form value takes a
//! recursive schema that client generators cannot build. docs/openapi.md says it once, and
//! `tests/api/nul_input.rs` covers it. What else is still looser than the handlers is listed
//! in docs/openapi.md ("Known gaps") and excluded from that check per operation by the test.

use herald_core::campaign::CampaignStatus;
use herald_core::events::EVENT_NAME_MAX;
use herald_core::fields::{MAX_KEY_LEN, STANDARD_FIELDS};
use herald_core::kinds::TemplateType;
use herald_core::message_status::MessageStatus;
use herald_core::rules::{DISPLAY_NAME_MAX, SUBJECT_MAX};
use herald_core::workflow::{self, ExecutionStatus};
use serde_json::{Map, Value, json};

use crate::routes::templates::rules as template_rules;

/// An id (UUID) or nothing: optional id filters treat an empty value as absent.
const OPTIONAL_ID: &str =
    "^$|^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
const ID: &str = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
/// What `char::is_control` refuses, as a regex class body.
const CONTROL: &str = "\\u0000-\\u001f\\u007f-\\u009f";

/// A custom field name (`herald_core::fields`): not blank, no control characters, at most
/// `MAX_KEY_LEN` characters.
fn field_key() -> String {
    format!("^(?=.*\\S)[^{CONTROL}]{{1,{MAX_KEY_LEN}}}$")
}

/// A custom field in a path (`data.` optional): a field name that is not a standard one.
fn custom_field_path() -> String {
    let standard: Vec<&str> = STANDARD_FIELDS.iter().map(|(name, _)| *name).collect();
    format!(
        "^(?!(data\\.)?({})$)(?=.*\\S)[^{CONTROL}]{{1,{MAX_KEY_LEN}}}$",
        standard.join("|")
    )
}

/// A tracked event's name (`herald_core::events::tracked_name`): not blank, no control
/// characters, at most `EVENT_NAME_MAX` characters, not a system name.
fn event_name() -> String {
    format!(
        "^(?!\\s*(email\\..*|contact\\.(un)?subscribed|segment\\..+\\.(entry|exit))\\s*$)\
         (?=.*\\S)[^{CONTROL}]{{1,{EVENT_NAME_MAX}}}$"
    )
}

/// A name of 1 to `max` characters, not blank, without control characters (projects,
/// workflows).
fn plain_name(max: usize) -> String {
    format!("^(?=.*\\S)[^{CONTROL}]{{1,{max}}}$")
}

/// Not blank, at most `max` characters of any kind (line breaks included).
fn not_blank(max: usize) -> String {
    format!("^(?=[\\s\\S]*\\S)[\\s\\S]{{1,{max}}}$")
}

/// The header rule (`herald_core::rules::header_text`): no control character but tab.
fn header_text(min: usize, max: usize) -> String {
    let lookahead = if min > 0 { "(?=.*\\S)" } else { "" };
    format!("^{lookahead}[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]{{{min},{max}}}$")
}

/// `""` (absent) or one of `names`.
fn optional_enum<'a>(names: impl IntoIterator<Item = &'a str>) -> Value {
    let mut all = vec![""];
    all.extend(names);
    json!({"type": "string", "enum": all})
}

/// The parameter rules: (path, parameter, schema replacing the annotated one, required).
fn params() -> Vec<(&'static str, &'static str, Value, bool)> {
    let pattern = |p: &str| json!({"type": "string", "pattern": p});
    let optional_id = || pattern(OPTIONAL_ID);
    vec![
        (
            "/emails",
            "status",
            optional_enum(MessageStatus::ALL.iter().map(|s| s.as_str())),
            false,
        ),
        ("/emails", "contactId", optional_id(), false),
        ("/emails", "campaignId", optional_id(), false),
        ("/events", "contactId", optional_id(), false),
        ("/activity", "contactId", optional_id(), false),
        (
            "/activity",
            "type",
            json!({"type": "string", "maxLength": 100}),
            false,
        ),
        (
            "/templates",
            "type",
            optional_enum(TemplateType::ALL.iter().map(|t| t.as_str())),
            false,
        ),
        (
            "/campaigns",
            "status",
            optional_enum(CampaignStatus::ALL.iter().map(|s| s.as_str())),
            false,
        ),
        ("/analytics/campaign-stats", "campaignId", pattern(ID), true),
        (
            "/analytics/timeseries",
            "interval",
            optional_enum(["day", "hour"]),
            false,
        ),
        (
            "/analytics/top-campaigns",
            "metric",
            optional_enum(["opened", "clicked", "sent"]),
            false,
        ),
        (
            "/workflows/{id}/executions",
            "status",
            optional_enum(ExecutionStatus::ALL.iter().map(|s| s.as_str())),
            false,
        ),
        (
            "/contacts/fields/{field}",
            "field",
            pattern(&custom_field_path()),
            true,
        ),
        (
            "/contacts/fields/{field}/usage",
            "field",
            pattern(&custom_field_path()),
            true,
        ),
        (
            "/contacts/fields/{field}/values",
            "field",
            pattern(&custom_field_path()),
            true,
        ),
        (
            "/events/{eventName}",
            "eventName",
            pattern(&event_name()),
            true,
        ),
    ]
}

/// Body properties with a syntax of their own: (schema, property, what to merge into it).
fn properties() -> Vec<(&'static str, &'static str, Value)> {
    let data = || json!({"propertyNames": {"pattern": field_key()}});
    let event = || json!({"pattern": event_name()});
    // `null` or `""` clears a template's address; anything else is an address.
    let address = || json!({"anyOf": [{"maxLength": 0}, {"format": "email"}]});
    let mut types: Vec<Value> = TemplateType::ALL
        .iter()
        .map(|t| json!(t.as_str()))
        .collect();
    types.push(Value::Null);
    vec![
        (
            "CreateProjectRequest",
            "name",
            json!({"pattern": plain_name(100)}),
        ),
        (
            "UpdateProjectRequest",
            "name",
            json!({"pattern": plain_name(100)}),
        ),
        (
            "TemplateRequest",
            "name",
            json!({"pattern": not_blank(template_rules::NAME_MAX)}),
        ),
        (
            "TemplateRequest",
            "subject",
            json!({"pattern": header_text(1, SUBJECT_MAX)}),
        ),
        // At most 1 MiB of UTF-8: stated as characters that surely fit (a pattern with a bound
        // that large is more than the generators take).
        (
            "TemplateRequest",
            "body",
            json!({"pattern": "[^\\s]", "maxLength": template_rules::BODY_MAX_BYTES / 4}),
        ),
        (
            "TemplateRequest",
            "fromName",
            json!({"pattern": header_text(0, DISPLAY_NAME_MAX)}),
        ),
        (
            "WorkflowRequest",
            "name",
            json!({"pattern": plain_name(workflow::NAME_MAX)}),
        ),
        (
            "WorkflowRequest",
            "description",
            json!({"maxLength": workflow::DESCRIPTION_MAX}),
        ),
        (
            "WorkflowRequest",
            "triggerType",
            json!({"enum": ["EVENT", null]}),
        ),
        (
            "WorkflowRequest",
            "triggerConfig",
            json!({"required": ["eventName"], "properties": {"eventName": {
                "type": "string", "pattern": not_blank(workflow::NAME_MAX)}}}),
        ),
        ("TemplateRequest", "type", json!({"enum": types})),
        ("TemplateRequest", "from", address()),
        ("TemplateRequest", "replyTo", address()),
        ("UpsertContactRequest", "data", data()),
        ("PatchContactRequest", "data", data()),
        ("TrackRequest", "data", data()),
        ("TrackRequest", "event", event()),
    ]
}

/// Bodies whose create shares its schema with the patch, and what create requires: the
/// create operation gets a copy of the schema (`<name>` with `Request` made `CreateRequest`)
/// with those fields required.
const CREATES: &[(&str, &str, &[&str])] = &[
    (
        "/templates",
        "TemplateRequest",
        &["name", "subject", "body", "type"],
    ),
    ("/workflows", "WorkflowRequest", &["name", "triggerConfig"]),
];

/// Points each create of [`CREATES`] at its own copy of the shared schema.
fn split_creates(doc: &mut Value) {
    for (path, shared, required) in CREATES {
        let Some(mut copy) = doc
            .pointer(&format!("/components/schemas/{shared}"))
            .cloned()
        else {
            continue;
        };
        copy["required"] = json!(required);
        let name = shared.replace("Request", "CreateRequest");
        doc["components"]["schemas"][&name] = copy;
        let body = format!(
            "/paths/{}/post/requestBody/content/application~1json/schema",
            path.replace('/', "~1")
        );
        if let Some(schema) = doc.pointer_mut(&body) {
            *schema = json!({"$ref": format!("#/components/schemas/{name}")});
        }
    }
}

/// Applies the module's rules to the JSON form of the document.
pub fn tighten(doc: &mut Value) {
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        merge_properties(schemas);
    }
    split_creates(doc);
    let bodies = request_body_schemas(doc);
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for name in &bodies {
        if let Some(s) = schemas.get_mut(name) {
            strict(s, false);
        }
    }
    let rules = params();
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let Some(list) = op.get_mut("parameters").and_then(Value::as_array_mut) else {
                continue;
            };
            for p in list {
                tighten_param(path, p, &rules);
            }
        }
    }
}

fn merge_properties(schemas: &mut Map<String, Value>) {
    for (schema, property, merge) in properties() {
        if let Some(Value::Object(target)) = schemas
            .get_mut(schema)
            .and_then(|s| s.pointer_mut(&format!("/properties/{property}")))
            && let Value::Object(add) = merge
        {
            target.extend(add);
        }
    }
}

fn tighten_param(path: &str, p: &mut Value, rules: &[(&str, &str, Value, bool)]) {
    let name = p["name"].as_str().unwrap_or_default().to_owned();
    if let Some((_, _, schema, required)) =
        rules.iter().find(|(at, n, _, _)| *at == path && *n == name)
    {
        p["schema"] = schema.clone();
        if *required {
            p["required"] = json!(true);
        }
    }
    if name == "cursor" && p["schema"]["type"] == "string" {
        p["description"] =
            json!("Opaque: the `cursor` of the previous page (empty: the first page).");
    }
}

/// The component names of JSON request bodies.
fn request_body_schemas(doc: &Value) -> Vec<String> {
    let mut names = Vec::new();
    let ops = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values());
    for op in ops {
        let schema = &op["requestBody"]["content"]["application/json"]["schema"];
        let refs = std::iter::once(schema).chain(schema["oneOf"].as_array().into_iter().flatten());
        for r in refs {
            if let Some(name) = r["$ref"].as_str().and_then(|r| r.rsplit('/').next())
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// Makes the required properties of a request schema (and of the objects in it) non-null.
fn strict(s: &mut Value, required: bool) {
    let Some(obj) = s.as_object_mut() else {
        return;
    };
    if required && let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
    }
    let has = |obj: &Map<String, Value>, t: &str| match obj.get("type") {
        Some(Value::String(one)) => one == t,
        Some(Value::Array(many)) => many.iter().any(|x| x == t),
        _ => false,
    };
    if has(obj, "object") {
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for (key, prop) in props.iter_mut() {
                strict(prop, required.contains(key));
            }
        }
    }
    if has(obj, "array")
        && let Some(items) = obj.get_mut("items")
    {
        strict(items, false);
    }
}
