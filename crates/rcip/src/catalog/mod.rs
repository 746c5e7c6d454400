//! The catalog: an RCIP `RcipApplicationDefinition`, checked and compiled
//! once, then shared (immutable, reference-counted) by any number of
//! runtimes on any threads. PIPELINE.md section 1.

mod check;
mod fast;

use crate::schema::Schema;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub use check::{is_blank, is_identifier};

/// The protocol version this library implements.
pub const PROTOCOL_VERSION: &str = "1.0";

/// A capability's effect (`RcipCapabilityEffect`); serde reads and writes
/// the protocol's name (`"read"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// `read`: observes application state and changes nothing.
    Read,
    /// `write`: changes application state the user can see or undo.
    Write,
    /// `external`: acts outside the application (sends, publishes, pays).
    External,
    /// `destructive`: removes or irreversibly changes state.
    Destructive,
}

impl Effect {
    /// The protocol's name for the effect.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::External => "external",
            Effect::Destructive => "destructive",
        }
    }

    /// Parses the protocol's name.
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "read" => Some(Effect::Read),
            "write" => Some(Effect::Write),
            "external" => Some(Effect::External),
            "destructive" => Some(Effect::Destructive),
            _ => None,
        }
    }
}

/// A scope (`RcipScopeDefinition`).
#[derive(Clone, Debug)]
pub struct ScopeDef {
    /// The scope id (an identifier: catalog rule "identifier"), unique in
    /// the catalog.
    pub id: String,
    /// A short human-readable name.
    pub title: String,
    /// What the scope covers, for consumers.
    pub description: String,
    /// `parentId`: the id of the enclosing scope, when the scope is nested;
    /// the catalog check refuses unknown parents and cycles.
    pub parent_id: Option<String>,
}

/// A capability definition (`RcipCapabilityDefinition`) with its compiled
/// schemas.
pub struct CapabilityDef {
    /// The capability id (an identifier), unique in the catalog: what
    /// consumers invoke and hosts bind.
    pub id: String,
    /// A short human-readable name.
    pub title: String,
    /// What the capability does, for consumers.
    pub description: String,
    /// `scopeIds`: the scopes the capability belongs to, each a scope of
    /// the catalog; the semantic context ranks and filters by them.
    pub scope_ids: Vec<String>,
    /// The effect; the default policy and confirmation records use it.
    pub effect: Effect,
    /// The schemas as declared. Shared (**rcip**): capabilities whose
    /// schema texts are identical hold one value (and one compiled schema).
    pub input_schema: Arc<Value>,
    /// The output schema as declared (shared as `input_schema` is).
    pub output_schema: Arc<Value>,
    /// `tags`, in declaration order (empty when absent).
    pub tags: Vec<String>,
    /// `usage` exactly as declared (`whenToUse`, `examples` only when given).
    pub usage: Option<Value>,
    /// `usage.whenToUse`, when declared.
    pub usage_when_to_use: Option<String>,
    /// Compiled input schema (shared as [`CapabilityDef::input_schema`] is).
    pub input: Arc<Schema>,
    /// Compiled output schema.
    pub output: Arc<Schema>,
    /// The capability's snapshot entry up to (not including) `bound`, as
    /// JSON text without the closing brace: built once, reused by every
    /// snapshot of every runtime.
    pub(crate) snapshot_prefix: String,
}

impl fmt::Debug for CapabilityDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapabilityDef")
            .field("id", &self.id)
            .field("effect", &self.effect)
            .finish()
    }
}

/// One problem found in a catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogProblem {
    /// JSON pointer into the catalog document (`/capabilities/2/effect`).
    pub pointer: String,
    /// The application, scope or capability id the problem belongs to, when
    /// it belongs to one.
    pub id: Option<String>,
    /// Short rule name (`unknown key`, `identifier`, `duplicate id`, ...).
    pub rule: &'static str,
    /// A sentence naming the field and the rule.
    pub message: String,
}

impl fmt::Display for CatalogProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/".to_string()
        } else {
            self.pointer.clone()
        };
        match &self.id {
            Some(id) => write!(f, "{at} ({id}): {}: {}", self.rule, self.message),
            None => write!(f, "{at}: {}: {}", self.rule, self.message),
        }
    }
}

impl CatalogProblem {
    /// The problem as a JSON object
    /// `{"pointer", "id"?, "rule", "message"}`.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("pointer".into(), Value::String(self.pointer.clone()));
        if let Some(id) = &self.id {
            m.insert("id".into(), Value::String(id.clone()));
        }
        m.insert("rule".into(), Value::String(self.rule.to_string()));
        m.insert("message".into(), Value::String(self.message.clone()));
        Value::Object(m)
    }
}

