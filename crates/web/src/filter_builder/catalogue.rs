//! What a builder row can choose: the fields of the filter language (DECISIONS.md "Segments
//! and filters") with the project's custom fields, tracked events and segments, and the
//! operators that fit each kind of field (the operators `herald_core::filter` accepts for it).

use herald_api::AppState;
use herald_api::error::ApiResult;
use herald_core::fields::{FieldType, STANDARD_FIELDS};
use herald_core::ids::Uuid;

/// How a field compares: picks its operators and its value input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Number,
    Boolean,
    Date,
    /// `event.<name>` and `email.<status>`.
    Event,
    /// `segment.<id>`.
    Segment,
}

impl Kind {
    fn of(t: FieldType) -> Kind {
        match t {
            FieldType::String => Kind::Text,
            FieldType::Number => Kind::Number,
            FieldType::Boolean => Kind::Boolean,
            FieldType::Date => Kind::Date,
        }
    }

    /// The operators of this kind, as `(API name, words)`, the first the default.
    pub fn operators(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Text => &[
                ("equals", "is"),
                ("notEquals", "is not"),
                ("contains", "contains"),
                ("notContains", "does not contain"),
                ("greaterThan", "sorts after"),
                ("lessThan", "sorts before"),
                ("greaterThanOrEqual", "sorts at or after"),
                ("lessThanOrEqual", "sorts at or before"),
                ("exists", "is set"),
                ("notExists", "is not set"),
            ],
            Kind::Number => &[
                ("equals", "="),
                ("notEquals", "≠"),
                ("greaterThan", ">"),
                ("lessThan", "<"),
                ("greaterThanOrEqual", "≥"),
                ("lessThanOrEqual", "≤"),
                ("exists", "is set"),
                ("notExists", "is not set"),
            ],
            Kind::Boolean => &[
                ("equals", "is"),
                ("notEquals", "is not"),
                ("exists", "is set"),
                ("notExists", "is not set"),
            ],
            Kind::Date => &[
                ("within", "in the last"),
                ("olderThan", "more than … ago"),
                ("equals", "is at"),
                ("notEquals", "is not at"),
                ("greaterThan", "is after"),
                ("lessThan", "is before"),
                ("greaterThanOrEqual", "is on or after"),
                ("lessThanOrEqual", "is on or before"),
                ("exists", "is set"),
                ("notExists", "is not set"),
            ],
            Kind::Event => &[
                ("triggered", "has happened"),
                ("notTriggered", "has never happened"),
                ("triggeredWithin", "happened in the last"),
                ("notTriggeredWithin", "has not happened in the last"),
                ("triggeredOlderThan", "happened more than … ago"),
            ],
            Kind::Segment => &[
                ("memberOfSegment", "is a member"),
                ("notMemberOfSegment", "is not a member"),
            ],
        }
    }

    /// The operators a workflow CONDITION offers for this kind: the builder's, less those
    /// that take a span of time (a CONDITION's config has no `unit`).
    pub fn condition_operators(self) -> Vec<(&'static str, &'static str)> {
        self.operators()
            .iter()
            .copied()
            .filter(|(op, _)| !is_span(op))
            .collect()
    }

    pub fn allows(self, op: &str) -> bool {
        self.operators().iter().any(|(o, _)| *o == op)
    }

    /// The value input a row of this kind shows with operator `op`.
    pub fn input(self, op: &str) -> Input {
        if is_span(op) {
            return Input::Span;
        }
        let needs = herald_core::filter::Operator::parse(op).is_none_or(|o| o.needs_value());
        match self {
            _ if !needs => Input::None,
            Kind::Number => Input::Number,
            Kind::Boolean => Input::Boolean,
            Kind::Date => Input::Date,
            Kind::Text => Input::Text,
            Kind::Event | Kind::Segment => Input::None,
        }
    }
}

/// The value control of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    None,
    /// A number of units (`value`) and the unit (`unit`).
    Span,
    Number,
    Boolean,
    Date,
    Text,
}

/// Whether `op` takes a span (`value` units of `unit`) rather than a field value.
pub fn is_span(op: &str) -> bool {
    matches!(
        op,
        "within" | "olderThan" | "triggeredWithin" | "triggeredOlderThan" | "notTriggeredWithin"
    )
}

/// One entry of the field list.
pub struct Choice {
    /// The API field name (`email`, `data.plan`, `segment.<id>`), or `event` for a tracked
    /// event named in the row's own input.
    pub value: String,
    pub label: String,
    pub kind: Kind,
}

/// A labelled part of the field list (`<optgroup>`).
pub struct ChoiceGroup {
    pub label: &'static str,
    pub choices: Vec<Choice>,
}

/// The field list of one project.
pub struct Catalogue {
    pub groups: Vec<ChoiceGroup>,
    /// Tracked event names seen in the project (suggestions for the event name input).
    pub events: Vec<String>,
}

/// The `email.<status>` fields, with their words.
const EMAIL_ACTIVITY: [(&str, &str); 6] = [
    ("email.sent", "Email sent"),
    ("email.delivered", "Email delivered"),
    ("email.opened", "Email opened"),
    ("email.clicked", "Email clicked"),
    ("email.bounced", "Email bounced"),
    ("email.complained", "Email complained"),
];

