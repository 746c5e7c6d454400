//! Evaluation of a compiled [`Program`] with the reference's `allErrors`
//! reporting: which issues each keyword keeps or drops, at which instance
//! path, and how evaluated properties and items flow to `unevaluated*`.

use super::flat::Verdict;
use super::keywords::arrays::ArrayKw;
use super::keywords::numbers::{exclusive_maximum_holds, exclusive_minimum_holds, maximum_holds, minimum_holds};
use super::keywords::objects::{max_properties_holds, min_properties_holds, ObjectKw};
use super::keywords::strings::{max_length_holds, min_length_holds, Lengths, StringKw};
use super::node::{Kw, Lose, Node, NodeId, Program, Sub};
use super::regex::{JsRegex, Stop};
use super::value::escape_token;
use super::ValidationIssue;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The evaluator's maps: keyed by node indices, instance addresses and the
/// schema's anchor names (nothing a consumer chooses), so a fixed-key hasher
/// does; unlike the default one it costs nothing to set up for a pass that
/// never uses them.
type PassMap<K, V> = HashMap<K, V, BuildHasherDefault<ahash::AHasher>>;

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
    pub(super) dyn_anchors: PassMap<String, NodeId>,
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
    /// Also set (with [`Evaluator::stopped`]) when the issue list is full.
    pub(super) exhausted: bool,
    /// A backtracking search took its own step bound (given here): the
    /// pass is exhausted, and its issue says so.
    steps_bound: Option<u64>,
    /// The bound on the issues kept ([`IssueLimit`]), the bytes of those
    /// kept, and how many were left out since the last [`Mark`].
    limit: IssueLimit,
    kept_bytes: usize,
    pub(super) omitted: u64,
    /// Keywords under way whose issues may still be dropped (`anyOf`,
    /// `oneOf`, `contains`): an issue left out under none of them means
    /// the list is final, and the pass stops.
    pub(super) droppable: u32,
    /// The pass stopped because its issue list is full (not a budget
    /// issue); the units left when it stopped.
    stopped: Option<u64>,
    budget: Budget,
    root: &'p Value,
    /// Memoised reference results (see [`super::keywords::refs`]).
    pub(super) memo: PassMap<MemoKey, Memo>,
    /// Tells apart the property-name strings `propertyNames` evaluates:
    /// each is a temporary value, so its address alone is no location.
    pub(super) name_epoch: u32,
    pub(super) epochs: u32,
    /// Nesting of [`Evaluator::check`] calls: the stack is checked (and
    /// grown) every [`CHECK_STACK_EVERY`] levels instead of at every node.
    depth: u32,
}

/// [`Evaluator::check`] asks for more stack every this many levels, with a
/// red zone ([`CHECK_RED_ZONE`]) far larger than what this many levels of
/// its frames take (well under 4 KiB a level).
const CHECK_STACK_EVERY: u32 = 8;
const CHECK_RED_ZONE: usize = 256 * 1024;

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

/// Which validity path [`Evaluator::run_with`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// The flat plan when the program has one, else [`Evaluator::check`].
    Fastest,
    /// [`Evaluator::check`] (when nothing depends on evaluating every
    /// keyword).
    Check,
    /// The keyword-by-keyword evaluator.
    General,
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
    /// The budget ran out because one backtracking search took its own
    /// step bound (given here, [`super::regex::pattern_steps`]).
    pub steps_bound: Option<u64>,
    /// Issues were left out by the [`IssueLimit`] (`issues` is then the
    /// first ones the full list would have).
    pub truncated: bool,
}

impl Pass {
    /// The one issue of an exhausted pass.
    pub(super) fn stop_issue(&self) -> ValidationIssue {
        match self.steps_bound {
            Some(bound) => super::steps_issue(bound),
            None => super::budget_issue(self.limit),
        }
    }
}

