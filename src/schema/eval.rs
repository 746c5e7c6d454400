//! Evaluation of a compiled [`Program`] with the reference's `allErrors`
//! reporting: which issues each keyword keeps or drops, at which instance
//! path, and how evaluated properties and items flow to `unevaluated*`.

use super::node::{Kw, Lose, Node, NodeId, Program, Sub};
use super::regex::JsRegex;
use super::value::escape_token;
use super::ValidationIssue;
use serde_json::Value;
use std::collections::HashMap;

/// A location in the instance, built lazily (only issues turn it into text).
#[derive(Clone, Copy)]
pub(crate) enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    fn render(&self) -> String {
        let mut parts = Vec::new();
        let mut p = self;
        loop {
            match p {
                Path::Root => break,
                Path::Key(parent, k) => {
                    parts.push(escape_token(k));
                    p = parent;
                }
                Path::Index(parent, i) => {
                    parts.push(i.to_string());
                    p = parent;
                }
            }
        }
        let mut s = String::new();
        for part in parts.iter().rev() {
            s.push('/');
            s.push_str(part);
        }
        s
    }
}

pub(super) const ALL_ITEMS: usize = usize::MAX;

/// What a schema evaluated (for `unevaluatedProperties`/`unevaluatedItems`).
#[derive(Default)]
pub(super) struct Ann<'i> {
    pub(super) all_props: bool,
    pub(super) props: Vec<&'i str>,
    /// Items evaluated from the start (`ALL_ITEMS`: every item).
    pub(super) items: usize,
    /// The reference's item count is undefined (see [`Lose`]): it then
    /// checks no item against `unevaluatedItems`.
    pub(super) items_undef: bool,
}

impl<'i> Ann<'i> {
    pub(super) fn merge(&mut self, other: Ann<'i>) {
        if !self.all_props {
            if other.all_props {
                self.all_props = true;
                self.props.clear();
            } else {
                self.props.extend(other.props);
            }
        }
        if !other.items_undef {
            self.add_items(other.items);
        }
    }

    pub(super) fn add_items(&mut self, n: usize) {
        if self.items_undef {
            self.items = n;
            self.items_undef = false;
        } else {
            self.items = self.items.max(n);
        }
    }

    /// A merge that happens only on success did not happen.
    pub(super) fn skip(&mut self, lose: Lose) {
        if lose.props && !self.all_props {
            self.props.clear();
        }
        if lose.items && self.items != ALL_ITEMS {
            self.items = 0;
            self.items_undef = true;
        }
    }
}

pub(crate) struct Evaluator<'p> {
    pub(super) prog: &'p Program,
    /// Collect issues (else only validity is computed).
    pub(super) collect: bool,
    /// Stop at the first failing keyword (only when nothing depends on
    /// evaluating everything).
    pub(super) short: bool,
    pub(super) issues: Vec<ValidationIssue>,
    pub(super) dyn_anchors: HashMap<String, NodeId>,
    /// References being followed, with the instance each one applies to: the
    /// same pair twice means a loop that consumes no data.
    pub(super) following: Vec<(NodeId, *const Value)>,
    /// Work units left ([`Budget`]): one per schema node and keyword
    /// evaluated, plus what regex searches and `uniqueItems` take.
    pub(super) left: u64,
    /// The budget was raised from its floor to its full size (computed
    /// only when the floor runs out, so a cheap validation never counts the
    /// instance's nodes).
    raised: bool,
    /// The budget ran out: the result is invalid with a budget issue.
    pub(super) exhausted: bool,
    budget: Budget,
    root: &'p Value,
    /// Memoised reference results (see [`super::keywords::refs`]).
    pub(super) memo: HashMap<MemoKey, Memo>,
    /// Tells apart the property-name strings `propertyNames` evaluates:
    /// each is a temporary value, so its address alone is no location.
    pub(super) name_epoch: u32,
    pub(super) epochs: u32,
}

/// (target node, instance value address, name epoch).
pub(super) type MemoKey = (NodeId, usize, u32);

/// What evaluating a memoised reference target at one instance location
/// gave.
pub(super) struct Memo {
    pub valid: bool,
    pub all_props: bool,
    /// Evaluated property names (only when the program tracks them).
    pub props: Vec<String>,
    pub items: usize,
    pub items_undef: bool,
    /// Its issues, when it was evaluated while collecting them, and where
    /// in the issue list they were put.
    pub issues: Option<Vec<ValidationIssue>>,
    pub at: usize,
}

impl Memo {
    pub(super) fn ann<'i>(&self, inst: &'i Value) -> Ann<'i> {
        let mut props = Vec::new();
        if let Value::Object(o) = inst {
            for name in &self.props {
                if let Some((k, _)) = o.get_key_value(name) {
                    props.push(k.as_str());
                }
            }
        }
        Ann {
            all_props: self.all_props,
            props,
            items: self.items,
            items_undef: self.items_undef,
        }
    }
}

