//! JSON to [`Filter`]: validation with the dot path of the bad node (relative to the tree,
//! e.g. `conditions.0.value`; the API prefixes `filters.` or `condition.`), and coercion of
//! every value to its field's type.

use serde_json::{Map, Value};
use uuid::Uuid;

use super::dates::{normalize_date, unit_millis};
use super::model::{Field, Filter, GroupOp, Leaf, Operand, Operator, Scalar, email_event_name};
use crate::fields::{FieldType, infer_type, is_date};
use crate::time::{Millis, parse_iso};

/// Deepest accepted nesting of groups.
pub const MAX_DEPTH: usize = 8;
/// Most nodes (groups and leaves) in one tree.
pub const MAX_NODES: usize = 200;
/// Longest span `within`/`olderThan` accept (about 100 years), so arithmetic never overflows.
const MAX_SPAN_MS: f64 = 3_200_000_000_000.0;

/// Why a tree was refused: `path` below the tree (empty for the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    pub path: String,
    pub code: &'static str,
    pub message: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for FilterError {}

fn err(path: &str, code: &'static str, message: impl Into<String>) -> FilterError {
    FilterError {
        path: path.to_owned(),
        code,
        message: message.into(),
    }
}

/// The keys of a `data.` path (`rest` is what follows `data.`): dot-separated, none empty or
/// holding `"` `\` `[` `]` `$`, so the path can be written into SQL as a literal.
pub fn data_path(rest: &str) -> Option<Vec<String>> {
    let parts: Vec<String> = rest.split('.').map(str::to_owned).collect();
    let bad = |p: &String| p.is_empty() || p.contains(['"', '\\', '[', ']', '$']);
    (!parts.iter().any(bad)).then_some(parts)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl Filter {
    /// Parses a tree; a `data.` field compares as the type of its value.
    pub fn parse(value: &Value) -> Result<Filter, FilterError> {
        Self::parse_with_types(value, &|_| None)
    }

    /// Parses a tree; a `data.` field compares as `types(path)` (the project's inferred type
    /// of the dotted path below `data`) when known, else as the type of its value.
    pub fn parse_with_types(
        value: &Value,
        types: &dyn Fn(&str) -> Option<FieldType>,
    ) -> Result<Filter, FilterError> {
        let mut nodes = 0;
        node(value, "", 0, &mut nodes, types)
    }
}

fn node(
    value: &Value,
    path: &str,
    depth: usize,
    nodes: &mut usize,
    types: &dyn Fn(&str) -> Option<FieldType>,
) -> Result<Filter, FilterError> {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return Err(err(
            path,
            "too_large",
            format!("a filter holds at most {MAX_NODES} conditions and groups"),
        ));
    }
    let Some(obj) = value.as_object() else {
        return Err(err(path, "invalid_type", "a filter node must be an object"));
    };
    if obj.contains_key("conditions") {
        group(obj, path, depth, nodes, types)
    } else {
        leaf(obj, path, types).map(Filter::Leaf)
    }
}

fn group(
    obj: &Map<String, Value>,
    path: &str,
    depth: usize,
    nodes: &mut usize,
    types: &dyn Fn(&str) -> Option<FieldType>,
) -> Result<Filter, FilterError> {
    if depth >= MAX_DEPTH {
        return Err(err(
            path,
            "too_deep",
            format!("groups nest at most {MAX_DEPTH} levels"),
        ));
    }
    let op = match obj.get("operator") {
        None | Some(Value::Null) => GroupOp::And,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("and") => GroupOp::And,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("or") => GroupOp::Or,
        Some(_) => {
            return Err(err(
                &join(path, "operator"),
                "invalid_operator",
                "a group's operator is AND or OR",
            ));
        }
    };
    let cpath = join(path, "conditions");
    let Some(list) = obj.get("conditions").and_then(Value::as_array) else {
        return Err(err(&cpath, "invalid_type", "conditions must be an array"));
    };
    let conditions = list
        .iter()
        .enumerate()
        .map(|(i, c)| node(c, &join(&cpath, &i.to_string()), depth + 1, nodes, types))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Filter::Group { op, conditions })
}

