//! JSON values as the reference sees them: every number is a double,
//! equality is deep equality with numbers compared as doubles.

use serde_json::Value;

/// The JSON types a `type` keyword names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JType {
    Null,
    Boolean,
    Object,
    Array,
    Number,
    Integer,
    String,
}

impl JType {
    pub fn parse(name: &str) -> Option<JType> {
        Some(match name {
            "null" => JType::Null,
            "boolean" => JType::Boolean,
            "object" => JType::Object,
            "array" => JType::Array,
            "number" => JType::Number,
            "integer" => JType::Integer,
            "string" => JType::String,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            JType::Null => "null",
            JType::Boolean => "boolean",
            JType::Object => "object",
            JType::Array => "array",
            JType::Number => "number",
            JType::Integer => "integer",
            JType::String => "string",
        }
    }

    /// Whether `v` has this type (`integer`: a number with no fraction).
    pub fn matches(self, v: &Value) -> bool {
        match (self, v) {
            (JType::Null, Value::Null)
            | (JType::Boolean, Value::Bool(_))
            | (JType::Object, Value::Object(_))
            | (JType::Array, Value::Array(_))
            | (JType::String, Value::String(_))
            | (JType::Number, Value::Number(_)) => true,
            (JType::Integer, Value::Number(n)) => is_integer(n),
            _ => false,
        }
    }
}

/// `type: integer`'s rule: a number without a fraction (integers as
/// parsed need no arithmetic). [`JType::matches`] and the flat plan's type
/// test both call it.
#[inline]
pub(crate) fn is_integer(n: &serde_json::Number) -> bool {
    n.is_u64() || n.is_i64() || {
        let f = as_f64(n);
        f.is_finite() && f.fract() == 0.0
    }
}

pub(crate) fn as_f64(n: &serde_json::Number) -> f64 {
    crate::json::as_double(n)
}

/// Deep equality with numbers compared as doubles (`1` equals `1.0`).
pub(crate) fn js_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => as_f64(x) == as_f64(y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| js_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| js_equal(v, w)))
        }
        _ => a == b,
    }
}

/// [`js_equal`], adding to `visited` one per pair of values it compares
/// (the units the validation budget charges for `const` and `enum`,
/// issue 27): at most the smaller value's node count.
pub(crate) fn js_equal_counted(a: &Value, b: &Value, visited: &mut u64) -> bool {
    *visited += 1;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => as_f64(x) == as_f64(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| js_equal_counted(p, q, visited))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| js_equal_counted(v, w, visited)))
        }
        _ => a == b,
    }
}

/// [`js_hash`] of a value of at most `*left` nodes, taking one from
/// `*left` per node hashed; `None` once the value has more (it then
/// equals no value of at most that many nodes).
pub(crate) fn js_hash_within(v: &Value, state: &ahash::RandomState, left: &mut u64) -> Option<u64> {
    use std::hash::{BuildHasher, Hash, Hasher};
    if *left == 0 {
        return None;
    }
    *left -= 1;
    let mut h = state.build_hasher();
    match v {
        Value::Array(a) => {
            (4u8, a.len()).hash(&mut h);
            for item in a {
                js_hash_within(item, state, left)?.hash(&mut h);
            }
        }
        Value::Object(o) => {
            let mut sum = 0u64;
            for (k, item) in o {
                sum = sum.wrapping_add(state.hash_one((k.as_str(), js_hash_within(item, state, left)?)));
            }
            (5u8, o.len(), sum).hash(&mut h)
        }
        scalar => return Some(js_hash(scalar, state)),
    }
    Some(h.finish())
}

