//! Snapshots (`RcipApplicationSnapshot`) and capability filters
//! (`RcipCapabilityFilter`), PIPELINE.md section 2.
//!
//! A snapshot is immutable and shared: the runtime builds one per revision
//! and hands out the same `Arc` until the next refresh. Building one costs
//! no work per capability: it records which capabilities are bound (a
//! shared bit set, copied only when a binding changes) and the answers of
//! the availability callbacks sampled by the refresh; the JSON text is
//! built on first read and cached.

use super::types::{Availability, NulString, SemanticContext};
use crate::catalog::{Catalog, Effect, PROTOCOL_VERSION};
use once_cell::sync::OnceCell;
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::Arc;

/// The live state of a bound capability (a sampled availability).
#[derive(Clone, Debug)]
pub(crate) enum Entry {
    /// Bound, with no availability callback: `{"available": true}`.
    BoundAvailable,
    /// Bound, with the answer of its availability callback.
    Bound(Availability),
}

impl Entry {
    pub(crate) fn is_available(&self) -> bool {
        match self {
            Entry::BoundAvailable => true,
            Entry::Bound(a) => a.available,
        }
    }

    /// Writes `,"bound":..,"available":..,"availability"?:..,"relevance":..}`.
    pub(crate) fn write_live_fields(&self, current: bool, out: &mut String) {
        let r = match self {
            Entry::BoundAvailable => EntryRef::BoundAvailable,
            Entry::Bound(a) => EntryRef::Bound(a),
        };
        write_live_fields(r, current, out)
    }
}

/// A borrowed [`Entry`].
#[derive(Clone, Copy)]
pub(crate) enum EntryRef<'a> {
    Unbound,
    BoundAvailable,
    Bound(&'a Availability),
}

impl EntryRef<'_> {
    fn is_available(self) -> bool {
        match self {
            EntryRef::Unbound => false,
            EntryRef::BoundAvailable => true,
            EntryRef::Bound(a) => a.available,
        }
    }

    fn write_live_fields(self, current: bool, out: &mut String) {
        write_live_fields(self, current, out)
    }
}

/// Writes `,"bound":..,"available":..,"availability"?:..,"relevance":..}`.
fn write_live_fields(entry: EntryRef<'_>, current: bool, out: &mut String) {
    match entry {
        EntryRef::Unbound => out.push_str(",\"bound\":false,\"available\":false"),
        EntryRef::BoundAvailable => {
            out.push_str(",\"bound\":true,\"available\":true,\"availability\":{\"available\":true}")
        }
        EntryRef::Bound(a) => {
            out.push_str(if a.available {
                ",\"bound\":true,\"available\":true"
            } else {
                ",\"bound\":true,\"available\":false"
            });
            out.push_str(",\"availability\":");
            a.write_json(out);
        }
    }
    out.push_str(if current {
        ",\"relevance\":\"current\"}"
    } else {
        ",\"relevance\":\"other\"}"
    });
}

/// Which capabilities (by catalog index) are bound.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BoundSet(Vec<u64>);

impl BoundSet {
    pub(crate) fn new(n: usize) -> BoundSet {
        BoundSet(vec![0; n.div_ceil(64)])
    }

    pub(crate) fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    pub(crate) fn set(&mut self, i: usize, bound: bool) {
        if bound {
            self.0[i / 64] |= 1 << (i % 64);
        } else {
            self.0[i / 64] &= !(1 << (i % 64));
        }
    }
}

/// An immutable snapshot of one revision.
pub struct Snapshot {
    pub(crate) revision: u64,
    pub(crate) catalog: Catalog,
    pub(crate) context: Arc<SemanticContext>,
    bound: Arc<BoundSet>,
    /// Availability answers other than a plain `{"available": true}` of the
    /// bound capabilities that have a check, sorted by capability index.
    samples: Option<Arc<Vec<(u32, Availability)>>>,
    json: OnceCell<NulString>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("revision", &self.revision).finish()
    }
}

