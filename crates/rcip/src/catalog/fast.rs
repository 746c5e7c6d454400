//! The fast path of catalog loading (**rcip**, issue 20 item 4): a valid
//! catalog is read straight into its capability definitions, without a
//! `serde_json::Value` for the whole document.
//!
//! The general path ([`super::check`]) parses the document into one value
//! and walks it; for a catalog of 100,000 capabilities most of its time
//! went into building that value (an insertion-ordered map per object,
//! every key hashed and allocated) and freeing it again. Here serde_json
//! reads the document once with typed visitors: each capability's strings
//! become its own fields directly, and each schema is kept as the span of
//! document text it occupies. Identical spans (the usual case: many
//! capabilities sharing one schema text) are parsed, canonicalised and
//! compiled once; a span not seen before is parsed as the general path
//! parses it and then interned by its canonical text, so equal schemas
//! written differently still share one compiled schema.
//!
//! The fast path decides only "valid, and here is the catalog" or "not
//! sure": it gives up (`None`) at the first thing that is not plainly
//! valid (a problem, an unknown or repeated key, a key written with
//! escapes, a schema that does not compile, ...) and the caller then runs
//! the general path on the same text, which finds and reports every
//! problem as it always has. So every error, pointer, message and problem
//! order is the general path's by construction, and a catalog the fast
//! path accepts is one the general path accepts, built the same way: the
//! same checks (capability ids, duplicate ids, declared scopes, effects and
//! schema kinds through the rule functions of [`check`] the general path
//! reports from, `usage` through the same [`check::check_usage`]), the application and
//! scopes through the general [`check::check`] itself, and the snapshot
//! entries through the same [`check::snapshot_prefix`]. [`compare_readers`]
//! compares both paths field by field: the tests below on every catalog of
//! the test suite and on variants of them, the `catalog_readers` fuzz
//! target on generated catalogs.

