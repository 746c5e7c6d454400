//! The validity pass as a flat plan (issue 20, item 1): for a schema whose
//! every reachable node uses only a small set of keywords, the compile
//! builds one record per node with everything the yes/no answer needs
//! (type bits, per-kind bounds, a perfect-hash table of the declared
//! property names, the required names as a bit set), and a valid instance
//! is answered by one walk over that plan with no evaluator set up, no
//! map, no allocation and one addition of budget units per node.
//!
//! The keywords it plans: `type` (and `nullable`), the number bounds and
//! `multipleOf`, `maxLength`, `minLength`, `pattern` on the linear-time
//! engine, `enum`, `const`, `properties` (at most 64), `required`,
//! `additionalProperties` (false or a schema, without
//! `patternProperties`), `minProperties`, `maxProperties`, `prefixItems`,
//! `items`, `minItems`, `maxItems`, and the schemas `true` and `false`.
//! A schema with any other keyword anywhere (references included) gets no
//! plan and keeps [`super::eval::Evaluator::check`]. What each keyword
//! accepts is its family's rule (the `*_holds` functions of
//! [`super::keywords`], issue 35), which the plan calls; its own are the
//! type bits and the walk over members and items.
//!
//! Why no budget check per node: without references and without an
//! applicator that puts two subschemas on one instance value, each value
//! of the instance meets at most one node of the plan, so the walk's work
//! is linear in the instance (and pattern searches in the text, on the
//! linear-time engine) whatever the budget. The walk adds up exactly the
//! units the evaluator charges (each node's `1 + keywords` on entry, each
//! search its engine's units) and compares the total with the budget once,
//! at the end: a valid instance spends exactly what
//! [`super::eval::Evaluator::node`] spends, and it is exhausted exactly
//! when that total exceeds the pass's budget (the floor, or the full
//! budget computed only when the floor is exceeded), as in the evaluator,
//! whose charges are each all-or-nothing. An invalid instance is reported
//! invalid and not exhausted, whatever it spent: the issue pass that
//! follows evaluates every keyword of every visited node (a superset of
//! any order's charges, with these keywords), so it runs out of budget
//! whenever the keyword-by-keyword validity pass would have, and the issue
//! list is the same.

use super::eval::{has_key, same, Budget};
use super::keywords::arrays::{closed_tuple_holds, max_items_holds, min_items_holds, ArrayKw};
use super::keywords::numbers::{
    exclusive_maximum_holds, exclusive_minimum_holds, maximum_holds, minimum_holds, multiple_of_holds, NumberKw,
};
use super::keywords::objects::{max_properties_holds, min_properties_holds, ObjectKw};
use super::keywords::strings::{Lengths, StringKw};
use super::keywords::values::{const_holds, Members, ValueKw};
use super::node::{Kw, Node, NodeId, Program};
use super::regex::JsRegex;
use super::value::{as_f64, is_integer, JType};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Type bits of [`FNode::types`].
const NULL: u8 = 1;
const BOOL: u8 = 2;
const OBJ: u8 = 4;
const ARR: u8 = 8;
const STR: u8 = 16;
const NUM: u8 = 32;
const INT: u8 = 64;
const ANY: u8 = NULL | BOOL | OBJ | ARR | STR | NUM;

/// Nesting of the plan's nodes beyond which no plan is made (the walk
/// recurses once per level and checks no stack; deeper schemas keep the
/// evaluator's validity pass, which does).
const MAX_DEPTH: usize = 48;

/// The plan of one program (see the module documentation).
pub(crate) struct Flat {
    nodes: Box<[FNode]>,
}

/// How a flat walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Valid; the units spent and the pass's budget.
    Valid { spent: u64, limit: u64 },
    /// Valid by its keywords but costlier than the pass's budget.
    Exhausted { spent: u64, limit: u64 },
    /// Not valid (units spent up to the first failure found).
    Invalid { spent: u64 },
}

/// One node: its units, its type bits and what applies to each kind of
/// instance value.
struct FNode {
    /// What the evaluator charges on entering the node (`1 + keywords`;
    /// nothing for `true` and `false`).
    units: u64,
    /// Allowed kinds (`INT`: numbers without a fraction; none for the
    /// schema `false`).
    types: u8,
    num: Option<Box<NumPlan>>,
    str: Option<Box<StrPlan>>,
    obj: Option<Box<ObjPlan>>,
    arr: Option<Box<ArrPlan>>,
    /// `const` and `enum` (their units are the evaluator's, see
    /// [`super::keywords::values`]).
    values: Box<[ValuePlan]>,
}

