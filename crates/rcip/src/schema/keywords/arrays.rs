//! Arrays: `maxItems`, `minItems`, `uniqueItems`, `prefixItems`, `items` and
//! `contains` (with `minContains` / `maxContains`).

use crate::schema::compile::{join, static_merge, Compiler, Cx, St};
use crate::schema::eval::{num, Ann, Evaluator, Path, ALL_ITEMS};
use crate::schema::node::{Kw, Sub};
use crate::schema::value::{as_f64, js_equal, js_hash, JType};
use serde_json::{Map, Value};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// How `uniqueItems` compares items, as the reference decides it from the
/// `items` schema written beside it (its `type`, plus `null` for
/// `nullable: true`, applied to every item, those under `prefixItems`
/// included).
pub(crate) enum Unique {
    /// `items` declares types, none of them `object` or `array`: only the
    /// items of those types are compared, by their value as an object key
    /// (so, with the single type `string`, the name `"__proto__"` never
    /// counts as a duplicate: it is not a key of a plain object).
    Typed(Vec<JType>),
    /// Every item, by deep equality.
    All,
}

pub(crate) enum ArrayKw {
    MaxItems(f64),
    MinItems(f64),
    UniqueItems(Unique),
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
}

impl<'a> Compiler<'a> {
    pub(in crate::schema) fn compile_arrays(&mut self, m: &'a Map<String, Value>, cx: &mut Cx, kws: &mut Vec<Kw>) {
        let ptr = cx.ptr.clone();
        let at = |k: &str| join(&ptr, k);
        let num = |k: &str| m.get(k).and_then(|v| v.as_f64());
        if let Some(x) = num("maxItems") {
            kws.push(Kw::Array(ArrayKw::MaxItems(x)));
        }
        if let Some(x) = num("minItems") {
            kws.push(Kw::Array(ArrayKw::MinItems(x)));
        }
        if m.get("uniqueItems") == Some(&Value::Bool(true)) {
            let types = match m.get("items") {
                Some(Value::Object(items)) => declared_types(items),
                _ => Vec::new(),
            };
            let typed = !types.is_empty() && !types.iter().any(|t| matches!(t, JType::Object | JType::Array));
            kws.push(Kw::Array(ArrayKw::UniqueItems(if typed {
                Unique::Typed(types)
            } else {
                Unique::All
            })));
        }
        let prefix_len = match m.get("prefixItems") {
            Some(Value::Array(list)) => {
                let n = list.len();
                let full = num("minItems") == Some(n as f64)
                    && (num("maxItems") == Some(n as f64) || m.get("items") == Some(&Value::Bool(false)));
                if !full {
                    self.error(
                        at("prefixItems"),
                        "strict tuple",
                        format!(
                            "\"prefixItems\" describes a {n}-item tuple, so it needs \"minItems\": {n} and either \"maxItems\": {n} or \"items\": false"
                        ),
                    );
                }
                let mut subs = Vec::new();
                for (i, s) in list.iter().enumerate() {
                    let p = format!("{}/{i}", at("prefixItems"));
                    if self.trivial(s, &p) {
                        subs.push(None);
                    } else {
                        let child = cx.data(p, Vec::new());
                        subs.push(Some(self.node(s, child)));
                    }
                }
                kws.push(Kw::Array(ArrayKw::PrefixItems { subs }));
                if n > 0 {
                    cx.ist = static_merge(cx.ist, St::Static);
                }
                Some(n)
            }
            _ => None,
        };
        if let Some(s) = m.get("items") {
            let is_false = *s == Value::Bool(false);
            let sub = if self.trivial(s, &at("items")) {
                None
            } else {
                let child = cx.data(at("items"), Vec::new());
                Some(self.node(s, child))
            };
            kws.push(Kw::Array(ArrayKw::Items {
                sub,
                is_false,
                after: prefix_len,
            }));
            cx.ist = St::All;
        }
        if let Some(s) = m.get("contains") {
            let min = num("minContains").unwrap_or(1.0);
            let max = num("maxContains");
            if max.is_none() && min == 0.0 {
                self.error(
                    at("minContains"),
                    "contains",
                    "\"minContains\": 0 without \"maxContains\" makes \"contains\" always pass".to_string(),
                );
            } else if max.is_some_and(|max| min > max) {
                self.error(
                    at("minContains"),
                    "contains",
                    "\"minContains\" is greater than \"maxContains\", so no array can pass".to_string(),
                );
                kws.push(Kw::Array(ArrayKw::Contains {
                    sub: None,
                    min,
                    max,
                    always_fail: true,
                }));
            } else {
                let sub = if self.trivial(s, &at("contains")) {
                    None
                } else {
                    let child = cx.data(at("contains"), Vec::new());
                    let n = self.node(s, child);
                    cx.ist = St::All;
                    Some(n)
                };
                kws.push(Kw::Array(ArrayKw::Contains {
                    sub,
                    min,
                    max,
                    always_fail: false,
                }));
            }
        }
        for k in ["maxContains", "minContains"] {
            if m.contains_key(k) && !m.contains_key("contains") {
                self.error(at(k), "contains", format!("\"{k}\" without \"contains\" has no effect"));
            }
        }
    }
}

