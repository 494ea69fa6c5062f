//! The parsed filter tree. Built only by [`Filter::parse`] (crate::filter::parse), so every
//! value is valid and coerced to its field's type.

use uuid::Uuid;

use crate::fields::FieldType;
use crate::time::Millis;

#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    Group {
        op: GroupOp,
        conditions: Vec<Filter>,
    },
    Leaf(Leaf),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupOp {
    And,
    Or,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    pub field: Field,
    pub op: Operator,
    pub operand: Operand,
}

/// What a leaf looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    Email,
    Subscribed,
    CreatedAt,
    UpdatedAt,
    /// `data.<path>`: the path below `data`, split at dots (dots = nesting), with the type
    /// the leaf compares as.
    Data {
        path: Vec<String>,
        ty: FieldType,
    },
    /// `event.<name>`, and `email.<status>` as the system event it names.
    Event(String),
    /// `segment.<id>` (or field `segment` with the id as value).
    Segment(Uuid),
}

impl Field {
    /// The type values of this field compare as (`None` for events and segments).
    pub fn value_type(&self) -> Option<FieldType> {
        match self {
            Field::Email => Some(FieldType::String),
            Field::Subscribed => Some(FieldType::Boolean),
            Field::CreatedAt | Field::UpdatedAt => Some(FieldType::Date),
            Field::Data { ty, .. } => Some(*ty),
            Field::Event(_) | Field::Segment(_) => None,
        }
    }
}

/// The system event an `email.<status>` field stands for.
pub fn email_event_name(status: &str) -> Option<&'static str> {
    Some(match status {
        "sent" => "email.sent",
        "delivered" => "email.delivery",
        "opened" => "email.open",
        "clicked" => "email.click",
        "bounced" => "email.bounce",
        "complained" => "email.complaint",
        _ => return None,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
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
    Within,
    OlderThan,
    Triggered,
    TriggeredWithin,
    TriggeredOlderThan,
    NotTriggered,
    NotTriggeredWithin,
    MemberOfSegment,
    NotMemberOfSegment,
}

impl Operator {
    pub const ALL: [Operator; 19] = [
        Operator::Equals,
        Operator::NotEquals,
        Operator::Contains,
        Operator::NotContains,
        Operator::GreaterThan,
        Operator::LessThan,
        Operator::GreaterThanOrEqual,
        Operator::LessThanOrEqual,
        Operator::Exists,
        Operator::NotExists,
        Operator::Within,
        Operator::OlderThan,
        Operator::Triggered,
        Operator::TriggeredWithin,
        Operator::TriggeredOlderThan,
        Operator::NotTriggered,
        Operator::NotTriggeredWithin,
        Operator::MemberOfSegment,
        Operator::NotMemberOfSegment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "equals",
            Operator::NotEquals => "notEquals",
            Operator::Contains => "contains",
            Operator::NotContains => "notContains",
            Operator::GreaterThan => "greaterThan",
            Operator::LessThan => "lessThan",
            Operator::GreaterThanOrEqual => "greaterThanOrEqual",
            Operator::LessThanOrEqual => "lessThanOrEqual",
            Operator::Exists => "exists",
            Operator::NotExists => "notExists",
            Operator::Within => "within",
            Operator::OlderThan => "olderThan",
            Operator::Triggered => "triggered",
            Operator::TriggeredWithin => "triggeredWithin",
            Operator::TriggeredOlderThan => "triggeredOlderThan",
            Operator::NotTriggered => "notTriggered",
            Operator::NotTriggeredWithin => "notTriggeredWithin",
            Operator::MemberOfSegment => "memberOfSegment",
            Operator::NotMemberOfSegment => "notMemberOfSegment",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// Whether the operator compares with a `value` (presence, event and membership tests do
    /// not; the span operators take theirs with a `unit`).
    pub fn needs_value(self) -> bool {
        use Operator::*;
        !matches!(
            self,
            Exists | NotExists | Triggered | NotTriggered | MemberOfSegment | NotMemberOfSegment
        )
    }
}

/// A leaf's operand, already coerced.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    None,
    Value(Scalar),
    /// `within`/`olderThan`/`triggered*Within|OlderThan`: the span in milliseconds.
    Span(Millis),
}

/// A comparison value of the leaf's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Str(String),
    Num(f64),
    Bool(bool),
    /// A date: epoch milliseconds and the normalised text (`YYYY-MM-DDTHH:MM:SS.sssZ`).
    Date {
        ms: Millis,
        text: String,
    },
}

impl Filter {
    /// Every segment id the tree refers to (for cycle checks and SQL resolution).
    pub fn segment_refs(&self) -> Vec<Uuid> {
        let mut out = Vec::new();
        self.walk(&mut |leaf| {
            if let Field::Segment(id) = leaf.field {
                out.push(id);
            }
        });
        out
    }

    /// Every event name the tree refers to (`email.<status>` as its system event).
    pub fn event_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.walk(&mut |leaf| {
            if let Field::Event(name) = &leaf.field {
                out.push(name.clone());
            }
        });
        out
    }

    /// Calls `f` on every leaf.
    /// Whether a leaf names the custom field `key` (a dotted path below `data`) or a path
    /// inside it.
    pub fn uses_data_key(&self, key: &str) -> bool {
        let mut found = false;
        self.walk(&mut |leaf| {
            if let Field::Data { path, .. } = &leaf.field {
                let joined = path.join(".");
                found |= joined == key || joined.starts_with(&format!("{key}."));
            }
        });
        found
    }

    /// Whether a leaf names the event `name`.
    pub fn uses_event(&self, name: &str) -> bool {
        let mut found = false;
        self.walk(&mut |leaf| {
            found |= matches!(&leaf.field, Field::Event(e) if e == name);
        });
        found
    }

    pub fn walk(&self, f: &mut dyn FnMut(&Leaf)) {
        match self {
            Filter::Leaf(l) => f(l),
            Filter::Group { conditions, .. } => conditions.iter().for_each(|c| c.walk(f)),
        }
    }
}