/// Why a catalog was refused: every problem found, in document order.
#[derive(Clone, Debug)]
pub struct CatalogError {
    /// The problems, in document order; never empty.
    pub problems: Vec<CatalogProblem>,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.first() {
            None => write!(f, "invalid catalog"),
            Some(p) => {
                write!(f, "invalid catalog: {p}")?;
                if self.problems.len() > 1 {
                    write!(
                        f,
                        " (and {} more problems; rcip_catalog_check lists them all)",
                        self.problems.len() - 1
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CatalogError {}

pub(crate) struct CatalogInner {
    pub application: Value,
    pub scopes: Vec<ScopeDef>,
    pub capabilities: Vec<CapabilityDef>,
    pub capability_index: HashMap<String, usize, ahash::RandomState>,
    pub scope_index: HashMap<String, usize, ahash::RandomState>,
    /// `"application":{...},"scopes":[...]` as JSON text, for snapshots.
    pub(crate) snapshot_head: String,
}

/// A checked, compiled catalog. Cloning is cheap (a reference count).
#[derive(Clone)]
pub struct Catalog {
    pub(crate) inner: Arc<CatalogInner>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("capabilities", &self.inner.capabilities.len())
            .finish()
    }
}

/// Reads `text` with both catalog readers and compares them (**rcip**, for
/// the `catalog_readers` fuzz target and the tests; not part of the API):
/// the fast path (`src/catalog/fast.rs`) must accept only catalogs the
/// general path accepts, and build exactly the catalog it builds (every
/// field, and the same sharing of schemas). `Ok(true)`: accepted by both,
/// identical; `Ok(false)`: the fast path left the text to the general
/// path; `Err` names the first disagreement.
#[doc(hidden)]
pub fn compare_readers(text: &str) -> Result<bool, String> {
    fast::compare_readers(text)
}

/// Maximum nesting depth of catalog text.
pub const CATALOG_MAX_DEPTH: usize = 1000;

impl Catalog {
    /// Checks and compiles catalog text (UTF-8 JSON).
    ///
    /// A valid catalog is read by a fast path that builds the capability
    /// definitions straight from the text (**rcip**, issue 20; see
    /// `src/catalog/fast.rs`); any text it cannot accept as plainly valid
    /// is parsed and checked by the general path, which reports every
    /// problem. Both build the same catalog from the same text.
    pub fn from_bytes(bytes: &[u8]) -> Result<Catalog, CatalogError> {
        if let Some(inner) = crate::json::utf8(bytes).ok().and_then(fast::load) {
            return Ok(Catalog { inner: Arc::new(inner) });
        }
        let limits = crate::json::Limits {
            max_bytes: usize::MAX,
            max_depth: CATALOG_MAX_DEPTH,
        };
        let value = crate::json::parse_bytes(bytes, &limits).map_err(|e| CatalogError {
            problems: vec![CatalogProblem {
                pointer: String::new(),
                id: None,
                rule: "json",
                message: format!("catalog text: {e}"),
            }],
        })?;
        Catalog::from_value(&value)
    }

    /// Checks and compiles a parsed catalog.
    pub fn from_value(value: &Value) -> Result<Catalog, CatalogError> {
        let mut problems = Vec::new();
        let built = check::check(value, &mut problems);
        match built {
            Some(inner) if problems.is_empty() => Ok(Catalog { inner: Arc::new(inner) }),
            _ => Err(CatalogError { problems }),
        }
    }

    /// Every problem of catalog text, without building anything usable
    /// (empty when the catalog is valid).
    pub fn check_bytes(bytes: &[u8]) -> Vec<CatalogProblem> {
        match Catalog::from_bytes(bytes) {
            Ok(_) => Vec::new(),
            Err(e) => e.problems,
        }
    }

    /// Capability definitions in catalog order.
    pub fn capabilities(&self) -> &[CapabilityDef] {
        &self.inner.capabilities
    }

    /// Scopes in catalog order.
    pub fn scopes(&self) -> &[ScopeDef] {
        &self.inner.scopes
    }

    /// The application metadata as declared.
    pub fn application(&self) -> &Value {
        &self.inner.application
    }

    /// Index of a capability id in catalog order.
    #[inline]
    pub fn capability_index(&self, id: &str) -> Option<usize> {
        self.inner.capability_index.get(id).copied()
    }

    /// The capability with this id.
    pub fn capability(&self, id: &str) -> Option<&CapabilityDef> {
        self.capability_index(id).map(|i| &self.inner.capabilities[i])
    }

    /// True when a scope with this id is declared.
    pub fn has_scope(&self, id: &str) -> bool {
        self.inner.scope_index.contains_key(id)
    }

    /// True when both handles share one compiled catalog.
    pub fn ptr_eq(a: &Catalog, b: &Catalog) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }
}
