//! The custom-field rules of a contact's `data` (SPEC.md "Custom fields").
//!
//! A payload is parsed once into a [`DataPatch`]; applying it to stored data is a pure merge:
//! only the keys sent change, `null` deletes, an empty string changes nothing,
//! `{value, persistent: false}` is kept for this request only, and reserved keys are dropped
//! without error. Type inference sees the stored values (never transient or deleted ones).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Keys silently dropped from any `data` payload.
pub const RESERVED_KEYS: [&str; 7] = [
    "id",
    "svc_id",
    "svc_email",
    "email",
    "unsubscribeUrl",
    "subscribeUrl",
    "manageUrl",
];

/// Longest accepted custom-field key.
pub const MAX_KEY_LEN: usize = 128;

/// A custom field name: not blank, at most [`MAX_KEY_LEN`] characters, no control characters.
pub fn is_valid_key(key: &str) -> bool {
    !key.trim().is_empty()
        && key.chars().count() <= MAX_KEY_LEN
        && !key.chars().any(char::is_control)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    String,
    Number,
    Boolean,
    Date,
}

impl FieldType {
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "string" => Some(Self::String),
            "number" => Some(Self::Number),
            "boolean" => Some(Self::Boolean),
            "date" => Some(Self::Date),
            _ => None,
        }
    }
}

/// A problem with one key of a payload; `key` is the path below `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub key: String,
    pub message: String,
    pub code: &'static str,
}

/// What a `data` payload asks for, after the rules have been applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataPatch {
    /// Keys to store (replacing the stored value).
    pub set: Map<String, Value>,
    /// Keys to delete.
    pub delete: Vec<String>,
    /// Values for this request only (`persistent: false`).
    pub transient: Map<String, Value>,
}

impl DataPatch {
    /// Parses a `data` payload. `None` and `null` mean "no change"; anything but an object is
    /// a problem reported on the key `""`.
    pub fn parse(data: Option<&Value>) -> Result<Self, FieldProblem> {
        let obj = match data {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Object(obj)) => obj,
            Some(_) => {
                return Err(FieldProblem {
                    key: String::new(),
                    message: "data must be an object".into(),
                    code: "invalid_type",
                });
            }
        };
        let mut patch = Self::default();
        for (key, value) in obj {
            if RESERVED_KEYS.contains(&key.as_str()) {
                continue;
            }
            if !is_valid_key(key) {
                return Err(FieldProblem {
                    key: key.clone(),
                    message: format!(
                        "field names must be 1 to {MAX_KEY_LEN} characters without control characters"
                    ),
                    code: "invalid_key",
                });
            }
            match transient_form(value) {
                Some((inner, false)) => {
                    patch.transient.insert(key.clone(), inner.clone());
                }
                Some((inner, true)) => patch.add(key, inner),
                None => patch.add(key, value),
            }
        }
        Ok(patch)
    }

    fn add(&mut self, key: &str, value: &Value) {
        match value {
            Value::Null => self.delete.push(key.to_owned()),
            Value::String(s) if s.is_empty() => {}
            v => {
                self.set.insert(key.to_owned(), v.clone());
            }
        }
    }

    /// True when applying the patch cannot change stored data.
    pub fn is_noop(&self) -> bool {
        self.set.is_empty() && self.delete.is_empty()
    }

    /// Merges the patch into stored data; returns whether anything changed.
    pub fn apply(&self, stored: &mut Map<String, Value>) -> bool {
        let mut changed = false;
        for key in &self.delete {
            changed |= stored.remove(key).is_some();
        }
        for (key, value) in &self.set {
            if stored.get(key) != Some(value) {
                stored.insert(key.clone(), value.clone());
                changed = true;
            }
        }
        changed
    }

    /// The variables of one render: stored data overlaid with this request's transient values.
    pub fn render_data(&self, stored: &Map<String, Value>) -> Map<String, Value> {
        let mut vars = stored.clone();
        for (k, v) in &self.transient {
            vars.insert(k.clone(), v.clone());
        }
        vars
    }

    /// The (path, type) of every stored leaf this patch writes; nested objects give dotted paths.
    pub fn typed_leaves(&self) -> Vec<(String, FieldType)> {
        let mut out = Vec::new();
        for (k, v) in &self.set {
            collect_leaves(k, v, &mut out, 0);
        }
        out
    }
}

/// `{ "value": x, "persistent": bool }` and nothing else.
fn transient_form(value: &Value) -> Option<(&Value, bool)> {
    let obj = value.as_object()?;
    if obj.len() != 2 {
        return None;
    }
    let persistent = obj.get("persistent")?.as_bool()?;
    Some((obj.get("value")?, persistent))
}

fn collect_leaves(path: &str, value: &Value, out: &mut Vec<(String, FieldType)>, depth: usize) {
    match value {
        Value::Null => {}
        Value::Object(obj) if depth < 8 && !obj.is_empty() => {
            for (k, v) in obj {
                collect_leaves(&format!("{path}.{k}"), v, out, depth + 1);
            }
        }
        v => out.push((path.to_owned(), infer_type(v))),
    }
}