/// The bound on the issues one validation keeps (**rcip**, issue 27;
/// PIPELINE.md section 8): at most `max_issues` issues, and no issue that
/// would take the kept ones beyond `max_bytes` bytes (the UTF-8 bytes of
/// each issue's `instancePath`, `keyword` and `message`, before JSON
/// escaping). The first issue is always kept, so an invalid value has at
/// least one. The issues kept are the first ones of the full list, in its
/// order, and the validation reports that it left some out
/// ([`super::Validation::truncated`]); it stops evaluating once an issue
/// is left out that no enclosing `anyOf`, `oneOf` or `contains` can still
/// drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IssueLimit {
    /// Most issues kept (default 1000; 0 counts as 1).
    pub max_issues: usize,
    /// Most bytes of issue text kept (default 1 MiB).
    pub max_bytes: usize,
}

impl IssueLimit {
    /// No bound (the reference's `allErrors`).
    pub const UNLIMITED: IssueLimit = IssueLimit {
        max_issues: usize::MAX,
        max_bytes: usize::MAX,
    };
}

impl Default for IssueLimit {
    fn default() -> Self {
        IssueLimit {
            max_issues: 1000,
            max_bytes: 1 << 20,
        }
    }
}

/// Where the issue list stood, to go back to when a keyword drops the
/// issues it collected since ([`Evaluator::mark`], [`Evaluator::reset`]).
#[derive(Clone, Copy)]
pub(super) struct Mark {
    pub(super) len: usize,
    bytes: usize,
    pub(super) omitted: u64,
}

