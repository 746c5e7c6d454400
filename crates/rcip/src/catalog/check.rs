//! Catalog rules (PIPELINE.md section 1): field types, unknown keys,
//! protocol version, identifiers, scope and capability references, usage,
//! examples and schema compilation. Every problem is collected so that the
//! linter can report them all at once.

use super::{CapabilityDef, CatalogInner, CatalogProblem, Effect, ScopeDef, PROTOCOL_VERSION};
use crate::schema::Schema;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// True when `s` matches `[a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)*`
/// (PIPELINE.md section 1, identifiers).
pub fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        // A segment: a lowercase ASCII letter, then ASCII letters and digits.
        if i >= b.len() || !b[i].is_ascii_lowercase() {
            return false;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i == b.len() {
            return true;
        }
        if !matches!(b[i], b'.' | b'_' | b'-') {
            return false;
        }
        i += 1;
    }
}

/// True when `s` is empty after removing what JavaScript's `String.prototype.trim`
/// removes (PIPELINE.md section 1: U+0085 is not among them).
pub fn is_blank(s: &str) -> bool {
    s.chars().all(|c| {
        matches!(
            c,
            '\u{0009}'
                | '\u{000A}'
                | '\u{000B}'
                | '\u{000C}'
                | '\u{000D}'
                | '\u{0020}'
                | '\u{00A0}'
                | '\u{1680}'
                | '\u{2000}'
                ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
        )
    })
}

fn token(t: &str) -> String {
    t.replace('~', "~0").replace('/', "~1")
}

/// Collects problems while walking the document.
pub(super) struct Ctx<'p> {
    problems: &'p mut Vec<CatalogProblem>,
    /// Every schema compiled so far, by its canonical text (serde_json's
    /// compact text of the parsed value): identical schema texts compile
    /// once and share one compiled schema and one value (**rcip**, issue 20).
    schemas: HashMap<String, Interned, ahash::RandomState>,
    /// Where snapshot entries are written ([`snapshot_prefix`]).
    scratch: Vec<u8>,
}

/// One distinct schema text of the catalog: its value, and its compiled
/// form or why it does not compile (reported again for each capability
/// that declares it, at that capability's pointer).
struct Interned {
    value: Arc<Value>,
    compiled: Result<Arc<Schema>, Vec<crate::schema::SchemaError>>,
}