use super::check::{self, Ctx};
use super::{CapabilityDef, CatalogInner, Effect, CATALOG_MAX_DEPTH};
use crate::json::Limits;
use crate::schema::Schema;
use serde::de::{self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Nesting levels above a capability's schemas and `usage` (the document,
/// the `capabilities` array, the capability), and above the application
/// and the scopes (the document).
const CAPABILITY_LEVELS: usize = 3;
const HEAD_LEVELS: usize = 1;

/// The catalog `text` describes, when the fast path can tell that it is
/// valid; `None` when it cannot (then the general path decides).
pub(super) fn load(text: &str) -> Option<CatalogInner> {
    let mut fast = Fast {
        text,
        head: [None; 3],
        raw: HashMap::default(),
        canonical: HashMap::default(),
        shared: Vec::new(),
        capabilities: Vec::new(),
        capability_index: HashMap::default(),
        seen_capabilities: false,
        scratch: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(RootVisitor { fast: &mut fast }).ok()?;
    de.end().ok()?;
    fast.finish()
}

/// A schema text compiled once for every capability that declares it.
struct Shared {
    /// The canonical text (serde_json's compact text of the parsed value).
    text: Arc<str>,
    value: Arc<Value>,
    schema: Arc<Schema>,
}

struct Fast<'de> {
    text: &'de str,
    /// `protocolVersion`, `application` and `scopes` as document text.
    head: [Option<&'de str>; 3],
    /// Schema spans seen so far, by their document text: index into `shared`.
    raw: HashMap<&'de str, usize, ahash::RandomState>,
    /// The same schemas by canonical text.
    canonical: HashMap<Arc<str>, usize, ahash::RandomState>,
    shared: Vec<Shared>,
    capabilities: Vec<CapabilityDef>,
    capability_index: HashMap<String, usize, ahash::RandomState>,
    seen_capabilities: bool,
    /// Where snapshot entries are written before they are copied out.
    scratch: Vec<u8>,
}

/// One capability as read from the document, before its checks.
#[derive(Default)]
struct Cap<'de> {
    id: Option<String>,
    title: Option<String>,
    description: Option<String>,
    scope_ids: Option<Strings>,
    effect: Option<Effect>,
    input: Option<&'de str>,
    output: Option<&'de str>,
    tags: Option<Strings>,
    usage: Option<&'de str>,
}

/// Parses a span of the document as the general path parses the whole
/// document (numbers normalised, last duplicate key wins), with the depth
/// the document allows at that place (`levels` levels above it).
fn parse_span(span: &str, levels: usize) -> Option<Value> {
    let limits = Limits {
        max_bytes: usize::MAX,
        max_depth: CATALOG_MAX_DEPTH - levels,
    };
    crate::json::parse_str(span, &limits).ok()
}

impl<'de> Fast<'de> {
    /// The shared schema for a schema span, parsing and compiling it the
    /// first time its text (or its canonical text) is seen.
    fn schema(&mut self, key: &'static str, span: &'de str) -> Option<usize> {
        if let Some(&i) = self.raw.get(span) {
            return Some(i);
        }
        let value = parse_span(span, CAPABILITY_LEVELS)?;
        check::schema_kind_rule(key, &value).ok()?;
        let text = serde_json::to_string(&value).ok()?;
        let i = match self.canonical.get(text.as_str()) {
            Some(&i) => i,
            None => {
                let schema = Schema::compile(&value).ok()?;
                let text: Arc<str> = text.into();
                let i = self.shared.len();
                self.canonical.insert(Arc::clone(&text), i);
                self.shared.push(Shared {
                    text,
                    // A clone, as the general path keeps: its maps hold
                    // exactly their entries, where the parsed ones kept the
                    // room they grew into (about 100 bytes per schema).
                    value: Arc::new(value.clone()),
                    schema: Arc::new(schema),
                });
                i
            }
        };
        self.raw.insert(span, i);
        Some(i)
    }

    /// Checks one capability (everything but its scope ids, which are
    /// checked once the scopes are known) and adds it.
    fn add(&mut self, cap: Cap<'de>) -> Option<()> {
        let id = cap.id?;
        let (title, description, scope_ids, effect) = (cap.title?, cap.description?, cap.scope_ids?.0, cap.effect?);
        check::capability_id_rule(&id, self.capability_index.contains_key(&id)).ok()?;
        let input = self.schema("inputSchema", cap.input?)?;
        let output = self.schema("outputSchema", cap.output?)?;
        let tags = cap.tags.map(|t| t.0).unwrap_or_default();
        let (usage, usage_when_to_use) = match cap.usage {
            None => (None, None),
            Some(span) => {
                let usage = parse_span(span, CAPABILITY_LEVELS)?;
                let mut problems = Vec::new();
                let (ok, when_to_use) = check::check_usage(
                    &mut Ctx::new(&mut problems),
                    &usage,
                    &format!("/capabilities/{}", self.capabilities.len()),
                    Some(&id),
                    &format!("capability \"{id}\""),
                    Some(&self.shared[input].schema),
                );
                if !ok || !problems.is_empty() {
                    return None;
                }
                // A clone, as the general path keeps (see `schema`).
                (Some(usage.clone()), when_to_use)
            }
        };
        let (input, output) = (&self.shared[input], &self.shared[output]);
        let snapshot_prefix = check::snapshot_prefix(
            &mut self.scratch,
            &id,
            &title,
            &description,
            &scope_ids,
            effect,
            [&input.text, &output.text],
            &tags,
            usage.as_ref(),
        )?;
        let def = CapabilityDef {
            id,
            title,
            description,
            scope_ids,
            effect,
            input_schema: Arc::clone(&input.value),
            output_schema: Arc::clone(&output.value),
            tags,
            usage,
            usage_when_to_use,
            input: Arc::clone(&input.schema),
            output: Arc::clone(&output.schema),
            snapshot_prefix,
        };
        self.capability_index.insert(def.id.clone(), self.capabilities.len());
        self.capabilities.push(def);
        Some(())
    }

    /// The head checked by the general path (on a document with the same
    /// `protocolVersion`, `application` and `scopes` and no capabilities),
    /// then every capability's scope ids against the declared scopes.
    fn finish(self) -> Option<CatalogInner> {
        if !self.seen_capabilities {
            return None;
        }
        let mut root = Map::new();
        for (key, span) in ["protocolVersion", "application", "scopes"].into_iter().zip(self.head) {
            root.insert(key.to_string(), parse_span(span?, HEAD_LEVELS)?);
        }
        root.insert("capabilities".to_string(), Value::Array(Vec::new()));
        let mut problems = Vec::new();
        let mut inner = check::check(&Value::Object(root), &mut problems)?;
        if !problems.is_empty() {
            return None;
        }
        // A valid catalog's scope index holds every declared scope id.
        let declared = |s: &String| check::scope_rule(s, inner.scope_index.contains_key(s)).is_ok();
        if !self.capabilities.iter().all(|c| c.scope_ids.iter().all(declared)) {
            return None;
        }
        inner.capabilities = self.capabilities;
        inner.capability_index = self.capability_index;
        Some(inner)
    }
}

/// Any reason to give up; the message is never shown (the general path
/// reports the catalog's problems).
fn give_up<E: de::Error>() -> E {
    E::custom("not the fast path")
}

/// The document text of the value that follows `key` (a key borrowed from
/// the document, so it points into it): from the value's first byte to
/// just after its last. Read before serde_json skips the value, which
/// checks its syntax; for well-formed JSON the two agree on where it ends.
fn value_span<'de, E: de::Error>(text: &'de str, key: &'de str) -> Result<&'de str, E> {
    let b = text.as_bytes();
    let at = (key.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    if at > b.len() || b.len() - at < key.len() {
        return Err(give_up());
    }
    let mut i = at + key.len();
    if b.get(i) != Some(&b'"') {
        return Err(give_up());
    }
    i = skip_whitespace(b, i + 1);
    if b.get(i) != Some(&b':') {
        return Err(give_up());
    }
    let start = skip_whitespace(b, i + 1);
    let end = value_end(b, start).ok_or_else(give_up)?;
    // What follows a member's value in well-formed text.
    if !matches!(b.get(skip_whitespace(b, end)), Some(b',' | b'}')) {
        return Err(give_up());
    }
    text.get(start..end).ok_or_else(give_up)
}

fn skip_whitespace(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Where the JSON value starting at `start` ends (exclusive), reading
/// brackets outside strings; `None` when the text ends first.
fn value_end(b: &[u8], start: usize) -> Option<usize> {
    match *b.get(start)? {
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        b'"' => string_end(b, start),
        _ => {
            let mut i = start;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            Some(i)
        }
    }
}

/// Just after the string whose opening quote is at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// Sets a field read once; a repeated key gives up (the general path
/// keeps the last value, and decides).
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(give_up());
    }
    *slot = Some(value);
    Ok(())
}

struct RootVisitor<'f, 'de> {
    fast: &'f mut Fast<'de>,
}

impl<'de> Visitor<'de> for RootVisitor<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a catalog")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let text = self.fast.text;
        while let Some(key) = map.next_key::<&'de str>()? {
            let slot = match key {
                "protocolVersion" => 0,
                "application" => 1,
                "scopes" => 2,
                "capabilities" => {
                    if std::mem::replace(&mut self.fast.seen_capabilities, true) {
                        return Err(give_up());
                    }
                    map.next_value_seed(CapabilitiesSeed { fast: self.fast })?;
                    continue;
                }
                _ => return Err(give_up()),
            };
            once(&mut self.fast.head[slot], value_span(text, key)?)?;
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

struct CapabilitiesSeed<'f, 'de> {
    fast: &'f mut Fast<'de>,
}

impl<'de> DeserializeSeed<'de> for CapabilitiesSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CapabilitiesSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of capabilities")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let text = self.fast.text;
        while let Some(cap) = seq.next_element_seed(CapabilitySeed { text })? {
            self.fast.add(cap).ok_or_else(give_up)?;
        }
        Ok(())
    }
}