/// The work budget of one validation pass, in units: one per schema node
/// and keyword evaluated, one per regular-expression search plus one per 64
/// bytes searched on the linear-time engine or one per instruction on the
/// backtracking engine, and one per item `uniqueItems` hashes. A pass may
/// spend `max(floor, per_pair × compiled schema size × (instance nodes +
/// 1))` units (**rcip**, PIPELINE.md section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The least budget, whatever the sizes (default 10^6).
    pub floor: u64,
    /// Units per (schema node or keyword, instance node) pair (default 64).
    pub per_pair: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            floor: 1_000_000,
            per_pair: 64,
        }
    }
}

impl Budget {
    /// The budget of one pass of `program` over `instance`.
    pub(super) fn limit(&self, program: &Program, instance: &Value) -> u64 {
        let pairs = program.size.saturating_mul(count_nodes(instance).saturating_add(1));
        self.floor.max(self.per_pair.saturating_mul(pairs))
    }
}

/// The number of values in `v` (itself, its items and members, deeply).
pub(crate) fn count_nodes(v: &Value) -> u64 {
    let mut n = 0u64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    n
}

/// How one pass ended.
pub(crate) struct Pass {
    pub valid: bool,
    pub issues: Vec<ValidationIssue>,
    /// The budget ran out (then `valid` is false and `issues` is empty).
    pub exhausted: bool,
    /// Units spent, and the pass's budget.
    pub spent: u64,
    pub limit: u64,
}

impl<'p> Evaluator<'p> {
    fn new(prog: &'p Program, instance: &'p Value, collect: bool, budget: Budget) -> Evaluator<'p> {
        Evaluator {
            prog,
            collect,
            short: !collect && !prog.track && !prog.dynamic,
            issues: Vec::new(),
            dyn_anchors: HashMap::new(),
            following: Vec::new(),
            left: budget.floor,
            raised: false,
            exhausted: false,
            budget,
            root: instance,
            memo: HashMap::new(),
            name_epoch: 0,
            epochs: 0,
        }
    }

    /// One pass over `instance`: validity only, or every issue.
    pub fn run(prog: &'p Program, instance: &'p Value, collect: bool, budget: Budget) -> Pass {
        let mut ev = Evaluator::new(prog, instance, collect, budget);
        let valid = ev.node(prog.root, instance, &Path::Root).0;
        let limit = if ev.raised {
            budget.limit(prog, instance)
        } else {
            budget.floor
        };
        let spent = limit - ev.left;
        if ev.exhausted {
            ev.issues.clear();
        }
        Pass {
            valid: valid && !ev.exhausted,
            issues: ev.issues,
            exhausted: ev.exhausted,
            spent,
            limit,
        }
    }

    /// Takes `n` units of the budget; false (and the pass is over) when
    /// they are not there. The common case is one subtraction.
    #[inline]
    pub(super) fn charge(&mut self, n: u64) -> bool {
        if self.left >= n {
            self.left -= n;
            true
        } else {
            self.charge_more(n)
        }
    }

    #[cold]
    fn charge_more(&mut self, n: u64) -> bool {
        if self.raise() && self.left >= n {
            self.left -= n;
            return true;
        }
        self.left = 0;
        self.exhausted = true;
        false
    }

    /// Raises the budget from its floor to its full size, once.
    fn raise(&mut self) -> bool {
        if self.raised || self.exhausted {
            return false;
        }
        self.raised = true;
        let more = self.budget.limit(self.prog, self.root) - self.budget.floor;
        self.left += more;
        more > 0
    }

    /// JavaScript `test` under the budget (false once it ran out).
    pub(super) fn regex_match(&mut self, re: &JsRegex, text: &str) -> bool {
        if self.exhausted {
            return false;
        }
        let before = self.left;
        if let Some(found) = re.search(text, &mut self.left) {
            return found;
        }
        // Out of units: raise the budget once and search again with it.
        self.left = before;
        if self.raise() {
            if let Some(found) = re.search(text, &mut self.left) {
                return found;
            }
        }
        self.left = 0;
        self.exhausted = true;
        false
    }

    pub(super) fn issue(&mut self, path: &Path<'_>, keyword: &str, message: String) {
        if self.collect {
            self.issues.push(ValidationIssue {
                instance_path: path.render(),
                keyword: keyword.to_string(),
                message,
            });
        }
    }

    /// Evaluates a subschema whose own issues are discarded.
    pub(super) fn quiet<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        let mark = self.issues.len();
        let collect = self.collect;
        self.collect = false;
        let r = self.node(id, inst, path);
        self.collect = collect;
        self.issues.truncate(mark);
        r
    }

    pub(super) fn sub<'i>(&mut self, sub: Sub, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        match sub {
            Some(id) => self.node(id, inst, path),
            None => (true, Ann::default()),
        }
    }

    pub(super) fn node<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        // Deep payloads and recursive schemas: grow the stack instead of
        // overflowing a host thread's.
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.node_inner(id, inst, path))
    }

    fn node_inner<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        let prog = self.prog;
        match &prog.nodes[id] {
            Node::Bool(true) => (true, Ann::default()),
            Node::Bool(_) | Node::Meta if self.exhausted => (false, Ann::default()),
            Node::Bool(false) => {
                self.issue(
                    path,
                    "false schema",
                    "no value is allowed here (the schema is false)".to_string(),
                );
                (false, Ann::default())
            }
            Node::Meta => {
                // The crate's validator takes its own time: charge by size.
                if !self.charge(count_nodes(inst)) {
                    return (false, Ann::default());
                }
                (self.meta(inst, path), Ann::default())
            }
            Node::Obj { types, kws } => {
                if !self.charge(1 + kws.len() as u64) {
                    return (false, Ann::default());
                }
                let mut valid = true;
                let mut ann = Ann::default();
                if !types.is_empty() && !types.iter().any(|t| t.matches(inst)) {
                    let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
                    self.issue(
                        path,
                        "type",
                        format!("expected {}, found {}", names.join(" or "), kind(inst)),
                    );
                    if self.short {
                        return (false, ann);
                    }
                    valid = false;
                }
                for kw in kws {
                    if !self.keyword(kw, inst, path, &mut ann) {
                        if self.short {
                            return (false, ann);
                        }
                        valid = false;
                    }
                }
                (valid, ann)
            }
        }
    }

    fn meta(&mut self, inst: &Value, path: &Path<'_>) -> bool {
        let validator = jsonschema::draft202012::meta::validator();
        if validator.is_valid(inst) {
            return true;
        }
        if self.collect {
            let base = path.render();
            for e in validator.iter_errors(inst) {
                reshape_crate_error(&e, &base, &mut self.issues);
            }
        }
        false
    }

    /// One keyword, evaluated by its family (see [`super::keywords`]).
    fn keyword<'i>(&mut self, kw: &Kw, inst: &'i Value, path: &Path<'_>, ann: &mut Ann<'i>) -> bool {
        match kw {
            Kw::Ref(k) => self.eval_ref(k, inst, path, ann),
            Kw::Value(k) => self.eval_value(k, inst, path),
            Kw::Logic(k) => self.eval_logic(k, inst, path, ann),
            Kw::Number(k) => self.eval_number(k, inst, path),
            Kw::String(k) => self.eval_string(k, inst, path),
            Kw::Array(k) => self.eval_array(k, inst, path, ann),
            Kw::Object(k) => self.eval_object(k, inst, path, ann),
            Kw::Unevaluated(k) => self.eval_unevaluated(k, inst, path, ann),
        }
    }
}

