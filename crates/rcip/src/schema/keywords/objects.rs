//! Objects: `maxProperties`, `minProperties`, `required`, `propertyNames`,
//! `additionalProperties`, `dependencies`, `properties`,
//! `patternProperties`, `dependentRequired` and `dependentSchemas`.

use crate::schema::compile::{join, static_merge, Compiler, Cx, St};
use crate::schema::eval::{has_key, num, Ann, Evaluator, Path, SMALL};
use crate::schema::node::{Kw, Lose, NodeId, Sub};
use crate::schema::regex::JsRegex;
use crate::schema::value::JType;
use serde_json::{Map, Value};

pub(crate) enum ObjectKw {
    MaxProperties(f64),
    MinProperties(f64),
    Required(Vec<String>),
    PropertyNames(NodeId),
    AdditionalProperties {
        sub: Sub,
        is_false: bool,
        props: Vec<String>,
        patterns: Vec<JsRegex>,
    },
    /// `dependencies`, `dependentRequired` (property lists) and
    /// `dependentSchemas` (schemas); `keyword` names the issues.
    PropertyDeps {
        keyword: &'static str,
        deps: Vec<(String, Vec<String>)>,
    },
    SchemaDeps(Vec<(String, NodeId, Lose)>),
    Properties(Vec<(String, Sub)>),
    PatternProperties(Vec<(JsRegex, Sub)>),
}

fn string_list(list: &[Value]) -> Vec<String> {
    list.iter().filter_map(|v| v.as_str().map(String::from)).collect()
}

