//! Every evaluation path of the validator on generated schemas and
//! instances (issue 35, item 3): the input bytes drive a small generator of
//! 2020-12 schemas (types, bounds, lengths, counts, `multipleOf`, `const`,
//! `enum`, `uniqueItems`, `properties`/`required`/`additionalProperties`,
//! `items`/`prefixItems`, `anyOf`/`oneOf`/`not`, `$defs`/`$ref`, simple
//! patterns) whose limits are drawn from the same few values as the
//! instances' numbers, lengths and sizes, so instances land on, inside and
//! one past each limit. For every schema that compiles, each instance goes
//! through `rcip::schema::compare_modes`: the flat plan, the check mode
//! (leaf and closed-object plans) and the general evaluator must agree on
//! validity, exhaustion and budget units, and the issue lists of
//! `validate_within`, `validate_limited` and the evaluator's issue pass
//! must be equal, under the default budget and tight ones.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rcip::schema::{compare_modes, Schema};
use serde_json::{json, Map, Value};

const NUMBERS: &[f64] = &[
    0.0,
    1.0,
    2.0,
    3.0,
    -1.0,
    0.5,
    1.5,
    2.5,
    10.0,
    0.01,
    0.07,
    -0.0,
    1e-9,
    9007199254740993.0,
];
const STRINGS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "p",
    "px",
    "\u{1F600}",
    "\u{1F600}\u{1F600}",
    "e\u{301}",
    "__proto__",
];
const NAMES: &[&str] = &["a", "b", "v", "p"];
const COUNTS: &[u64] = &[0, 1, 2, 3];
const PATTERNS: &[&str] = &["^p", "b$", "^[a-c]*$", "\\d"];
const TYPES: &[&str] = &["null", "boolean", "integer", "number", "string", "array", "object"];

fn pick<T: Copy>(u: &mut Unstructured<'_>, from: &[T]) -> Result<T> {
    Ok(*u.choose(from)?)
}

fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    let x = pick(u, NUMBERS)?;
    Ok(if x.fract() == 0.0 && x.abs() < 1e15 && u.arbitrary()? {
        json!(x as i64)
    } else {
        json!(x)
    })
}

fn instance(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kind = u.int_in_range(0..=if depth == 0 { 3 } else { 5 })?;
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => json!(pick(u, STRINGS)?),
        4 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| instance(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let mut m = Map::new();
            for _ in 0..u.int_in_range(0..=4)? {
                m.insert(pick(u, NAMES)?.to_string(), instance(u, depth - 1)?);
            }
            Value::Object(m)
        }
    })
}

fn schema(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    if u.ratio(1, 12)? {
        return Ok(Value::Bool(u.arbitrary()?));
    }
    let mut m = Map::new();
    for _ in 0..u.int_in_range(0..=4)? {
        let keyword = u.int_in_range(0..=if depth == 0 { 14 } else { 22 })?;
        match keyword {
            0 => {
                m.insert("type".into(), json!(pick(u, TYPES)?));
            }
            1 => {
                m.insert("type".into(), json!([pick(u, TYPES)?, "null"]));
            }
            2 => {
                m.insert("minimum".into(), number(u)?);
            }
            3 => {
                m.insert("maximum".into(), number(u)?);
            }
            4 => {
                m.insert("exclusiveMinimum".into(), number(u)?);
            }
            5 => {
                m.insert("exclusiveMaximum".into(), number(u)?);
            }
            6 => {
                let d = pick(u, &[1.0, 2.0, 3.0, 0.5, 0.01])?;
                m.insert("multipleOf".into(), json!(d));
            }
            7 => {
                m.insert("minLength".into(), json!(pick(u, COUNTS)?));
            }
            8 => {
                m.insert("maxLength".into(), json!(pick(u, COUNTS)?));
            }
            9 => {
                let key = pick(u, &["minItems", "maxItems", "minProperties", "maxProperties"])?;
                m.insert(key.into(), json!(pick(u, COUNTS)?));
            }
            10 => {
                m.insert("const".into(), instance(u, 1)?);
            }
            11 => {
                let n = u.int_in_range(1..=3)?;
                let mut items: Vec<Value> = Vec::new();
                for _ in 0..n {
                    let v = instance(u, 1)?;
                    if !items.contains(&v) {
                        items.push(v);
                    }
                }
                m.insert("enum".into(), Value::Array(items));
            }
            12 => {
                m.insert("uniqueItems".into(), json!(u.arbitrary::<bool>()?));
            }
            13 => {
                m.insert("pattern".into(), json!(pick(u, PATTERNS)?));
            }
            14 => {
                let names: Vec<&str> = NAMES
                    .iter()
                    .copied()
                    .filter(|_| u.arbitrary().unwrap_or(false))
                    .collect();
                m.insert("required".into(), json!(names));
            }
            15 | 16 => {
                let mut props = Map::new();
                for _ in 0..u.int_in_range(1..=3)? {
                    props.insert(pick(u, NAMES)?.to_string(), schema(u, depth - 1)?);
                }
                m.insert("properties".into(), Value::Object(props));
            }
            17 => {
                m.insert("additionalProperties".into(), schema(u, depth - 1)?);
            }
            18 => {
                m.insert("items".into(), schema(u, depth - 1)?);
            }
            19 => {
                let n = u.int_in_range(1..=2)?;
                m.insert(
                    "prefixItems".into(),
                    Value::Array((0..n).map(|_| schema(u, depth - 1)).collect::<Result<_>>()?),
                );
            }
            20 => {
                let key = pick(u, &["anyOf", "oneOf", "allOf"])?;
                let n = u.int_in_range(1..=3)?;
                m.insert(
                    key.into(),
                    Value::Array((0..n).map(|_| schema(u, depth - 1)).collect::<Result<_>>()?),
                );
            }
            21 => {
                m.insert("not".into(), schema(u, depth - 1)?);
            }
            _ => {
                m.insert("$defs".into(), json!({"d": schema(u, depth - 1)?}));
                m.insert("$ref".into(), json!("#/$defs/d"));
            }
        }
    }
    Ok(Value::Object(m))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mut root) = schema(&mut u, 3) else { return };
    if let Value::Object(m) = &mut root {
        m.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    }
    // Schemas the compiler refuses (Ajv's strict mode: for example
    // `prefixItems` without the tuple bounds) have nothing to compare.
    let Ok(compiled) = Schema::compile(&root) else { return };
    for _ in 0..8 {
        let Ok(value) = instance(&mut u, 3) else { return };
        if let Err(e) = compare_modes(&compiled, &value) {
            panic!("evaluation paths disagree on schema {root}: {e}");
        }
    }
});
