//! `unevaluatedProperties` and `unevaluatedItems`: applied last, to what the
//! other keywords of the schema (and the subschemas they merged) did not
//! evaluate ([`Ann`]).

use crate::schema::compile::{join, Compiler, Cx, St};
use crate::schema::eval::{Ann, Evaluator, Path, ALL_ITEMS};
use crate::schema::node::{Kw, Sub};
use serde_json::{Map, Value};
use std::collections::HashSet;

pub(crate) enum UnevaluatedKw {
    Properties { sub: Sub, is_false: bool },
    Items { sub: Sub, is_false: bool },
}

impl<'a> Compiler<'a> {
    pub(in crate::schema) fn compile_unevaluated(&mut self, m: &'a Map<String, Value>, cx: &mut Cx, kws: &mut Vec<Kw>) {
        let ptr = cx.ptr.clone();
        let at = |k: &str| join(&ptr, k);
        if let (Some(s), false) = (m.get("unevaluatedProperties"), cx.pst == St::All) {
            self.track = true;
            let is_false = *s == Value::Bool(false);
            let sub = if is_false || self.trivial(s, &at("unevaluatedProperties")) {
                None
            } else {
                let child = cx.data(at("unevaluatedProperties"), Vec::new());
                Some(self.node(s, child))
            };
            kws.push(Kw::Unevaluated(UnevaluatedKw::Properties { sub, is_false }));
            cx.pst = St::All;
        }
        if let (Some(s), false) = (m.get("unevaluatedItems"), cx.ist == St::All) {
            self.track = true;
            let is_false = *s == Value::Bool(false);
            let sub = if is_false || self.trivial(s, &at("unevaluatedItems")) {
                None
            } else {
                let child = cx.data(at("unevaluatedItems"), Vec::new());
                Some(self.node(s, child))
            };
            kws.push(Kw::Unevaluated(UnevaluatedKw::Items { sub, is_false }));
            cx.ist = St::All;
        }
    }
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_unevaluated<'i>(
        &mut self,
        k: &UnevaluatedKw,
        inst: &'i Value,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        match k {
            UnevaluatedKw::Properties { sub, is_false } => {
                let Value::Object(o) = inst else { return true };
                let mut valid = true;
                if !ann.all_props {
                    // One unit per member looked up (issue 27), each
                    // looked up in a set: linear in the object.
                    if !self.charge(o.len() as u64) {
                        return false;
                    }
                    let evaluated = Evaluated::new(&ann.props);
                    for (key, value) in o {
                        if evaluated.contains(key) {
                            continue;
                        }
                        if *is_false {
                            valid = false;
                            self.issue(
                                path,
                                "unevaluatedProperties",
                                format!("property \"{key}\" is not allowed (not evaluated by any keyword)"),
                            );
                        } else if let Some(id) = sub {
                            let p = Path::Key(path, key);
                            if !self.node(*id, value, &p).0 {
                                valid = false;
                            }
                        }
                    }
                }
                ann.all_props = true;
                ann.props.clear();
                valid
            }
            UnevaluatedKw::Items { sub, is_false } => {
                let Value::Array(a) = inst else { return true };
                let from = ann.items;
                let undef = ann.items_undef;
                ann.items = ALL_ITEMS;
                ann.items_undef = false;
                if undef || from == ALL_ITEMS || a.len() <= from {
                    return true;
                }
                if *is_false {
                    self.issue(
                        path,
                        "unevaluatedItems",
                        format!("must have at most {from} items (later items are not evaluated by any keyword)"),
                    );
                    return false;
                }
                let mut valid = true;
                if let Some(id) = sub {
                    for (i, item) in a.iter().enumerate().skip(from) {
                        let p = Path::Index(path, i);
                        if !self.node(*id, item, &p).0 {
                            valid = false;
                        }
                    }
                }
                valid
            }
        }
    }
}

/// The names other keywords evaluated, as `unevaluatedProperties` looks
/// them up: a scan of a short list, a set (keyed hash: the names are the
/// consumer's) for a longer one, so that the lookups of an object's
/// members take time linear in the object (issue 27).
enum Evaluated<'a> {
    Few(&'a [&'a str]),
    Many(HashSet<&'a str, ahash::RandomState>),
}

impl<'a> Evaluated<'a> {
    fn new(names: &'a [&'a str]) -> Evaluated<'a> {
        if names.len() <= 16 {
            return Evaluated::Few(names);
        }
        let mut set = HashSet::with_capacity_and_hasher(names.len(), ahash::RandomState::new());
        set.extend(names.iter().copied());
        Evaluated::Many(set)
    }

    fn contains(&self, key: &str) -> bool {
        match self {
            Evaluated::Few(names) => names.contains(&key),
            Evaluated::Many(set) => set.contains(key),
        }
    }
}