impl Snapshot {
    pub(crate) fn new(
        revision: u64,
        catalog: Catalog,
        context: Arc<SemanticContext>,
        bound: Arc<BoundSet>,
        samples: Option<Arc<Vec<(u32, Availability)>>>,
    ) -> Snapshot {
        debug_assert!(samples.as_ref().is_none_or(|s| s.windows(2).all(|w| w[0].0 < w[1].0)));
        Snapshot {
            revision,
            catalog,
            context,
            bound,
            samples,
            json: OnceCell::new(),
        }
    }

    /// Each capability's entry, in catalog order.
    fn entries(&self) -> impl Iterator<Item = EntryRef<'_>> + '_ {
        let mut samples = self.samples.iter().flat_map(|s| s.iter()).peekable();
        (0..self.catalog.capabilities().len()).map(move |i| {
            if !self.bound.contains(i) {
                return EntryRef::Unbound;
            }
            while samples.peek().is_some_and(|(j, _)| (*j as usize) < i) {
                samples.next();
            }
            match samples.peek() {
                Some((j, a)) if *j as usize == i => EntryRef::Bound(a),
                _ => EntryRef::BoundAvailable,
            }
        })
    }

    /// The snapshot's revision.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// True when `other` describes the same live state: the same catalog,
    /// semantic context, bindings and sampled availability, so every list
    /// and filter gives the same capabilities with the same live fields
    /// (only the revision may differ). Shared parts are compared by
    /// pointer first, so two snapshots of one refresh that changed nothing
    /// compare without a pass over the capabilities. Used by the MCP
    /// session to decide `notifications/tools/list_changed` without
    /// rendering the tool list (**rcip**).
    pub fn same_live_state(&self, other: &Snapshot) -> bool {
        let samples = match (&self.samples, &other.samples) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        };
        samples
            && Arc::ptr_eq(&self.catalog.inner, &other.catalog.inner)
            && (Arc::ptr_eq(&self.bound, &other.bound) || self.bound == other.bound)
            && (Arc::ptr_eq(&self.context, &other.context) || self.context.json() == other.context.json())
    }

    /// The semantic context the snapshot was taken with.
    pub fn context(&self) -> &SemanticContext {
        &self.context
    }

    /// The snapshot as JSON text (`RcipApplicationSnapshot`), built once.
    pub fn json(&self) -> &str {
        self.nul_json().as_str()
    }

    /// The JSON text, NUL-terminated, owned by the snapshot.
    #[inline]
    pub fn json_c_str(&self) -> &std::ffi::CStr {
        self.nul_json().as_c_str()
    }

    pub(crate) fn nul_json(&self) -> &NulString {
        self.json.get_or_init(|| NulString::new(self.build_json()))
    }

    fn build_json(&self) -> String {
        let caps = self.catalog.capabilities();
        let mut out = String::with_capacity(256 + caps.iter().map(|c| c.snapshot_prefix.len() + 96).sum::<usize>());
        let _ = write!(
            out,
            "{{\"protocolVersion\":\"{PROTOCOL_VERSION}\",\"revision\":{},",
            self.revision
        );
        out.push_str(&self.catalog.inner.snapshot_head);
        out.push_str(",\"context\":");
        out.push_str(self.context.json());
        out.push_str(",\"capabilities\":[");
        for (i, (cap, entry)) in caps.iter().zip(self.entries()).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&cap.snapshot_prefix);
            entry.write_live_fields(self.context.is_current(&cap.scope_ids), &mut out);
        }
        out.push_str("]}");
        out
    }

    /// The capability entries that pass `filter`, as a JSON array, in
    /// catalog order.
    pub fn list_json(&self, filter: &Filter) -> String {
        let caps = self.catalog.capabilities();
        let mut out = String::from("[");
        let mut first = true;
        for (cap, entry) in caps.iter().zip(self.entries()) {
            let current = self.context.is_current(&cap.scope_ids);
            if filter.current_only && !current {
                continue;
            }
            if filter.available_only && !entry.is_available() {
                continue;
            }
            if let Some(scope) = &filter.scope_id {
                if !cap.scope_ids.iter().any(|s| s == scope) {
                    continue;
                }
            }
            if let Some(effect) = filter.effect {
                if cap.effect != effect {
                    continue;
                }
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&cap.snapshot_prefix);
            entry.write_live_fields(current, &mut out);
        }
        out.push(']');
        out
    }
}