/// Turns one jsonschema-crate error into the issues the reference reports
/// for it: a failing `anyOf`/`oneOf` also reports each branch's issues, and
/// `additionalProperties: false` reports each extra property.
fn reshape_crate_error(e: &jsonschema::ValidationError<'_>, base: &str, out: &mut Vec<ValidationIssue>) {
    use jsonschema::error::ValidationErrorKind as K;
    let path = format!("{base}{}", e.instance_path());
    match e.kind() {
        K::AnyOf { context } | K::OneOfNotValid { context } => {
            for branch in context {
                for inner in branch {
                    reshape_crate_error(inner, base, out);
                }
            }
        }
        K::AdditionalProperties { unexpected } if unexpected.len() > 1 => {
            for name in unexpected {
                out.push(ValidationIssue {
                    instance_path: path.clone(),
                    keyword: "additionalProperties".to_string(),
                    message: format!("not a valid JSON Schema 2020-12: property \"{name}\" is not allowed"),
                });
            }
            return;
        }
        _ => {}
    }
    let keyword = match e.kind().keyword() {
        "falseSchema" => "false schema",
        k => k,
    };
    out.push(ValidationIssue {
        instance_path: path,
        keyword: keyword.to_string(),
        message: format!("not a valid JSON Schema 2020-12: {e}"),
    });
}

/// Objects up to this many properties are searched without hashing.
pub(super) const SMALL: usize = 16;

/// Whether `o` has the property `name`: a plain scan for small objects
/// (cheaper than hashing the name), a map lookup otherwise.
pub(super) fn has_key(o: &serde_json::Map<String, Value>, name: &str) -> bool {
    if o.len() <= SMALL {
        o.keys().any(|k| k == name)
    } else {
        o.contains_key(name)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e21 {
        format!("{}", x as i128)
    } else {
        format!("{x}")
    }
}

pub(super) fn short_json(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}
