//! Applicators on the same instance: `not`, `anyOf`, `oneOf`, `allOf` and
//! `if`/`then`/`else`. Their merges of evaluated properties and items follow
//! the reference (a merge that happens only on success, [`Lose`]).

use crate::schema::compile::{join, Compiler, Cx};
use crate::schema::eval::{Ann, Evaluator, Path};
use crate::schema::node::{Kw, Lose, NodeId, Sub};
use serde_json::{Map, Value};

pub(crate) enum LogicKw {
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
}

impl<'a> Compiler<'a> {
    pub(in crate::schema) fn compile_logic(&mut self, m: &'a Map<String, Value>, cx: &mut Cx, kws: &mut Vec<Kw>) {
        let ptr = cx.ptr.clone();
        let at = |k: &str| join(&ptr, k);
        if let Some(s) = m.get("not") {
            let sub = self.sub(s, cx.same(at("not")));
            kws.push(Kw::Logic(LogicKw::Not(sub)));
        }
        if let Some(Value::Array(list)) = m.get("anyOf") {
            let mut nodes = Vec::new();
            for (i, s) in list.iter().enumerate() {
                let n = self.node(s, cx.same(format!("{}/{i}", at("anyOf"))));
                nodes.push((n, self.merge_cond(cx)));
            }
            kws.push(Kw::Logic(LogicKw::AnyOf(nodes)));
        }
        if let Some(Value::Array(list)) = m.get("oneOf") {
            let mut subs = Vec::new();
            for (i, s) in list.iter().enumerate() {
                match self.sub(s, cx.same(format!("{}/{i}", at("oneOf")))) {
                    Some(n) => subs.push((Some(n), self.merge_cond(cx))),
                    None => subs.push((None, Lose::default())),
                }
            }
            kws.push(Kw::Logic(LogicKw::OneOf(subs)));
        }
        if let Some(Value::Array(list)) = m.get("allOf") {
            let mut nodes = Vec::new();
            for (i, s) in list.iter().enumerate() {
                if let Some(n) = self.sub(s, cx.same(format!("{}/{i}", at("allOf")))) {
                    self.merge_static(cx);
                    nodes.push(n);
                }
            }
            kws.push(Kw::Logic(LogicKw::AllOf(nodes)));
        }
        if let Some(cond) = m.get("if") {
            if !m.contains_key("then") && !m.contains_key("else") {
                self.error(
                    at("if"),
                    "if/then/else",
                    "\"if\" without \"then\" or \"else\" has no effect".to_string(),
                );
            }
            let has_then = m.get("then").is_some_and(|s| !self.trivial(s, &at("then")));
            let has_else = m.get("else").is_some_and(|s| !self.trivial(s, &at("else")));
            if has_then || has_else {
                let cond = self.node(cond, cx.same(at("if")));
                self.merge_static(cx);
                let mut then_lose = Lose::default();
                let mut els_lose = Lose::default();
                let then = if has_then {
                    let n = self.node(&m["then"], cx.same(at("then")));
                    then_lose = self.merge_cond(cx);
                    Some(n)
                } else {
                    None
                };
                let els = if has_else {
                    let n = self.node(&m["else"], cx.same(at("else")));
                    els_lose = self.merge_cond(cx);
                    Some(n)
                } else {
                    None
                };
                kws.push(Kw::Logic(LogicKw::If {
                    cond,
                    then,
                    els,
                    then_lose,
                    els_lose,
                }));
            }
        }
        for k in ["then", "else"] {
            if m.contains_key(k) && !m.contains_key("if") {
                self.error(at(k), "if/then/else", format!("\"{k}\" without \"if\" has no effect"));
            }
        }
    }
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_logic<'i>(
        &mut self,
        k: &LogicKw,
        inst: &'i Value,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        match k {
            LogicKw::Not(sub) => {
                let ok = match sub {
                    Some(id) => !self.quiet(*id, inst, path).0,
                    None => false,
                };
                if !ok {
                    self.issue(path, "not", "must not match the schema under \"not\"".to_string());
                }
                ok
            }
            LogicKw::AnyOf(list) => {
                let mark = self.mark();
                let mut any = false;
                self.droppable += 1;
                for &(id, lose) in list {
                    let (ok, a) = self.node(id, inst, path);
                    if ok {
                        any = true;
                        ann.merge(a);
                        if self.short {
                            break;
                        }
                    } else {
                        ann.skip(lose);
                    }
                }
                self.droppable -= 1;
                if any {
                    self.reset(mark);
                } else {
                    self.issue(path, "anyOf", "must match at least one schema of \"anyOf\"".to_string());
                }
                any
            }
            LogicKw::OneOf(list) => self.one_of(list, inst, path, ann),
            LogicKw::AllOf(list) => {
                let mut valid = true;
                for &id in list {
                    let (ok, a) = self.node(id, inst, path);
                    ann.merge(a);
                    if !ok {
                        valid = false;
                        if self.short {
                            return false;
                        }
                    }
                }
                valid
            }
            LogicKw::If {
                cond,
                then,
                els,
                then_lose,
                els_lose,
            } => {
                let (holds, a) = self.quiet(*cond, inst, path);
                ann.merge(a);
                let (branch, name, lose, other_lose) = if holds {
                    (then, "then", *then_lose, *els_lose)
                } else {
                    (els, "else", *els_lose, *then_lose)
                };
                ann.skip(other_lose);
                let Some(id) = branch else { return true };
                let (ok, a) = self.node(*id, inst, path);
                if ok {
                    ann.merge(a);
                } else {
                    ann.skip(lose);
                    self.issue(path, "if", format!("must match the \"{name}\" schema"));
                }
                ok
            }
        }
    }

    fn one_of<'i>(&mut self, list: &[(Sub, Lose)], inst: &'i Value, path: &Path<'_>, ann: &mut Ann<'i>) -> bool {
        let mark = self.mark();
        let mut valid = false;
        let mut passing: Vec<usize> = Vec::new();
        let mut stopped_at = list.len();
        self.droppable += 1;
        for (i, &(sub, lose)) in list.iter().enumerate() {
            let (ok, a) = self.sub(sub, inst, path);
            if i > 0 && ok && valid {
                // A second match settles it: later branches are not evaluated.
                valid = false;
                passing.push(i);
                ann.skip(lose);
                stopped_at = i + 1;
                break;
            } else if ok {
                valid = true;
                passing = vec![i];
                ann.merge(a);
            } else {
                ann.skip(lose);
            }
        }
        self.droppable -= 1;
        for &(_, lose) in &list[stopped_at..] {
            ann.skip(lose);
        }
        if valid {
            self.reset(mark);
        } else if passing.len() > 1 {
            let shown: Vec<String> = passing.iter().map(|i| i.to_string()).collect();
            self.issue(
                path,
                "oneOf",
                format!(
                    "must match exactly one schema of \"oneOf\", but matches {}",
                    shown.join(" and ")
                ),
            );
        } else {
            self.issue(
                path,
                "oneOf",
                "must match exactly one schema of \"oneOf\", but matches none".to_string(),
            );
        }
        valid
    }
}