impl Catalogue {
    /// The project's list: built-in fields, its custom fields with their inferred types, email
    /// activity and tracked events, and its segments except `exclude` (the one being edited:
    /// a segment cannot contain itself).
    pub async fn load(
        state: &AppState,
        project_id: Uuid,
        exclude: Option<Uuid>,
    ) -> ApiResult<Catalogue> {
        let custom = state.store.custom_fields(project_id).await?;
        let segments = state.store.list_segments(project_id).await?;
        let events = state.store.top_tracked_events(project_id, 100).await?;
        let mut groups = vec![ChoiceGroup {
            label: "Contact",
            choices: STANDARD_FIELDS
                .iter()
                .map(|(name, t)| Choice {
                    value: (*name).to_owned(),
                    label: builtin_label(name).to_owned(),
                    kind: Kind::of(*t),
                })
                .collect(),
        }];
        if !custom.is_empty() {
            groups.push(ChoiceGroup {
                label: "Data",
                choices: custom
                    .iter()
                    .map(|f| Choice {
                        value: format!("data.{}", f.key),
                        label: f.key.clone(),
                        kind: Kind::of(f.field_type),
                    })
                    .collect(),
            });
        }
        let mut activity = vec![Choice {
            value: "event".to_owned(),
            label: "Tracked event (by name)".to_owned(),
            kind: Kind::Event,
        }];
        activity.extend(EMAIL_ACTIVITY.iter().map(|(v, l)| Choice {
            value: (*v).to_owned(),
            label: (*l).to_owned(),
            kind: Kind::Event,
        }));
        groups.push(ChoiceGroup {
            label: "Activity",
            choices: activity,
        });
        let segments: Vec<Choice> = segments
            .into_iter()
            .filter(|s| Some(s.id) != exclude)
            .map(|s| Choice {
                value: format!("segment.{}", s.id),
                label: format!("In segment {}", s.name),
                kind: Kind::Segment,
            })
            .collect();
        if !segments.is_empty() {
            groups.push(ChoiceGroup {
                label: "Segments",
                choices: segments,
            });
        }
        Ok(Catalogue {
            groups,
            events: events.into_iter().map(|(name, _)| name).collect(),
        })
    }

    /// The fields a workflow CONDITION step tests (DECISIONS.md "Workflows"): the contact's
    /// email and subscription, its custom fields with their types, and a key of the
    /// triggering event's data (`event`, the key typed in the row's own input, sent as
    /// `event.<key>` like a tracked event's name in a filter tree). Each compares as a value:
    /// [`Kind::condition_operators`].
    pub fn for_condition(custom: &[herald_store::fields::CustomField]) -> Catalogue {
        let mut groups = vec![ChoiceGroup {
            label: "Contact",
            choices: vec![
                Choice {
                    value: "contact.email".to_owned(),
                    label: "Email".to_owned(),
                    kind: Kind::Text,
                },
                Choice {
                    value: "contact.subscribed".to_owned(),
                    label: "Subscribed".to_owned(),
                    kind: Kind::Boolean,
                },
            ],
        }];
        if !custom.is_empty() {
            groups.push(ChoiceGroup {
                label: "Data",
                choices: custom
                    .iter()
                    .map(|f| Choice {
                        value: format!("data.{}", f.key),
                        label: f.key.clone(),
                        kind: Kind::of(f.field_type),
                    })
                    .collect(),
            });
        }
        groups.push(ChoiceGroup {
            label: "Triggering event",
            choices: vec![Choice {
                value: "event".to_owned(),
                label: "Event data (by key)".to_owned(),
                kind: Kind::Text,
            }],
        });
        Catalogue {
            groups,
            events: Vec::new(),
        }
    }

    fn find(&self, field: &str) -> Option<&Choice> {
        self.groups
            .iter()
            .flat_map(|g| &g.choices)
            .find(|c| c.value == field)
    }

    /// The kind of `field` (a field the list lacks, such as a custom field no contact holds
    /// any more, compares as text unless its name says otherwise).
    pub fn kind_of(&self, field: &str) -> Kind {
        if let Some(c) = self.find(field) {
            return c.kind;
        }
        if field == "event" || field.starts_with("email.") {
            Kind::Event
        } else if field.starts_with("segment.") {
            Kind::Segment
        } else {
            Kind::Text
        }
    }

    /// Adds `field` to the list when it is missing (a stored tree naming a field the project
    /// no longer has, or a deleted segment), so that the row keeps it.
    pub fn keep(&mut self, field: &str) {
        if field.is_empty() || self.find(field).is_some() {
            return;
        }
        let choice = Choice {
            value: field.to_owned(),
            label: field.to_owned(),
            kind: self.kind_of(field),
        };
        match self.groups.iter_mut().find(|g| g.label == "Other") {
            Some(g) => g.choices.push(choice),
            None => self.groups.push(ChoiceGroup {
                label: "Other",
                choices: vec![choice],
            }),
        }
    }
}

fn builtin_label(name: &str) -> &'static str {
    match name {
        "email" => "Email",
        "subscribed" => "Subscribed",
        "createdAt" => "Created",
        "updatedAt" => "Updated",
        _ => "Field",
    }
}
