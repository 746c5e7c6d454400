//! The keyword families. Each file holds one family's closed enum of
//! compiled keywords, the code that compiles them (an `impl Compiler` block)
//! and the code that evaluates them in the general evaluator (an `impl
//! Evaluator` block), side by side. The faster paths (the check mode and
//! leaf plan in `eval.rs`, the flat plan in `flat.rs`) still decide some
//! keywords again, so changing what a length, bound or count keyword
//! accepts touches up to three files today; docs/ARCHITECTURE.md "Schema
//! internals" lists them per keyword.
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