fn leaf(
    obj: &Map<String, Value>,
    path: &str,
    types: &dyn Fn(&str) -> Option<FieldType>,
) -> Result<Leaf, FilterError> {
    let fpath = join(path, "field");
    let opath = join(path, "operator");
    let vpath = join(path, "value");
    let field_name = match obj.get("field") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim(),
        Some(_) => {
            return Err(err(
                &fpath,
                "invalid_type",
                "field must be a non-empty string",
            ));
        }
        None => return Err(err(&fpath, "required", "field is required")),
    };
    let op = match obj.get("operator") {
        Some(Value::String(s)) => Operator::parse(s).ok_or_else(|| {
            err(
                &opath,
                "invalid_operator",
                format!("unknown operator {s:?}"),
            )
        })?,
        Some(_) => return Err(err(&opath, "invalid_type", "operator must be a string")),
        None => return Err(err(&opath, "required", "operator is required")),
    };
    let value = obj.get("value").filter(|v| !v.is_null());
    let field = resolve_field(field_name, op, value, [&fpath, &opath, &vpath], types)?;
    let operand = operand(&field, op, value, obj.get("unit"), path)?;
    Ok(Leaf { field, op, operand })
}

fn resolve_field(
    name: &str,
    op: Operator,
    value: Option<&Value>,
    [fpath, opath, vpath]: [&str; 3],
    types: &dyn Fn(&str) -> Option<FieldType>,
) -> Result<Field, FilterError> {
    let unknown = || {
        err(
            fpath,
            "invalid_field",
            format!(
                "unknown field {name:?}: use email, subscribed, createdAt, updatedAt, \
                 data.<path>, event.<name>, email.<sent|delivered|opened|clicked|bounced|complained> \
                 or segment.<id>"
            ),
        )
    };
    let field =
        match name {
            "email" => Field::Email,
            "subscribed" => Field::Subscribed,
            "createdAt" => Field::CreatedAt,
            "updatedAt" => Field::UpdatedAt,
            "segment" => Field::Segment(segment_id(value, vpath)?),
            _ => {
                if let Some(rest) = name.strip_prefix("data.") {
                    let Some(parts) = data_path(rest) else {
                        return Err(err(
                            fpath,
                            "invalid_field",
                            "a data path is dot-separated keys, none empty or holding \" \\ [ ] $",
                        ));
                    };
                    // A span operator's value is a number of units, not a field value.
                    let spans = matches!(op, Operator::Within | Operator::OlderThan);
                    let guess = if spans { None } else { value.map(infer_type) };
                    let fallback = if spans {
                        FieldType::Date
                    } else {
                        FieldType::String
                    };
                    let ty = types(rest).or(guess).unwrap_or(fallback);
                    Field::Data { path: parts, ty }
                } else if let Some(ev) = name.strip_prefix("event.") {
                    if ev.trim().is_empty() {
                        return Err(unknown());
                    }
                    Field::Event(ev.to_owned())
                } else if let Some(status) = name.strip_prefix("email.") {
                    Field::Event(email_event_name(status).ok_or_else(unknown)?.to_owned())
                } else if let Some(id) = name.strip_prefix("segment.") {
                    Field::Segment(Uuid::parse_str(id).map_err(|_| {
                        err(fpath, "invalid_field", "segment.<id> needs a segment id")
                    })?)
                } else {
                    return Err(unknown());
                }
            }
        };
    let allowed = allowed_ops(&field);
    if !allowed.contains(&op) {
        let names: Vec<&str> = allowed.iter().map(|o| o.as_str()).collect();
        return Err(err(
            opath,
            "invalid_operator",
            format!(
                "operator {:?} does not apply to {name:?}; use one of {}",
                op.as_str(),
                names.join(", ")
            ),
        ));
    }
    Ok(field)
}

fn segment_id(value: Option<&Value>, vpath: &str) -> Result<Uuid, FilterError> {
    value
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| err(vpath, "invalid_value", "value must be a segment id"))
}