/// A capability filter (`RcipCapabilityFilter`). Conditions combine with AND.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// `context: "current"`: only capabilities whose relevance is `current`.
    pub current_only: bool,
    /// `availableOnly: true`: only available capabilities.
    pub available_only: bool,
    /// `scopeId`: only capabilities whose own `scopeIds` contain it.
    pub scope_id: Option<String>,
    /// `effect`: only capabilities with this effect.
    pub effect: Option<Effect>,
}

impl Filter {
    /// Parses `{"context"?, "availableOnly"?, "scopeId"?, "effect"?}`.
    /// `""`, `false` and `"all"` filter nothing; anything else of the wrong
    /// type or value, `null`, or an unknown key is an error (rcip decision,
    /// PIPELINE.md section 2).
    pub fn from_value(value: &Value) -> Result<Filter, String> {
        let Value::Object(map) = value else {
            return Err("the filter must be a JSON object".into());
        };
        let mut f = Filter::default();
        for (key, v) in map {
            match (key.as_str(), v) {
                ("context", Value::String(s)) => match s.as_str() {
                    "" | "all" => {}
                    "current" => f.current_only = true,
                    other => return Err(format!("/context must be \"all\" or \"current\", not \"{other}\"")),
                },
                ("context", _) => return Err("/context must be the string \"all\" or \"current\"".into()),
                ("availableOnly", Value::Bool(b)) => f.available_only = *b,
                ("availableOnly", _) => return Err("/availableOnly must be a boolean".into()),
                ("scopeId", Value::String(s)) => {
                    if !s.is_empty() {
                        f.scope_id = Some(s.clone());
                    }
                }
                ("scopeId", _) => return Err("/scopeId must be a string".into()),
                ("effect", Value::String(s)) => {
                    if !s.is_empty() {
                        f.effect = Some(Effect::parse(s).ok_or_else(|| {
                            format!("/effect must be read, write, external or destructive, not \"{s}\"")
                        })?);
                    }
                }
                ("effect", _) => return Err("/effect must be a string".into()),
                (other, _) => {
                    return Err(format!(
                        "the filter has no field \"{other}\" (allowed: context, availableOnly, scopeId, effect)"
                    ))
                }
            }
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_parse() {
        assert_eq!(Filter::from_value(&json!({})).unwrap(), Filter::default());
        assert_eq!(
            Filter::from_value(&json!({"context": "all", "availableOnly": false, "scopeId": "", "effect": ""}))
                .unwrap(),
            Filter::default()
        );
        let f =
            Filter::from_value(&json!({"context": "current", "availableOnly": true, "scopeId": "a", "effect": "read"}))
                .unwrap();
        assert!(f.current_only && f.available_only);
        assert_eq!(f.scope_id.as_deref(), Some("a"));
        assert_eq!(f.effect, Some(Effect::Read));
        for bad in [
            json!({"context": "bogus"}),
            json!({"context": "Current"}),
            json!({"context": true}),
            json!({"effect": "admin"}),
            json!({"effect": ["read"]}),
            json!({"availableOnly": "true"}),
            json!({"scopeId": ["x"]}),
            json!({"scopeId": null}),
            json!({"scope": "x"}),
            json!([]),
        ] {
            assert!(Filter::from_value(&bad).is_err(), "{bad}");
        }
    }
}