impl<'p> Ctx<'p> {
    /// A walk that records its problems in `problems`.
    pub(super) fn new(problems: &'p mut Vec<CatalogProblem>) -> Ctx<'p> {
        Ctx {
            problems,
            schemas: HashMap::default(),
            scratch: Vec::new(),
        }
    }

    fn problem(&mut self, pointer: &str, id: Option<&str>, rule: &'static str, message: String) {
        self.problems.push(CatalogProblem {
            pointer: pointer.to_string(),
            id: id.map(str::to_string),
            rule,
            message,
        });
    }

    /// `value` as an object with only `allowed` keys; reports the rest.
    fn object<'v>(
        &mut self,
        value: &'v Value,
        pointer: &str,
        id: Option<&str>,
        what: &str,
        allowed: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = value else {
            self.problem(
                pointer,
                id,
                "type",
                format!("{what} must be an object, not {}", kind(value)),
            );
            return None;
        };
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                self.problem(
                    &format!("{pointer}/{}", token(key)),
                    id,
                    "unknown key",
                    format!("{what} has no field \"{key}\" (allowed: {})", allowed.join(", ")),
                );
            }
        }
        Some(map)
    }

    /// A field that must be present; `null` is refused like any wrong type.
    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        pointer: &str,
        id: Option<&str>,
        what: &str,
        key: &str,
    ) -> Option<&'v Value> {
        match map.get(key) {
            Some(v) => Some(v),
            None => {
                self.problem(
                    &format!("{pointer}/{}", token(key)),
                    id,
                    "required",
                    format!("{what} needs the field \"{key}\""),
                );
                None
            }
        }
    }

    fn string<'v>(&mut self, value: &'v Value, pointer: &str, id: Option<&str>, what: &str) -> Option<&'v str> {
        match value {
            Value::String(s) => Some(s),
            other => {
                self.problem(
                    pointer,
                    id,
                    "type",
                    format!("{what} must be a string, not {}", kind(other)),
                );
                None
            }
        }
    }

    fn required_string<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        pointer: &str,
        id: Option<&str>,
        what: &str,
        key: &str,
    ) -> Option<&'v str> {
        let v = self.required(map, pointer, id, what, key)?;
        if let Value::String(s) = v {
            // The common case, without formatting the problem's texts.
            return Some(s);
        }
        self.string(v, &format!("{pointer}/{key}"), id, &format!("{what} field \"{key}\""))
    }

    fn optional_string<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        pointer: &str,
        id: Option<&str>,
        what: &str,
        key: &str,
    ) -> Result<Option<&'v str>, ()> {
        match map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => self
                .string(v, &format!("{pointer}/{key}"), id, &format!("{what} field \"{key}\""))
                .map(Some)
                .ok_or(()),
        }
    }

    fn string_list(&mut self, value: &Value, pointer: &str, id: Option<&str>, what: &str) -> Option<Vec<String>> {
        let Value::Array(items) = value else {
            self.problem(
                pointer,
                id,
                "type",
                format!("{what} must be an array of strings, not {}", kind(value)),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => {
                    ok = false;
                    self.problem(
                        &format!("{pointer}/{i}"),
                        id,
                        "type",
                        format!("{what} must hold strings only; item {i} is {}", kind(other)),
                    );
                }
            }
        }
        ok.then_some(out)
    }

    fn identifier(&mut self, s: &str, pointer: &str, what: &str) -> bool {
        if is_identifier(s) {
            return true;
        }
        self.problem(
            pointer,
            Some(s),
            "identifier",
            format!(
                "{what} {} must match [a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)*",
                serde_json::to_string(s).unwrap_or_default()
            ),
        );
        false
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

/// Checks the whole catalog; returns the compiled catalog when no problem
/// was found.
pub(super) fn check(root: &Value, problems: &mut Vec<CatalogProblem>) -> Option<CatalogInner> {
    let mut cx = Ctx::new(problems);
    let map = cx.object(
        root,
        "",
        None,
        "the catalog (RcipApplicationDefinition)",
        &["protocolVersion", "application", "scopes", "capabilities"],
    )?;

    if let Some(v) = cx.required_string(map, "", None, "the catalog", "protocolVersion") {
        if v != PROTOCOL_VERSION {
            cx.problem(
                "/protocolVersion",
                None,
                "protocol version",
                format!(
                    "protocolVersion must be \"{PROTOCOL_VERSION}\", not {}",
                    serde_json::to_string(v).unwrap_or_default()
                ),
            );
        }
    }

    // application
    let application = map.get("application").cloned();
    if let Some(app) = cx.required(map, "", None, "the catalog", "application") {
        let what = "application";
        if let Some(m) = cx.object(
            app,
            "/application",
            None,
            what,
            &["id", "name", "description", "version"],
        ) {
            if let Some(id) = cx.required_string(m, "/application", None, what, "id") {
                cx.identifier(id, "/application/id", "application id");
            }
            cx.required_string(m, "/application", None, what, "name");
            cx.required_string(m, "/application", None, what, "description");
            let _ = cx.optional_string(m, "/application", None, what, "version");
        }
    }

    // scopes
    let mut scopes = Vec::new();
    let mut scope_index: HashMap<String, usize, ahash::RandomState> = HashMap::default();
    let mut scope_ids_seen: HashMap<String, usize> = HashMap::new();
    let mut parents: Vec<(String, String, String)> = Vec::new(); // (pointer, scope id, parent)
    if let Some(list) = cx.required(map, "", None, "the catalog", "scopes") {
        match list {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("/scopes/{i}");
                    let what = format!("scope {i}");
                    let Some(m) = cx.object(item, &p, None, &what, &["id", "title", "description", "parentId"]) else {
                        continue;
                    };
                    let id = cx.required_string(m, &p, None, &what, "id");
                    let idr = id;
                    if let Some(id) = id {
                        if cx.identifier(id, &format!("{p}/id"), "scope id")
                            && scope_ids_seen.insert(id.to_string(), i).is_some()
                        {
                            cx.problem(
                                &format!("{p}/id"),
                                Some(id),
                                "duplicate id",
                                format!("scope id \"{id}\" is declared more than once"),
                            );
                        }
                    }
                    let title = cx.required_string(m, &p, idr, &what, "title");
                    let description = cx.required_string(m, &p, idr, &what, "description");
                    let parent = cx.optional_string(m, &p, idr, &what, "parentId");
                    if let (Some(id), Some(parent)) = (idr, parent.ok().flatten()) {
                        if !parent.is_empty() {
                            parents.push((format!("{p}/parentId"), id.to_string(), parent.to_string()));
                        }
                    }
                    if let (Some(id), Some(title), Some(description), Ok(parent)) = (idr, title, description, parent) {
                        scope_index.entry(id.to_string()).or_insert(scopes.len());
                        scopes.push(ScopeDef {
                            id: id.to_string(),
                            title: title.to_string(),
                            description: description.to_string(),
                            parent_id: parent.map(str::to_string),
                        });
                    }
                }
            }
            other => cx.problem(
                "/scopes",
                None,
                "type",
                format!("scopes must be an array, not {}", kind(other)),
            ),
        }
    }
    for (pointer, id, parent) in parents {
        if !scope_ids_seen.contains_key(&parent) {
            cx.problem(
                &pointer,
                Some(&id),
                "unknown scope",
                format!("scope \"{id}\" names parentId \"{parent}\", which is not a declared scope"),
            );
        }
    }

    // capabilities
    let mut capabilities = Vec::new();
    let mut capability_index: HashMap<String, usize, ahash::RandomState> = HashMap::default();
    if let Some(list) = cx.required(map, "", None, "the catalog", "capabilities") {
        match list {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(cap) = check_capability(&mut cx, item, i, &scope_ids_seen, &mut capability_index) {
                        capabilities.push(cap);
                    }
                }
            }
            other => cx.problem(
                "/capabilities",
                None,
                "type",
                format!("capabilities must be an array, not {}", kind(other)),
            ),
        }
    }

    if !cx.problems.is_empty() {
        return None;
    }
    let application = application?;
    let snapshot_head = format!(
        "\"application\":{},\"scopes\":{}",
        serde_json::to_string(&application).ok()?,
        serde_json::to_string(&map.get("scopes")?).ok()?
    );
    Some(CatalogInner {
        application,
        scopes,
        capabilities,
        capability_index,
        scope_index,
        snapshot_head,
    })
}

