//! The compiled form of a schema: an arena of nodes, one per compiled
//! (sub)schema, with references resolved to node indices.

use super::regex::JsRegex;
use super::value::JType;
use serde_json::Value;

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

pub(crate) enum Kw {
    /// Sets the dynamic anchor `name` to the function `target` unless set.
    DynamicAnchor {
        name: String,
        target: NodeId,
    },
    /// Calls the dynamic anchor `anchor` if the compile saw it, else `fallback`
    /// (the function the keyword belongs to).
    DynamicRef {
        anchor: String,
        registered: bool,
        fallback: NodeId,
    },
    Ref(NodeId),
    Const(Value),
    Enum(Vec<Value>),
    /// `None`: the subschema is trivially valid, so `not` always fails.
    Not(Sub),
    AnyOf(Vec<(NodeId, Lose)>),
    OneOf(Vec<(Sub, Lose)>),
    AllOf(Vec<NodeId>),
    If {
        cond: NodeId,
        then: Sub,
        els: Sub,
        then_lose: Lose,
        els_lose: Lose,
    },
    Maximum(f64),
    Minimum(f64),
    ExclusiveMaximum(f64),
    ExclusiveMinimum(f64),
    MultipleOf(f64),
    MaxLength(f64),
    MinLength(f64),
    Pattern(JsRegex),
    MaxItems(f64),
    MinItems(f64),
    UniqueItems,
    PrefixItems {
        subs: Vec<Sub>,
    },
    /// `items`; `after`: the length of `prefixItems` when present.
    Items {
        sub: Sub,
        is_false: bool,
        after: Option<usize>,
    },
    Contains {
        sub: Sub,
        min: f64,
        max: Option<f64>,
        always_fail: bool,
    },
    MaxProperties(f64),
    MinProperties(f64),
    Required(Vec<String>),
    PropertyNames(NodeId),
    AdditionalProperties {
        sub: Sub,
        is_false: bool,
        props: Vec<String>,
        patterns: Vec<JsRegex>,
    },
    /// `dependencies`, `dependentRequired` (property lists) and
    /// `dependentSchemas` (schemas); `keyword` names the issues.
    PropertyDeps {
        keyword: &'static str,
        deps: Vec<(String, Vec<String>)>,
    },
    SchemaDeps(Vec<(String, NodeId, Lose)>),
    Properties(Vec<(String, Sub)>),
    PatternProperties(Vec<(JsRegex, Sub)>),
    UnevaluatedProperties {
        sub: Sub,
        is_false: bool,
    },
    UnevaluatedItems {
        sub: Sub,
        is_false: bool,
    },
}

/// A compiled schema.
pub(crate) struct Program {
    pub nodes: Vec<Node>,
    pub root: NodeId,
    /// Some `unevaluated*` keyword needs the evaluated properties and items.
    pub track: bool,
    /// Some `$dynamicAnchor` is evaluated: validity depends on evaluation order.
    pub dynamic: bool,
}
