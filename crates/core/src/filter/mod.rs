//! The segment filter tree (DECISIONS.md "Segments and filters"): parsed and validated once
//! here ([`Filter::parse`], 422 paths relative to the tree), evaluated in memory
//! ([`evaluate`], used by workflow conditions and the property test) and compiled to SQL by
//! `herald-store` (`store::audience`), which follows the exact semantics written down in
//! [`eval`].
//!
//! Invariants:
//! - A node is a group `{operator: AND|OR, conditions: [...]}` or a leaf
//!   `{field, operator, value?, unit?}`; the tree is at most [`MAX_DEPTH`] deep and holds at
//!   most [`MAX_NODES`] nodes.
//! - Every leaf value is already coerced to the field's type ([`FieldType`]): the inferred type
//!   of the project when the caller knows it, otherwise the type of the value itself.
//! - A contact lacking a field matches no operator except `notExists` (and the event negations
//!   `notTriggered`/`notTriggeredWithin`, whose field is the event history, never missing).
//!   Every negated operator is "the field exists and the positive one does not match".

mod dates;
mod eval;
mod model;
mod parse;

pub use dates::{normalize_date, unit_millis};
pub use eval::{ContactView, evaluate};
pub use model::{Field, Filter, GroupOp, Leaf, Operand, Operator, Scalar, email_event_name};
pub use parse::{FilterError, MAX_DEPTH, MAX_NODES, data_path};

#[cfg(test)]
mod tests;
