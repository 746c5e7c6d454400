//! Strict compilation: walks a schema the way the reference compiles it
//! (Ajv 8, `Ajv2020`, `strict: true`), checking its strict rules on every
//! subschema it would compile, and builds the [`Program`] the evaluator runs.
//!
//! The reference throws at its first violation; this walk keeps going and
//! returns every violation it finds, so a schema is refused exactly when the
//! reference refuses it and the author sees all problems at once.
//!
//! What the reference compiles: from the root, each keyword's subschemas in
//! its keyword order, `$ref` targets (inlined at each use when they contain no
//! reference keyword, else compiled once as their own function), and
//! `$dynamicAnchor` subschemas. `$defs` entries nothing references,
//! `contentSchema`, and `if` without a non-trivial `then`/`else` are never
//! compiled, so never checked.

use super::keywords::logic::LogicKw;
use super::keywords::objects::ObjectKw;
use super::keywords::refs::RefKw;
use super::node::{Kw, Lose, Node, NodeId, Program, Sub};
use super::regex::JsRegex;
use super::uri;
use super::value::{escape_token, unescape_token, JType};
use super::{PerformanceWarning, SchemaError};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Every keyword the reference knows (anything else is an unknown keyword).
pub(crate) const KNOWN_KEYWORDS: &[&str] = &[
    "$async",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveAnchor",
    "$recursiveRef",
    "$schema",
    "$id",
    "$defs",
    "$vocabulary",
    "$comment",
    "definitions",
    "id",
    "$ref",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "pattern",
    "maxProperties",
    "minProperties",
    "required",
    "maxItems",
    "minItems",
    "uniqueItems",
    "type",
    "nullable",
    "const",
    "enum",
    "not",
    "anyOf",
    "oneOf",
    "allOf",
    "if",
    "then",
    "else",
    "propertyNames",
    "additionalProperties",
    "dependencies",
    "properties",
    "patternProperties",
    "prefixItems",
    "items",
    "contains",
    "format",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "dependentRequired",
    "dependentSchemas",
    "maxContains",
    "minContains",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Known keywords that carry no validation rule (annotations and
/// identifiers). A schema made only of these is trivially valid.
const NO_RULE_KEYWORDS: &[&str] = &[
    "$async",
    "$schema",
    "$id",
    "$defs",
    "$vocabulary",
    "definitions",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
];

/// Keywords applying only to one group of types, with their groups, in the
/// order the reference checks them.
const TYPED_KEYWORDS: &[(&str, &[JType])] = &[
    ("maximum", &[JType::Number]),
    ("minimum", &[JType::Number]),
    ("exclusiveMaximum", &[JType::Number]),
    ("exclusiveMinimum", &[JType::Number]),
    ("multipleOf", &[JType::Number]),
    ("maxLength", &[JType::String]),
    ("minLength", &[JType::String]),
    ("pattern", &[JType::String]),
    ("maxProperties", &[JType::Object]),
    ("minProperties", &[JType::Object]),
    ("required", &[JType::Object]),
    ("maxItems", &[JType::Array]),
    ("minItems", &[JType::Array]),
    ("uniqueItems", &[JType::Array]),
    ("propertyNames", &[JType::Object]),
    ("additionalProperties", &[JType::Object]),
    ("dependencies", &[JType::Object]),
    ("properties", &[JType::Object]),
    ("patternProperties", &[JType::Object]),
    ("prefixItems", &[JType::Array]),
    ("items", &[JType::Array]),
    ("contains", &[JType::Array]),
    ("format", &[JType::Number, JType::String]),
    ("dependentRequired", &[JType::Object]),
    ("dependentSchemas", &[JType::Object]),
    ("maxContains", &[JType::Array]),
    ("minContains", &[JType::Array]),
    ("unevaluatedProperties", &[JType::Object]),
    ("unevaluatedItems", &[JType::Array]),
];

/// Reference keywords: a `$ref` target containing one is compiled as its
/// own function instead of being inlined.
const REF_KEYWORDS: &[&str] = &[
    "$ref",
    "$recursiveRef",
    "$recursiveAnchor",
    "$dynamicRef",
    "$dynamicAnchor",
];

/// Pointer steps after which a `$id` does not change the base URI.
const PREVENT_SCOPE_CHANGE: &[&str] = &["properties", "patternProperties", "enum", "dependencies", "definitions"];

/// Subschema evaluations at one instance location above which `rcip check`
/// warns about reference fan-out.
pub(crate) const FAN_OUT_LIMIT: u64 = 10_000;

/// The URIs of the meta-schema the reference knows.
const META_SCHEMA: &str = "https://json-schema.org/draft/2020-12/schema";

fn is_known(key: &str) -> bool {
    KNOWN_KEYWORDS.contains(&key)
}

fn has_rule(key: &str) -> bool {
    is_known(key) && !NO_RULE_KEYWORDS.contains(&key)
}

pub(super) fn has_ref_keyword(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| REF_KEYWORDS.contains(&k.as_str()) || has_ref_keyword(v)),
        Value::Array(a) => a.iter().any(has_ref_keyword),
        _ => false,
    }
}

