//! The in-memory evaluator: the reference semantics the SQL compiler reproduces.
//!
//! - Missing field (absent or JSON `null`): only `notExists` matches.
//! - A present value of another JSON type than the leaf's type matches no positive operator
//!   (so `notEquals`/`notContains` match it: they are "exists and not the positive one").
//! - Strings compare byte-wise (case-sensitive); `contains` is a substring test.
//! - Dates in `data` compare as normalised text ([`normalize_date`]); a string of neither date
//!   shape is "another type". `createdAt`/`updatedAt` compare as milliseconds.
//! - `within N unit`: the date is at or after `now - N unit`; `olderThan`: strictly before it.
//! - Events: `triggered` = at least one; `triggeredWithin` = one at or after `now - span`;
//!   `triggeredOlderThan` = triggered, but none within the span (the last one is older);
//!   `notTriggered` = none; `notTriggeredWithin` = none within the span.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use uuid::Uuid;

use super::dates::normalize_date;
use super::model::{Field, Filter, GroupOp, Leaf, Operand, Operator, Scalar};
use crate::fields::FieldType;
use crate::time::{Millis, iso};

/// What the evaluator knows about one contact.
#[derive(Clone, Debug, Default)]
pub struct ContactView {
    pub email: String,
    pub subscribed: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub data: Map<String, Value>,
    /// Event name to the times it was recorded for the contact.
    pub events: HashMap<String, Vec<Millis>>,
    /// Segments the contact is a member of (for `memberOfSegment`).
    pub segments: HashSet<Uuid>,
}

/// True when the contact matches the tree at `now`.
pub fn evaluate(filter: &Filter, contact: &ContactView, now: Millis) -> bool {
    match filter {
        Filter::Group {
            op: GroupOp::And,
            conditions,
        } => conditions.iter().all(|c| evaluate(c, contact, now)),
        Filter::Group {
            op: GroupOp::Or,
            conditions,
        } => conditions.iter().any(|c| evaluate(c, contact, now)),
        Filter::Leaf(leaf) => leaf_matches(leaf, contact, now),
    }
}

/// A value as read from the contact.
enum Read<'a> {
    Json(&'a Value),
    Millis(Millis),
}

fn read<'a>(field: &Field, c: &'a ContactView) -> Option<Read<'a>> {
    match field {
        Field::Email | Field::Subscribed => None,
        Field::CreatedAt => Some(Read::Millis(c.created_at)),
        Field::UpdatedAt => Some(Read::Millis(c.updated_at)),
        Field::Data { path, .. } => {
            let (first, rest) = path.split_first()?;
            let mut v = c.data.get(first)?;
            for key in rest {
                v = v.as_object()?.get(key)?;
            }
            (!v.is_null()).then_some(Read::Json(v))
        }
        Field::Event(_) | Field::Segment(_) => None,
    }
}

fn leaf_matches(leaf: &Leaf, c: &ContactView, now: Millis) -> bool {
    let span = match leaf.operand {
        Operand::Span(ms) => ms,
        _ => 0,
    };
    let cutoff = now.saturating_sub(span);
    match &leaf.field {
        Field::Event(name) => {
            let times = c.events.get(name).map(Vec::as_slice).unwrap_or(&[]);
            let recent = times.iter().any(|t| *t >= cutoff);
            return match leaf.op {
                Operator::Triggered => !times.is_empty(),
                Operator::TriggeredWithin => recent,
                Operator::TriggeredOlderThan => !times.is_empty() && !recent,
                Operator::NotTriggered => times.is_empty(),
                Operator::NotTriggeredWithin => !recent,
                _ => false,
            };
        }
        Field::Segment(id) => {
            let member = c.segments.contains(id);
            return match leaf.op {
                Operator::MemberOfSegment => member,
                Operator::NotMemberOfSegment => !member,
                _ => false,
            };
        }
        _ => {}
    }
    // Email and subscribed are always present; read them here to borrow nothing extra.
    let email = Value::String(c.email.clone());
    let subscribed = Value::Bool(c.subscribed);
    let value = match &leaf.field {
        Field::Email => Some(Read::Json(&email)),
        Field::Subscribed => Some(Read::Json(&subscribed)),
        f => read(f, c),
    };
    let Some(value) = value else {
        return leaf.op == Operator::NotExists;
    };
    let ty = leaf.field.value_type().unwrap_or(FieldType::String);
    match leaf.op {
        Operator::Exists => true,
        Operator::NotExists => false,
        Operator::NotEquals => !positive(Operator::Equals, ty, &value, &leaf.operand, cutoff),
        Operator::NotContains => !positive(Operator::Contains, ty, &value, &leaf.operand, cutoff),
        op => positive(op, ty, &value, &leaf.operand, cutoff),
    }
}

/// A positive operator on a present value.
fn positive(
    op: Operator,
    ty: FieldType,
    value: &Read<'_>,
    operand: &Operand,
    cutoff: Millis,
) -> bool {
    let ordering = |o: Option<Ordering>| -> bool {
        let Some(o) = o else { return false };
        match op {
            Operator::Equals => o == Ordering::Equal,
            Operator::GreaterThan => o == Ordering::Greater,
            Operator::LessThan => o == Ordering::Less,
            Operator::GreaterThanOrEqual => o != Ordering::Less,
            Operator::LessThanOrEqual => o != Ordering::Greater,
            Operator::Within => o != Ordering::Less,
            Operator::OlderThan => o == Ordering::Less,
            _ => false,
        }
    };
    match (ty, value, operand) {
        (FieldType::Date, Read::Millis(ms), Operand::Value(Scalar::Date { ms: v, .. })) => {
            ordering(Some(ms.cmp(v)))
        }
        (FieldType::Date, Read::Millis(ms), Operand::Span(_)) => ordering(Some(ms.cmp(&cutoff))),
        (FieldType::Date, Read::Json(Value::String(s)), operand) => {
            let Some(text) = normalize_date(s) else {
                return false;
            };
            match operand {
                Operand::Value(Scalar::Date { text: v, .. }) => {
                    ordering(Some(text.as_str().cmp(v.as_str())))
                }
                Operand::Span(_) => ordering(Some(text.as_str().cmp(iso(cutoff).as_str()))),
                _ => false,
            }
        }
        (FieldType::String, Read::Json(Value::String(s)), Operand::Value(Scalar::Str(v))) => {
            if op == Operator::Contains {
                s.contains(v.as_str())
            } else {
                ordering(Some(s.as_bytes().cmp(v.as_bytes())))
            }
        }
        (FieldType::Number, Read::Json(Value::Number(n)), Operand::Value(Scalar::Num(v))) => {
            ordering(n.as_f64().and_then(|n| n.partial_cmp(v)))
        }
        (FieldType::Boolean, Read::Json(Value::Bool(b)), Operand::Value(Scalar::Bool(v))) => {
            op == Operator::Equals && b == v
        }
        _ => false,
    }
}