struct CapabilitySeed<'de> {
    text: &'de str,
}

impl<'de> DeserializeSeed<'de> for CapabilitySeed<'de> {
    type Value = Cap<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cap<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for CapabilitySeed<'de> {
    type Value = Cap<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a capability")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cap<'de>, A::Error> {
        let mut cap = Cap::default();
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "id" => once(&mut cap.id, map.next_value()?)?,
                "title" => once(&mut cap.title, map.next_value()?)?,
                "description" => once(&mut cap.description, map.next_value()?)?,
                "scopeIds" => once(&mut cap.scope_ids, map.next_value()?)?,
                "tags" => once(&mut cap.tags, map.next_value()?)?,
                "effect" => once(&mut cap.effect, map.next_value::<EffectName>()?.0)?,
                "inputSchema" | "outputSchema" | "usage" => {
                    let span = value_span(self.text, key)?;
                    let slot = match key {
                        "inputSchema" => &mut cap.input,
                        "outputSchema" => &mut cap.output,
                        _ => &mut cap.usage,
                    };
                    once(slot, span)?;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => return Err(give_up()),
            }
        }
        Ok(cap)
    }
}

/// A list of strings that holds exactly its items, as the general path's
/// lists do (a catalog keeps two per capability): short lists grow one
/// item at a time, long ones as a vector grows and are then shrunk.
struct Strings(Vec<String>);

/// Lists up to this long are read without spare room.
const SHORT_LIST: usize = 8;