fn has_rules_but_ref(m: &Map<String, Value>) -> bool {
    m.keys().any(|k| k != "$ref" && has_rule(k))
}

pub(super) fn join(ptr: &str, token: &str) -> String {
    format!("{}/{}", ptr, escape_token(token))
}

/// Where a reference leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// A schema of this document: its JSON pointer and base URI.
    Local { ptr: String, base: String },
    /// The 2020-12 meta-schema.
    Meta,
}

/// What an identifier is registered as (the reference's `refs`).
#[derive(Clone, Debug)]
enum Registered {
    Root,
    /// A full path `prefix#/json/pointer` into the document.
    Path(String),
}

/// The compile context of one schema (the reference's schema context).
#[derive(Clone)]
pub(super) struct Cx {
    pub(super) ptr: String,
    pub(super) base: String,
    pub(super) data_types: Vec<JType>,
    pub(super) defined: Rc<RefCell<HashSet<String>>>,
    /// The function (node) this schema is compiled into.
    pub(super) env: NodeId,
    /// This schema is the top of its function.
    pub(super) env_root: bool,
    /// What the reference knows at compile time about the evaluated
    /// properties / items of this schema so far.
    pub(super) pst: St,
    pub(super) ist: St,
}

/// The reference's compile-time view of evaluated properties or items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum St {
    /// Nothing evaluated yet.
    Undef,
    /// A set known at compile time.
    Static,
    /// A run-time variable.
    Name,
    /// Everything (then `unevaluated*` is never compiled).
    All,
}

/// Merge of a subschema's evaluated state that always happens (allOf, `if`,
/// `$ref`).
pub(super) fn static_merge(parent: St, child: St) -> St {
    match (parent, child) {
        (St::All, _) | (_, St::All) => St::All,
        (p, St::Undef) => p,
        (St::Name, _) | (_, St::Name) => St::Name,
        _ => St::Static,
    }
}

/// Merge that happens only when the subschema passes (anyOf/oneOf branches,
/// then/else, dependentSchemas). Returns the new state and whether the
/// evaluated set known before is lost when the merge does not happen: the
/// reference creates its run-time variable inside the conditional block, so
/// it stays undefined when the block does not run.
fn cond_merge(parent: St, child: St) -> (St, bool) {
    match (parent, child) {
        (St::All, _) => (St::All, false),
        (p, St::Undef) => (p, false),
        (St::Name, _) => (St::Name, false),
        _ => (St::Name, true),
    }
}

impl Cx {
    /// A subschema applying to the same instance.
    pub(super) fn same(&self, ptr: String) -> Cx {
        Cx {
            ptr,
            env_root: false,
            pst: St::Undef,
            ist: St::Undef,
            ..self.clone()
        }
    }

    /// A subschema applying to a part of the instance (a property, an item,
    /// a property name): the defined-property set restarts, for the child
    /// and for the rest of this schema.
    pub(super) fn data(&mut self, ptr: String, data_types: Vec<JType>) -> Cx {
        self.defined = Rc::new(RefCell::new(HashSet::new()));
        Cx {
            ptr,
            env_root: false,
            data_types,
            pst: St::Undef,
            ist: St::Undef,
            ..self.clone()
        }
    }
}