/// Number bounds. Instance numbers are finite (serde_json holds no NaN
/// or infinity), so an absent bound is an infinite one.
struct NumPlan {
    max: f64,
    min: f64,
    exclusive_max: f64,
    exclusive_min: f64,
    multiple_of: Option<f64>,
}

impl Default for NumPlan {
    fn default() -> Self {
        NumPlan {
            max: f64::INFINITY,
            min: f64::NEG_INFINITY,
            exclusive_max: f64::INFINITY,
            exclusive_min: f64::NEG_INFINITY,
            multiple_of: None,
        }
    }
}

/// String lengths (decided by [`Lengths`], as the leaf plan decides them)
/// and patterns.
struct StrPlan {
    lengths: Lengths,
    patterns: Vec<JsRegex>,
}

struct ObjPlan {
    /// `properties`, in declaration order.
    props: Vec<Prop>,
    /// Per name length (32: longer), the first property of that length;
    /// the others follow through [`Prop::next`].
    by_length: [u8; 33],
    /// Bit i: `props[i]` is required.
    required: u64,
    /// Required names that `properties` does not declare.
    other_required: Vec<String>,
    /// `additionalProperties: false`.
    closed: bool,
    /// `additionalProperties` with a schema.
    additional: Option<u32>,
    /// Units per member: 1 with `additionalProperties` (false or a
    /// schema), which charges each member it looks up; else 0.
    per_member: u64,
    min: Option<f64>,
    max: Option<f64>,
}

impl Default for ObjPlan {
    fn default() -> Self {
        ObjPlan {
            props: Vec::new(),
            by_length: [EMPTY; 33],
            required: 0,
            other_required: Vec::new(),
            closed: false,
            additional: None,
            per_member: 0,
            min: None,
            max: None,
        }
    }
}

/// One declared property.
struct Prop {
    name: Box<str>,
    /// Its schema ([`NONE`]: trivially valid).
    sub: u32,
    /// The next property whose name has the same length bucket ([`EMPTY`]:
    /// none).
    next: u8,
}

const NONE: u32 = u32::MAX;
const EMPTY: u8 = u8::MAX;

#[derive(Default)]
struct ArrPlan {
    min: Option<f64>,
    max: Option<f64>,
    prefix: Vec<Option<u32>>,
    /// `items`: its schema and the first index it applies to.
    items: Option<(u32, usize)>,
    /// `items: false` after `prefixItems`: at most this many items.
    at_most: Option<usize>,
}

enum ValuePlan {
    Const(Value),
    Enum(Arc<Members>),
}

impl ObjPlan {
    /// The index of the declared property `key`.
    #[inline]
    fn find(&self, key: &str) -> Option<usize> {
        let mut i = self.by_length[key.len().min(32)];
        while let Some(p) = self.props.get(i as usize) {
            if same(&p.name, key) {
                return Some(i as usize);
            }
            i = p.next;
        }
        None
    }

    /// Fills [`ObjPlan::by_length`] and the chains from the names.
    fn link(&mut self) {
        self.by_length = [EMPTY; 33];
        for i in (0..self.props.len()).rev() {
            let bucket = self.props[i].name.len().min(32);
            self.props[i].next = self.by_length[bucket];
            self.by_length[bucket] = i as u8;
        }
    }
}

impl Flat {
    /// The plan of `prog`, when every node reachable from its root can be
    /// planned.
    pub(super) fn plan(prog_nodes: &[Node], root: NodeId, track: bool, dynamic: bool) -> Option<Flat> {
        if track || dynamic {
            return None;
        }
        let mut p = Planner {
            nodes: prog_nodes,
            index: HashMap::new(),
            out: Vec::new(),
        };
        let r = p.node(root, 0)?;
        debug_assert_eq!(r, 0);
        Some(Flat {
            nodes: p.out.into_boxed_slice(),
        })
    }

    /// The validity pass over `instance` (see the module documentation for
    /// what the units and the verdict mean).
    pub(super) fn verdict(&self, prog: &Program, instance: &Value, budget: Budget) -> Verdict {
        match self.walk(instance) {
            (true, spent) => Flat::judge(prog, instance, budget, spent),
            (false, spent) => Verdict::Invalid { spent },
        }
    }

    /// The walk: whether the instance is valid by its keywords, and the
    /// units spent (up to the first failure found, for an invalid one).
    #[inline]
    pub(super) fn walk(&self, instance: &Value) -> (bool, u64) {
        let mut spent = 0u64;
        let valid = self.root(&mut spent, instance);
        (valid, spent)
    }