impl<'de> de::Deserialize<'de> for Strings {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Strings, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Strings;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
                let mut out: Vec<String> = Vec::new();
                while let Some(s) = seq.next_element()? {
                    if out.len() < SHORT_LIST {
                        out.reserve_exact(1);
                    }
                    out.push(s);
                }
                if out.len() > SHORT_LIST {
                    out.shrink_to_fit();
                }
                Ok(Strings(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// An effect's name, read without keeping the string.
struct EffectName(Effect);

impl<'de> de::Deserialize<'de> for EffectName {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<EffectName, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = EffectName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an effect")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<EffectName, E> {
                check::effect_rule(s).map(EffectName).map_err(|_| give_up())
            }
        }
        d.deserialize_str(V)
    }
}

/// The general path on the same text (what `Catalog::from_bytes` falls
/// back to).
fn general(text: &str) -> Result<CatalogInner, Vec<super::CatalogProblem>> {
    let limits = Limits {
        max_bytes: usize::MAX,
        max_depth: CATALOG_MAX_DEPTH,
    };
    let value = crate::json::parse_str(text, &limits).map_err(|_| Vec::new())?;
    let mut problems = Vec::new();
    match check::check(&value, &mut problems) {
        Some(inner) if problems.is_empty() => Ok(inner),
        _ => Err(problems),
    }
}

/// Whether both paths built the same catalog: every field, and the same
/// sharing of schema values and compiled schemas between capabilities.
/// `Err` names the first difference.
fn same(fast: &CatalogInner, general: &CatalogInner) -> Result<(), String> {
    fn eq<T: PartialEq + fmt::Debug>(what: &str, f: T, g: T) -> Result<(), String> {
        if f == g {
            Ok(())
        } else {
            Err(format!("{what} differs: fast {f:?}, general {g:?}"))
        }
    }
    eq("the application", &fast.application, &general.application)?;
    eq("the snapshot head", &fast.snapshot_head, &general.snapshot_head)?;
    eq(
        "the scopes",
        format!("{:?}", fast.scopes),
        format!("{:?}", general.scopes),
    )?;
    eq("the scope index", &fast.scope_index, &general.scope_index)?;
    eq(
        "the capability index",
        &fast.capability_index,
        &general.capability_index,
    )?;
    eq(
        "the capability count",
        fast.capabilities.len(),
        general.capabilities.len(),
    )?;
    for (f, g) in fast.capabilities.iter().zip(&general.capabilities) {
        eq("an id", &f.id, &g.id)?;
        eq("a title", &f.title, &g.title)?;
        eq("a description", &f.description, &g.description)?;
        eq("scope ids", &f.scope_ids, &g.scope_ids)?;
        eq("an effect", f.effect, g.effect)?;
        eq("an input schema", &*f.input_schema, &*g.input_schema)?;
        eq("an output schema", &*f.output_schema, &*g.output_schema)?;
        eq("tags", &f.tags, &g.tags)?;
        eq("usage", &f.usage, &g.usage)?;
        eq("usage whenToUse", &f.usage_when_to_use, &g.usage_when_to_use)?;
        eq("a snapshot prefix", &f.snapshot_prefix, &g.snapshot_prefix)?;
    }
    let slots = |c: &CatalogInner| -> Vec<(Arc<Value>, Arc<Schema>)> {
        c.capabilities
            .iter()
            .flat_map(|d| {
                [
                    (Arc::clone(&d.input_schema), Arc::clone(&d.input)),
                    (Arc::clone(&d.output_schema), Arc::clone(&d.output)),
                ]
            })
            .collect()
    };
    let (fs, gs) = (slots(fast), slots(general));
    for i in 0..fs.len() {
        for j in 0..fs.len() {
            eq(
                "the sharing of schema values",
                Arc::ptr_eq(&fs[i].0, &fs[j].0),
                Arc::ptr_eq(&gs[i].0, &gs[j].0),
            )?;
            eq(
                "the sharing of compiled schemas",
                Arc::ptr_eq(&fs[i].1, &fs[j].1),
                Arc::ptr_eq(&gs[i].1, &gs[j].1),
            )?;
        }
    }
    Ok(())
}