impl<'p> Evaluator<'p> {
    fn new(prog: &'p Program, instance: &'p Value, collect: bool, budget: Budget) -> Evaluator<'p> {
        Evaluator {
            prog,
            collect,
            short: !collect && !prog.track && !prog.dynamic,
            issues: Vec::new(),
            dyn_anchors: PassMap::default(),
            following: Vec::new(),
            left: budget.floor,
            raised: false,
            exhausted: false,
            steps_bound: None,
            limit: IssueLimit::UNLIMITED,
            kept_bytes: 0,
            omitted: 0,
            droppable: 0,
            stopped: None,
            budget,
            root: instance,
            memo: PassMap::default(),
            name_epoch: 0,
            epochs: 0,
            depth: 0,
        }
    }

    /// One pass over `instance`: validity only, or every issue.
    pub fn run(prog: &'p Program, instance: &'p Value, collect: bool, budget: Budget) -> Pass {
        Evaluator::run_with(prog, instance, collect, budget, Mode::Fastest)
    }

    /// [`Evaluator::run`] on the validity path `mode` asks for (the tests
    /// compare the three).
    pub(super) fn run_with(prog: &'p Program, instance: &'p Value, collect: bool, budget: Budget, mode: Mode) -> Pass {
        Evaluator::run_full(prog, instance, collect, budget, mode, IssueLimit::UNLIMITED)
    }

    /// The issue pass, keeping at most what `limit` allows.
    pub(super) fn run_issues(prog: &'p Program, instance: &'p Value, budget: Budget, limit: IssueLimit) -> Pass {
        Evaluator::run_full(prog, instance, true, budget, Mode::Fastest, limit)
    }

    fn run_full(
        prog: &'p Program,
        instance: &'p Value,
        collect: bool,
        budget: Budget,
        mode: Mode,
        limit: IssueLimit,
    ) -> Pass {
        if let (Some(flat), false, Mode::Fastest) = (&prog.flat, collect, mode) {
            let (valid, exhausted, spent, limit) = match flat.verdict(prog, instance, budget) {
                Verdict::Valid { spent, limit } => (true, false, spent, limit),
                // As the evaluator: exhaustion spends the whole budget.
                Verdict::Exhausted { limit, .. } => (false, true, limit, limit),
                Verdict::Invalid { spent } => (false, false, spent, budget.floor),
            };
            return Pass {
                valid,
                issues: Vec::new(),
                exhausted,
                spent,
                limit,
                steps_bound: None,
                truncated: false,
            };
        }
        let mut ev = Evaluator::new(prog, instance, collect, budget);
        ev.limit = IssueLimit {
            max_issues: limit.max_issues.max(1),
            ..limit
        };
        let valid = if ev.short && mode != Mode::General {
            ev.check(prog.root, instance)
        } else {
            ev.node(prog.root, instance, &Path::Root).0
        };
        let limit = if ev.raised {
            budget.limit(prog, instance)
        } else {
            budget.floor
        };
        let spent = limit - ev.stopped.unwrap_or(ev.left);
        // A full issue list stops the pass without exhausting it.
        let exhausted = ev.exhausted && ev.stopped.is_none();
        if exhausted {
            ev.issues.clear();
        }
        Pass {
            valid: valid && !ev.exhausted,
            issues: ev.issues,
            exhausted,
            spent,
            limit,
            steps_bound: if exhausted { ev.steps_bound } else { None },
            truncated: !exhausted && ev.omitted > 0,
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
        match re.search_within(text, &mut self.left) {
            Ok(found) => return found,
            Err(Stop::Steps(bound)) => return self.steps_out(bound),
            Err(Stop::Budget) => {}
        }
        // Out of units: raise the budget once and search again with it.
        self.left = before;
        if self.raise() {
            match re.search_within(text, &mut self.left) {
                Ok(found) => return found,
                Err(Stop::Steps(bound)) => return self.steps_out(bound),
                Err(Stop::Budget) => {}
            }
        }
        self.left = 0;
        self.exhausted = true;
        false
    }

    /// One search took its own step bound: the pass is exhausted.
    #[cold]
    fn steps_out(&mut self, bound: u64) -> bool {
        self.steps_bound = Some(bound);
        self.left = 0;
        self.exhausted = true;
        false
    }

    pub(super) fn issue(&mut self, path: &Path<'_>, keyword: &str, message: String) {
        if self.collect {
            self.push_issue(ValidationIssue {
                instance_path: path.render(),
                keyword: keyword.to_string(),
                message,
            });
        }
    }

    /// Adds an issue to the list, or leaves it out when the list is full
    /// ([`IssueLimit`]); an issue left out that nothing can drop any more
    /// stops the pass.
    pub(super) fn push_issue(&mut self, issue: ValidationIssue) {
        let size = issue.instance_path.len() + issue.keyword.len() + issue.message.len();
        let fits =
            self.issues.len() < self.limit.max_issues && self.kept_bytes.saturating_add(size) <= self.limit.max_bytes;
        if self.omitted == 0 && (fits || self.issues.is_empty()) {
            self.kept_bytes += size;
            self.issues.push(issue);
            return;
        }
        self.omitted += 1;
        // (After the budget ran out the pass ends with the budget issue:
        // a full list must not turn that into a cut list.)
        if self.droppable == 0 && !self.exhausted {
            // The list is final: nothing later can change it.
            self.stopped = Some(self.left);
            self.left = 0;
            self.exhausted = true;
        }
    }

    /// Where the issue list stands (see [`Mark`]).
    pub(super) fn mark(&self) -> Mark {
        Mark {
            len: self.issues.len(),
            bytes: self.kept_bytes,
            omitted: self.omitted,
        }
    }

    /// Drops the issues collected since `mark`, those left out included.
    pub(super) fn reset(&mut self, mark: Mark) {
        self.issues.truncate(mark.len);
        self.kept_bytes = mark.bytes;
        self.omitted = mark.omitted;
    }

    /// Evaluates a subschema whose own issues are discarded.
    pub(super) fn quiet<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        let mark = self.mark();
        let collect = self.collect;
        self.collect = false;
        let r = self.node(id, inst, path);
        self.collect = collect;
        self.reset(mark);
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

    /// The validity-only pass (no issues, nothing depends on evaluating
    /// every keyword: no `unevaluated*`, no `$dynamicAnchor`): a yes/no
    /// answer without instance paths or annotations. The same keywords in
    /// the same order as [`Evaluator::node`], charged the same units, and
    /// stopping at the same first failure; keywords this path does not
    /// handle itself go through the general evaluator.
    pub(super) fn check(&mut self, id: NodeId, inst: &Value) -> bool {
        debug_assert!(self.short && !self.collect);
        self.depth += 1;
        let ok = if self.depth.is_multiple_of(CHECK_STACK_EVERY) {
            self.check_on_enough_stack(id, inst)
        } else {
            self.check_node(id, inst)
        };
        self.depth -= 1;
        ok
    }

    /// [`Evaluator::check_node`] after making sure the stack has room (kept
    /// out of line: most levels do not ask).
    #[cold]
    #[inline(never)]
    fn check_on_enough_stack(&mut self, id: NodeId, inst: &Value) -> bool {
        stacker::maybe_grow(CHECK_RED_ZONE, 4 * CHECK_RED_ZONE, || self.check_node(id, inst))
    }

    fn check_node(&mut self, id: NodeId, inst: &Value) -> bool {
        let prog = self.prog;
        let Node::Obj { types, kws } = &prog.nodes[id] else {
            return self.node_inner(id, inst, &Path::Root).0;
        };
        if !self.charge(1 + kws.len() as u64) {
            return false;
        }
        if !types.is_empty() && !types.iter().any(|t| t.matches(inst)) {
            return false;
        }
        if let Some(leaf) = &prog.leaves[id] {
            return leaf.holds(inst);
        }
        if let Some(plan) = &prog.closed[id] {
            match inst {
                // Larger objects: each declared name is looked up instead.
                Value::Object(o) if o.len() <= SMALL => return self.check_closed(plan, o),
                Value::Object(_) => {}
                _ => return true,
            }
        }
        for kw in kws {
            let ok = match kw {
                Kw::Number(k) => match inst {
                    Value::Number(n) => k.holds(super::value::as_f64(n)),
                    _ => true,
                },
                Kw::Value(k) => self.eval_value(k, inst, &Path::Root),
                Kw::String(k) => match (k, inst) {
                    (StringKw::Pattern(re), Value::String(s)) => self.regex_match(re, s),
                    (StringKw::MaxLength(m), Value::String(s)) => max_length_holds(s, *m),
                    (StringKw::MinLength(m), Value::String(s)) => min_length_holds(s, *m),
                    _ => true,
                },
                Kw::Object(k) => match inst {
                    Value::Object(o) => self.check_object(k, o, inst),
                    _ => true,
                },
                Kw::Array(ArrayKw::Items {
                    sub: Some(item),
                    is_false: false,
                    after,
                }) => match inst {
                    Value::Array(a) => a.iter().skip(after.unwrap_or(0)).all(|v| self.check(*item, v)),
                    _ => true,
                },
                other => self.check_other(other, inst),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// A keyword [`Evaluator::check`] leaves to the general evaluator.
    #[inline(never)]
    fn check_other(&mut self, kw: &Kw, inst: &Value) -> bool {
        self.keyword(kw, inst, &Path::Root, &mut Ann::default())
    }

    /// [`Closed`]: the fused check of a plain object schema on an object.
    #[inline(never)]
    fn check_closed(&mut self, plan: &Closed, o: &serde_json::Map<String, Value>) -> bool {
        let n = o.len();
        if !plan.max.is_none_or(|m| max_properties_holds(n, m)) || !plan.min.is_none_or(|m| min_properties_holds(n, m))
        {
            return false;
        }
        // `additionalProperties: false`'s unit per member, as `eval_object`.
        if plan.closed && !self.charge(o.len() as u64) {
            return false;
        }
        let mut seen = 0u64;
        for (key, value) in o {
            match plan.props.iter().position(|(name, _)| same(name, key)) {
                Some(i) => {
                    seen |= 1 << i;
                    if let Some(sub) = plan.props[i].1 {
                        if !self.check(sub, value) {
                            return false;
                        }
                    }
                }
                None if plan.closed => return false,
                None => {}
            }
        }
        seen & plan.required == plan.required
    }

    /// [`Evaluator::check`] of one object keyword on an object.
    #[inline(never)]
    fn check_object(&mut self, k: &ObjectKw, o: &serde_json::Map<String, Value>, inst: &Value) -> bool {
        match k {
            ObjectKw::Properties(list) => {
                if o.len() <= SMALL {
                    for (key, value) in o {
                        if let Some((_, Some(sub))) = list.iter().find(|(n, _)| same(n, key)) {
                            if !self.check(*sub, value) {
                                return false;
                            }
                        }
                    }
                } else {
                    for (name, sub) in list {
                        if let (Some(sub), Some(value)) = (sub, o.get(name)) {
                            if !self.check(*sub, value) {
                                return false;
                            }
                        }
                    }
                }
                true
            }
            ObjectKw::AdditionalProperties {
                sub,
                is_false,
                props,
                patterns,
            } => {
                if sub.is_none() && !is_false {
                    return true;
                }
                // As `eval_object`: one unit per member looked up.
                if !self.charge(o.len() as u64) {
                    return false;
                }
                for (key, value) in o {
                    if props.iter().any(|p| same(p, key)) || patterns.iter().any(|re| self.regex_match(re, key)) {
                        continue;
                    }
                    match sub {
                        _ if *is_false => return false,
                        Some(id) if !self.check(*id, value) => return false,
                        _ => {}
                    }
                }
                true
            }
            ObjectKw::Required(names) => names.iter().all(|n| {
                if o.len() <= SMALL {
                    o.keys().any(|k| same(k, n))
                } else {
                    o.contains_key(n.as_str())
                }
            }),
            other => self.eval_object(other, inst, &Path::Root, &mut Ann::default()),
        }
    }

    fn meta(&mut self, inst: &Value, path: &Path<'_>) -> bool {
        let validator = jsonschema::draft202012::meta::validator();
        if validator.is_valid(inst) {
            return true;
        }
        if self.collect {
            let base = path.render();
            let mut found = Vec::new();
            for e in validator.iter_errors(inst) {
                reshape_crate_error(&e, &base, &mut found);
            }
            for issue in found {
                self.push_issue(issue);
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

/// The fused validity check of a plain object schema: one whose keywords
/// are only `properties` (at most 64 names), `required` naming only those
/// properties, `additionalProperties: false` (no `patternProperties`), and
/// `minProperties`/`maxProperties`. One walk over the instance's members
/// answers all of them: each member is looked up once among the declared
/// names (an undeclared one fails `additionalProperties`), its subschema
/// checked, and the required ones ticked off in a bit set.
///
/// Only the validity pass uses it. Its answer is the keywords' answer; only
/// the order in which an invalid instance's failures are met differs, and
/// that pass then reports nothing: the issue pass evaluates every keyword as
/// before. The units charged are the same (the node's units up front, each
/// subschema its own), so a valid instance spends exactly what the
/// keyword-by-keyword pass spends; an invalid one that exhausts the budget
/// in either order exhausts it in the issue pass too, which charges at
/// least every unit of either order.
pub(crate) struct Closed {
    props: Vec<(String, Sub)>,
    /// Bit i: the property `props[i]` is required.
    required: u64,
    /// `additionalProperties: false`.
    closed: bool,
    min: Option<f64>,
    max: Option<f64>,
}

impl Closed {
    /// The plan of every node (`None`: the node is not such a schema).
    pub(super) fn plan(nodes: &[Node]) -> Vec<Option<Closed>> {
        nodes.iter().map(Closed::of).collect()
    }

    fn of(node: &Node) -> Option<Closed> {
        let Node::Obj { types, kws } = node else { return None };
        if !types.is_empty() && !types.contains(&super::value::JType::Object) {
            return None;
        }
        let mut plan = Closed {
            props: Vec::new(),
            required: 0,
            closed: false,
            min: None,
            max: None,
        };
        let mut names: Option<&[String]> = None;
        let mut has_props = false;
        for kw in kws {
            match kw {
                Kw::Object(ObjectKw::Properties(list)) if !has_props && list.len() <= 64 => {
                    plan.props = list.clone();
                    has_props = true;
                }
                Kw::Object(ObjectKw::Required(list)) if names.is_none() => names = Some(list),
                Kw::Object(ObjectKw::AdditionalProperties {
                    sub: None,
                    is_false: true,
                    props,
                    patterns,
                }) if !plan.closed && patterns.is_empty() => {
                    // The names it allows must be `properties`' (checked below).
                    let _ = props;
                    plan.closed = true;
                }
                Kw::Object(ObjectKw::MinProperties(m)) if plan.min.is_none() => plan.min = Some(*m),
                Kw::Object(ObjectKw::MaxProperties(m)) if plan.max.is_none() => plan.max = Some(*m),
                _ => return None,
            }
        }
        if !has_props {
            return None;
        }
        for kw in kws {
            if let Kw::Object(ObjectKw::AdditionalProperties { props, .. }) = kw {
                if props.len() != plan.props.len() || props.iter().zip(&plan.props).any(|(a, (b, _))| a != b) {
                    return None;
                }
            }
        }
        for name in names.unwrap_or(&[]) {
            let i = plan.props.iter().position(|(n, _)| n == name)?;
            plan.required |= 1 << i;
        }
        Some(plan)
    }
}

/// The validity check of a leaf schema: one whose keywords are only number
/// bounds (`maximum`, `minimum`, `exclusiveMaximum`, `exclusiveMinimum`)
/// and string lengths (`maxLength`, `minLength`), each at most once, or
/// none at all. Checked as one record instead of through the keyword list;
/// leaf keywords charge nothing of their own, so the units are the node's.
/// The rules are the families' (keywords/numbers.rs, keywords/strings.rs).
pub(crate) struct Leaf {
    max: Option<f64>,
    min: Option<f64>,
    exclusive_max: Option<f64>,
    exclusive_min: Option<f64>,
    lengths: Lengths,
}

impl Leaf {
    pub(super) fn plan(nodes: &[Node]) -> Vec<Option<Leaf>> {
        nodes.iter().map(Leaf::of).collect()
    }

    fn of(node: &Node) -> Option<Leaf> {
        use super::keywords::numbers::NumberKw as N;
        let Node::Obj { kws, .. } = node else { return None };
        // maximum, minimum, exclusiveMaximum, exclusiveMinimum, maxLength,
        // minLength.
        let mut limits: [Option<f64>; 6] = [None; 6];
        for kw in kws {
            let (slot, x) = match kw {
                Kw::Number(N::Maximum(x)) => (0, *x),
                Kw::Number(N::Minimum(x)) => (1, *x),
                Kw::Number(N::ExclusiveMaximum(x)) => (2, *x),
                Kw::Number(N::ExclusiveMinimum(x)) => (3, *x),
                Kw::String(StringKw::MaxLength(x)) => (4, *x),
                Kw::String(StringKw::MinLength(x)) => (5, *x),
                _ => return None,
            };
            if limits[slot].replace(x).is_some() {
                return None;
            }
        }
        let [max, min, exclusive_max, exclusive_min, max_length, min_length] = limits;
        Some(Leaf {
            max,
            min,
            exclusive_max,
            exclusive_min,
            lengths: Lengths::new(max_length, min_length),
        })
    }

    /// The keywords' answer (the node's type was checked already).
    #[inline]
    fn holds(&self, inst: &Value) -> bool {
        match inst {
            Value::Number(n) => {
                let x = super::value::as_f64(n);
                self.max.is_none_or(|m| maximum_holds(x, m))
                    && self.min.is_none_or(|m| minimum_holds(x, m))
                    && self.exclusive_max.is_none_or(|m| exclusive_maximum_holds(x, m))
                    && self.exclusive_min.is_none_or(|m| exclusive_minimum_holds(x, m))
            }
            Value::String(s) => self.lengths.holds(s),
            _ => true,
        }
    }
}

/// String equality for the short names of properties, without a call to
/// `memcmp`: the lengths, then two overlapping words that together cover
/// every byte (or three bytes of a name shorter than four).
#[inline]
pub(super) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn w4(s: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(s[at..at + 4].try_into().expect("4 bytes"))
    }
    fn w8(s: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(s[at..at + 8].try_into().expect("8 bytes"))
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=8 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        9..=16 => w8(a, 0) == w8(b, 0) && w8(a, n - 8) == w8(b, n - 8),
        _ => a == b,
    }
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
