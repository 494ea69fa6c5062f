//! The builder's form model: a tree of AND / OR groups and rows, read from the posted form
//! fields (whose names are the API's field paths below the tree's key), from a stored tree,
//! and written back as the API's filter tree.
//!
//! Form names, with `P` the tree's key (`filters`, `audienceFilter`):
//! - a group at path `G` (`P` for the root, `P.conditions.1` for the second node of the root):
//!   `G.operator` (AND or OR) and the marker `G.conditions`;
//! - a row at path `R`: `R.field`, `R.operator`, `R.value`, `R.unit`, and `R.event` (the name
//!   of a tracked event when `R.field` is `event`);
//! - the submit button `builder`: `add-row:G`, `add-group:G`, `remove:N` or `refresh`.
//!
//! Posted indices may have gaps (a removed row); rows keep their posted order and are
//! renumbered, so the paths of a rendered form are the paths of the tree it sends and an API
//! error's field path names the control it concerns.

use herald_core::filter::{MAX_DEPTH, MAX_NODES};
use serde_json::{Map, Value, json};

use super::catalogue::{Catalogue, Input, is_span};
use crate::form::FormData;

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// `AND` or `OR`.
    pub op: String,
    pub children: Vec<Node>,
    /// The path the node had in the posted form (finds the target of an action).
    pub(super) posted: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Group(Group),
    Row(Row),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Row {
    /// An API field name, or `event` (the event's name is in `event`).
    pub field: String,
    pub event: String,
    pub operator: String,
    pub value: String,
    pub unit: String,
    /// Just added: gets the focus, and no complaint until it is filled in.
    pub fresh: bool,
    pub(super) posted: String,
}

impl Row {
    /// The row a new condition starts as.
    pub fn new_default() -> Row {
        Row {
            field: "email".to_owned(),
            operator: "contains".to_owned(),
            fresh: true,
            ..Row::default()
        }
    }

    /// A row of these values (a workflow CONDITION's one condition).
    pub fn leaf(field: &str, event: &str, operator: &str, value: &str) -> Row {
        Row {
            field: field.to_owned(),
            event: event.to_owned(),
            operator: operator.to_owned(),
            value: value.to_owned(),
            ..Row::default()
        }
    }

    /// The row a new tree starts with: a valid condition, so the count shows at once.
    pub fn subscribed() -> Row {
        Row {
            field: "subscribed".to_owned(),
            operator: "equals".to_owned(),
            value: "true".to_owned(),
            ..Row::default()
        }
    }

    /// The API field name (`event.<name>` for a named event).
    pub fn api_field(&self) -> String {
        if self.field == "event" {
            format!("event.{}", self.event.trim())
        } else {
            self.field.clone()
        }
    }
}

impl Group {
    pub fn new(op: &str, children: Vec<Node>) -> Group {
        Group {
            op: op.to_owned(),
            children,
            posted: String::new(),
        }
    }

    /// The tree a new segment starts with: subscribed contacts.
    pub fn starter() -> Group {
        Group::new("AND", vec![Node::Row(Row::subscribed())])
    }