/// Both readers on `text` (see [`super::compare_readers`]): `Ok(true)` when
/// the fast path accepted it and the general path built the same catalog,
/// `Ok(false)` when the fast path left it to the general path.
pub(super) fn compare_readers(text: &str) -> Result<bool, String> {
    match load(text) {
        None => Ok(false),
        Some(fast) => {
            let general = general(text)
                .map_err(|p| format!("the fast path accepted a catalog the general path refuses: {p:?}"))?;
            same(&fast, &general)?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The fast path accepts only catalogs the general path accepts, and
    /// builds the same catalog. Returns whether it accepted.
    fn compare(text: &str, what: &str) -> bool {
        compare_readers(text).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    /// Every catalog of the test suite, as (name, value).
    fn suite_catalogs() -> Vec<(String, Value)> {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut out = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(root.join("tests/conformance/scenarios"))
            .expect("scenarios")
            .map(|e| e.expect("entry").path())
            .collect();
        files.sort();
        for path in files {
            let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
            if let Some(catalog) = scenario.get("catalog") {
                out.push((path.display().to_string(), catalog.clone()));
            }
        }
        for path in [
            "tests/data/catalogs/dispatch-small.json",
            "tests/data/catalogs/four-problems.json",
            "tests/data/catalogs/slow-schemas.json",
            "tests/mcp-conformance/catalog.json",
            "examples-c/dispatch/catalog.json",
        ] {
            let text = std::fs::read_to_string(root.join(path)).expect("read");
            out.push((path.to_string(), serde_json::from_str(&text).expect("JSON")));
        }
        out
    }

    /// `v` with every object's keys in reverse order.
    fn reversed(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(m.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect()),
            Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }

    /// `v` with whitespace of every kind around every `:` and `,`.
    fn spaced(v: &Value) -> String {
        use std::io::{Result, Write};
        struct Spaced;
        impl serde_json::ser::Formatter for Spaced {
            fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> Result<()> {
                w.write_all(if first { b"\r\n " } else { b" ,\n\t" })
            }
            fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> Result<()> {
                w.write_all(b" :\t")
            }
            fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> Result<()> {
                w.write_all(if first { b" " } else { b"\t, " })
            }
        }
        let mut out = Vec::new();
        serde::Serialize::serialize(v, &mut serde_json::Serializer::with_formatter(&mut out, Spaced)).expect("text");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn the_fast_path_accepts_exactly_the_valid_suite_catalogs_and_builds_them_as_the_general_path_does() {
        let mut accepted = 0;
        for (name, catalog) in suite_catalogs() {
            let compact = serde_json::to_string(&catalog).expect("text");
            let valid = general(&compact).is_ok();
            for (variant, text) in [
                ("compact", compact.clone()),
                ("pretty", serde_json::to_string_pretty(&catalog).expect("text")),
                (
                    "reversed keys",
                    serde_json::to_string_pretty(&reversed(&catalog)).expect("text"),
                ),
                ("spaced", spaced(&catalog)),
            ] {
                let what = format!("{name} ({variant})");
                assert_eq!(compare(&text, &what), valid, "{what}");
                accepted += usize::from(valid);
            }
        }
        // Both kinds occur: the suite has valid and invalid catalogs.
        assert!(accepted > 40, "{accepted}");
    }

    /// Text the fast path does not read itself (repeated keys, keys written
    /// with escapes, numbers the general path rewrites, explicit nulls)
    /// goes to the general path, or is built as the general path builds it.
    #[test]
    fn unusual_text_is_left_to_the_general_path_or_built_identically() {
        let base = r#"{"protocolVersion":"1.0","application":{"id":"app","name":"A","description":"D"},"scopes":[{"id":"main","title":"M","description":"D"}],"capabilities":[{"id":"c.one","title":"T","description":"D","scopeIds":["main"],"effect":"read","inputSchema":{"type":"object","properties":{"q":{"type":"string","maxLength":100}}},"outputSchema":true}]}"#;
        assert!(compare(base, "base"));
        let cases: &[(&str, &str, bool)] = &[
            // (replace, with, the fast path reads it)
            (r#""title":"T""#, r#""title":"T","title":"U""#, false),
            (r#""inputSchema""#, r#""input\u0053chema""#, false),
            (r#""capabilities""#, r#""capabilities":[],"capabilities""#, false),
            (r#""effect":"read""#, r#""effect":"re\u0061d""#, true),
            (
                r#""title":"T""#,
                r#""title":"T \"quoted\" \\ \u00e9 \ud83d\ude00""#,
                true,
            ),
            (r#""maxLength":100"#, r#""maxLength":1.0e2"#, true),
            (r#""maxLength":100"#, r#""maxLength":100,"maxLength":7"#, true),
            (r#""outputSchema":true"#, r#""outputSchema":true,"tags":null"#, false),
            (
                r#""outputSchema":true"#,
                r#""outputSchema":true,"tags":["x","y"]"#,
                true,
            ),
            (
                r#""outputSchema":true"#,
                r#""outputSchema":true,"tags":["a","b","c","d","e","f","g","h","i","j","k","l"]"#,
                true,
            ),
            (r#""outputSchema":true"#, r#""outputSchema":true,"usage":null"#, false),
            (
                r#""outputSchema":true"#,
                r#""outputSchema":true,"usage":{"whenToUse":"Now.","examples":[{"description":"E","input":{"q":"x"}}]}"#,
                true,
            ),
            (
                r#""outputSchema":true"#,
                r#""outputSchema":true,"usage":{"whenToUse":"Now.","examples":[{"description":"E","input":{"q":1}}]}"#,
                false,
            ),
            (r#""outputSchema":true"#, r#""outputSchema":"true""#, false),
            (r#""outputSchema":true"#, r#""outputSchema":{"type":"strin"}"#, false),
            (r#""scopeIds":["main"]"#, r#""scopeIds":["other"]"#, false),
            (r#""id":"c.one""#, r#""id":"C.one""#, false),
            (r#""version""#, r#""version""#, true),
            (r#""description":"D"}"#, r#""description":"D","version":"1"}"#, true),
            (r#"]}"#, r#"],"extra":1}"#, false),
            (r#"]}"#, r#"]} x"#, false),
            (
                r#""scopes":["#,
                r#""scopes":[{"id":"main","title":"M","description":"D"},"#,
                false,
            ),
        ];
        for (from, to, fast) in cases {
            let text = base.replacen(from, to, 1);
            assert_eq!(compare(&text, &text), *fast, "{text}");
        }
        // Two capabilities, the second repeating the first's id.
        let two = base.replacen(
            r#"}]}"#,
            r#"},{"id":"c.one","title":"T","description":"D","scopeIds":["main"],"effect":"read","inputSchema":true,"outputSchema":true}]}"#,
            1,
        );
        assert!(!compare(&two, "duplicate id"));
        assert!(compare(
            &two.replacen(r#""id":"c.one""#, r#""id":"c.two""#, 2)
                .replacen(r#""id":"c.two""#, r#""id":"c.one""#, 1),
            "two"
        ));
    }

    /// Bytes changed at many places of suite catalogs: whatever the fast
    /// path accepts, the general path accepts and builds identically
    /// (this is what keeps the span reading honest on broken text).
    #[test]
    fn damaged_text_is_never_accepted_differently() {
        let mut n = 0u64;
        for (name, catalog) in suite_catalogs().into_iter().step_by(4) {
            let text = serde_json::to_string(&catalog).expect("text");
            let bytes = text.as_bytes();
            for k in 0..40 {
                n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = (n >> 33) as usize % bytes.len();
                let with =
                    [b'"', b'{', b'}', b'[', b']', b',', b':', b' ', b'\\', b'a', b'1', b't'][(n >> 20) as usize % 12];
                let mut damaged = bytes.to_vec();
                damaged[at] = with;
                if let Ok(t) = std::str::from_utf8(&damaged) {
                    compare(t, &format!("{name} damage {k} at {at}"));
                }
            }
        }
    }

    #[test]
    fn depth_at_the_limit_is_read_and_beyond_it_left_to_the_general_path() {
        let schema = |depth: usize| format!("{}{}", r#"{"not":"#.repeat(depth - 1) + "{}", "}".repeat(depth - 1));
        let catalog = move |depth: usize| {
            format!(
                r#"{{"protocolVersion":"1.0","application":{{"id":"app","name":"A","description":"D"}},"scopes":[{{"id":"main","title":"M","description":"D"}}],"capabilities":[{{"id":"c.one","title":"T","description":"D","scopeIds":["main"],"effect":"read","inputSchema":{},"outputSchema":true}}]}}"#,
                schema(depth)
            )
        };
        // Comparing, compiling and dropping 1000-level values recurses: a
        // large stack for this test's unoptimised build.
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn(move || {
                // The document nests 3 levels above a capability's schema.
                assert!(compare(&catalog(CATALOG_MAX_DEPTH - 3), "at the limit"));
                assert!(!compare(&catalog(CATALOG_MAX_DEPTH - 2), "beyond the limit"));
                assert!(general(&catalog(CATALOG_MAX_DEPTH - 2)).is_err());
            })
            .expect("thread")
            .join()
            .expect("depth test");
    }
}
