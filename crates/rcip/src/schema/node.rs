//! The compiled form of a schema: an arena of nodes, one per compiled
//! (sub)schema, with references resolved to node indices.

pub(crate) use super::keywords::arrays::ArrayKw;
pub(crate) use super::keywords::logic::LogicKw;
pub(crate) use super::keywords::numbers::NumberKw;
pub(crate) use super::keywords::objects::ObjectKw;
pub(crate) use super::keywords::refs::RefKw;
pub(crate) use super::keywords::strings::StringKw;
pub(crate) use super::keywords::unevaluated::UnevaluatedKw;
pub(crate) use super::keywords::values::ValueKw;
use super::value::JType;

pub(crate) type NodeId = usize;

pub(crate) enum Node {
    /// `true` or `false`.
    Bool(bool),
    /// A schema object: its types (`type`, plus `null` for `nullable`) and
    /// its keywords in the reference's evaluation order.
    Obj { types: Vec<JType>, kws: Vec<Kw> },
    /// The 2020-12 meta-schema (a `$ref` to it), checked by the jsonschema crate.
    Meta,
}

/// What a merge of evaluated properties/items that happens only when a
/// subschema passes forgets when it does not happen (a reference artefact:
/// see `compile::cond_merge`): the properties known before, and the count
/// of items (which then counts as "every item").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Lose {
    pub props: bool,
    pub items: bool,
}

/// A subschema that may be trivially valid (`None`: never compiled).
pub(crate) type Sub = Option<NodeId>;

/// One compiled keyword: a closed enum of the families in
/// [`super::keywords`], each with its own closed enum (no `dyn` dispatch).
pub(crate) enum Kw {
    Ref(RefKw),
    Value(ValueKw),
    Logic(LogicKw),
    Number(NumberKw),
    String(StringKw),
    Array(ArrayKw),
    Object(ObjectKw),
    Unevaluated(UnevaluatedKw),
}

/// A compiled schema.
pub(crate) struct Program {
    pub nodes: Vec<Node>,
    pub root: NodeId,
    /// Some `unevaluated*` keyword needs the evaluated properties and items.
    pub track: bool,
    /// Some `$dynamicAnchor` is evaluated: validity depends on evaluation order.
    pub dynamic: bool,
    /// Nodes plus keywords: the schema's size in the validation budget.
    pub size: u64,
    /// What the compile found that can make validation slow, for
    /// `rcip check` (see [`super::PerformanceWarning`]).
    pub warnings: Vec<super::PerformanceWarning>,
    /// Per node: its fused validity check when it is a plain object
    /// schema (see [`super::eval::Closed`]).
    pub closed: Vec<Option<super::eval::Closed>>,
    /// Per node: its validity check as one record when it is a leaf schema
    /// (see [`super::eval::Leaf`]).
    pub leaves: Vec<Option<super::eval::Leaf>>,
    /// The validity pass as a flat plan, when every node reachable from
    /// the root can be planned (see [`super::flat`]).
    pub flat: Option<super::flat::Flat>,
}
