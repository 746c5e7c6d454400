//! The keyword families. Each file holds one family's closed enum of
//! compiled keywords, the code that compiles them (an `impl Compiler` block)
//! and the code that evaluates them in the general evaluator (an `impl
//! Evaluator` block), side by side.
//!
//! The rule of each count, bound, length and value keyword (what it
//! accepts) is one function in its family's file: `maximum_holds` and the
//! other bounds and `multiple_of_holds` in [`numbers`],
//! `max_length_allows` and `min_length_allows` in [`strings`],
//! `max_items_holds`, `min_items_holds` and `closed_tuple_holds` in
//! [`arrays`], `max_properties_holds` and `min_properties_holds` in
//! [`objects`], `const_holds` and `Members::find` in [`values`]. Every
//! evaluation path calls it: the general evaluator, the check mode and its
//! leaf and closed-object plans (`eval.rs`), the flat plan (`flat.rs`); so
//! changing what one of these keywords accepts changes one function in one
//! file (issue 35). The walks over members and items (`properties`,
//! `required`, `additionalProperties`, `prefixItems`, `items`) are still
//! each path's own, in three files; docs/ARCHITECTURE.md "Schema
//! internals" lists the files and places per keyword.
//!
//! The families, in the order the reference evaluates them inside one schema
//! object (the order [`Compiler::keywords`](super::compile::Compiler) calls
//! them in):
//!
//! | family | keywords |
//! | --- | --- |
//! | [`refs`] | `$dynamicAnchor`, `$dynamicRef`, `$recursiveAnchor`, `$recursiveRef`, `$ref` (and the refused `id`) |
//! | [`values`] | `const`, `enum` |
//! | [`logic`] | `not`, `anyOf`, `oneOf`, `allOf`, `if`/`then`/`else` |
//! | [`numbers`] | `maximum`, `minimum`, `exclusiveMaximum`, `exclusiveMinimum`, `multipleOf` |
//! | [`strings`] | `format` (refused), `maxLength`, `minLength`, `pattern` |
//! | [`arrays`] | `maxItems`, `minItems`, `uniqueItems`, `prefixItems`, `items`, `contains` |
//! | [`objects`] | `maxProperties`, `minProperties`, `required`, `propertyNames`, `additionalProperties`, `dependencies`, `properties`, `patternProperties`, `dependentRequired`, `dependentSchemas` |
//! | [`unevaluated`] | `unevaluatedProperties`, `unevaluatedItems` |
//!
//! `type` (and `nullable`) belong to every schema object and live in
//! [`Node::Obj`](super::node::Node).

pub(crate) mod arrays;
pub(crate) mod logic;
pub(crate) mod numbers;
pub(crate) mod objects;
pub(crate) mod refs;
pub(crate) mod strings;
pub(crate) mod unevaluated;
pub(crate) mod values;
