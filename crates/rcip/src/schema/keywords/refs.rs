//! References: `$ref`, `$dynamicRef` / `$dynamicAnchor` and their 2019-09
//! forms `$recursiveRef` / `$recursiveAnchor` (and the refusal of `id`).
//!
//! Compile: a `$ref` resolves to a node, either its target inlined at this
//! use (no reference keyword inside) or the target's own function, compiled
//! once ([`Compiler::env_node`]). Evaluation: a reference that comes back to
//! the same node for the same instance value is reported instead of
//! overflowing the stack (the reference overflows there).

use crate::schema::compile::{join, static_merge, Compiler, Cx, St, Target};
use crate::schema::eval::{Ann, Evaluator, Memo, Path};
use crate::schema::node::{Kw, Node, NodeId};
use serde_json::{Map, Value};

pub(crate) enum RefKw {
    /// Sets the dynamic anchor `name` to the function `target` unless set.
    DynamicAnchor { name: String, target: NodeId },
    /// Calls the dynamic anchor `anchor` if the compile saw it, else `fallback`
    /// (the function the keyword belongs to).
    DynamicRef {
        anchor: String,
        registered: bool,
        fallback: NodeId,
    },
    /// `memo`: more than one `$ref` names the target, so its result is
    /// kept per instance location (set when the compile ends).
    Ref { target: NodeId, memo: bool },
}