/// A hash consistent with [`js_equal`]: values that are equal hash alike
/// (numbers by value, so `1`, `1.0` are one and `0`, `-0` are one; object
/// members in any order). Keyed by `state`, so an instance cannot choose
/// collisions. Used by `uniqueItems` to compare items in linear time.
pub(crate) fn js_hash(v: &Value, state: &ahash::RandomState) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = state.build_hasher();
    match v {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => (1u8, *b).hash(&mut h),
        Value::Number(n) => {
            // -0 and 0 are one number; doubles from JSON are never NaN.
            let x = as_f64(n) + 0.0;
            (2u8, x.to_bits()).hash(&mut h)
        }
        Value::String(s) => (3u8, s.as_str()).hash(&mut h),
        Value::Array(a) => {
            (4u8, a.len()).hash(&mut h);
            for item in a {
                js_hash(item, state).hash(&mut h);
            }
        }
        Value::Object(o) => {
            // Independent of member order: a commutative sum of keyed
            // member hashes.
            let mut sum = 0u64;
            for (k, item) in o {
                sum = sum.wrapping_add(state.hash_one((k.as_str(), js_hash(item, state))));
            }
            (5u8, o.len(), sum).hash(&mut h)
        }
    }
    h.finish()
}

/// `multipleOf` as the reference computes it: `data / m` must be an
/// integer in double arithmetic, read back through `parseInt` (so a
/// quotient of 1e21 or more, written with an exponent, never is).
pub(crate) fn is_multiple_of(data: f64, m: f64) -> bool {
    let q = data / m;
    q.is_finite() && q.fract() == 0.0 && q.abs() < 1e21
}

/// Length of a string in code points, as the reference counts it.
pub(crate) fn js_length(s: &str) -> usize {
    s.chars().count()
}

/// One JSON pointer token, escaped (`~` as `~0`, `/` as `~1`).
pub(crate) fn escape_token(token: &str) -> String {
    if !token.contains(['~', '/']) {
        return token.to_string();
    }
    token.replace('~', "~0").replace('/', "~1")
}

/// The inverse of [`escape_token`].
pub(crate) fn unescape_token(token: &str) -> String {
    if !token.contains('~') {
        return token.to_string();
    }
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn doubles_everywhere() {
        assert!(!is_multiple_of(19.99, 0.01));
        assert!(is_multiple_of(0.3, 0.1) == (0.3f64 / 0.1).fract().eq(&0.0));
        assert!(is_multiple_of(10.0, 2.0));
        assert!(!is_multiple_of(1e308, 0.5));
        assert!(!is_multiple_of(1e22, 1.0));
        assert!(js_equal(&json!([1, {"a": 2.5}]), &json!([1.0, {"a": 2.5}])));
        assert!(!js_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        let s = ahash::RandomState::new();
        let pairs = [
            (json!(1), json!(1.0)),
            (json!(0.0), json!(-0.0)),
            (json!({"a": 1, "b": [1, {}]}), json!({"b": [1.0, {}], "a": 1})),
        ];
        for (a, b) in pairs {
            assert!(js_equal(&a, &b));
            assert_eq!(js_hash(&a, &s), js_hash(&b, &s), "{a} and {b}");
        }
        assert_ne!(js_hash(&json!([]), &s), js_hash(&json!({}), &s));
        assert_ne!(js_hash(&json!({"a": null}), &s), js_hash(&json!({"b": null}), &s));
        for (a, b) in [
            (json!({"a": [1, {"b": null}]}), json!({"a": [1.0, {"b": null}]})),
            (json!("x"), json!("x")),
        ] {
            let mut left = u64::MAX;
            assert_eq!(js_hash_within(&a, &s, &mut left), Some(js_hash(&b, &s)));
            let mut visited = 0;
            assert!(js_equal_counted(&a, &b, &mut visited));
            assert_eq!(visited, u64::MAX - left, "{a}: one unit per node");
        }
        let mut left = 3;
        assert_eq!(js_hash_within(&json!([1, 2, 3]), &s, &mut left), None);
        assert!(JType::Integer.matches(&json!(1e300)));
        assert!(!JType::Integer.matches(&json!(1.5)));
        assert_eq!(js_length("a😀"), 2);
        assert_eq!(escape_token("a/b~c"), "a~1b~0c");
        assert_eq!(unescape_token("a~1b~0c"), "a/b~c");
    }
}
