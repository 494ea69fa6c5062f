//! The filter tree compiled to a WHERE clause over `contacts c`, one dialect at a time, with
//! the semantics of `herald_core::filter::evaluate` (see its module documentation): every
//! positive leaf is FALSE (never NULL) when the field is missing or of another type, and
//! every negated operator is "present AND NOT positive".
//!
//! NULL discipline: an expression is either the right boolean or NULL where the right answer is
//! FALSE (a sargable leaf on a missing field); AND/OR keep that property, and NOT is only ever
//! applied to expressions that are never NULL (presence tests, EXISTS, COALESCE-wrapped
//! segment trees), so negation stays exact.
//!
//! Values are bound; `data` paths are inlined as literals (their characters are restricted
//! by the parser, quotes doubled here) so SQLite expression indexes on
//! `json_extract(data, '$."key"')` can serve them.

use std::collections::HashMap;

use herald_core::fields::FieldType;
use herald_core::filter::{Field, Filter, GroupOp, Leaf, Operand, Operator, Scalar};
use herald_core::ids::Uuid;
use herald_core::time::{Millis, iso};

use crate::Dialect;

/// What a `segment.<id>` leaf refers to, loaded by the caller before compiling.
#[derive(Clone, Debug)]
pub enum SegmentDef {
    /// Membership rows (static segments).
    Members,
    /// A dynamic segment: its tree, inlined.
    Dynamic(Filter),
}

/// A bound value.
#[derive(Clone, Debug)]
pub(crate) enum Bind {
    Text(String),
    F64(f64),
    I64(i64),
    Bool(bool),
    Id(Uuid),
}

pub(crate) struct Compiled {
    pub sql: String,
    pub binds: Vec<Bind>,
}

/// The SQL literal of a data path: `'$."a"."b"'` (SQLite) or `'{a,b}'` (PostgreSQL). The hot
/// field indexes (`field_indexes.rs`) are built on the same text, so SQLite matches them.
pub(crate) fn path_literal(dialect: Dialect, path: &[String]) -> String {
    let parts: Vec<String> = path.iter().map(|p| format!("\"{p}\"")).collect();
    let quoted = match dialect {
        Dialect::Sqlite => format!("$.{}", parts.join(".")),
        Dialect::Postgres => format!("{{{}}}", parts.join(",")),
    };
    format!("'{}'", quoted.replace('\'', "''"))
}

/// The placeholder every audience query binds the project id to.
const PROJECT: &str = "$1";

/// How deep segment references are followed (cycles are refused on write; this is a guard).
const MAX_SEGMENT_DEPTH: usize = 8;

pub(crate) struct Compiler<'a> {
    dialect: Dialect,
    now: Millis,
    segments: &'a HashMap<Uuid, SegmentDef>,
    /// Index of the first placeholder (`$first`).
    first: usize,
    binds: Vec<Bind>,
}

impl<'a> Compiler<'a> {
    pub fn new(
        dialect: Dialect,
        now: Millis,
        segments: &'a HashMap<Uuid, SegmentDef>,
        first: usize,
    ) -> Self {
        Self {
            dialect,
            now,
            segments,
            first,
            binds: Vec::new(),
        }
    }

    pub fn compile(mut self, filter: &Filter) -> Compiled {
        let sql = self.node(filter, 0);
        Compiled {
            sql,
            binds: self.binds,
        }
    }

    fn bind(&mut self, b: Bind) -> String {
        self.binds.push(b);
        format!("${}", self.first + self.binds.len() - 1)
    }

