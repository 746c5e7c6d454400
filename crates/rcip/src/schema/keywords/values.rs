//! Values: `const` and `enum` (deep equality with numbers as doubles).
//!
//! Each comparison is charged to the validation budget by the pairs of
//! values it visits (issue 27): `const` one unit per pair
//! [`js_equal_counted`] compares; an `enum` of up to [`LINEAR_ENUM`]
//! members compares the members in order (the units of each comparison);
//! a larger one is looked up by hash ([`Members`]): one unit per instance
//! node hashed (at most the largest member's node count), plus the units
//! of comparing the members of the same hash.

use crate::schema::compile::{join, Compiler, Cx};
use crate::schema::eval::{count_nodes, same, short_json, Evaluator, Path};
use crate::schema::node::Kw;
use crate::schema::value::{js_equal_counted, js_hash, js_hash_within};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) enum ValueKw {
    Const(Value),
    Enum(Arc<Members>),
}

/// Enums of at most this many members are searched in order; larger ones
/// through their hash index.
pub(crate) const LINEAR_ENUM: usize = 8;

/// The members of an `enum`, with a hash index when there are more than
/// [`LINEAR_ENUM`]: an instance is hashed once (consistently with deep
/// equality, [`js_hash`]) and compared only with the members of the same
/// hash, so a lookup costs the instance's size, not the enum's.
pub(crate) struct Members {
    pub(crate) list: Vec<Value>,
    index: Option<Index>,
    /// Without an index: the string members, each with its position + 1
    /// (the units of finding it), for string instances (the common enum).
    strings: Box<[(Box<str>, u32)]>,
}

struct Index {
    /// Keyed per compiled schema, so an instance cannot choose collisions.
    state: ahash::RandomState,
    /// Member hash → indices of the members with that hash, in order.
    buckets: HashMap<u64, Vec<u32>, ahash::RandomState>,
    /// The node count of the largest member: an instance with more nodes
    /// equals none, so hashing stops there.
    max_nodes: u64,
}

impl Members {
    pub(crate) fn new(list: Vec<Value>) -> Members {
        let index = (list.len() > LINEAR_ENUM).then(|| {
            let state = ahash::RandomState::new();
            let mut buckets: HashMap<u64, Vec<u32>, ahash::RandomState> =
                HashMap::with_capacity_and_hasher(list.len(), ahash::RandomState::new());
            let mut max_nodes = 0;
            for (i, v) in list.iter().enumerate() {
                buckets.entry(js_hash(v, &state)).or_default().push(i as u32);
                max_nodes = max_nodes.max(count_nodes(v));
            }
            Index {
                state,
                buckets,
                max_nodes,
            }
        });
        let strings = if index.is_none() {
            let found = list.iter().enumerate();
            found
                .filter_map(|(i, v)| v.as_str().map(|s| (Box::from(s), i as u32 + 1)))
                .collect()
        } else {
            Box::default()
        };
        Members { list, index, strings }
    }

    /// Whether `inst` equals a member, and the units that took (see the
    /// module documentation). The answer is the linear search's.
    #[inline]
    pub(crate) fn find(&self, inst: &Value) -> (bool, u64) {
        let mut units = 0;
        match &self.index {
            // A string against a short list (the common enum): each
            // comparison visits one pair, so the units are the members
            // compared, as `js_equal_counted` counts them.
            None if inst.is_string() => {
                let s = inst.as_str().unwrap_or_default();
                match self.strings.iter().find(|(m, _)| same(m, s)) {
                    Some((_, units)) => (true, u64::from(*units)),
                    None => (false, self.list.len() as u64),
                }
            }
            None => {
                let found = self.list.iter().any(|v| js_equal_counted(inst, v, &mut units));
                (found, units)
            }
            Some(ix) => {
                let mut left = ix.max_nodes;
                let hash = js_hash_within(inst, &ix.state, &mut left);
                units += ix.max_nodes - left;
                let Some(hash) = hash else { return (false, units) };
                let found = ix.buckets.get(&hash).is_some_and(|list| {
                    list.iter()
                        .any(|&i| js_equal_counted(inst, &self.list[i as usize], &mut units))
                });
                (found, units)
            }
        }
    }
}

/// `const`: whether `inst` equals `c`, and the units that took.
#[inline]
pub(crate) fn const_holds(c: &Value, inst: &Value) -> (bool, u64) {
    if let (Value::String(a), Value::String(b)) = (c, inst) {
        return (same(a, b), 1);
    }
    let mut units = 0;
    (js_equal_counted(inst, c, &mut units), units)
}

impl Compiler<'_> {
    pub(in crate::schema) fn compile_values(&mut self, m: &Map<String, Value>, cx: &Cx, kws: &mut Vec<Kw>) {
        if let Some(v) = m.get("const") {
            kws.push(Kw::Value(ValueKw::Const(v.clone())));
        }
        if let Some(Value::Array(list)) = m.get("enum") {
            if list.is_empty() {
                self.error(
                    join(&cx.ptr, "enum"),
                    "enum",
                    "\"enum\" must list at least one value".to_string(),
                );
            }
            kws.push(Kw::Value(ValueKw::Enum(Arc::new(Members::new(list.clone())))));
        }
    }
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_value(&mut self, k: &ValueKw, inst: &Value, path: &Path<'_>) -> bool {
        match k {
            ValueKw::Const(c) => {
                let (ok, units) = const_holds(c, inst);
                if !self.charge(units) {
                    return false;
                }
                if !ok {
                    self.issue(path, "const", format!("must be exactly {}", short_json(c)));
                }
                ok
            }
            ValueKw::Enum(members) => {
                let (ok, units) = members.find(inst);
                if !self.charge(units) {
                    return false;
                }
                if !ok {
                    let shown: Vec<String> = members.list.iter().take(10).map(short_json).collect();
                    self.issue(path, "enum", format!("must be one of {}", shown.join(", ")));
                }
                ok
            }
        }
    }
}