// The rules of the count keywords, written once (issue 35): the general
// evaluator (and the check mode through it) and the flat plan
// (`Flat::array`, flat.rs) call them.

/// `maxItems`: at most `limit` items.
#[inline(always)]
pub(crate) fn max_items_holds(items: usize, limit: f64) -> bool {
    (items as f64) <= limit
}

/// `minItems`: at least `limit` items.
#[inline(always)]
pub(crate) fn min_items_holds(items: usize, limit: f64) -> bool {
    (items as f64) >= limit
}

/// `items: false` after a `prefixItems` of `tuple` schemas: no item after
/// the tuple.
#[inline(always)]
pub(crate) fn closed_tuple_holds(items: usize, tuple: usize) -> bool {
    items <= tuple
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_array<'i>(
        &mut self,
        k: &ArrayKw,
        inst: &'i Value,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        let Value::Array(a) = inst else { return true };
        match k {
            ArrayKw::MaxItems(m) => {
                let ok = max_items_holds(a.len(), *m);
                if !ok {
                    self.issue(path, "maxItems", format!("must have at most {} items", num(*m)));
                }
                ok
            }
            ArrayKw::MinItems(m) => {
                let ok = min_items_holds(a.len(), *m);
                if !ok {
                    self.issue(path, "minItems", format!("must have at least {} items", num(*m)));
                }
                ok
            }
            ArrayKw::UniqueItems(how) => {
                if !self.charge(a.len() as u64) {
                    return false;
                }
                let Some((i, j)) = duplicate(a, how) else { return true };
                self.issue(
                    path,
                    "uniqueItems",
                    format!("items {i} and {j} are equal; items must be unique"),
                );
                false
            }
            ArrayKw::PrefixItems { subs } => {
                ann.add_items(subs.len());
                let mut valid = true;
                for (i, sub) in subs.iter().enumerate().take(a.len()) {
                    let p = Path::Index(path, i);
                    if !self.sub(*sub, &a[i], &p).0 {
                        valid = false;
                        if self.short {
                            return false;
                        }
                    }
                }
                valid
            }
            ArrayKw::Items { sub, is_false, after } => {
                ann.items = ALL_ITEMS;
                ann.items_undef = false;
                let Some(id) = sub else { return true };
                let start = after.unwrap_or(0);
                if *is_false && after.is_some() {
                    let ok = closed_tuple_holds(a.len(), start);
                    if !ok {
                        self.issue(
                            path,
                            "items",
                            format!("must have at most {start} items (no items after the tuple)"),
                        );
                    }
                    return ok;
                }
                let mut valid = true;
                for (i, item) in a.iter().enumerate().skip(start) {
                    let p = Path::Index(path, i);
                    if !self.node(*id, item, &p).0 {
                        valid = false;
                        if self.short {
                            return false;
                        }
                    }
                }
                valid
            }
            ArrayKw::Contains {
                sub,
                min,
                max,
                always_fail,
            } => self.contains(a, *sub, *min, *max, *always_fail, path, ann),
        }
    }

    #[allow(clippy::too_many_arguments)] // the keyword's fields, unpacked by the one match that calls it
    fn contains<'i>(
        &mut self,
        a: &'i [Value],
        sub: Sub,
        min: f64,
        max: Option<f64>,
        always_fail: bool,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        let report = |ev: &mut Self| {
            let message = match max {
                Some(max) => format!("must contain between {} and {} matching items", num(min), num(max)),
                None => format!("must contain at least {} matching item(s)", num(min)),
            };
            ev.issue(path, "contains", message);
        };
        if always_fail {
            report(self);
            return false;
        }
        let len = a.len() as f64;
        let Some(id) = sub else {
            let ok = len >= min && max.is_none_or(|max| len <= max);
            if !ok {
                report(self);
            }
            return ok;
        };
        ann.items = ALL_ITEMS;
        ann.items_undef = false;
        let mark = self.mark();
        let mut valid;
        let mut count = 0f64;
        self.droppable += 1;
        let mut scan = |ev: &mut Self, valid: &mut bool| {
            for (i, item) in a.iter().enumerate() {
                let p = Path::Index(path, i);
                if ev.node(id, item, &p).0 {
                    count += 1.0;
                    match max {
                        None => {
                            if count >= min {
                                *valid = true;
                                break;
                            }
                        }
                        Some(max) => {
                            if count > max {
                                *valid = false;
                                break;
                            }
                            if count >= min {
                                *valid = true;
                            }
                        }
                    }
                }
            }
        };
        if min == 0.0 {
            valid = true;
            if max.is_some() && !a.is_empty() {
                scan(self, &mut valid);
            }
        } else {
            valid = false;
            scan(self, &mut valid);
        }
        self.droppable -= 1;
        if valid {
            self.reset(mark);
        } else {
            report(self);
        }
        valid
    }
}

