//! JSON text at the boundary: size and depth limits checked before parsing,
//! and numbers normalised to the reference's IEEE-double semantics.
//!
//! PIPELINE.md section 8: a "JSON value" is RFC 8259 text in UTF-8 without a
//! byte-order mark, within the size and depth limits; numbers are doubles
//! (integers beyond 2^53 round as JavaScript rounds them, a number that
//! overflows to ±∞ is not JSON, one that underflows becomes 0); the last of
//! duplicate keys wins; a lone surrogate escape makes the text not JSON.

use serde_json::{Number, Value};
use std::fmt;

/// Largest integer a double represents exactly (2^53).
const MAX_SAFE: f64 = 9_007_199_254_740_992.0;

/// Default maximum size of payload text, in bytes (8 MiB).
pub const DEFAULT_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Default maximum nesting depth of payload text (arrays and objects).
pub const DEFAULT_MAX_DEPTH: usize = 1000;

/// Text this short nests at most this deep: parsed without the stack guard.
const SHALLOW_TEXT: usize = 96;

/// Limits applied to payload text (capability input, handler output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum text length in bytes.
    pub max_bytes: usize,
    /// Maximum nesting depth of arrays and objects (a scalar has depth 0).
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: DEFAULT_MAX_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl Limits {
    /// No practical limit: used for host-trusted text such as the catalog.
    pub const UNLIMITED: Limits = Limits {
        max_bytes: usize::MAX,
        max_depth: usize::MAX,
    };
}

/// Why a text is not a JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonError {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// The text is longer than the size limit.
    TooLarge { len: usize, max: usize },
    /// Arrays and objects nest deeper than the depth limit.
    TooDeep { max: usize },
    /// Not RFC 8259 JSON (includes a leading byte-order mark, a lone
    /// surrogate escape and numbers that overflow to infinity).
    Syntax { line: usize, column: usize, reason: String },
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::NotUtf8 => write!(f, "the text is not valid UTF-8"),
            JsonError::TooLarge { len, max } => {
                write!(f, "the text is {len} bytes, above the limit of {max} bytes")
            }
            JsonError::TooDeep { max } => {
                write!(f, "arrays and objects nest deeper than the limit of {max} levels")
            }
            JsonError::Syntax { line, column, reason } => {
                write!(f, "the text is not JSON ({reason} at line {line}, column {column})")
            }
        }
    }
}

/// Nesting depth of JSON-like text, stopping as soon as it passes `max`.
/// Brackets inside strings do not count. Returns `Err` when deeper than `max`.
fn check_depth(bytes: &[u8], max: usize) -> Result<(), JsonError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Err(JsonError::TooDeep { max });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses payload bytes into a JSON value with the reference's semantics.
pub fn parse_bytes(bytes: &[u8], limits: &Limits) -> Result<Value, JsonError> {
    if bytes.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            len: bytes.len(),
            max: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| JsonError::NotUtf8)?;
    parse_str(text, limits)
}

/// A parsed payload and whether its text is already canonical.
pub struct Parsed {
    pub value: Value,
    /// True when the text is exactly what serde_json's compact writer
    /// produces for `value`, so it can be reused instead of serialising.
    pub canonical: bool,
}

/// Parses payload bytes (as [`parse_bytes`]) and tells whether the text is
/// canonical (see [`Parsed::canonical`]).
pub fn parse_payload(bytes: &[u8], limits: &Limits) -> Result<Parsed, JsonError> {
    if bytes.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            len: bytes.len(),
            max: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| JsonError::NotUtf8)?;
    let (value, normalized) = parse_text(text, limits)?;
    let canonical = !normalized && is_canonical(bytes, &value);
    Ok(Parsed { value, canonical })
}

/// True when `text` (which parsed into `value` without any number
/// normalisation) is byte for byte what serde_json writes for `value`: no
/// whitespace outside strings, no escape at all (serde_json's escapes are
/// the only ones it writes), and no duplicate key (as many `:` outside
/// strings as object entries).
fn is_canonical(text: &[u8], value: &Value) -> bool {
    let mut in_string = false;
    let mut colons = 0usize;
    for &b in text {
        match b {
            b'\\' => return false,
            b'"' => in_string = !in_string,
            b' ' | b'\t' | b'\n' | b'\r' if !in_string => return false,
            b':' if !in_string => colons += 1,
            _ => {}
        }
    }
    entries(value, 0).is_some_and(|n| n == colons)
}

