//! Tool input schemas, taken from the API's own OpenAPI document: the path and query parameters
//! of the tool's route and the properties of its request body, with the body's referenced
//! component schemas carried along as `$defs`.
//!
//! The document is what utoipa derives from the request types the handlers deserialise, refined
//! by `openapi_requests.rs` with the rules the handlers apply (patterns, enums, limits), and it
//! is checked against the server by schemathesis. Reading it here means one schema per type,
//! never a second hand-written one (docs/mcp.md, "Schemas").

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::catalog::{Shape, ToolSpec};

const COMPONENTS: &str = "#/components/schemas/";
const DEFS: &str = "#/$defs/";

/// The JSON Schema of `spec`'s arguments, or why the document lacks its route.
pub fn input_schema(doc: &Value, spec: &ToolSpec) -> Result<Map<String, Value>, String> {
    let method = spec.method.to_ascii_lowercase();
    let op = doc
        .pointer(&format!("/paths/{}/{method}", pointer_escape(spec.path)))
        .ok_or_else(|| {
            format!(
                "{} {} is not in the OpenAPI document",
                spec.method, spec.path
            )
        })?;
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        let (Some(name), Some(place)) = (p["name"].as_str(), p["in"].as_str()) else {
            continue;
        };
        if place != "path" && place != "query" {
            continue;
        }
        let mut schema = p["schema"].clone();
        if let (Some(d), Some(obj)) = (p["description"].as_str(), schema.as_object_mut()) {
            obj.entry("description").or_insert_with(|| json!(d));
        }
        properties.insert(name.to_owned(), schema);
        // get_contact takes `id` or `email`: neither alone is required.
        if p["required"] == true && spec.shape != Shape::ContactByIdOrEmail {
            required.push(json!(name));
        }
    }
    match spec.shape {
        Shape::FixedBody(_) => {}
        Shape::Plain | Shape::BodyFields(_) => {
            let body = &op["requestBody"]["content"]["application/json"]["schema"];
            if !body.is_null() {
                let body = object_variant(doc, body);
                let only = match spec.shape {
                    Shape::BodyFields(fields) => Some(fields),
                    _ => None,
                };
                for (name, schema) in body["properties"].as_object().into_iter().flatten() {
                    if only.is_some_and(|f| !f.contains(&name.as_str())) {
                        continue;
                    }
                    properties.insert(name.clone(), schema.clone());
                }
                match only {
                    Some(fields) => required.extend(fields.iter().map(|f| json!(f))),
                    None => {
                        required.extend(body["required"].as_array().into_iter().flatten().cloned())
                    }
                }
            }
        }
        Shape::ContactByIdOrEmail => {
            let upsert = doc
                .pointer("/components/schemas/UpsertContactRequest/properties/email")
                .cloned()
                .unwrap_or_else(|| json!({"type": "string", "format": "email"}));
            properties.insert("email".into(), upsert);
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    let mut properties = Value::Object(properties);
    let defs = carry_refs(doc, &mut properties);
    schema.insert("properties".into(), properties);
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    Ok(schema)
}

/// The object schema of a request body: a `$ref` resolved, and of an optional body
/// (`oneOf: [null, X]`) the object variant.
fn object_variant(doc: &Value, schema: &Value) -> Value {
    let resolved = resolve(doc, schema);
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = resolved[key].as_array()
            && let Some(obj) = variants
                .iter()
                .map(|v| resolve(doc, v))
                .find(|v| v["properties"].is_object())
        {
            return obj;
        }
    }
    resolved
}

fn resolve(doc: &Value, schema: &Value) -> Value {
    match schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix(COMPONENTS))
    {
        Some(name) => doc["components"]["schemas"][name].clone(),
        None => schema.clone(),
    }
}

/// Rewrites `#/components/schemas/X` references in `value` to `#/$defs/X` and returns the
/// definitions they need, transitively.
fn carry_refs(doc: &Value, value: &mut Value) -> Map<String, Value> {
    let mut pending = BTreeSet::new();
    rewrite(value, &mut pending);
    let mut defs = Map::new();
    while let Some(name) = pending.pop_first() {
        if defs.contains_key(&name) {
            continue;
        }
        let mut def = doc["components"]["schemas"][&name].clone();
        let mut more = BTreeSet::new();
        rewrite(&mut def, &mut more);
        defs.insert(name, def);
        pending.extend(more.into_iter().filter(|n| !defs.contains_key(n)));
    }
    defs
}

fn rewrite(value: &mut Value, found: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "$ref"
                    && let Some(name) = v.as_str().and_then(|r| r.strip_prefix(COMPONENTS))
                {
                    found.insert(name.to_owned());
                    *v = json!(format!("{DEFS}{name}"));
                } else {
                    rewrite(v, found);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite(v, found)),
        _ => {}
    }
}

/// A JSON pointer token (RFC 6901): `~` and `/` escaped.
fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::TOOLS;

    fn doc() -> Value {
        herald_api::documented().1
    }

    #[test]
    fn every_tool_has_a_schema_from_its_route() {
        let doc = doc();
        for spec in TOOLS {
            let schema = input_schema(&doc, spec).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert_eq!(schema["type"], "object", "{}", spec.name);
        }
    }

    #[test]
    fn every_example_names_only_arguments_of_its_schema() {
        let doc = doc();
        for spec in TOOLS {
            let schema = input_schema(&doc, spec).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            let example: Value = serde_json::from_str(spec.example)
                .unwrap_or_else(|e| panic!("{} example: {e}", spec.name));
            for key in example.as_object().into_iter().flatten().map(|(k, _)| k) {
                assert!(
                    schema["properties"].get(key).is_some(),
                    "{}: example argument {key} is not in the schema {}",
                    spec.name,
                    Value::Object(schema.clone())
                );
            }
        }
    }

    #[test]
    fn path_parameters_are_required_and_body_fields_come_along() {
        let doc = doc();
        let update = crate::catalog::find("update_contact").map(|s| input_schema(&doc, s));
        let Some(Ok(update)) = update else {
            panic!("update_contact");
        };
        assert_eq!(update["required"], json!(["id"]));
        assert!(update["properties"]["subscribed"].is_object());
        assert!(update["properties"]["data"].is_object());
        let Some(Ok(enabled)) =
            crate::catalog::find("set_workflow_enabled").map(|s| input_schema(&doc, s))
        else {
            panic!("set_workflow_enabled");
        };
        assert_eq!(enabled["required"], json!(["id", "enabled"]));
        assert!(enabled["properties"].get("name").is_none());
    }

    #[test]
    fn references_become_defs_that_exist() {
        let doc = doc();
        for spec in TOOLS {
            let Ok(schema) = input_schema(&doc, spec) else {
                continue;
            };
            let text = Value::Object(schema.clone()).to_string();
            assert!(!text.contains(COMPONENTS), "{}: {text}", spec.name);
            let mut refs = BTreeSet::new();
            rewrite(&mut Value::Object(schema.clone()), &mut BTreeSet::new());
            collect_defs(&Value::Object(schema.clone()), &mut refs);
            for name in refs {
                assert!(
                    schema["$defs"].get(&name).is_some(),
                    "{}: {name}",
                    spec.name
                );
            }
        }
    }

    fn collect_defs(value: &Value, found: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    if k == "$ref"
                        && let Some(name) = v.as_str().and_then(|r| r.strip_prefix(DEFS))
                    {
                        found.insert(name.to_owned());
                    }
                    collect_defs(v, found);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect_defs(v, found)),
            _ => {}
        }
    }
}