/// The types a schema object declares (`type`, plus `null` for
/// `nullable: true`), as the reference reads them for `uniqueItems`.
fn declared_types(m: &Map<String, Value>) -> Vec<JType> {
    let mut types: Vec<JType> = match m.get("type") {
        Some(Value::String(t)) => JType::parse(t).into_iter().collect(),
        Some(Value::Array(list)) => list.iter().filter_map(|t| t.as_str().and_then(JType::parse)).collect(),
        _ => Vec::new(),
    };
    if !types.contains(&JType::Null) && m.get("nullable") == Some(&Value::Bool(true)) {
        types.push(JType::Null);
    }
    types
}

/// A scalar item as an object key of the reference's typed comparison.
#[derive(Hash, PartialEq, Eq)]
enum ScalarKey<'i> {
    Null,
    Bool(bool),
    /// The bits of the double, `-0` as `0`.
    Number(u64),
    String(&'i str),
}

/// The first duplicate the reference finds, scanning from the last item
/// down: `(i, j)` with `i < j`. Linear time (hashing); see [`Unique`].
fn duplicate(a: &[Value], how: &Unique) -> Option<(usize, usize)> {
    if a.len() < 2 {
        return None;
    }
    let state = ahash::RandomState::new();
    match how {
        Unique::Typed(types) => {
            let mut seen: HashMap<ScalarKey<'_>, usize, ahash::RandomState> =
                HashMap::with_capacity_and_hasher(a.len(), state);
            for j in (0..a.len()).rev() {
                let item = &a[j];
                if !types.iter().any(|t| t.matches(item)) {
                    continue;
                }
                let key = match item {
                    Value::Null => ScalarKey::Null,
                    Value::Bool(b) => ScalarKey::Bool(*b),
                    Value::Number(n) => ScalarKey::Number((as_f64(n) + 0.0).to_bits()),
                    // With one type, the reference uses the string itself as
                    // the key, and "__proto__" is not a key of a plain object.
                    Value::String(s) if types.len() == 1 && s == "__proto__" => continue,
                    Value::String(s) => ScalarKey::String(s),
                    Value::Array(_) | Value::Object(_) => continue,
                };
                match seen.entry(key) {
                    Entry::Occupied(e) => return Some((j, *e.get())),
                    Entry::Vacant(e) => {
                        e.insert(j);
                    }
                }
            }
            None
        }
        Unique::All => {
            // Items by hash; items with the same hash chained in `chain`
            // (index of the item, next link or usize::MAX).
            let mut heads: HashMap<u64, usize, ahash::RandomState> =
                HashMap::with_capacity_and_hasher(a.len(), ahash::RandomState::new());
            let mut chain: Vec<(usize, usize)> = Vec::with_capacity(a.len());
            for j in (0..a.len()).rev() {
                let h = js_hash(&a[j], &state);
                let head = heads.entry(h).or_insert(usize::MAX);
                // Deep equality settles a hash collision.
                let mut link = *head;
                while link != usize::MAX {
                    let (k, next) = chain[link];
                    if js_equal(&a[k], &a[j]) {
                        return Some((j, k));
                    }
                    link = next;
                }
                chain.push((j, *head));
                *head = chain.len() - 1;
            }
            None
        }
    }
}