pub(crate) struct Compiler<'a> {
    root: &'a Value,
    pub(super) root_base: String,
    pub(super) nodes: Vec<Node>,
    errors: Vec<SchemaError>,
    seen_errors: HashSet<(String, &'static str, String)>,
    refs: HashMap<String, Registered>,
    local_refs: HashMap<String, String>,
    pub(super) envs: HashMap<(String, String), NodeId>,
    pub(super) meta_node: Option<NodeId>,
    pub(super) dyn_registered: HashSet<String>,
    pub(super) track: bool,
    pub(super) dynamic: bool,
    /// The evaluated state (properties, items) of the schema compiled last,
    /// and of each function compiled so far.
    pub(super) last_static: (St, St),
    /// Backtracking patterns found so far (see [`PerformanceWarning`]).
    pub(super) warnings: Vec<PerformanceWarning>,
    pub(super) env_static: HashMap<NodeId, (St, St)>,
}

impl<'a> Compiler<'a> {
    /// Compiles `root`; `Err` holds every strict violation found.
    pub fn compile(root: &'a Value) -> Result<Program, Vec<SchemaError>> {
        let root_base = match root.get("$id") {
            Some(Value::String(id)) => uri::normalize_id(id),
            _ => String::new(),
        };
        let mut c = Compiler {
            root,
            root_base,
            nodes: Vec::new(),
            errors: Vec::new(),
            seen_errors: HashSet::new(),
            refs: HashMap::new(),
            local_refs: HashMap::new(),
            envs: HashMap::new(),
            meta_node: None,
            dyn_registered: HashSet::new(),
            track: false,
            dynamic: false,
            last_static: (St::Undef, St::Undef),
            env_static: HashMap::new(),
            warnings: Vec::new(),
        };
        if !c.root_base.is_empty() {
            c.refs.insert(c.root_base.clone(), Registered::Root);
        }
        c.index_identifiers();
        let id = c.reserve();
        c.envs.insert((String::new(), c.root_base.clone()), id);
        let cx = Cx {
            ptr: String::new(),
            base: c.root_base.clone(),
            data_types: Vec::new(),
            defined: Rc::new(RefCell::new(HashSet::new())),
            env: id,
            env_root: true,
            pst: St::Undef,
            ist: St::Undef,
        };
        let node = c.build(root, cx);
        c.nodes[id] = node;
        if c.errors.is_empty() {
            let warnings = c.mark_memoised(id);
            let size = c
                .nodes
                .iter()
                .map(|n| match n {
                    Node::Obj { kws, .. } => 1 + kws.len() as u64,
                    _ => 1,
                })
                .sum();
            let closed = super::eval::Closed::plan(&c.nodes);
            let leaves = super::eval::Leaf::plan(&c.nodes);
            let flat = super::flat::Flat::plan(&c.nodes, id, c.track, c.dynamic);
            Ok(Program {
                flat,
                closed,
                leaves,
                nodes: c.nodes,
                root: id,
                track: c.track,
                dynamic: c.dynamic,
                size,
                warnings,
            })
        } else {
            Err(c.errors)
        }
    }

    pub(super) fn error(&mut self, pointer: String, rule: &'static str, message: String) {
        if self.seen_errors.insert((pointer.clone(), rule, message.clone())) {
            self.errors.push(SchemaError { pointer, rule, message });
        }
    }

    pub(super) fn reserve(&mut self) -> NodeId {
        self.nodes.push(Node::Bool(true));
        self.nodes.len() - 1
    }

    pub(super) fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    // ---------------------------------------------------------------
    // Identifiers: every `$id`, `$anchor` and `$dynamicAnchor` of the
    // document, wherever it is (the reference indexes the whole document,
    // including `$defs` nothing references).