/// Object entries in `value`, all levels; `None` past 64 levels (such
/// values are simply serialised).
fn entries(value: &Value, depth: usize) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    match value {
        Value::Object(map) => {
            let mut n = map.len();
            for v in map.values() {
                n += entries(v, depth + 1)?;
            }
            Some(n)
        }
        Value::Array(items) => {
            let mut n = 0;
            for v in items {
                n += entries(v, depth + 1)?;
            }
            Some(n)
        }
        _ => Some(0),
    }
}

/// Parses payload text into a JSON value with the reference's semantics.
pub fn parse_str(text: &str, limits: &Limits) -> Result<Value, JsonError> {
    parse_text(text, limits).map(|(value, _)| value)
}

/// [`parse_str`], also telling whether the text held a number that
/// normalisation may have rewritten (see [`may_need_normalizing`]).
fn parse_text(text: &str, limits: &Limits) -> Result<(Value, bool), JsonError> {
    if text.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            len: text.len(),
            max: limits.max_bytes,
        });
    }
    // Every nesting level takes at least one byte, so text no longer than
    // the limit cannot nest deeper than it.
    if text.len() > limits.max_depth {
        check_depth(text.as_bytes(), limits.max_depth)?;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = if text.len() <= SHALLOW_TEXT {
        // At most SHALLOW_TEXT levels: serde_json's own recursion guard
        // (128) cannot trigger, and the stack needed is small.
        <Value as serde::Deserialize>::deserialize(&mut de)
    } else {
        // Depth was bounded above; serde_json's own 128-level guard would
        // refuse the documented default of 1000.
        de.disable_recursion_limit();
        // Grows the stack on demand, so depth 1000 also parses on host
        // threads with small stacks.
        let stacker = serde_stacker::Deserializer::new(&mut de);
        <Value as serde::Deserialize>::deserialize(stacker)
    }
    .and_then(|v| de.end().map(|()| v));
    match parsed {
        Ok(mut value) => {
            let normalize = may_need_normalizing(text.as_bytes());
            if normalize {
                normalize_numbers(&mut value);
            }
            Ok((value, normalize))
        }
        Err(e) => Err(JsonError::Syntax {
            line: e.line(),
            column: e.column(),
            reason: syntax_reason(&e),
        }),
    }
}

fn syntax_reason(e: &serde_json::Error) -> String {
    // serde_json's Display appends " at line L column C"; keep only the reason.
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    }
}

/// False when no number in the text can change under [`normalize_numbers`]:
/// integers of at most 15 digits with no fraction or exponent, other than
/// `-0`, are already what JavaScript holds. Conservative: characters inside strings count too.
fn may_need_normalizing(bytes: &[u8]) -> bool {
    let mut run = 0usize;
    let mut prev = 0u8;
    for &b in bytes {
        if b.is_ascii_digit() {
            run += 1;
            // `-0` parses as the double -0.
            if run > 15 || (b == b'0' && prev == b'-') {
                return true;
            }
        } else {
            if run > 0 && matches!(b, b'.' | b'e' | b'E') {
                return true;
            }
            run = 0;
        }
        prev = b;
    }
    false
}

/// Rewrites every number as the double JavaScript would hold: integers with
/// magnitude above 2^53 become the nearest double, and integral doubles
/// within ±2^53 become integers (so `1.0` and `1` are the same value, and
/// `-0` is `0`). Iterative, so deep values do not recurse.
pub fn normalize_numbers(value: &mut Value) {
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) => {
                if let Some(fixed) = normalized_number(n) {
                    *n = fixed;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => stack.extend(map.values_mut()),
            _ => {}
        }
    }
}

/// The JavaScript-equivalent form of `n`, or `None` when `n` already is:
/// the double nearest to `n`, written as an integer when it is integral and
/// within ±2^53, else as a double.
fn normalized_number(n: &Number) -> Option<Number> {
    let f = n.as_f64()?; // u64 and i64 convert to the nearest double
    let canonical_integer = f.fract() == 0.0 && f.abs() <= MAX_SAFE;
    if canonical_integer {
        if f >= 0.0 {
            let u = f as u64;
            return (n.as_u64() != Some(u)).then(|| Number::from(u));
        }
        let i = f as i64;
        return (n.as_i64() != Some(i)).then(|| Number::from(i));
    }
    if n.is_f64() {
        None
    } else {
        Number::from_f64(f)
    }
}