/// The operators a field accepts.
fn allowed_ops(field: &Field) -> &'static [Operator] {
    use Operator::*;
    match field {
        Field::Event(_) => &[
            Triggered,
            TriggeredWithin,
            TriggeredOlderThan,
            NotTriggered,
            NotTriggeredWithin,
        ],
        Field::Segment(_) => &[MemberOfSegment, NotMemberOfSegment],
        other => match other.value_type() {
            Some(FieldType::String) => &[
                Equals,
                NotEquals,
                Contains,
                NotContains,
                GreaterThan,
                LessThan,
                GreaterThanOrEqual,
                LessThanOrEqual,
                Exists,
                NotExists,
            ],
            Some(FieldType::Number) => &[
                Equals,
                NotEquals,
                GreaterThan,
                LessThan,
                GreaterThanOrEqual,
                LessThanOrEqual,
                Exists,
                NotExists,
            ],
            Some(FieldType::Boolean) => &[Equals, NotEquals, Exists, NotExists],
            Some(FieldType::Date) | None => &[
                Equals,
                NotEquals,
                GreaterThan,
                LessThan,
                GreaterThanOrEqual,
                LessThanOrEqual,
                Exists,
                NotExists,
                Within,
                OlderThan,
            ],
        },
    }
}

fn operand(
    field: &Field,
    op: Operator,
    value: Option<&Value>,
    unit: Option<&Value>,
    path: &str,
) -> Result<Operand, FilterError> {
    use Operator::*;
    let vpath = join(path, "value");
    match op {
        _ if !op.needs_value() => Ok(Operand::None),
        Within | OlderThan | TriggeredWithin | TriggeredOlderThan | NotTriggeredWithin => {
            span(value, unit, path).map(Operand::Span)
        }
        _ => {
            let Some(v) = value else {
                return Err(err(
                    &vpath,
                    "required",
                    format!("operator {:?} needs a value", op.as_str()),
                ));
            };
            let ty = field.value_type().unwrap_or(FieldType::String);
            coerce(v, ty, &vpath).map(Operand::Value)
        }
    }
}

fn span(value: Option<&Value>, unit: Option<&Value>, path: &str) -> Result<Millis, FilterError> {
    let vpath = join(path, "value");
    let upath = join(path, "unit");
    let amount = match value {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        None => {
            return Err(err(&vpath, "required", "a number of units is required"));
        }
        Some(_) => None,
    }
    .filter(|a| a.is_finite() && *a >= 0.0)
    .ok_or_else(|| {
        err(
            &vpath,
            "invalid_value",
            "value must be a non-negative number",
        )
    })?;
    let unit_ms = match unit {
        Some(Value::String(u)) => unit_millis(u)
            .ok_or_else(|| err(&upath, "invalid_unit", "unit is days, hours or minutes"))?,
        None | Some(Value::Null) => {
            return Err(err(
                &upath,
                "required",
                "unit (days, hours or minutes) is required",
            ));
        }
        Some(_) => {
            return Err(err(
                &upath,
                "invalid_unit",
                "unit is days, hours or minutes",
            ));
        }
    };
    let ms = amount * unit_ms as f64;
    if ms > MAX_SPAN_MS {
        return Err(err(
            &vpath,
            "invalid_value",
            "the span is at most 100 years",
        ));
    }
    Ok(ms as Millis)
}

/// The value as the field's type; the path names the value on failure.
fn coerce(v: &Value, ty: FieldType, vpath: &str) -> Result<Scalar, FilterError> {
    let bad = |what: &str| {
        err(
            vpath,
            "invalid_value",
            format!("value must be {what} for this field"),
        )
    };
    match ty {
        FieldType::String => match v {
            Value::String(s) => Ok(Scalar::Str(s.clone())),
            Value::Number(n) => Ok(Scalar::Str(n.to_string())),
            Value::Bool(b) => Ok(Scalar::Str(b.to_string())),
            _ => Err(bad("a string")),
        },
        FieldType::Number => match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
            _ => None,
        }
        .map(Scalar::Num)
        .ok_or_else(|| bad("a number")),
        FieldType::Boolean => match v {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s == "true" => Some(true),
            Value::String(s) if s == "false" => Some(false),
            _ => None,
        }
        .map(Scalar::Bool)
        .ok_or_else(|| bad("true or false")),
        FieldType::Date => match v {
            Value::String(s) if is_date(s) => normalize_date(s)
                .and_then(|text| parse_iso(&text).map(|ms| Scalar::Date { ms, text })),
            _ => None,
        }
        .ok_or_else(|| bad("a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z)")),
    }
}