    fn index_identifiers(&mut self) {
        let Value::Object(_) = self.root else { return };
        let prefix = uri::full_path(&self.root_base);
        let prefix = prefix.trim_end_matches('#').to_string();
        let mut seen: HashSet<String> = HashSet::new();
        let mut stack: Vec<(&'a Value, String, String)> = vec![(self.root, String::new(), self.root_base.clone())];
        while let Some((schema, ptr, parent_base)) = stack.pop() {
            let Value::Object(m) = schema else { continue };
            let mut base = parent_base.clone();
            let full = format!("{prefix}#{ptr}");
            let mut add = |c: &mut Compiler<'a>, reference: &str, base_for: &str| -> String {
                let resolved = if base_for.is_empty() {
                    uri::normalize_id(reference)
                } else {
                    uri::normalize_id(&uri::resolve(base_for, reference))
                };
                if !seen.insert(resolved.clone()) {
                    c.error(
                        ptr.clone(),
                        "duplicate identifier",
                        format!("\"{resolved}\" identifies more than one schema in this document"),
                    );
                    return resolved;
                }
                if resolved != uri::normalize_id(&full) {
                    if resolved.starts_with('#') {
                        c.local_refs.insert(resolved.clone(), ptr.clone());
                    } else if !c.refs.contains_key(&resolved) {
                        c.refs.insert(resolved.clone(), Registered::Path(full.clone()));
                    }
                }
                resolved
            };
            // The root's own identifier is registered apart, and its anchors
            // are not registered at all (as in the reference).
            if let (false, Some(Value::String(id))) = (ptr.is_empty(), m.get("$id")) {
                base = add(self, id, &parent_base);
            }
            for key in ["$anchor", "$dynamicAnchor"] {
                if ptr.is_empty() {
                    break;
                }
                if let Some(Value::String(anchor)) = m.get(key) {
                    let valid = anchor
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && anchor
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
                    if !valid {
                        self.error(
                            join(&ptr, key),
                            "anchor",
                            format!("\"{anchor}\" is not a valid anchor name"),
                        );
                    } else {
                        add(self, &format!("#{anchor}"), &base);
                    }
                }
            }
            // Subschema positions the reference's traversal visits (with
            // `allKeys`: any object value, except under value keywords).
            for (key, value) in m {
                let here = join(&ptr, key);
                match key.as_str() {
                    "default" | "enum" | "const" | "required" | "examples" | "maximum" | "minimum"
                    | "exclusiveMaximum" | "exclusiveMinimum" | "multipleOf" | "maxLength" | "minLength"
                    | "pattern" | "format" | "maxItems" | "minItems" | "uniqueItems" | "maxProperties"
                    | "minProperties" => {}
                    "$defs" | "definitions" | "properties" | "patternProperties" | "dependencies"
                    | "dependentSchemas" => {
                        if let Value::Object(children) = value {
                            for (name, child) in children {
                                stack.push((child, join(&here, name), base.clone()));
                            }
                        }
                    }
                    "items" | "allOf" | "anyOf" | "oneOf" | "prefixItems" => match value {
                        Value::Array(list) => {
                            for (i, child) in list.iter().enumerate() {
                                stack.push((child, format!("{here}/{i}"), base.clone()));
                            }
                        }
                        _ => stack.push((value, here, base.clone())),
                    },
                    _ => {
                        if value.is_object() {
                            stack.push((value, here, base.clone()));
                        }
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------
    // Reference resolution, following the reference's algorithm so the
    // same references resolve (and the same ones fail).

    pub(super) fn value_at(&self, ptr: &str) -> Option<&'a Value> {
        if ptr.is_empty() {
            return Some(self.root);
        }
        let mut v = self.root;
        for token in ptr[1..].split('/') {
            let token = unescape_token(token);
            v = match v {
                Value::Object(m) => m.get(&token)?,
                Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(v)
    }

    pub(super) fn resolve_ref(&self, base: &str, reference: &str) -> Result<Option<Target>, ()> {
        let full = uri::resolve(base, reference);
        let mut key = full.clone();
        let mut hops = 0;
        loop {
            match self.refs.get(&key) {
                Some(Registered::Path(p)) => {
                    key = p.clone();
                    hops += 1;
                    if hops > 64 {
                        return Err(());
                    }
                }
                Some(Registered::Root) => {
                    return Ok(Some(Target::Local {
                        ptr: String::new(),
                        base: self.root_base.clone(),
                    }));
                }
                None => break,
            }
        }
        if uri::normalize_id(&key) == META_SCHEMA && !key.contains("#/") {
            return Ok(Some(Target::Meta));
        }
        if let Some(t) = self.resolve_schema(&key, 0)? {
            return Ok(Some(t));
        }
        if let Some(ptr) = self.local_refs.get(&full) {
            return Ok(Some(Target::Local {
                ptr: ptr.clone(),
                base: base.to_string(),
            }));
        }
        Ok(None)
    }

    fn resolve_schema(&self, reference: &str, depth: usize) -> Result<Option<Target>, ()> {
        if depth > 64 {
            return Err(());
        }
        let parsed = uri::UriRef::parse(reference);
        let ref_path = {
            let mut p = parsed.clone();
            p.fragment = None;
            format!("{}#", p.serialize())
        };
        let base_path = uri::full_path(&self.root_base);
        let root_nonempty = matches!(self.root, Value::Object(m) if !m.is_empty());
        if root_nonempty && ref_path == base_path {
            let root = Target::Local {
                ptr: String::new(),
                base: self.root_base.clone(),
            };
            return self.json_pointer(&parsed, root, depth);
        }
        let id = uri::normalize_id(&ref_path);
        match self.refs.get(&id) {
            Some(Registered::Path(p)) => {
                let Some(t) = self.resolve_schema(p, depth + 1)? else {
                    return Ok(None);
                };
                if let Target::Local { ptr, .. } = &t {
                    if !matches!(self.value_at(ptr), Some(Value::Object(_))) {
                        return Ok(None);
                    }
                }
                self.json_pointer(&parsed, t, depth)
            }
            Some(Registered::Root) => {
                if !self.root.is_object() {
                    return Ok(None);
                }
                let root = Target::Local {
                    ptr: String::new(),
                    base: self.root_base.clone(),
                };
                if id == uri::normalize_id(reference) {
                    return Ok(Some(root));
                }
                self.json_pointer(&parsed, root, depth)
            }
            None => Ok(None),
        }
    }

    fn json_pointer(&self, parsed: &uri::UriRef, env: Target, depth: usize) -> Result<Option<Target>, ()> {
        let Target::Local {
            ptr: start,
            base: start_base,
        } = env
        else {
            return Ok(None);
        };
        let Some(fragment) = parsed.fragment.as_deref() else {
            return Ok(None);
        };
        if !fragment.starts_with('/') {
            return Ok(None);
        }
        let mut schema = match self.value_at(&start) {
            Some(v) => v,
            None => return Ok(None),
        };
        let mut ptr = start;
        let mut base = start_base;
        for part in fragment[1..].split('/') {
            if schema.is_boolean() {
                return Ok(None);
            }
            let Some(decoded) = uri::percent_decode(part) else {
                return Ok(None);
            };
            let token = unescape_token(&decoded);
            let next = match schema {
                Value::Object(m) => m.get(&token),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
            let Some(next) = next else { return Ok(None) };
            schema = next;
            ptr = join(&ptr, &token);
            if let Some(Value::String(id)) = schema.get("$id") {
                if !PREVENT_SCOPE_CHANGE.contains(&token.as_str()) {
                    base = uri::resolve(&base, id);
                }
            }
        }
        let mut found = None;
        if let Value::Object(m) = schema {
            if let Some(Value::String(r)) = m.get("$ref") {
                if !has_rules_but_ref(m) {
                    let full = uri::resolve(&base, r);
                    found = self.resolve_schema(&full, depth + 1)?;
                }
            }
        }
        let env = found.unwrap_or(Target::Local { ptr, base });
        match &env {
            Target::Local { ptr, .. } if ptr.is_empty() => Ok(None),
            _ => Ok(Some(env)),
        }
    }

    // ---------------------------------------------------------------
    // Compilation.

    /// Whether the reference treats `schema` as always valid (`true`, or an
    /// object without any rule keyword). Like the reference, it checks the
    /// keywords of the subschema it looks at.
    pub(super) fn trivial(&mut self, schema: &Value, ptr: &str) -> bool {
        match schema {
            Value::Bool(b) => *b,
            Value::Object(m) => {
                self.check_unknown(m, ptr);
                !m.keys().any(|k| has_rule(k))
            }
            _ => false,
        }
    }

    fn check_unknown(&mut self, m: &Map<String, Value>, ptr: &str) {
        for key in m.keys() {
            if !is_known(key) {
                self.error(
                    join(ptr, key),
                    "unknown keyword",
                    format!("\"{key}\" is not a keyword of JSON Schema 2020-12 (strict mode refuses unknown keywords)"),
                );
            }
        }
    }

    /// Compiles a subschema, or `None` when it is trivially valid.
    pub(super) fn sub(&mut self, schema: &'a Value, cx: Cx) -> Sub {
        if self.trivial(schema, &cx.ptr) {
            None
        } else {
            Some(self.node(schema, cx))
        }
    }

    pub(super) fn node(&mut self, schema: &'a Value, cx: Cx) -> NodeId {
        let node = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.build(schema, cx));
        self.push(node)
    }

    fn build(&mut self, schema: &'a Value, cx: Cx) -> Node {
        self.last_static = (St::Undef, St::Undef);
        let (node, flags) = self.build_inner(schema, cx);
        self.last_static = flags;
        node
    }

    /// Merges the static evaluation state of the schema compiled last.
    pub(super) fn merge_static(&self, cx: &mut Cx) {
        cx.pst = static_merge(cx.pst, self.last_static.0);
        cx.ist = static_merge(cx.ist, self.last_static.1);
    }

    /// Conditional merge of the schema compiled last (see [`cond_merge`]).
    pub(super) fn merge_cond(&self, cx: &mut Cx) -> Lose {
        let (pst, props) = cond_merge(cx.pst, self.last_static.0);
        let (ist, items) = cond_merge(cx.ist, self.last_static.1);
        cx.pst = pst;
        cx.ist = ist;
        Lose { props, items }
    }

    fn build_inner(&mut self, schema: &'a Value, mut cx: Cx) -> (Node, (St, St)) {
        let undef = (St::Undef, St::Undef);
        let m = match schema {
            Value::Bool(b) => return (Node::Bool(*b), undef),
            Value::Object(m) => m,
            _ => return (Node::Bool(true), undef), // refused by the meta-schema
        };
        self.check_unknown(m, &cx.ptr);
        if let Some(Value::String(id)) = m.get("$id") {
            if uri::is_bad_urn(id) {
                self.error(
                    join(&cx.ptr, "$id"),
                    "identifier",
                    format!("\"{id}\" is not a valid URN (urn:NID:NSS)"),
                );
            }
            if !cx.env_root {
                cx.base = uri::resolve(&cx.base, id);
            }
        }
        if m.get("$async") == Some(&Value::Bool(true)) && !cx.env_root {
            // At the top of a function the reference makes an asynchronous
            // validator (same verdicts); inside one it refuses the schema.
            self.error(
                join(&cx.ptr, "$async"),
                "async",
                "\"$async\": true inside a synchronous schema is refused".to_string(),
            );
        }
        let types = self.schema_types(m, &cx.ptr);
        if m.contains_key("$ref") && !has_rules_but_ref(m) {
            let mut kws = Vec::new();
            if let Some(kw) = self.compile_ref(m, &mut cx) {
                kws.push(kw);
            }
            return (Node::Obj { types: Vec::new(), kws }, (cx.pst, cx.ist));
        }
        self.check_strict_types(m, &types, &mut cx);
        let kws = self.keywords(schema, m, &mut cx);
        (Node::Obj { types, kws }, (cx.pst, cx.ist))
    }

    /// The schema's own types: `type`, plus `null` when `nullable: true`.
    fn schema_types(&mut self, m: &Map<String, Value>, ptr: &str) -> Vec<JType> {
        let mut types: Vec<JType> = match m.get("type") {
            Some(Value::String(t)) => JType::parse(t).into_iter().collect(),
            Some(Value::Array(list)) => list.iter().filter_map(|t| t.as_str().and_then(JType::parse)).collect(),
            _ => Vec::new(),
        };
        let nullable = m.get("nullable");
        if types.contains(&JType::Null) {
            if nullable == Some(&Value::Bool(false)) {
                self.error(
                    join(ptr, "nullable"),
                    "nullable",
                    "\"nullable\": false contradicts a type that includes \"null\"".to_string(),
                );
            }
        } else {
            if types.is_empty() && nullable.is_some() {
                self.error(
                    join(ptr, "nullable"),
                    "nullable",
                    "\"nullable\" needs a \"type\" in the same schema".to_string(),
                );
            }
            if nullable == Some(&Value::Bool(true)) {
                types.push(JType::Null);
            }
        }
        types
    }

    fn check_strict_types(&mut self, m: &Map<String, Value>, types: &[JType], cx: &mut Cx) {
        let type_ptr = if m.contains_key("type") {
            join(&cx.ptr, "type")
        } else {
            cx.ptr.clone()
        };
        // The context: inherited types narrow, or this schema's types start it.
        if !types.is_empty() {
            if cx.data_types.is_empty() {
                cx.data_types = types.to_vec();
            } else {
                let includes =
                    |ts: &[JType], t: JType| ts.contains(&t) || (t == JType::Integer && ts.contains(&JType::Number));
                for &t in types {
                    if !includes(&cx.data_types, t) {
                        let context: Vec<&str> = cx.data_types.iter().map(|t| t.name()).collect();
                        self.error(
                            type_ptr.clone(),
                            "strict types",
                            format!(
                                "type \"{}\" is not allowed here: this schema applies to data of type {}",
                                t.name(),
                                context.join(" or ")
                            ),
                        );
                    }
                }
                let mut narrowed = Vec::new();
                for &t in &cx.data_types {
                    if includes(types, t) {
                        narrowed.push(t);
                    } else if types.contains(&JType::Integer) && t == JType::Number {
                        narrowed.push(JType::Integer);
                    }
                }
                cx.data_types = narrowed;
            }
        }
        if types.len() > 1 && !(types.len() == 2 && types.contains(&JType::Null)) {
            let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
            self.error(
                type_ptr,
                "union type",
                format!(
                    "union type [{}] is refused (strict mode allows one type, or one type and \"null\"); use anyOf or oneOf",
                    names.join(", ")
                ),
            );
        }
        for (kw, groups) in TYPED_KEYWORDS {
            if !m.contains_key(*kw) {
                continue;
            }
            let applicable = groups
                .iter()
                .any(|g| cx.data_types.contains(g) || (*g == JType::Number && cx.data_types.contains(&JType::Integer)));
            if !applicable {
                let names: Vec<&str> = groups.iter().map(|t| t.name()).collect();
                self.error(
                    join(&cx.ptr, kw),
                    "strict types",
                    format!(
                        "\"{kw}\" applies to {} data, but the schema does not say \"type\": \"{}\"",
                        names.join(" or "),
                        names[0]
                    ),
                );
            }
        }
    }

    /// A schema compiled as its own function (once, whatever the number of uses).
    pub(super) fn env_node(&mut self, schema: &'a Value, ptr: String, base: String) -> NodeId {
        let key = (ptr.clone(), base.clone());
        if let Some(&id) = self.envs.get(&key) {
            return id;
        }
        let id = self.reserve();
        self.envs.insert(key, id);
        let cx = Cx {
            ptr,
            base,
            data_types: Vec::new(),
            defined: Rc::new(RefCell::new(HashSet::new())),
            env: id,
            env_root: true,
            pst: St::Undef,
            ist: St::Undef,
        };
        let node = self.build(schema, cx);
        self.env_static.insert(id, self.last_static);
        self.nodes[id] = node;
        id
    }

    /// A schema object's keywords in the reference's evaluation order, one
    /// family after the other (each family's file compiles its keywords).
    fn keywords(&mut self, schema: &'a Value, m: &'a Map<String, Value>, cx: &mut Cx) -> Vec<Kw> {
        let mut kws = Vec::new();
        self.compile_refs(schema, m, cx, &mut kws);
        self.compile_values(m, cx, &mut kws);
        self.compile_logic(m, cx, &mut kws);
        self.compile_numbers(m, &mut kws);
        self.compile_strings(m, cx, &mut kws);
        self.compile_arrays(m, cx, &mut kws);
        self.compile_objects(m, cx, &mut kws);
        self.compile_unevaluated(m, cx, &mut kws);
        kws
    }

    /// Marks the `$ref`s whose target more than one `$ref` names as
    /// memoised (evaluated once per instance location, see
    /// [`super::keywords::refs`]), and returns the performance warnings: the
    /// backtracking patterns, and the reference target whose evaluation at
    /// one instance location would take the most subschema evaluations
    /// without memoisation, when that exceeds [`FAN_OUT_LIMIT`].
    fn mark_memoised(&mut self, root: NodeId) -> Vec<PerformanceWarning> {
        let mut sites = vec![0u32; self.nodes.len()];
        for node in &self.nodes {
            if let Node::Obj { kws, .. } = node {
                for kw in kws {
                    if let Kw::Ref(RefKw::Ref { target, .. }) = kw {
                        sites[*target] += 1;
                    }
                }
            }
        }
        let dynamic = self.dynamic;
        for node in &mut self.nodes {
            if let Node::Obj { kws, .. } = node {
                for kw in kws {
                    if let Kw::Ref(RefKw::Ref { target, memo }) = kw {
                        *memo = !dynamic && sites[*target] > 1;
                    }
                }
            }
        }
        let mut warnings = std::mem::take(&mut self.warnings);
        // Evaluations at one location without memoisation, per node.
        let mut cost: Vec<Option<u64>> = vec![None; self.nodes.len()];
        let mut on_path = vec![false; self.nodes.len()];
        self.same_location_cost(root, &mut cost, &mut on_path);
        for (id, &n) in sites.iter().enumerate() {
            if n > 1 {
                self.same_location_cost(id, &mut cost, &mut on_path);
            }
        }
        let pointers: HashMap<NodeId, &String> = self.envs.iter().map(|((ptr, _), id)| (*id, ptr)).collect();
        let worst = (0..self.nodes.len())
            .filter(|id| sites[*id] > 1)
            .filter_map(|id| Some((cost[id]?, id)))
            .max();
        if let Some((n, id)) = worst {
            if n > FAN_OUT_LIMIT {
                let pointer = pointers.get(&id).map(|p| p.to_string()).unwrap_or_default();
                warnings.push(PerformanceWarning {
                    pointer,
                    rule: "reference fan-out",
                    message: format!(
                        "references fan out: evaluating this subschema at one instance location takes about {n} subschema evaluations when each reference is followed anew; rcip evaluates each referenced subschema once per instance location (memoised), and reports its issues once"
                    ),
                });
            }
        }
        warnings
    }

    /// Subschema evaluations of `id` at one instance location, following
    /// the keywords that apply to the same location, without memoisation
    /// (saturating; a cycle adds nothing).
    fn same_location_cost(&self, id: NodeId, cost: &mut Vec<Option<u64>>, on_path: &mut Vec<bool>) -> u64 {
        if let Some(c) = cost[id] {
            return c;
        }
        if on_path[id] {
            return 0;
        }
        on_path[id] = true;
        let mut children: Vec<NodeId> = Vec::new();
        if let Node::Obj { kws, .. } = &self.nodes[id] {
            for kw in kws {
                match kw {
                    Kw::Ref(RefKw::Ref { target, .. }) => children.push(*target),
                    Kw::Logic(LogicKw::Not(sub)) => children.extend(sub),
                    Kw::Logic(LogicKw::AnyOf(list)) => children.extend(list.iter().map(|(n, _)| *n)),
                    Kw::Logic(LogicKw::OneOf(list)) => children.extend(list.iter().filter_map(|(n, _)| *n)),
                    Kw::Logic(LogicKw::AllOf(list)) => children.extend(list.iter().copied()),
                    Kw::Logic(LogicKw::If { cond, then, els, .. }) => {
                        children.push(*cond);
                        children.extend(then);
                        children.extend(els);
                    }
                    Kw::Object(ObjectKw::SchemaDeps(list)) => children.extend(list.iter().map(|(_, n, _)| *n)),
                    _ => {}
                }
            }
        }
        let mut total = 1u64;
        for child in children {
            total = total.saturating_add(stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                self.same_location_cost(child, cost, on_path)
            }));
        }
        on_path[id] = false;
        cost[id] = Some(total);
        total
    }

    pub(super) fn regex(&mut self, pattern: &str, ptr: String) -> Option<JsRegex> {
        match JsRegex::new(pattern) {
            Ok(re) => {
                if let Some(why) = re.backtracking() {
                    if !self.warnings.iter().any(|w| w.pointer == ptr) {
                        self.warnings.push(PerformanceWarning {
                            pointer: ptr,
                            rule: "backtracking pattern",
                            message: format!(
                                "/{pattern}/u runs on the backtracking engine because {why}; its searches can take time exponential in the text, bounded only by the validation budget"
                            ),
                        });
                    }
                }
                Some(re)
            }
            Err(e) => {
                self.error(
                    ptr,
                    "regular expression",
                    format!("/{pattern}/u is not a valid JavaScript regular expression with the u flag ({e})"),
                );
                None
            }
        }
    }
}