    fn t(&self) -> &'static str {
        "(1=1)"
    }

    fn f(&self) -> &'static str {
        "(1=0)"
    }

    fn node(&mut self, filter: &Filter, depth: usize) -> String {
        match filter {
            Filter::Group { op, conditions } => {
                if conditions.is_empty() {
                    return match op {
                        GroupOp::And => self.t(),
                        GroupOp::Or => self.f(),
                    }
                    .to_owned();
                }
                let joiner = match op {
                    GroupOp::And => " AND ",
                    GroupOp::Or => " OR ",
                };
                let parts: Vec<String> = conditions.iter().map(|c| self.node(c, depth)).collect();
                format!("({})", parts.join(joiner))
            }
            Filter::Leaf(leaf) => self.leaf(leaf, depth),
        }
    }

    fn leaf(&mut self, leaf: &Leaf, depth: usize) -> String {
        let cutoff = match leaf.operand {
            Operand::Span(ms) => self.now.saturating_sub(ms),
            _ => self.now,
        };
        match &leaf.field {
            Field::Event(name) => self.event(name, leaf.op, cutoff),
            Field::Segment(id) => self.segment(*id, leaf.op, depth),
            field => {
                let present = self.present(field);
                match leaf.op {
                    Operator::Exists => present,
                    Operator::NotExists => format!("(NOT {present})"),
                    Operator::NotEquals => {
                        let pos = self.positive(field, Operator::Equals, &leaf.operand, cutoff);
                        format!("({present} AND NOT {pos})")
                    }
                    Operator::NotContains => {
                        let pos = self.positive(field, Operator::Contains, &leaf.operand, cutoff);
                        format!("({present} AND NOT {pos})")
                    }
                    op => self.positive(field, op, &leaf.operand, cutoff),
                }
            }
        }
    }

    fn event(&mut self, name: &str, op: Operator, cutoff: Millis) -> String {
        // Uncorrelated `IN` lists (one range scan of `events_project_name_time`, then a set
        // probe per contact) rather than a correlated EXISTS per contact.
        let mut set = |since: Option<Millis>| {
            let n = self.bind(Bind::Text(name.to_owned()));
            let time = match since {
                Some(t) => format!(" AND e.created_at >= {}", self.bind(Bind::I64(t))),
                None => String::new(),
            };
            format!(
                "c.id IN (SELECT e.contact_id FROM events e WHERE e.project_id = {PROJECT} \
                 AND e.name = {n}{time} AND e.contact_id IS NOT NULL)"
            )
        };
        match op {
            Operator::Triggered => set(None),
            Operator::NotTriggered => format!("(NOT {})", set(None)),
            Operator::TriggeredWithin => set(Some(cutoff)),
            Operator::TriggeredOlderThan => {
                format!("({} AND NOT {})", set(None), set(Some(cutoff)))
            }
            Operator::NotTriggeredWithin => format!("(NOT {})", set(Some(cutoff))),
            _ => self.f().to_owned(),
        }
    }

    fn segment(&mut self, id: Uuid, op: Operator, depth: usize) -> String {
        let member = match self.segments.get(&id) {
            None => self.f().to_owned(),
            Some(_) if depth >= MAX_SEGMENT_DEPTH => self.f().to_owned(),
            Some(SegmentDef::Members) => {
                let s = self.bind(Bind::Id(id));
                format!(
                    "EXISTS (SELECT 1 FROM segment_members m \
                     WHERE m.segment_id = {s} AND m.contact_id = c.id)"
                )
            }
            Some(SegmentDef::Dynamic(tree)) => {
                let tree = tree.clone();
                let inner = self.node(&tree, depth + 1);
                format!("COALESCE({inner}, {})", self.f())
            }
        };
        match op {
            Operator::MemberOfSegment => member,
            _ => format!("(NOT {member})"),
        }
    }

    fn path_literal(&self, path: &[String]) -> String {
        path_literal(self.dialect, path)
    }

    /// `(json type, value as text/number)` expressions of a data path.
    fn data_exprs(&self, path: &[String]) -> (String, String) {
        let p = self.path_literal(path);
        match self.dialect {
            Dialect::Sqlite => (
                format!("json_type(c.data, {p})"),
                format!("json_extract(c.data, {p})"),
            ),
            Dialect::Postgres => (
                format!("jsonb_typeof(c.data #> {p})"),
                format!("(c.data #>> {p})"),
            ),
        }
    }

    fn present(&self, field: &Field) -> String {
        match field {
            Field::Data { path, .. } => {
                let (ty, _) = self.data_exprs(path);
                format!("COALESCE({ty} <> 'null', {})", self.f())
            }
            _ => self.t().to_owned(),
        }
    }

    fn positive(
        &mut self,
        field: &Field,
        op: Operator,
        operand: &Operand,
        cutoff: Millis,
    ) -> String {
        let cmp = match op {
            Operator::Equals => "=",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::GreaterThanOrEqual | Operator::Within => ">=",
            Operator::LessThanOrEqual => "<=",
            Operator::OlderThan => "<",
            Operator::Contains => "contains",
            _ => return self.f().to_owned(),
        };
        let pg = self.dialect == Dialect::Postgres;
        let collate = if pg { " COLLATE \"C\"" } else { "" };
        match (field, operand) {
            (Field::CreatedAt | Field::UpdatedAt, operand) => {
                let col = if matches!(field, Field::CreatedAt) {
                    "c.created_at"
                } else {
                    "c.updated_at"
                };
                let ms = match operand {
                    Operand::Value(Scalar::Date { ms, .. }) => *ms,
                    Operand::Span(_) => cutoff,
                    _ => return self.f().to_owned(),
                };
                let v = self.bind(Bind::I64(ms));
                format!("({col} {cmp} {v})")
            }
            (Field::Email, Operand::Value(Scalar::Str(s))) => {
                let v = self.bind(Bind::Text(s.clone()));
                self.string_cmp(&format!("c.email{collate}"), cmp, &v)
            }
            (Field::Subscribed, Operand::Value(Scalar::Bool(b))) if op == Operator::Equals => {
                let v = self.bind(Bind::Bool(*b));
                format!("(c.subscribed = {v})")
            }
            (Field::Data { path, ty }, operand) => {
                let (jt, val) = self.data_exprs(path);
                self.data_positive(*ty, &jt, &val, cmp, operand, cutoff)
            }
            _ => self.f().to_owned(),
        }
    }

    fn string_cmp(&self, expr: &str, cmp: &str, v: &str) -> String {
        if cmp == "contains" {
            match self.dialect {
                Dialect::Sqlite => format!("(instr({expr}, {v}) > 0)"),
                Dialect::Postgres => format!("(strpos({expr}, {v}) > 0)"),
            }
        } else {
            format!("({expr} {cmp} {v})")
        }
    }

    fn data_positive(
        &mut self,
        ty: FieldType,
        jt: &str,
        val: &str,
        cmp: &str,
        operand: &Operand,
        cutoff: Millis,
    ) -> String {
        let pg = self.dialect == Dialect::Postgres;
        let (text_type, f) = if pg {
            ("'string'", "FALSE")
        } else {
            ("'text'", "0")
        };
        let guarded = |check: String, expr: String| {
            format!("(CASE WHEN {check} THEN COALESCE({expr}, {f}) ELSE {f} END)")
        };
        match (ty, operand) {
            (FieldType::String, Operand::Value(Scalar::Str(s))) if !pg && cmp == "=" => {
                // Sargable on SQLite (an expression index on the path serves it): a text bind
                // equals only a text value; NULL only when the field is missing (see below).
                let v = self.bind(Bind::Text(s.clone()));
                format!("({val} = {v} AND {jt} = 'text')")
            }
            (FieldType::String, Operand::Value(Scalar::Str(s))) => {
                let v = self.bind(Bind::Text(s.clone()));
                let expr = if pg {
                    format!("{val} COLLATE \"C\"")
                } else {
                    val.to_owned()
                };
                guarded(
                    format!("{jt} = {text_type}"),
                    self.string_cmp(&expr, cmp, &v),
                )
            }
            (FieldType::Number, Operand::Value(Scalar::Num(n))) if cmp != "contains" => {
                let v = self.bind(Bind::F64(*n));
                if pg {
                    guarded(
                        format!("{jt} = 'number'"),
                        format!("({val})::float8 {cmp} {v}"),
                    )
                } else {
                    guarded(
                        format!("{jt} IN ('integer', 'real')"),
                        format!("{val} {cmp} {v}"),
                    )
                }
            }
            (FieldType::Boolean, Operand::Value(Scalar::Bool(b))) if cmp == "=" => {
                if pg {
                    format!("COALESCE({jt} = 'boolean' AND {val} = '{b}', FALSE)")
                } else {
                    format!("COALESCE({jt} = '{b}', 0)")
                }
            }
            (FieldType::Date, operand) if cmp != "contains" => {
                let text = match operand {
                    Operand::Value(Scalar::Date { text, .. }) => text.clone(),
                    Operand::Span(_) => iso(cutoff),
                    _ => return self.f().to_owned(),
                };
                let v = self.bind(Bind::Text(text));
                let norm = self.normalized_date(val);
                guarded(format!("{jt} = {text_type}"), format!("{norm} {cmp} {v}"))
            }
            _ => self.f().to_owned(),
        }
    }

    /// The SQL twin of `herald_core::filter::normalize_date` (NULL for other shapes).
    fn normalized_date(&self, val: &str) -> String {
        match self.dialect {
            Dialect::Sqlite => {
                let d = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]";
                let t = "T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]";
                format!(
                    "(CASE WHEN {val} GLOB '{d}' THEN {val} || 'T00:00:00.000Z' \
                     WHEN {val} GLOB '{d}{t}Z' THEN substr({val}, 1, 19) || '.000Z' \
                     WHEN {val} GLOB '{d}{t}.[0-9][0-9][0-9]Z' THEN {val} END)"
                )
            }
            Dialect::Postgres => {
                let d = "[0-9]{4}-[0-9]{2}-[0-9]{2}";
                let t = "T[0-9]{2}:[0-9]{2}:[0-9]{2}";
                format!(
                    "(CASE WHEN {val} ~ '^{d}$' THEN {val} || 'T00:00:00.000Z' \
                     WHEN {val} ~ '^{d}{t}Z$' THEN substr({val}, 1, 19) || '.000Z' \
                     WHEN {val} ~ '^{d}{t}\\.[0-9]{{3}}Z$' THEN {val} END) COLLATE \"C\""
                )
            }
        }
    }
}
