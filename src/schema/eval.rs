//! Evaluation of a compiled [`Program`] with the reference's `allErrors`
//! reporting: which issues each keyword keeps or drops, at which instance
//! path, and how evaluated properties and items flow to `unevaluated*`.

use super::node::{Kw, Lose, Node, NodeId, Program, Sub};
use super::value::{as_f64, escape_token, is_multiple_of, js_equal, js_length};
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

const ALL_ITEMS: usize = usize::MAX;

/// What a schema evaluated (for `unevaluatedProperties`/`unevaluatedItems`).
#[derive(Default)]
struct Ann<'i> {
    all_props: bool,
    props: Vec<&'i str>,
    /// Items evaluated from the start (`ALL_ITEMS`: every item).
    items: usize,
    /// The reference's item count is undefined (see [`Lose`]): it then
    /// checks no item against `unevaluatedItems`.
    items_undef: bool,
}

impl<'i> Ann<'i> {
    fn merge(&mut self, other: Ann<'i>) {
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

    fn add_items(&mut self, n: usize) {
        if self.items_undef {
            self.items = n;
            self.items_undef = false;
        } else {
            self.items = self.items.max(n);
        }
    }

    /// A merge that happens only on success did not happen.
    fn skip(&mut self, lose: Lose) {
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
    prog: &'p Program,
    /// Collect issues (else only validity is computed).
    collect: bool,
    /// Stop at the first failing keyword (only when nothing depends on
    /// evaluating everything).
    short: bool,
    issues: Vec<ValidationIssue>,
    dyn_anchors: HashMap<String, NodeId>,
    /// References being followed, with the instance each one applies to: the
    /// same pair twice means a loop that consumes no data.
    following: Vec<(NodeId, *const Value)>,
}

impl<'p> Evaluator<'p> {
    pub fn is_valid(prog: &'p Program, instance: &Value) -> bool {
        let mut ev = Evaluator {
            prog,
            collect: false,
            short: !prog.track && !prog.dynamic,
            issues: Vec::new(),
            dyn_anchors: HashMap::new(),
            following: Vec::new(),
        };
        ev.node(prog.root, instance, &Path::Root).0
    }

    pub fn issues(prog: &'p Program, instance: &Value) -> Vec<ValidationIssue> {
        let mut ev = Evaluator {
            prog,
            collect: true,
            short: false,
            issues: Vec::new(),
            dyn_anchors: HashMap::new(),
            following: Vec::new(),
        };
        ev.node(prog.root, instance, &Path::Root);
        ev.issues
    }

    fn issue(&mut self, path: &Path<'_>, keyword: &str, message: String) {
        if self.collect {
            self.issues.push(ValidationIssue {
                instance_path: path.render(),
                keyword: keyword.to_string(),
                message,
            });
        }
    }

    /// Evaluates a subschema whose own issues are discarded.
    fn quiet<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        let mark = self.issues.len();
        let collect = self.collect;
        self.collect = false;
        let r = self.node(id, inst, path);
        self.collect = collect;
        self.issues.truncate(mark);
        r
    }

    fn sub<'i>(&mut self, sub: Sub, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        match sub {
            Some(id) => self.node(id, inst, path),
            None => (true, Ann::default()),
        }
    }

    fn node<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        // Deep payloads and recursive schemas: grow the stack instead of
        // overflowing a host thread's.
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.node_inner(id, inst, path))
    }

    fn node_inner<'i>(&mut self, id: NodeId, inst: &'i Value, path: &Path<'_>) -> (bool, Ann<'i>) {
        let prog = self.prog;
        match &prog.nodes[id] {
            Node::Bool(true) => (true, Ann::default()),
            Node::Bool(false) => {
                self.issue(
                    path,
                    "false schema",
                    "no value is allowed here (the schema is false)".to_string(),
                );
                (false, Ann::default())
            }
            Node::Meta => (self.meta(inst, path), Ann::default()),
            Node::Obj { types, kws } => {
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

    fn keyword<'i>(&mut self, kw: &Kw, inst: &'i Value, path: &Path<'_>, ann: &mut Ann<'i>) -> bool {
        match kw {
            Kw::DynamicAnchor { name, target } => {
                self.dyn_anchors.entry(name.clone()).or_insert(*target);
                true
            }
            Kw::DynamicRef {
                anchor,
                registered,
                fallback,
            } => {
                let target = if *registered {
                    self.dyn_anchors.get(anchor).copied().unwrap_or(*fallback)
                } else {
                    *fallback
                };
                self.follow(target, inst, path, "$dynamicRef", ann)
            }
            Kw::Ref(target) => self.follow(*target, inst, path, "$ref", ann),
            Kw::Const(c) => {
                let ok = js_equal(inst, c);
                if !ok {
                    self.issue(path, "const", format!("must be exactly {}", short_json(c)));
                }
                ok
            }
            Kw::Enum(list) => {
                let ok = list.iter().any(|v| js_equal(inst, v));
                if !ok {
                    let shown: Vec<String> = list.iter().take(10).map(short_json).collect();
                    self.issue(path, "enum", format!("must be one of {}", shown.join(", ")));
                }
                ok
            }
            Kw::Not(sub) => {
                let ok = match sub {
                    Some(id) => !self.quiet(*id, inst, path).0,
                    None => false,
                };
                if !ok {
                    self.issue(path, "not", "must not match the schema under \"not\"".to_string());
                }
                ok
            }
            Kw::AnyOf(list) => {
                let mark = self.issues.len();
                let mut any = false;
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
                if any {
                    self.issues.truncate(mark);
                } else {
                    self.issue(path, "anyOf", "must match at least one schema of \"anyOf\"".to_string());
                }
                any
            }
            Kw::OneOf(list) => {
                let mark = self.issues.len();
                let mut valid = false;
                let mut passing: Vec<usize> = Vec::new();
                let mut stopped_at = list.len();
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
                for &(_, lose) in &list[stopped_at..] {
                    ann.skip(lose);
                }
                if valid {
                    self.issues.truncate(mark);
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
            Kw::AllOf(list) => {
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
            Kw::If {
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
            Kw::Maximum(m) => self.compare(inst, path, "maximum", |x| x <= *m, "<=", *m),
            Kw::Minimum(m) => self.compare(inst, path, "minimum", |x| x >= *m, ">=", *m),
            Kw::ExclusiveMaximum(m) => self.compare(inst, path, "exclusiveMaximum", |x| x < *m, "<", *m),
            Kw::ExclusiveMinimum(m) => self.compare(inst, path, "exclusiveMinimum", |x| x > *m, ">", *m),
            Kw::MultipleOf(m) => {
                let Value::Number(n) = inst else { return true };
                let ok = is_multiple_of(as_f64(n), *m);
                if !ok {
                    self.issue(path, "multipleOf", format!("must be a multiple of {}", num(*m)));
                }
                ok
            }
            Kw::MaxLength(m) => {
                let Value::String(s) = inst else { return true };
                let ok = (js_length(s) as f64) <= *m;
                if !ok {
                    self.issue(
                        path,
                        "maxLength",
                        format!("must be at most {} characters long", num(*m)),
                    );
                }
                ok
            }
            Kw::MinLength(m) => {
                let Value::String(s) = inst else { return true };
                let ok = (js_length(s) as f64) >= *m;
                if !ok {
                    self.issue(
                        path,
                        "minLength",
                        format!("must be at least {} characters long", num(*m)),
                    );
                }
                ok
            }
            Kw::Pattern(re) => {
                let Value::String(s) = inst else { return true };
                let ok = re.is_match(s);
                if !ok {
                    self.issue(path, "pattern", format!("must match the pattern /{}/", re.source()));
                }
                ok
            }
            Kw::MaxItems(m) => {
                let Value::Array(a) = inst else { return true };
                let ok = (a.len() as f64) <= *m;
                if !ok {
                    self.issue(path, "maxItems", format!("must have at most {} items", num(*m)));
                }
                ok
            }
            Kw::MinItems(m) => {
                let Value::Array(a) = inst else { return true };
                let ok = (a.len() as f64) >= *m;
                if !ok {
                    self.issue(path, "minItems", format!("must have at least {} items", num(*m)));
                }
                ok
            }
            Kw::UniqueItems => {
                let Value::Array(a) = inst else { return true };
                for j in (0..a.len()).rev() {
                    for i in (0..j).rev() {
                        if js_equal(&a[i], &a[j]) {
                            self.issue(
                                path,
                                "uniqueItems",
                                format!("items {i} and {j} are equal; items must be unique"),
                            );
                            return false;
                        }
                    }
                }
                true
            }
            Kw::PrefixItems { subs } => {
                let Value::Array(a) = inst else { return true };
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
            Kw::Items { sub, is_false, after } => {
                let Value::Array(a) = inst else { return true };
                ann.items = ALL_ITEMS;
                ann.items_undef = false;
                let Some(id) = sub else { return true };
                let start = after.unwrap_or(0);
                if *is_false && after.is_some() {
                    let ok = a.len() <= start;
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
            Kw::Contains {
                sub,
                min,
                max,
                always_fail,
            } => {
                let Value::Array(a) = inst else { return true };
                self.contains(a, *sub, *min, *max, *always_fail, path, ann)
            }
            Kw::MaxProperties(m) => {
                let Value::Object(o) = inst else { return true };
                let ok = (o.len() as f64) <= *m;
                if !ok {
                    self.issue(
                        path,
                        "maxProperties",
                        format!("must have at most {} properties", num(*m)),
                    );
                }
                ok
            }
            Kw::MinProperties(m) => {
                let Value::Object(o) = inst else { return true };
                let ok = (o.len() as f64) >= *m;
                if !ok {
                    self.issue(
                        path,
                        "minProperties",
                        format!("must have at least {} properties", num(*m)),
                    );
                }
                ok
            }
            Kw::Required(names) => {
                let Value::Object(o) = inst else { return true };
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
            Kw::PropertyNames(id) => {
                let Value::Object(o) = inst else { return true };
                let mut valid = true;
                for key in o.keys() {
                    let name = Value::String(key.clone());
                    if !self.node(*id, &name, path).0 {
                        valid = false;
                        self.issue(path, "propertyNames", format!("property name \"{key}\" is not allowed"));
                        if self.short {
                            return false;
                        }
                    }
                }
                valid
            }
            Kw::AdditionalProperties {
                sub,
                is_false,
                props,
                patterns,
            } => {
                ann.all_props = true;
                ann.props.clear();
                let Value::Object(o) = inst else { return true };
                if sub.is_none() && !is_false {
                    return true;
                }
                let mut valid = true;
                for (key, value) in o {
                    if props.iter().any(|p| p == key) || patterns.iter().any(|re| re.is_match(key)) {
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
            Kw::PropertyDeps { keyword, deps } => {
                let Value::Object(o) = inst else { return true };
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
            Kw::SchemaDeps(deps) => {
                let Value::Object(o) = inst else { return true };
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
            Kw::Properties(list) => {
                let Value::Object(o) = inst else { return true };
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
            Kw::PatternProperties(list) => {
                let Value::Object(o) = inst else { return true };
                let mut valid = true;
                for (re, sub) in list {
                    for (key, value) in o {
                        if !re.is_match(key) {
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
            Kw::UnevaluatedProperties { sub, is_false } => {
                let Value::Object(o) = inst else { return true };
                let mut valid = true;
                if !ann.all_props {
                    for (key, value) in o {
                        if ann.props.iter().any(|p| *p == key) {
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
            Kw::UnevaluatedItems { sub, is_false } => {
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

    /// Follows a reference, refusing one that loops back to the same schema
    /// for the same data (the reference overflows its stack there).
    fn follow<'i>(
        &mut self,
        target: NodeId,
        inst: &'i Value,
        path: &Path<'_>,
        keyword: &str,
        ann: &mut Ann<'i>,
    ) -> bool {
        let key = (target, inst as *const Value);
        if self.following.contains(&key) {
            self.issue(
                path,
                keyword,
                "the schema refers to itself for the same value without end".to_string(),
            );
            return false;
        }
        self.following.push(key);
        let (ok, a) = self.node(target, inst, path);
        self.following.pop();
        ann.merge(a);
        ok
    }

    #[allow(clippy::too_many_arguments)]
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
        let mark = self.issues.len();
        let mut valid;
        let mut count = 0f64;
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
        if valid {
            self.issues.truncate(mark);
        } else {
            report(self);
        }
        valid
    }

    fn compare(
        &mut self,
        inst: &Value,
        path: &Path<'_>,
        keyword: &str,
        ok: impl Fn(f64) -> bool,
        op: &str,
        limit: f64,
    ) -> bool {
        let Value::Number(n) = inst else { return true };
        let good = ok(as_f64(n));
        if !good {
            self.issue(path, keyword, format!("must be {op} {}", num(limit)));
        }
        good
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
const SMALL: usize = 16;

/// Whether `o` has the property `name`: a plain scan for small objects
/// (cheaper than hashing the name), a map lookup otherwise.
fn has_key(o: &serde_json::Map<String, Value>, name: &str) -> bool {
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

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e21 {
        format!("{}", x as i128)
    } else {
        format!("{x}")
    }
}

fn short_json(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}