impl<'a> Compiler<'a> {
    pub(in crate::schema) fn compile_objects(&mut self, m: &'a Map<String, Value>, cx: &mut Cx, kws: &mut Vec<Kw>) {
        let ptr = cx.ptr.clone();
        let at = |k: &str| join(&ptr, k);
        let num = |k: &str| m.get(k).and_then(|v| v.as_f64());
        if let Some(x) = num("maxProperties") {
            kws.push(Kw::Object(ObjectKw::MaxProperties(x)));
        }
        if let Some(x) = num("minProperties") {
            kws.push(Kw::Object(ObjectKw::MinProperties(x)));
        }
        if let Some(Value::Array(list)) = m.get("required") {
            let names = string_list(list);
            if !names.is_empty() {
                let props = m.get("properties").and_then(|p| p.as_object());
                for name in &names {
                    let declared = props.is_some_and(|p| p.contains_key(name));
                    if !declared && !cx.defined.borrow().contains(name) {
                        self.error(
                            at("required"),
                            "strict required",
                            format!("required property \"{name}\" is not declared in \"properties\" here"),
                        );
                    }
                }
                kws.push(Kw::Object(ObjectKw::Required(names)));
            }
        }
        if let Some(s) = m.get("propertyNames") {
            if !self.trivial(s, &at("propertyNames")) {
                let child = cx.data(at("propertyNames"), vec![JType::String]);
                let n = self.node(s, child);
                kws.push(Kw::Object(ObjectKw::PropertyNames(n)));
            }
        }
        let prop_names: Vec<String> = m
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(s) = m.get("additionalProperties") {
            cx.pst = St::All;
            if self.trivial(s, &at("additionalProperties")) {
                // Still marks every property evaluated.
                kws.push(Kw::Object(ObjectKw::AdditionalProperties {
                    sub: None,
                    is_false: false,
                    props: Vec::new(),
                    patterns: Vec::new(),
                }));
            } else {
                let is_false = *s == Value::Bool(false);
                let mut patterns = Vec::new();
                if let Some(Value::Object(pp)) = m.get("patternProperties") {
                    for p in pp.keys() {
                        if let Some(re) = self.regex(p, join(&at("patternProperties"), p)) {
                            patterns.push(re);
                        }
                    }
                }
                let sub = if is_false {
                    None
                } else {
                    let child = cx.data(at("additionalProperties"), Vec::new());
                    Some(self.node(s, child))
                };
                kws.push(Kw::Object(ObjectKw::AdditionalProperties {
                    sub,
                    is_false,
                    props: prop_names.clone(),
                    patterns,
                }));
            }
        }
        if let Some(Value::Object(deps)) = m.get("dependencies") {
            let mut lists = Vec::new();
            let mut schemas = Vec::new();
            for (name, dep) in deps {
                match dep {
                    Value::Array(list) => {
                        let names = string_list(list);
                        if !names.is_empty() {
                            lists.push((name.clone(), names));
                        }
                    }
                    s => {
                        let p = join(&at("dependencies"), name);
                        if !self.trivial(s, &p) {
                            let n = self.node(s, cx.same(p));
                            schemas.push((name.clone(), n, self.merge_cond(cx)));
                        }
                    }
                }
            }
            kws.push(Kw::Object(ObjectKw::PropertyDeps {
                keyword: "dependencies",
                deps: lists,
            }));
            kws.push(Kw::Object(ObjectKw::SchemaDeps(schemas)));
        }
        if let Some(Value::Object(props)) = m.get("properties") {
            cx.defined.borrow_mut().extend(props.keys().cloned());
            if !props.is_empty() {
                cx.pst = static_merge(cx.pst, St::Static);
            }
            let mut list = Vec::new();
            for (name, s) in props {
                let p = join(&at("properties"), name);
                if self.trivial(s, &p) {
                    list.push((name.clone(), None));
                } else {
                    let child = cx.data(p, Vec::new());
                    let n = self.node(s, child);
                    cx.defined.borrow_mut().insert(name.clone());
                    list.push((name.clone(), Some(n)));
                }
            }
            kws.push(Kw::Object(ObjectKw::Properties(list)));
        }
        if let Some(Value::Object(pats)) = m.get("patternProperties") {
            let mut trivial = Vec::new();
            for (p, s) in pats {
                trivial.push(self.trivial(s, &join(&at("patternProperties"), p)));
            }
            let skip = pats.is_empty() || (trivial.iter().all(|t| *t) && cx.pst == St::All);
            if !skip {
                let mut list = Vec::new();
                for ((p, s), triv) in pats.iter().zip(trivial) {
                    let pp = join(&at("patternProperties"), p);
                    let Some(re) = self.regex(p, pp.clone()) else { continue };
                    for name in &prop_names {
                        if JsRegex::matches_without_u(p, name) == Some(true) {
                            self.error(
                                join(&at("properties"), name),
                                "matching properties",
                                format!("property \"{name}\" is also matched by patternProperties \"{p}\"; declare it in one place"),
                            );
                        }
                    }
                    let sub = if triv {
                        None
                    } else {
                        let child = cx.data(pp, Vec::new());
                        Some(self.node(s, child))
                    };
                    list.push((re, sub));
                }
                kws.push(Kw::Object(ObjectKw::PatternProperties(list)));
                if cx.pst != St::All {
                    cx.pst = St::Name;
                }
            }
        }
        if let Some(Value::Object(deps)) = m.get("dependentRequired") {
            let mut lists = Vec::new();
            for (name, dep) in deps {
                if let Value::Array(list) = dep {
                    let names = string_list(list);
                    if !names.is_empty() {
                        lists.push((name.clone(), names));
                    }
                }
            }
            kws.push(Kw::Object(ObjectKw::PropertyDeps {
                keyword: "dependentRequired",
                deps: lists,
            }));
        }
        if let Some(Value::Object(deps)) = m.get("dependentSchemas") {
            let mut schemas = Vec::new();
            for (name, s) in deps {
                let p = join(&at("dependentSchemas"), name);
                if !self.trivial(s, &p) {
                    let n = self.node(s, cx.same(p));
                    schemas.push((name.clone(), n, self.merge_cond(cx)));
                }
            }
            kws.push(Kw::Object(ObjectKw::SchemaDeps(schemas)));
        }
    }
}

// The rules of the count keywords, written once (issue 35): the general
// evaluator (and the check mode through it), the closed-object plan
// (`check_closed`, eval.rs) and the flat plan (`Flat::object`, flat.rs)
// call them.

/// `maxProperties`: at most `limit` members.
#[inline(always)]
pub(crate) fn max_properties_holds(members: usize, limit: f64) -> bool {
    (members as f64) <= limit
}