    /// The verdict on a valid instance that spent `spent` units.
    #[inline]
    pub(super) fn judge(prog: &Program, instance: &Value, budget: Budget, spent: u64) -> Verdict {
        if spent <= budget.floor {
            return Verdict::Valid {
                spent,
                limit: budget.floor,
            };
        }
        Flat::over_floor(prog, instance, budget, spent)
    }

    #[cold]
    #[inline(never)]
    fn over_floor(prog: &Program, instance: &Value, budget: Budget, spent: u64) -> Verdict {
        let limit = budget.limit(prog, instance);
        if spent <= limit {
            Verdict::Valid { spent, limit }
        } else {
            Verdict::Exhausted { spent, limit }
        }
    }

    /// The root: an object goes straight to [`Flat::object`].
    #[inline]
    fn root(&self, spent: &mut u64, instance: &Value) -> bool {
        match (instance, self.nodes.first()) {
            (Value::Object(o), Some(n)) => {
                *spent += n.units;
                self.object(spent, n, o, instance)
            }
            _ => self.root_other(spent, instance),
        }
    }

    #[inline(never)]
    fn root_other(&self, spent: &mut u64, instance: &Value) -> bool {
        self.node(spent, 0, instance)
    }

    /// One node on one value. Scalars are answered here (inlined into the
    /// member and item loops); objects and arrays go out of line.
    #[inline(always)]
    fn node(&self, spent: &mut u64, id: u32, inst: &Value) -> bool {
        let n = &self.nodes[id as usize];
        *spent += n.units;
        let ok = match inst {
            Value::Object(o) => return self.object(spent, n, o, inst),
            Value::Array(a) => return self.array(spent, n, a, inst),
            Value::String(s) => n.types & STR != 0 && n.str.as_deref().is_none_or(|p| p.holds(spent, s)),
            Value::Number(x) => {
                (n.types & NUM != 0 || n.types & INT != 0 && is_integer(x))
                    && n.num.as_deref().is_none_or(|p| p.holds(as_f64(x)))
            }
            Value::Bool(_) => n.types & BOOL != 0,
            Value::Null => n.types & NULL != 0,
        };
        ok && (n.values.is_empty() || values_hold(spent, &n.values, inst))
    }

    #[inline(never)]
    fn object(&self, spent: &mut u64, n: &FNode, o: &Map<String, Value>, inst: &Value) -> bool {
        if n.types & OBJ == 0 {
            return false;
        }
        if let Some(p) = n.obj.as_deref() {
            if !p.max.is_none_or(|m| max_properties_holds(o.len(), m))
                || !p.min.is_none_or(|m| min_properties_holds(o.len(), m))
            {
                return false;
            }
            // `additionalProperties`' unit per member, as the evaluator.
            *spent += p.per_member * o.len() as u64;
            let mut seen = 0u64;
            for (key, value) in o {
                let sub = match p.find(key) {
                    Some(i) => {
                        seen |= 1 << i;
                        p.props[i].sub
                    }
                    None if p.closed => return false,
                    None => p.additional.unwrap_or(NONE),
                };
                if sub != NONE && !self.node(spent, sub, value) {
                    return false;
                }
            }
            if seen & p.required != p.required || !p.other_required.is_empty() && !has_all(o, &p.other_required) {
                return false;
            }
        }
        n.values.is_empty() || values_hold(spent, &n.values, inst)
    }

    #[inline(never)]
    fn array(&self, spent: &mut u64, n: &FNode, a: &[Value], inst: &Value) -> bool {
        if n.types & ARR == 0 {
            return false;
        }
        if let Some(p) = n.arr.as_deref() {
            if !p.max.is_none_or(|m| max_items_holds(a.len(), m)) || !p.min.is_none_or(|m| min_items_holds(a.len(), m))
            {
                return false;
            }
            for (sub, item) in p.prefix.iter().zip(a) {
                if let Some(sub) = sub {
                    if !self.node(spent, *sub, item) {
                        return false;
                    }
                }
            }
            if p.at_most.is_some_and(|m| !closed_tuple_holds(a.len(), m)) {
                return false;
            }
            if let Some((sub, start)) = p.items {
                if !a.iter().skip(start).all(|item| self.node(spent, sub, item)) {
                    return false;
                }
            }
        }
        n.values.is_empty() || values_hold(spent, &n.values, inst)
    }
}

impl NumPlan {
    /// The rules of keywords/numbers.rs (an absent bound is an infinite
    /// one, which they allow).
    #[inline]
    fn holds(&self, x: f64) -> bool {
        maximum_holds(x, self.max)
            && minimum_holds(x, self.min)
            && exclusive_maximum_holds(x, self.exclusive_max)
            && exclusive_minimum_holds(x, self.exclusive_min)
            && self.multiple_of.is_none_or(|m| multiple_of_holds(x, m))
    }
}