const CAPABILITY_KEYS: &[&str] = &[
    "id",
    "title",
    "description",
    "scopeIds",
    "effect",
    "inputSchema",
    "outputSchema",
    "tags",
    "usage",
];

/// A capability field that breaks a catalog rule: the one description of
/// the per-capability rules that both readers apply (the general path here
/// reports it as a problem; the fast path, `fast.rs`, gives up on it and
/// leaves the text to the general path). Each rule is a function below
/// returning this; nothing is formatted unless the rule is broken.
pub(super) enum CapabilityFault<'a> {
    /// The capability id is not an identifier (rule "identifier").
    NotIdentifier(&'a str),
    /// Another capability has this id (rule "duplicate id").
    Duplicate(&'a str),
    /// `scopeIds` names a scope the catalog does not declare (rule
    /// "unknown scope").
    UnknownScope(&'a str),
    /// `effect` is none of the four (rule "effect").
    BadEffect(&'a str),
    /// `inputSchema` or `outputSchema` is neither an object nor a boolean
    /// (rule "type"); the kind it is.
    NotSchema(&'static str, &'static str),
}

impl CapabilityFault<'_> {
    /// The catalog rule broken (a [`CatalogProblem::rule`]).
    pub(super) fn rule(&self) -> &'static str {
        match self {
            CapabilityFault::NotIdentifier(_) => "identifier",
            CapabilityFault::Duplicate(_) => "duplicate id",
            CapabilityFault::UnknownScope(_) => "unknown scope",
            CapabilityFault::BadEffect(_) => "effect",
            CapabilityFault::NotSchema(..) => "type",
        }
    }

    /// The problem's message, `what` naming the capability.
    pub(super) fn message(&self, what: &str) -> String {
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match self {
            CapabilityFault::NotIdentifier(id) => format!(
                "capability id {} must match [a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)*",
                quoted(id)
            ),
            CapabilityFault::Duplicate(id) => format!("capability id \"{id}\" is declared more than once"),
            CapabilityFault::UnknownScope(s) => {
                format!("{what} names scope \"{s}\", which is not a declared scope")
            }
            CapabilityFault::BadEffect(s) => format!(
                "{what} has effect {}; it must be one of read, write, external, destructive",
                quoted(s)
            ),
            CapabilityFault::NotSchema(key, kind) => {
                format!("{what} field \"{key}\" must be a JSON Schema (an object or a boolean), not {kind}")
            }
        }
    }
}

/// Rules "identifier" and "duplicate id" for a capability id; `taken`: an
/// earlier capability has it.
pub(super) fn capability_id_rule(id: &str, taken: bool) -> Result<(), CapabilityFault<'_>> {
    if !is_identifier(id) {
        return Err(CapabilityFault::NotIdentifier(id));
    }
    if taken {
        return Err(CapabilityFault::Duplicate(id));
    }
    Ok(())
}