    /// Makes every row fit its field: an operator the field does not take becomes the field's
    /// first, a boolean gets `true`, a span gets `days`.
    pub fn fit(&mut self, catalogue: &Catalogue) {
        if self.op != "OR" {
            self.op = "AND".to_owned();
        }
        for child in &mut self.children {
            match child {
                Node::Group(g) => g.fit(catalogue),
                Node::Row(r) => {
                    let kind = catalogue.kind_of(&r.field);
                    if !kind.allows(&r.operator) {
                        r.operator = kind.operators()[0].0.to_owned();
                    }
                    match kind.input(&r.operator) {
                        Input::Boolean if r.value != "false" => r.value = "true".to_owned(),
                        Input::Span if r.unit.is_empty() => r.unit = "days".to_owned(),
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Reads the tree posted under `prefix` and applies the form's `builder` action.
pub fn from_form(form: &FormData, prefix: &str) -> Group {
    let mut nodes = 0;
    let mut root = read_group(form, prefix, 0, &mut nodes);
    if let Some(action) = form.opt("builder") {
        apply(&mut root, &action);
    }
    root
}

fn read_group(form: &FormData, path: &str, depth: usize, nodes: &mut usize) -> Group {
    let mut group = Group {
        op: form.get(&format!("{path}.operator")),
        children: Vec::new(),
        posted: path.to_owned(),
    };
    // One past the API's limits, so that the API itself refuses (and says why) a tree that
    // is too deep or too large, while a crafted form cannot make this recurse without end.
    if depth > MAX_DEPTH {
        return group;
    }
    let below = format!("{path}.conditions.");
    let mut indices: Vec<u32> = form
        .0
        .iter()
        .filter_map(|(k, _)| k.strip_prefix(&below))
        .filter_map(|rest| rest.split('.').next()?.parse().ok())
        .collect();
    indices.sort_unstable();
    indices.dedup();
    for i in indices {
        *nodes += 1;
        if *nodes > MAX_NODES + 1 {
            break;
        }
        let child = format!("{below}{i}");
        let is_group = form
            .0
            .iter()
            .any(|(k, _)| *k == format!("{child}.conditions"));
        group.children.push(if is_group {
            Node::Group(read_group(form, &child, depth + 1, nodes))
        } else {
            let get = |part: &str| form.get(&format!("{child}.{part}"));
            Node::Row(Row {
                field: get("field"),
                event: get("event"),
                operator: get("operator"),
                value: get("value"),
                unit: get("unit"),
                fresh: false,
                posted: child.clone(),
            })
        });
    }
    group
}

/// Applies `add-row:G`, `add-group:G` or `remove:N` (paths as posted); anything else
/// changes nothing (`refresh`: the form re-rendered for another field).
fn apply(root: &mut Group, action: &str) {
    let Some((verb, path)) = action.split_once(':') else {
        return;
    };
    match verb {
        "add-row" => {
            if let Some(g) = group_at(root, path) {
                g.children.push(Node::Row(Row::new_default()));
            }
        }
        "add-group" => {
            if let Some(g) = group_at(root, path) {
                let inner = Group::new("OR", vec![Node::Row(Row::new_default())]);
                g.children.push(Node::Group(inner));
            }
        }
        "remove" => remove_at(root, path),
        _ => {}
    }
}

fn group_at<'a>(g: &'a mut Group, path: &str) -> Option<&'a mut Group> {
    if g.posted == path {
        return Some(g);
    }
    g.children.iter_mut().find_map(|c| match c {
        Node::Group(inner) => group_at(inner, path),
        Node::Row(_) => None,
    })
}

fn remove_at(g: &mut Group, path: &str) {
    let before = g.children.len();
    g.children.retain(|c| match c {
        Node::Group(inner) => inner.posted != path,
        Node::Row(r) => r.posted != path,
    });
    if g.children.len() == before {
        for c in &mut g.children {
            if let Node::Group(inner) = c {
                remove_at(inner, path);
            }
        }
    }
}

/// The builder's model of a stored tree (a leaf at the root becomes an AND group of one).
pub fn from_tree(tree: &Value) -> Group {
    match tree_node(tree) {
        Node::Group(g) => g,
        row => Group::new("AND", vec![row]),
    }
}

fn tree_node(v: &Value) -> Node {
    let text = |key: &str| match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        // 5.0 (how a number the form sent is stored) reads back as 5.
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        Some(other) => other.to_string(),
    };
    if let Some(list) = v.get("conditions").and_then(Value::as_array) {
        let op = if text("operator").eq_ignore_ascii_case("or") {
            "OR"
        } else {
            "AND"
        };
        return Node::Group(Group::new(op, list.iter().map(tree_node).collect()));
    }
    let field = text("field");
    let (field, event) = match field.strip_prefix("event.") {
        Some(name) => ("event".to_owned(), name.to_owned()),
        None => (field, String::new()),
    };
    Node::Row(Row {
        field,
        event,
        operator: text("operator"),
        value: text("value"),
        unit: text("unit"),
        ..Row::default()
    })
}

/// The API's filter tree for `group`: values typed by their field (a number field's value as
/// a JSON number when it reads as one, a boolean as `true`/`false`); a value that does not
/// read as its type is sent as typed, for the API to refuse with its message.
pub fn to_tree(group: &Group, catalogue: &Catalogue) -> Value {
    let conditions: Vec<Value> = group
        .children
        .iter()
        .map(|c| match c {
            Node::Group(g) => to_tree(g, catalogue),
            Node::Row(r) => row_tree(r, catalogue),
        })
        .collect();
    json!({ "operator": group.op, "conditions": conditions })
}

/// One row as the API's leaf `{field, operator, value?, unit?}`, its value typed by its field's
/// kind (also a workflow CONDITION's config).
pub fn row_tree(r: &Row, catalogue: &Catalogue) -> Value {
    let kind = catalogue.kind_of(&r.field);
    let mut leaf = Map::new();
    leaf.insert("field".into(), Value::String(r.api_field()));
    leaf.insert("operator".into(), Value::String(r.operator.clone()));
    let raw = r.value.trim();
    let input = kind.input(&r.operator);
    if input != Input::None && !raw.is_empty() {
        let number = || {
            raw.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        };
        let value = match input {
            Input::Span | Input::Number => number(),
            Input::Boolean => match raw {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        }
        .unwrap_or_else(|| Value::String(raw.to_owned()));
        leaf.insert("value".into(), value);
    }
    if is_span(&r.operator) && !r.unit.is_empty() {
        leaf.insert("unit".into(), Value::String(r.unit.clone()));
    }
    Value::Object(leaf)
}