/// The type rules of SPEC.md: numbers, booleans, the two date forms, and anything else a string.
pub fn infer_type(value: &Value) -> FieldType {
    match value {
        Value::Number(_) => FieldType::Number,
        Value::Bool(_) => FieldType::Boolean,
        Value::String(s) if is_date(s) => FieldType::Date,
        _ => FieldType::String,
    }
}

/// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SS[.sss]Z`.
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let date_ok = |b: &[u8]| {
        b.len() >= 10
            && digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
    };
    if b.len() == 10 {
        return date_ok(b) && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok();
    }
    if b.len() != 20 && b.len() != 24 {
        return false;
    }
    let time_ok = date_ok(b)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    let tail_ok = if b.len() == 20 {
        b[19] == b'Z'
    } else {
        b[19] == b'.' && digits(20..23) && b[23] == b'Z'
    };
    time_ok && tail_ok && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

/// The name `/contacts/fields` shows for a custom key.
pub fn display_name(key: &str) -> String {
    format!("data.{key}")
}

/// Accepts `data.plan` or `plan`; returns the key below `data`.
pub fn custom_key_from_path(path: &str) -> &str {
    path.strip_prefix("data.").unwrap_or(path)
}

/// Standard (non-custom) fields of every contact, with their types.
pub const STANDARD_FIELDS: [(&str, FieldType); 4] = [
    ("email", FieldType::String),
    ("subscribed", FieldType::Boolean),
    ("createdAt", FieldType::Date),
    ("updatedAt", FieldType::Date),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(v: Value) -> DataPatch {
        DataPatch::parse(Some(&v)).unwrap()
    }

    #[test]
    fn only_sent_keys_change_and_null_deletes() {
        let mut stored = json!({"plan": "pro", "age": 3, "city": "Oslo"})
            .as_object()
            .cloned()
            .unwrap();
        let changed = patch(json!({"plan": "team", "age": null})).apply(&mut stored);
        assert!(changed);
        assert_eq!(
            Value::Object(stored),
            json!({"plan": "team", "city": "Oslo"})
        );
    }

    #[test]
    fn empty_string_is_ignored() {
        let mut stored = json!({"plan": "pro"}).as_object().cloned().unwrap();
        let p = patch(json!({"plan": ""}));
        assert!(p.is_noop());
        assert!(!p.apply(&mut stored));
        assert_eq!(stored["plan"], "pro");
    }

    #[test]
    fn transient_values_are_not_stored_but_render() {
        let p = patch(
            json!({"code": {"value": "1234", "persistent": false}, "keep": {"value": 1, "persistent": true}}),
        );
        let mut stored = Map::new();
        p.apply(&mut stored);
        assert_eq!(Value::Object(stored.clone()), json!({"keep": 1}));
        assert_eq!(p.render_data(&stored)["code"], "1234");
    }

    #[test]
    fn reserved_keys_are_dropped_silently() {
        let p = patch(
            json!({"id": 1, "email": "x@y.z", "svc_id": 1, "svc_email": 1,
            "unsubscribeUrl": 1, "subscribeUrl": 1, "manageUrl": 1, "locale": "fr"}),
        );
        assert_eq!(Value::Object(p.set), json!({"locale": "fr"}));
    }

    #[test]
    fn non_object_data_and_bad_keys_are_problems() {
        assert_eq!(
            DataPatch::parse(Some(&json!([1]))).unwrap_err().code,
            "invalid_type"
        );
        assert_eq!(
            DataPatch::parse(Some(&json!({"": 1}))).unwrap_err().code,
            "invalid_key"
        );
        assert_eq!(
            DataPatch::parse(Some(&json!({"a\nb": 1})))
                .unwrap_err()
                .code,
            "invalid_key"
        );
        assert!(DataPatch::parse(None).unwrap().is_noop());
    }

    #[test]
    fn types_are_inferred() {
        assert_eq!(infer_type(&json!(1.5)), FieldType::Number);
        assert_eq!(infer_type(&json!(false)), FieldType::Boolean);
        assert_eq!(infer_type(&json!("2026-01-31")), FieldType::Date);
        assert_eq!(infer_type(&json!("2026-01-31T10:00:00Z")), FieldType::Date);
        assert_eq!(
            infer_type(&json!("2026-01-31T10:00:00.123Z")),
            FieldType::Date
        );
        assert_eq!(infer_type(&json!("2026-13-31")), FieldType::String);
        assert_eq!(infer_type(&json!("2026-01-31 10:00")), FieldType::String);
        assert_eq!(
            infer_type(&json!("2026-01-31T10:00:00+01:00")),
            FieldType::String
        );
        assert_eq!(infer_type(&json!("hello")), FieldType::String);
    }

    #[test]
    fn nested_objects_give_dotted_leaves() {
        let p = patch(json!({"address": {"city": "Oslo", "zip": 150}, "n": 1}));
        let mut leaves = p.typed_leaves();
        leaves.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            leaves,
            vec![
                ("address.city".to_string(), FieldType::String),
                ("address.zip".to_string(), FieldType::Number),
                ("n".to_string(), FieldType::Number)
            ]
        );
    }
}
