//! A tool call's arguments as the REST request of its route: path parameters by name, the
//! rest as the query string (GET, DELETE) or the JSON body. Values are passed through as
//! given: the route validates them, so a wrong type is the route's own 422 with its field.
//! Only what cannot be put into a URL at all (an object as a path segment) is refused here.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};

use crate::catalog::{Shape, ToolSpec};
use crate::refusal::Refusal;

/// Everything but RFC 3986's unreserved characters is escaped in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

#[derive(Clone, Debug, PartialEq)]
pub struct RestCall {
    pub method: &'static str,
    /// Path and query string.
    pub target: String,
    pub body: Option<Value>,
}

/// The REST request of `spec` with `args`.
pub fn rest_call(spec: &ToolSpec, mut args: Map<String, Value>) -> Result<RestCall, Refusal> {
    let mut target = String::new();
    for (i, piece) in spec.path.split('{').enumerate() {
        if i == 0 {
            target.push_str(piece);
            continue;
        }
        let Some((name, rest)) = piece.split_once('}') else {
            target.push_str(piece);
            continue;
        };
        let value = args
            .remove(name)
            .filter(|v| !v.is_null())
            .ok_or_else(|| Refusal::field(name, format!("{name} is required"), "required"))?;
        let text = scalar(name, &value)?;
        if text.is_empty() {
            return Err(Refusal::field(
                name,
                format!("{name} is required"),
                "required",
            ));
        }
        target.push_str(&utf8_percent_encode(&text, SEGMENT).to_string());
        target.push_str(rest);
    }
    let body = match spec.shape {
        Shape::FixedBody(fixed) => {
            unknown_arguments(&args)?;
            Some(serde_json::from_str(fixed).map_err(|e| Refusal::internal(e.to_string()))?)
        }
        _ if spec.method == "GET" || spec.method == "DELETE" => {
            let mut pairs = Vec::with_capacity(args.len());
            for (name, value) in &args {
                if value.is_null() {
                    continue;
                }
                pairs.push((name.as_str(), scalar(name, value)?));
            }
            if !pairs.is_empty() {
                let query = serde_urlencoded::to_string(&pairs)
                    .map_err(|e| Refusal::internal(e.to_string()))?;
                target.push('?');
                target.push_str(&query);
            }
            None
        }
        _ => Some(Value::Object(args)),
    };
    Ok(RestCall {
        method: spec.method,
        target,
        body,
    })
}

/// `get_contact` by email: the lookup call whose answer names the contact's id.
pub fn lookup_by_email(email: &Value) -> RestCall {
    RestCall {
        method: "POST",
        target: "/contacts/lookup".into(),
        body: Some(json!({"emails": [email]})),
    }
}

/// A value that can stand in a URL: a string, number or boolean, as text.
fn scalar(name: &str, value: &Value) -> Result<String, Refusal> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(Refusal::field(
            name,
            format!("{name} must be a string, number or boolean"),
            "invalid_type",
        )),
    }
}

fn unknown_arguments(args: &Map<String, Value>) -> Result<(), Refusal> {
    match args.keys().next() {
        Some(name) => Err(Refusal::field(
            name,
            format!("{name} is not an argument of this tool"),
            "unknown_field",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::find;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn call(tool: &str, v: Value) -> Result<RestCall, Refusal> {
        let Some(spec) = find(tool) else {
            panic!("no tool {tool}");
        };
        rest_call(spec, args(v))
    }

    #[test]
    fn path_parameters_are_escaped_and_the_rest_is_the_body() {
        let c = call(
            "update_contact",
            json!({"id": "a/b c", "subscribed": false}),
        );
        assert_eq!(
            c,
            Ok(RestCall {
                method: "PATCH",
                target: "/contacts/a%2Fb%20c".into(),
                body: Some(json!({"subscribed": false})),
            })
        );
    }

    #[test]
    fn reads_put_arguments_in_the_query_string() {
        let c = call(
            "list_contacts",
            json!({"search": "a&b", "limit": 5, "cursor": null}),
        );
        let Ok(c) = c else { panic!("{c:?}") };
        assert_eq!(c.target, "/contacts?limit=5&search=a%26b");
        assert_eq!(c.body, None);
    }

    #[test]
    fn a_missing_or_structured_path_parameter_is_refused_on_its_field() {
        let Err(missing) = call("get_template", json!({})) else {
            panic!("accepted");
        };
        assert_eq!(missing.code, "VALIDATION_ERROR");
        assert!(missing.to_string().contains("id is required"));
        let Err(object) = call("get_template", json!({"id": {"x": 1}})) else {
            panic!("accepted");
        };
        assert!(object.to_string().contains("must be a string"));
    }

    #[test]
    fn fixed_bodies_take_no_other_arguments() {
        let c = call("subscribe_contact", json!({"id": "x"}));
        assert_eq!(c.map(|c| c.body), Ok(Some(json!({"subscribed": true}))));
        assert!(
            call(
                "unsubscribe_contact",
                json!({"id": "x", "subscribed": true})
            )
            .is_err()
        );
    }
}