#[inline(never)]
fn values_hold(spent: &mut u64, values: &[ValuePlan], inst: &Value) -> bool {
    values.iter().all(|v| v.holds(spent, inst))
}

#[inline(never)]
fn has_all(o: &Map<String, Value>, names: &[String]) -> bool {
    names.iter().all(|n| has_key(o, n))
}

impl StrPlan {
    #[inline]
    fn holds(&self, spent: &mut u64, s: &str) -> bool {
        self.lengths.holds(s) && (self.patterns.is_empty() || self.patterns_hold(spent, s))
    }

    #[inline(never)]
    fn patterns_hold(&self, spent: &mut u64, s: &str) -> bool {
        self.patterns.iter().all(|re| {
            // Linear-time engine only (planned so): its units depend on the
            // text alone.
            let (found, units) = re.test_counted(s).unwrap_or((false, 0));
            *spent += units;
            found
        })
    }
}

impl ValuePlan {
    #[inline]
    fn holds(&self, spent: &mut u64, inst: &Value) -> bool {
        let (ok, units) = match self {
            ValuePlan::Const(c) => const_holds(c, inst),
            ValuePlan::Enum(members) => members.find(inst),
        };
        *spent += units;
        ok
    }
}

struct Planner<'a> {
    nodes: &'a [Node],
    /// Program node → plan node.
    index: HashMap<NodeId, u32>,
    out: Vec<FNode>,
}