/// `minProperties`: at least `limit` members.
#[inline(always)]
pub(crate) fn min_properties_holds(members: usize, limit: f64) -> bool {
    (members as f64) >= limit
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_object<'i>(
        &mut self,
        k: &ObjectKw,
        inst: &'i Value,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        if let ObjectKw::AdditionalProperties { .. } = k {
            // Marks every property evaluated, whatever the instance's type.
            ann.all_props = true;
            ann.props.clear();
        }
        let Value::Object(o) = inst else { return true };
        match k {
            ObjectKw::MaxProperties(m) => {
                let ok = max_properties_holds(o.len(), *m);
                if !ok {
                    self.issue(
                        path,
                        "maxProperties",
                        format!("must have at most {} properties", num(*m)),
                    );
                }
                ok
            }
            ObjectKw::MinProperties(m) => {
                let ok = min_properties_holds(o.len(), *m);
                if !ok {
                    self.issue(
                        path,
                        "minProperties",
                        format!("must have at least {} properties", num(*m)),
                    );
                }
                ok
            }
            ObjectKw::Required(names) => {
                let mut valid = true;
                for name in names {
                    if !has_key(o, name) {
                        valid = false;
                        if !self.collect {
                            return false;
                        }
                        self.issue(path, "required", format!("property \"{name}\" is required"));
                    }
                }
                valid
            }
            ObjectKw::PropertyNames(id) => {
                let mut valid = true;
                for key in o.keys() {
                    let name = Value::String(key.clone());
                    // A temporary value: a new epoch keeps memoised results
                    // for it apart from any other at the same address.
                    let outer = self.name_epoch;
                    self.epochs += 1;
                    self.name_epoch = self.epochs;
                    let ok = self.node(*id, &name, path).0;
                    self.name_epoch = outer;
                    if !ok {
                        valid = false;
                        self.issue(path, "propertyNames", format!("property name \"{key}\" is not allowed"));
                        if self.short {
                            return false;
                        }
                    }
                }
                valid
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
                // One unit per member looked up (issue 27).
                if !self.charge(o.len() as u64) {
                    return false;
                }
                let mut valid = true;
                for (key, value) in o {
                    if props.iter().any(|p| p == key) || patterns.iter().any(|re| self.regex_match(re, key)) {
                        continue;
                    }
                    if *is_false {
                        valid = false;
                        if !self.collect {
                            return false;
                        }
                        self.issue(
                            path,
                            "additionalProperties",
                            format!("property \"{key}\" is not allowed"),
                        );
                    } else if let Some(id) = sub {
                        let p = Path::Key(path, key);
                        if !self.node(*id, value, &p).0 {
                            valid = false;
                            if self.short {
                                return false;
                            }
                        }
                    }
                }
                valid
            }
            ObjectKw::PropertyDeps { keyword, deps } => {
                let mut valid = true;
                for (name, needed) in deps {
                    if !has_key(o, name) {
                        continue;
                    }
                    for dep in needed {
                        if !has_key(o, dep) {
                            valid = false;
                            if !self.collect {
                                return false;
                            }
                            self.issue(
                                path,
                                keyword,
                                format!("property \"{dep}\" is required when \"{name}\" is present"),
                            );
                        }
                    }
                }
                valid
            }
            ObjectKw::SchemaDeps(deps) => {
                let mut valid = true;
                for (name, id, lose) in deps {
                    if !o.contains_key(name) {
                        ann.skip(*lose);
                        continue;
                    }
                    let (ok, a) = self.node(*id, inst, path);
                    if ok {
                        ann.merge(a);
                    } else {
                        ann.skip(*lose);
                        valid = false;
                        if self.short {
                            return false;
                        }
                    }
                }
                valid
            }
            ObjectKw::Properties(list) => self.properties(list, o, path, ann),
            ObjectKw::PatternProperties(list) => {
                let mut valid = true;
                for (re, sub) in list {
                    for (key, value) in o {
                        if !self.regex_match(re, key) {
                            continue;
                        }
                        if let Some(id) = sub {
                            let p = Path::Key(path, key);
                            if !self.node(*id, value, &p).0 {
                                valid = false;
                                if self.short {
                                    return false;
                                }
                            }
                        }
                        if self.prog.track && !ann.all_props {
                            ann.props.push(key.as_str());
                        }
                    }
                }
                valid
            }
        }
    }

    fn properties<'i>(
        &mut self,
        list: &[(String, Sub)],
        o: &'i Map<String, Value>,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        let mut valid = true;
        if self.short && o.len() <= SMALL {
            // Validity only: walk the instance and find each key among
            // the declared names, without hashing.
            for (key, value) in o {
                let Some((_, sub)) = list.iter().find(|(n, _)| n == key) else {
                    continue;
                };
                if let Some(id) = sub {
                    if !self.node(*id, value, &Path::Key(path, key)).0 {
                        return false;
                    }
                }
            }
            return true;
        }
        for (name, sub) in list {
            let Some((key, value)) = o.get_key_value(name) else {
                continue;
            };
            if self.prog.track && !ann.all_props {
                ann.props.push(key.as_str());
            }
            if let Some(id) = sub {
                let p = Path::Key(path, key);
                if !self.node(*id, value, &p).0 {
                    valid = false;
                    if self.short {
                        return false;
                    }
                }
            }
        }
        valid
    }
}