/// Rule "unknown scope" for one of a capability's scope ids.
pub(super) fn scope_rule(scope: &str, declared: bool) -> Result<(), CapabilityFault<'_>> {
    if declared {
        Ok(())
    } else {
        Err(CapabilityFault::UnknownScope(scope))
    }
}

/// Rule "effect": the capability's effect by name.
pub(super) fn effect_rule(name: &str) -> Result<Effect, CapabilityFault<'_>> {
    Effect::parse(name).ok_or(CapabilityFault::BadEffect(name))
}

/// Rule "type" for `inputSchema` / `outputSchema` (`key`): an object or a
/// boolean.
pub(super) fn schema_kind_rule(key: &'static str, schema: &Value) -> Result<(), CapabilityFault<'static>> {
    if matches!(schema, Value::Object(_) | Value::Bool(_)) {
        Ok(())
    } else {
        Err(CapabilityFault::NotSchema(key, kind(schema)))
    }
}

fn check_capability(
    cx: &mut Ctx<'_>,
    item: &Value,
    i: usize,
    scopes: &HashMap<String, usize>,
    capability_index: &mut HashMap<String, usize, ahash::RandomState>,
) -> Option<CapabilityDef> {
    let p = format!("/capabilities/{i}");
    let what = format!("capability {i}");
    let m = cx.object(item, &p, None, &what, CAPABILITY_KEYS)?;
    let id = cx.required_string(m, &p, None, &what, "id");
    let mut id_ok = false;
    if let Some(id) = id {
        match capability_id_rule(id, capability_index.contains_key(id)) {
            Ok(()) => id_ok = true,
            Err(fault) => cx.problem(&format!("{p}/id"), Some(id), fault.rule(), fault.message(&what)),
        }
    }
    let what = match id {
        Some(id) => format!("capability \"{id}\""),
        None => what,
    };
    let title = cx.required_string(m, &p, id, &what, "title");
    let description = cx.required_string(m, &p, id, &what, "description");

    let mut scope_ids = None;
    if let Some(v) = cx.required(m, &p, id, &what, "scopeIds") {
        scope_ids = cx.string_list(v, &format!("{p}/scopeIds"), id, &format!("{what} field \"scopeIds\""));
        if let Some(list) = &scope_ids {
            for (k, s) in list.iter().enumerate() {
                if let Err(fault) = scope_rule(s, scopes.contains_key(s)) {
                    cx.problem(&format!("{p}/scopeIds/{k}"), id, fault.rule(), fault.message(&what));
                }
            }
        }
    }

    let mut effect = None;
    if let Some(s) = cx.required_string(m, &p, id, &what, "effect") {
        match effect_rule(s) {
            Ok(e) => effect = Some(e),
            Err(fault) => cx.problem(&format!("{p}/effect"), id, fault.rule(), fault.message(&what)),
        }
    }

    let tags = match m.get("tags") {
        None => Some(Vec::new()),
        Some(v) => cx.string_list(v, &format!("{p}/tags"), id, &format!("{what} field \"tags\"")),
    };

    // Schemas are compiled at load (rcip decision, PIPELINE.md section 1).
    let mut compiled = [None, None];
    // The schemas' canonical texts, for the snapshot entry too.
    let mut texts = [String::new(), String::new()];
    for (slot, key) in ["inputSchema", "outputSchema"].into_iter().enumerate() {
        let Some(schema) = cx.required(m, &p, id, &what, key) else {
            continue;
        };
        if let Err(fault) = schema_kind_rule(key, schema) {
            cx.problem(&format!("{p}/{key}"), id, fault.rule(), fault.message(&what));
            continue;
        }
        let text = serde_json::to_string(schema).unwrap_or_default();
        texts[slot] = text.clone();
        let interned = cx.schemas.entry(text).or_insert_with(|| Interned {
            value: Arc::new(schema.clone()),
            compiled: Schema::compile(schema).map(Arc::new),
        });
        match &interned.compiled {
            Ok(s) => compiled[slot] = Some((Arc::clone(s), Arc::clone(&interned.value))),
            Err(errors) => {
                for e in errors.clone() {
                    cx.problem(
                        &format!("{p}/{key}{}", e.pointer),
                        id,
                        e.rule,
                        format!("{what} {key}: {}", e.message),
                    );
                }
            }
        }
    }
    let [input, output] = compiled;

    let usage = m.get("usage");
    let (usage_ok, when_to_use) = match usage {
        None => (true, None),
        Some(usage) => check_usage(cx, usage, &p, id, &what, input.as_ref().map(|(s, _)| &**s)),
    };

    let (id, title, description, scope_ids, effect, tags, input, output) =
        (id?, title?, description?, scope_ids?, effect?, tags?, input?, output?);
    if !id_ok || !usage_ok {
        return None;
    }
    capability_index.insert(id.to_string(), capability_index.len());
    let (input, input_schema) = input;
    let (output, output_schema) = output;
    let usage = usage.cloned();

    let prefix = snapshot_prefix(
        &mut cx.scratch,
        id,
        title,
        description,
        &scope_ids,
        effect,
        [&texts[0], &texts[1]],
        &tags,
        usage.as_ref(),
    )?;
    Some(CapabilityDef {
        id: id.to_string(),
        title: title.to_string(),
        description: description.to_string(),
        scope_ids,
        effect,
        input_schema,
        output_schema,
        tags,
        usage,
        usage_when_to_use: when_to_use,
        input,
        output,
        snapshot_prefix: prefix,
    })
}

/// The static part of a capability's snapshot entry (PIPELINE.md section
/// 2): `{"id":...,"title":...,...,"tags":[...]` and `,"usage":...` when
/// declared, without the closing brace. `schemas` are the input and output
/// schemas' canonical texts. Written in `prefix` (a buffer reused from one
/// capability to the next), then copied into a text exactly as long as it
/// needs to be: a catalog holds one per capability. `None` only if
/// serde_json fails to write a string (it does not).
#[allow(clippy::too_many_arguments)] // one argument per field of the text; a struct would only rename them
pub(super) fn snapshot_prefix(
    prefix: &mut Vec<u8>,
    id: &str,
    title: &str,
    description: &str,
    scope_ids: &[String],
    effect: Effect,
    schemas: [&str; 2],
    tags: &[String],
    usage: Option<&Value>,
) -> Option<String> {
    prefix.clear();
    // serde_json writes each piece straight into the buffer (no text per
    // field), exactly as `serde_json::to_string` would write it.
    prefix.extend_from_slice(b"{\"id\":");
    serde_json::to_writer(&mut *prefix, id).ok()?;
    prefix.extend_from_slice(b",\"title\":");
    serde_json::to_writer(&mut *prefix, title).ok()?;
    prefix.extend_from_slice(b",\"description\":");
    serde_json::to_writer(&mut *prefix, description).ok()?;
    prefix.extend_from_slice(b",\"scopeIds\":");
    serde_json::to_writer(&mut *prefix, scope_ids).ok()?;
    prefix.extend_from_slice(b",\"effect\":\"");
    prefix.extend_from_slice(effect.as_str().as_bytes());
    prefix.extend_from_slice(b"\",\"inputSchema\":");
    prefix.extend_from_slice(schemas[0].as_bytes());
    prefix.extend_from_slice(b",\"outputSchema\":");
    prefix.extend_from_slice(schemas[1].as_bytes());
    prefix.extend_from_slice(b",\"tags\":");
    serde_json::to_writer(&mut *prefix, tags).ok()?;
    if let Some(u) = usage {
        prefix.extend_from_slice(b",\"usage\":");
        serde_json::to_writer(&mut *prefix, u).ok()?;
    }
    std::str::from_utf8(prefix).ok().map(str::to_string)
}

/// `usage` of the capability at `p` (PIPELINE.md section 1): an object
/// with a non-blank `whenToUse` and optional `examples`, each with a
/// non-blank `description` and an `input` the input schema accepts (not
/// checked when the input schema did not compile). Returns whether it is
/// valid and its `whenToUse`.
pub(super) fn check_usage(
    cx: &mut Ctx<'_>,
    usage: &Value,
    p: &str,
    id: Option<&str>,
    what: &str,
    input: Option<&Schema>,
) -> (bool, Option<String>) {
    let mut usage_ok = true;
    let mut when_to_use = None;
    let up = format!("{p}/usage");
    let uwhat = format!("{what} usage");
    match cx.object(usage, &up, id, &uwhat, &["whenToUse", "examples"]) {
        None => usage_ok = false,
        Some(um) => {
            match cx.required_string(um, &up, id, &uwhat, "whenToUse") {
                Some(w) if is_blank(w) => {
                    usage_ok = false;
                    cx.problem(
                        &format!("{up}/whenToUse"),
                        id,
                        "blank",
                        format!("{uwhat} field \"whenToUse\" must not be blank"),
                    );
                }
                Some(w) => when_to_use = Some(w.to_string()),
                None => usage_ok = false,
            }
            if let Some(examples) = um.get("examples") {
                match examples {
                    Value::Array(list) => {
                        for (k, ex) in list.iter().enumerate() {
                            let ep = format!("{up}/examples/{k}");
                            let ewhat = format!("{uwhat} example {k}");
                            let Some(em) = cx.object(ex, &ep, id, &ewhat, &["description", "input"]) else {
                                usage_ok = false;
                                continue;
                            };
                            match cx.required_string(em, &ep, id, &ewhat, "description") {
                                Some(d) if is_blank(d) => {
                                    usage_ok = false;
                                    cx.problem(
                                        &format!("{ep}/description"),
                                        id,
                                        "blank",
                                        format!("{ewhat} field \"description\" must not be blank"),
                                    );
                                }
                                Some(_) => {}
                                None => usage_ok = false,
                            }
                            match cx.required(em, &ep, id, &ewhat, "input") {
                                None => usage_ok = false,
                                Some(input_value) => {
                                    if let Some(schema) = input {
                                        let issues = schema.validate(input_value);
                                        if !issues.is_empty() {
                                            usage_ok = false;
                                            let list: Vec<String> = issues
                                                .iter()
                                                .map(|i| {
                                                    let at = if i.instance_path.is_empty() {
                                                        "/"
                                                    } else {
                                                        &i.instance_path
                                                    };
                                                    format!("{at} {} ({})", i.message, i.keyword)
                                                })
                                                .collect();
                                            cx.problem(
                                                &format!("{ep}/input"),
                                                id,
                                                "example input",
                                                format!(
                                                    "{ewhat} input does not validate against the input schema: {}",
                                                    list.join("; ")
                                                ),
                                            );
                                        }
                                    }
                                }
                            }
                        }
                    }
                    other => {
                        usage_ok = false;
                        cx.problem(
                            &format!("{up}/examples"),
                            id,
                            "type",
                            format!("{uwhat} field \"examples\" must be an array, not {}", kind(other)),
                        );
                    }
                }
            }
        }
    }
    (usage_ok, when_to_use)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(schemas: &[(&str, &str)]) -> String {
        let caps: Vec<String> = schemas
            .iter()
            .enumerate()
            .map(|(i, (input, output))| {
                format!(
                    r#"{{"id":"c.cap{i}","title":"T","description":"D","scopeIds":["main"],"effect":"read","inputSchema":{input},"outputSchema":{output}}}"#
                )
            })
            .collect();
        format!(
            r#"{{"protocolVersion":"1.0","application":{{"id":"app","name":"A","description":"D"}},"scopes":[{{"id":"main","title":"M","description":"D"}}],"capabilities":[{}]}}"#,
            caps.join(",")
        )
    }

    #[test]
    fn identical_schema_texts_compile_once_and_are_shared() {
        let a = r#"{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}"#;
        // The same schema with other whitespace: the same canonical text.
        let a2 = r#"{ "type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false }"#;
        let b = r#"{"type":"object","properties":{"q":{"type":"integer"}},"additionalProperties":false}"#;
        let catalog = crate::catalog::Catalog::from_bytes(caps(&[(a, b), (a2, a), (b, b)]).as_bytes()).expect("valid");
        let c = catalog.capabilities();
        assert!(Arc::ptr_eq(&c[0].input, &c[1].input) && Arc::ptr_eq(&c[0].input, &c[1].output));
        assert!(Arc::ptr_eq(&c[0].input_schema, &c[1].input_schema));
        assert!(Arc::ptr_eq(&c[0].output, &c[2].input) && Arc::ptr_eq(&c[2].input, &c[2].output));
        assert!(!Arc::ptr_eq(&c[0].input, &c[0].output));
        // Each capability still validates with its own schema.
        assert!(c[0].input.is_valid(&serde_json::json!({"q": "x"})));
        assert!(!c[2].input.is_valid(&serde_json::json!({"q": "x"})));
    }

    #[test]
    fn a_shared_schema_that_does_not_compile_is_reported_for_each_capability() {
        let bad = r#"{"type":"object","properties":{"q":{"type":"string","format":"email"}}}"#;
        let ok = r#"{"type":"object"}"#;
        let problems = crate::catalog::Catalog::check_bytes(caps(&[(bad, ok), (ok, bad)]).as_bytes());
        let at: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(
            at,
            [
                "/capabilities/0/inputSchema/properties/q/format",
                "/capabilities/1/outputSchema/properties/q/format"
            ]
        );
        assert_eq!(problems[0].id.as_deref(), Some("c.cap0"));
        assert_eq!(problems[1].id.as_deref(), Some("c.cap1"));
    }

    #[test]
    fn identifiers() {
        for ok in [
            "a1",
            "a_b",
            "a-b.c",
            "a.b2c",
            "aB",
            "polls.prepareCreate",
            "polls-archive_v2",
        ] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in [
            "ab.", "a__b", "a-_b", "_a", "a.1", "a-1b", "a.B", "2polls", "", "a\n", "é", "a b",
        ] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }

    #[test]
    fn blank_follows_javascript_trim() {
        assert!(is_blank(""));
        assert!(is_blank(" \t\n\u{00A0}\u{3000}\u{FEFF}\u{2028}"));
        assert!(!is_blank("\u{0085}"));
        assert!(!is_blank(" x "));
    }
}