impl Planner<'_> {
    fn sub(&mut self, sub: Option<NodeId>, depth: usize) -> Option<Option<u32>> {
        match sub {
            None => Some(None),
            Some(id) => self.node(id, depth).map(Some),
        }
    }

    fn node(&mut self, id: NodeId, depth: usize) -> Option<u32> {
        if depth > MAX_DEPTH || self.out.len() >= u32::MAX as usize {
            return None;
        }
        if let Some(&i) = self.index.get(&id) {
            return Some(i);
        }
        let at = self.out.len() as u32;
        self.index.insert(id, at);
        // A placeholder, filled in below (children come after it).
        self.out.push(FNode {
            units: 0,
            types: ANY,
            num: None,
            str: None,
            obj: None,
            arr: None,
            values: Box::new([]),
        });
        let nodes = self.nodes;
        let (types, kws) = match &nodes[id] {
            Node::Bool(true) => return Some(at),
            Node::Bool(false) => {
                // No kind allowed.
                self.out[at as usize].types = 0;
                return Some(at);
            }
            Node::Meta => return None,
            Node::Obj { types, kws } => (types, kws),
        };
        let mut bits = if types.is_empty() { ANY } else { 0 };
        for t in types {
            bits |= match t {
                JType::Null => NULL,
                JType::Boolean => BOOL,
                JType::Object => OBJ,
                JType::Array => ARR,
                JType::String => STR,
                JType::Number => NUM,
                JType::Integer => INT,
            };
        }
        let mut num: Option<()> = None;
        // maximum, minimum, exclusiveMaximum, exclusiveMinimum, multipleOf.
        let mut bounds: [Option<f64>; 5] = [None; 5];
        // Strings: maxLength, minLength, the patterns.
        let mut str: Option<(Option<f64>, Option<f64>, Vec<JsRegex>)> = None;
        let mut obj: Option<ObjPlan> = None;
        let mut arr: Option<ArrPlan> = None;
        let mut values = Vec::new();
        // Each keyword at most once (a schema object names each once).
        fn once(slot: &mut Option<f64>, x: f64) -> Option<()> {
            slot.replace(x).is_none().then_some(())
        }
        let mut required: Option<&[String]> = None;
        let mut additional: Option<(&[String], bool, Option<NodeId>)> = None;
        let mut has_props = false;
        for kw in kws {
            match kw {
                Kw::Number(k) => {
                    num = Some(());
                    match *k {
                        NumberKw::Maximum(x) => once(&mut bounds[0], x)?,
                        NumberKw::Minimum(x) => once(&mut bounds[1], x)?,
                        NumberKw::ExclusiveMaximum(x) => once(&mut bounds[2], x)?,
                        NumberKw::ExclusiveMinimum(x) => once(&mut bounds[3], x)?,
                        NumberKw::MultipleOf(x) => once(&mut bounds[4], x)?,
                    }
                }
                Kw::String(k) => {
                    let (max, min, patterns) = str.get_or_insert_with(Default::default);
                    match k {
                        StringKw::MaxLength(x) => once(max, *x)?,
                        StringKw::MinLength(x) => once(min, *x)?,
                        StringKw::Pattern(re) if re.backtracking().is_none() => patterns.push(re.clone()),
                        StringKw::Pattern(_) => return None,
                    }
                }
                Kw::Value(ValueKw::Const(c)) => values.push(ValuePlan::Const(c.clone())),
                Kw::Value(ValueKw::Enum(members)) => values.push(ValuePlan::Enum(members.clone())),
                Kw::Object(k) => {
                    let p = obj.get_or_insert_with(ObjPlan::default);
                    match k {
                        ObjectKw::MaxProperties(x) => once(&mut p.max, *x)?,
                        ObjectKw::MinProperties(x) => once(&mut p.min, *x)?,
                        ObjectKw::Required(names) if required.is_none() => required = Some(names),
                        ObjectKw::Properties(list) if !has_props && list.len() <= 64 => {
                            has_props = true;
                            for (name, sub) in list {
                                let sub = self.sub(*sub, depth + 1)?;
                                obj.as_mut().expect("the object plan").props.push(Prop {
                                    name: name.as_str().into(),
                                    sub: sub.unwrap_or(NONE),
                                    next: EMPTY,
                                });
                            }
                        }
                        ObjectKw::AdditionalProperties {
                            sub,
                            is_false,
                            props,
                            patterns,
                        } if additional.is_none() && patterns.is_empty() => {
                            additional = Some((props, *is_false, *sub));
                        }
                        _ => return None,
                    }
                }
                Kw::Array(k) => {
                    let p = arr.get_or_insert_with(ArrPlan::default);
                    match k {
                        ArrayKw::MaxItems(x) => once(&mut p.max, *x)?,
                        ArrayKw::MinItems(x) => once(&mut p.min, *x)?,
                        ArrayKw::PrefixItems { subs } if p.prefix.is_empty() => {
                            let mut planned = Vec::with_capacity(subs.len());
                            for sub in subs {
                                planned.push(self.sub(*sub, depth + 1)?);
                            }
                            arr.as_mut().expect("the array plan").prefix = planned;
                        }
                        ArrayKw::Items { sub, is_false, after } if p.items.is_none() && p.at_most.is_none() => {
                            let Some(id) = sub else { continue };
                            let start = after.unwrap_or(0);
                            if *is_false && after.is_some() {
                                p.at_most = Some(start);
                            } else {
                                let sub = self.node(*id, depth + 1)?;
                                arr.as_mut().expect("the array plan").items = Some((sub, start));
                            }
                        }
                        _ => return None,
                    }
                }
                Kw::Ref(_) | Kw::Logic(_) | Kw::Unevaluated(_) => return None,
            }
        }
        if let Some((props, is_false, sub)) = additional {
            let p = obj.get_or_insert_with(ObjPlan::default);
            // The names it allows are the declared ones (one lookup answers
            // both keywords).
            let same_names = props.len() == p.props.len() && props.iter().zip(&p.props).all(|(a, b)| **a == *b.name);
            if !same_names && (sub.is_some() || is_false) {
                return None;
            }
            if is_false {
                p.closed = true;
            } else if let Some(id) = sub {
                let sub = self.node(id, depth + 1)?;
                obj.as_mut().expect("the object plan").additional = Some(sub);
            }
        }
        if let Some(names) = required {
            let p = obj.get_or_insert_with(ObjPlan::default);
            for name in names {
                match p.props.iter().position(|n| *n.name == **name) {
                    Some(i) => p.required |= 1 << i,
                    None => p.other_required.push(name.clone()),
                }
            }
        }
        if let Some(p) = obj.as_mut() {
            p.link();
            p.per_member = u64::from(p.closed || p.additional.is_some());
        }
        let n = &mut self.out[at as usize];
        n.units = 1 + kws.len() as u64;
        n.types = bits;
        n.num = num.map(|()| {
            let [max, min, emax, emin, multiple_of] = bounds;
            let d = NumPlan::default();
            Box::new(NumPlan {
                max: max.unwrap_or(d.max),
                min: min.unwrap_or(d.min),
                exclusive_max: emax.unwrap_or(d.exclusive_max),
                exclusive_min: emin.unwrap_or(d.exclusive_min),
                multiple_of,
            })
        });
        n.str = str.map(|(max, min, patterns)| {
            Box::new(StrPlan {
                lengths: Lengths::new(max, min),
                patterns,
            })
        });
        n.obj = obj.map(Box::new);
        n.arr = arr.map(Box::new);
        n.values = values.into_boxed_slice();
        Some(at)
    }
}