impl<'a> Compiler<'a> {
    /// `$dynamicAnchor`, `$dynamicRef`, `$recursiveAnchor`, `$recursiveRef`,
    /// `$ref` and `id`, in the reference's order.
    pub(in crate::schema) fn compile_refs(
        &mut self,
        schema: &'a Value,
        m: &'a Map<String, Value>,
        cx: &mut Cx,
        kws: &mut Vec<Kw>,
    ) {
        let ptr = cx.ptr.clone();
        let at = |k: &str| join(&ptr, k);
        if let Some(Value::String(name)) = m.get("$dynamicAnchor") {
            self.dyn_registered.insert(name.clone());
            self.dynamic = true;
            let target = if cx.env_root {
                cx.env
            } else {
                self.env_node(schema, cx.ptr.clone(), cx.base.clone())
            };
            kws.push(Kw::Ref(RefKw::DynamicAnchor {
                name: name.clone(),
                target,
            }));
        }
        if let Some(Value::String(r)) = m.get("$dynamicRef") {
            match r.strip_prefix('#') {
                Some(anchor) => {
                    kws.push(Kw::Ref(RefKw::DynamicRef {
                        anchor: anchor.to_string(),
                        registered: self.dyn_registered.contains(anchor),
                        fallback: cx.env,
                    }));
                    cx.pst = static_merge(cx.pst, St::Name);
                    cx.ist = static_merge(cx.ist, St::Name);
                }
                None => self.error(
                    at("$dynamicRef"),
                    "dynamic reference",
                    format!("\"{r}\": $dynamicRef supports only a fragment (\"#name\")"),
                ),
            }
        }
        if m.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
            self.dyn_registered.insert(String::new());
            self.dynamic = true;
            let target = if cx.env_root {
                cx.env
            } else {
                self.env_node(schema, cx.ptr.clone(), cx.base.clone())
            };
            kws.push(Kw::Ref(RefKw::DynamicAnchor {
                name: String::new(),
                target,
            }));
        }
        if let Some(Value::String(r)) = m.get("$recursiveRef") {
            if r == "#" {
                kws.push(Kw::Ref(RefKw::DynamicRef {
                    anchor: String::new(),
                    registered: self.dyn_registered.contains(""),
                    fallback: cx.env,
                }));
            } else {
                self.error(
                    at("$recursiveRef"),
                    "dynamic reference",
                    format!("\"{r}\": $recursiveRef supports only \"#\""),
                );
            }
        }
        if m.contains_key("$ref") {
            if let Some(kw) = self.compile_ref(m, cx) {
                kws.push(kw);
            }
        }
        if m.contains_key("id") {
            self.error(
                at("id"),
                "id",
                "\"id\" is not supported: use \"$id\" to identify a schema".to_string(),
            );
        }
    }

    /// A `$ref`: `None` when it does not resolve (the error is recorded).
    pub(in crate::schema) fn compile_ref(&mut self, m: &'a Map<String, Value>, cx: &mut Cx) -> Option<Kw> {
        let Some(Value::String(reference)) = m.get("$ref") else {
            return None;
        };
        let ptr = join(&cx.ptr, "$ref");
        if (reference == "#" || reference == "#/") && cx.base == self.root_base {
            let root = self.envs[&(String::new(), self.root_base.clone())];
            self.last_static = self.env_static.get(&root).copied().unwrap_or((St::Name, St::Name));
            self.merge_static(cx);
            return Some(Kw::Ref(RefKw::Ref {
                target: root,
                memo: false,
            }));
        }
        let target = match self.resolve_ref(&cx.base, reference) {
            Ok(Some(t)) => t,
            Ok(None) => {
                self.error(
                    ptr,
                    "reference",
                    format!("\"{reference}\" does not resolve inside this schema (remote references are not loaded)"),
                );
                return None;
            }
            Err(()) => {
                self.error(
                    ptr,
                    "reference",
                    format!("resolving \"{reference}\" never ends (references loop through identifiers)"),
                );
                return None;
            }
        };
        let id = self.target_node(target, cx);
        self.merge_static(cx);
        Some(Kw::Ref(RefKw::Ref {
            target: id,
            memo: false,
        }))
    }

    fn target_node(&mut self, target: Target, cx: &mut Cx) -> NodeId {
        match target {
            Target::Meta => {
                self.last_static = (St::Undef, St::Undef);
                if let Some(id) = self.meta_node {
                    return id;
                }
                let id = self.push(Node::Meta);
                self.meta_node = Some(id);
                self.last_static = (St::Undef, St::Undef);
                id
            }
            Target::Local { ptr, base } => {
                let schema = self.value_at(&ptr).unwrap_or(&Value::Bool(true));
                if !crate::schema::compile::has_ref_keyword(schema) {
                    // Inlined at this use: compiled in this context.
                    let child = Cx {
                        ptr,
                        data_types: Vec::new(),
                        env_root: false,
                        pst: St::Undef,
                        ist: St::Undef,
                        ..cx.clone()
                    };
                    return self.node(schema, child);
                }
                let id = self.env_node(schema, ptr, base);
                self.last_static = self.env_static.get(&id).copied().unwrap_or((St::Name, St::Name));
                id
            }
        }
    }
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_ref<'i>(
        &mut self,
        k: &RefKw,
        inst: &'i Value,
        path: &Path<'_>,
        ann: &mut Ann<'i>,
    ) -> bool {
        match k {
            RefKw::DynamicAnchor { name, target } => {
                self.dyn_anchors.entry(name.clone()).or_insert(*target);
                true
            }
            RefKw::DynamicRef {
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
            RefKw::Ref { target, memo: false } => self.follow(*target, inst, path, "$ref", ann),
            RefKw::Ref { target, memo: true } => self.follow_memoised(*target, inst, path, ann),
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

    /// A `$ref` whose target other `$ref`s name too: evaluated once per
    /// instance location, so references that fan out (each level naming
    /// the next twice) cost time linear in the schema, not exponential.
    /// A later use at the same location takes the stored result; its issues
    /// are reported once (**rcip**, docs/SCHEMA-DISAGREEMENTS.md): again only
    /// if the first report was dropped since (a passing `anyOf` branch) or
    /// was never made (evaluated under `not` or `if`).
    fn follow_memoised<'i>(&mut self, target: NodeId, inst: &'i Value, path: &Path<'_>, ann: &mut Ann<'i>) -> bool {
        let key = (target, inst as *const Value as usize, self.name_epoch);
        if let Some(m) = self.memo.get(&key) {
            // A replay: one unit, plus one per evaluated property it
            // restores (issue 27).
            let units = 1 + m.props.len() as u64;
            if !self.charge(units) {
                return false;
            }
        }
        if let Some(m) = self.memo.get_mut(&key) {
            if m.valid || !self.collect {
                ann.merge(m.ann(inst));
                return m.valid;
            }
            if let Some(list) = &m.issues {
                let present = self.issues.get(m.at..m.at + list.len()) == Some(&list[..]);
                let replay = (!present).then(|| list.clone());
                if replay.is_some() {
                    m.at = self.issues.len();
                }
                ann.merge(m.ann(inst));
                for issue in replay.into_iter().flatten() {
                    self.push_issue(issue);
                }
                return false;
            }
            // Evaluated before without collecting issues: evaluate again.
        }
        let mark = self.mark();
        let mut a = Ann::default();
        let ok = self.follow(target, inst, path, "$ref", &mut a);
        if self.exhausted {
            return false;
        }
        let props = if self.prog.track {
            a.props.iter().map(|p| p.to_string()).collect()
        } else {
            Vec::new()
        };
        let memo = Memo {
            valid: ok,
            all_props: a.all_props,
            props,
            items: a.items,
            items_undef: a.items_undef,
            // Only a complete list can be replayed: with issues left out
            // the target is evaluated again at its next use.
            issues: (self.collect && self.omitted == mark.omitted).then(|| self.issues[mark.len..].to_vec()),
            at: mark.len,
        };
        self.memo.insert(key, memo);
        ann.merge(a);
        ok
    }
}