/// The number as a double, as the reference sees every JSON number.
pub fn as_double(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(t: &str) -> Result<Value, JsonError> {
        parse_str(t, &Limits::default())
    }

    #[test]
    fn numbers_follow_doubles() {
        assert_eq!(parse("1.0").unwrap(), json!(1));
        assert_eq!(parse("-0").unwrap(), json!(0));
        assert_eq!(parse("-0.0").unwrap().to_string(), "0");
        assert_eq!(parse("1e2").unwrap(), json!(100));
        assert_eq!(parse("1.5").unwrap(), json!(1.5));
        // 2^53 + 1 rounds to 2^53 as in JavaScript.
        assert_eq!(parse("9007199254740993").unwrap().as_f64(), Some(9007199254740992.0));
        assert_eq!(parse("9007199254740993").unwrap().to_string(), "9007199254740992");
        assert!(parse("9007199254740995").unwrap().is_f64());
        assert_eq!(
            parse("12345678901234567890").unwrap().as_f64(),
            Some(12345678901234567000.0)
        );
        assert_eq!(parse("-9007199254740993").unwrap().as_f64(), Some(-9007199254740992.0));
        assert_eq!(parse("1e-400").unwrap(), json!(0));
    }

    #[test]
    fn rejects_what_the_reference_cannot_hold() {
        assert!(matches!(parse("1e400"), Err(JsonError::Syntax { .. })));
        assert!(matches!(parse("\u{feff}{}"), Err(JsonError::Syntax { .. })));
        assert!(matches!(parse(r#""\ud800""#), Err(JsonError::Syntax { .. })));
        assert!(matches!(parse("{\"a\":1,}"), Err(JsonError::Syntax { .. })));
        assert!(matches!(parse(""), Err(JsonError::Syntax { .. })));
        assert!(matches!(parse("{} x"), Err(JsonError::Syntax { .. })));
        assert!(matches!(
            parse_bytes(b"\"\xff\"", &Limits::default()),
            Err(JsonError::NotUtf8)
        ));
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap(), json!("😀"));
    }

    #[test]
    fn the_fast_path_never_skips_a_needed_normalization() {
        for text in [
            "0",
            "-0",
            "1",
            "-1",
            "123456789012345",
            "1234567890123456",
            "-1234567890123456",
            "1.5",
            "1e3",
            "1E3",
            "-0.0",
            "[1,-0]",
            "{\"a\":-0}",
            "\"-0\"",
            "[0.0]",
            "9007199254740993",
            "[10,-20,300]",
            "1.0e0",
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            let mut always = v.clone();
            normalize_numbers(&mut always);
            if !may_need_normalizing(text.as_bytes()) {
                assert_eq!(v.to_string(), always.to_string(), "{text}");
            }
            assert_eq!(parse(text).unwrap().to_string(), always.to_string(), "{text}");
        }
    }

    #[test]
    fn canonical_text_is_exactly_what_serde_writes() {
        let cases = [
            (r#"{"title":"Buy milk","priority":3,"done":false}"#, true),
            (r#"{"a":[1,2,{"b":null}],"c":"x:y"}"#, true),
            (r#"[]"#, true),
            (r#""plain""#, true),
            (r#"{"a": 1}"#, false),
            (r#"{"a":1,"a":2}"#, false),
            (r#"{"a":{"a":1,"a":2}}"#, false),
            (r#"{"a":"\u00e9"}"#, false),
            (r#"{"a":"\/"}"#, false),
            (r#"{"a":"\n"}"#, false),
            (r#"{"a":1.0}"#, false),
            (r#"{"a":-0}"#, false),
            (r#"{"a":1e2}"#, false),
            (r#"{"a":12345678901234567}"#, false),
            ("{\n}", false),
            (r#"{"k":"é ☃ 😀"}"#, true),
        ];
        for (text, want) in cases {
            let p = parse_payload(text.as_bytes(), &Limits::default()).unwrap();
            assert_eq!(p.canonical, want, "{text}");
            if p.canonical {
                assert_eq!(serde_json::to_string(&p.value).unwrap(), text);
            }
        }
    }

    #[test]
    fn last_duplicate_key_wins() {
        assert_eq!(parse(r#"{"a":1,"a":2}"#).unwrap(), json!({"a": 2}));
    }

    #[test]
    fn depth_and_size_limits() {
        let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(parse(&deep(300)).is_ok());
        assert!(parse(&deep(1000)).is_ok());
        assert_eq!(parse(&deep(1001)), Err(JsonError::TooDeep { max: 1000 }));
        assert_eq!(parse(&deep(100_000)), Err(JsonError::TooDeep { max: 1000 }));
        // Brackets inside strings do not count.
        let s = format!("\"{}\"", "[".repeat(5000));
        assert!(parse(&s).is_ok());
        let small = Limits {
            max_bytes: 4,
            max_depth: 10,
        };
        assert_eq!(parse_str("12345", &small), Err(JsonError::TooLarge { len: 5, max: 4 }));
        assert!(parse_str("1234", &small).is_ok());
    }
}
