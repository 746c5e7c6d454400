//! Strings: `maxLength`, `minLength` (in code points), `pattern` (an
//! ECMAScript `u`-flag regular expression, [`crate::schema::regex`]), and the
//! refusal of `format` (no format is known, so strict mode refuses it).

use crate::schema::compile::{join, Compiler, Cx};
use crate::schema::eval::{num, Evaluator, Path};
use crate::schema::node::Kw;
use crate::schema::regex::JsRegex;
use crate::schema::value::js_length;
use serde_json::{Map, Value};

pub(crate) enum StringKw {
    MaxLength(f64),
    MinLength(f64),
    Pattern(JsRegex),
}

impl Compiler<'_> {
    pub(in crate::schema) fn compile_strings(&mut self, m: &Map<String, Value>, cx: &Cx, kws: &mut Vec<Kw>) {
        let at = |k: &str| join(&cx.ptr, k);
        let num = |k: &str| m.get(k).and_then(|v| v.as_f64());
        if let Some(f) = m.get("format") {
            let name = f.as_str().unwrap_or("?");
            self.error(
                at("format"),
                "format",
                format!("format \"{name}\" is unknown: no format is validated, so strict mode refuses \"format\""),
            );
        }
        if let Some(x) = num("maxLength") {
            kws.push(Kw::String(StringKw::MaxLength(x)));
        }
        if let Some(x) = num("minLength") {
            kws.push(Kw::String(StringKw::MinLength(x)));
        }
        if let Some(Value::String(p)) = m.get("pattern") {
            if let Some(re) = self.regex(p, at("pattern")) {
                kws.push(Kw::String(StringKw::Pattern(re)));
            }
        }
    }
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_string(&mut self, k: &StringKw, inst: &Value, path: &Path<'_>) -> bool {
        let Value::String(s) = inst else { return true };
        match k {
            StringKw::MaxLength(m) => {
                let ok = max_length_holds(s, *m);
                if !ok {
                    self.issue(
                        path,
                        "maxLength",
                        format!("must be at most {} characters long", num(*m)),
                    );
                }
                ok
            }
            StringKw::MinLength(m) => {
                let ok = min_length_holds(s, *m);
                if !ok {
                    self.issue(
                        path,
                        "minLength",
                        format!("must be at least {} characters long", num(*m)),
                    );
                }
                ok
            }
            StringKw::Pattern(re) => {
                let ok = self.regex_match(re, s);
                if !ok {
                    self.issue(path, "pattern", format!("must match the pattern /{}/", re.source()));
                }
                ok
            }
        }
    }
}

// The rules: what `maxLength` and `minLength` accept, written once (issue
// 35). Every evaluation path reaches them: the general evaluator and the
// check mode through `max_length_holds` and `min_length_holds`, the leaf
// and flat plans through [`Lengths`], whose byte bounds are derived from
// the rules too.

/// `maxLength`'s rule on a length in code points.
#[inline(always)]
pub(crate) fn max_length_allows(length: f64, limit: f64) -> bool {
    length <= limit
}

/// `minLength`'s rule on a length in code points.
#[inline(always)]
pub(crate) fn min_length_allows(length: f64, limit: f64) -> bool {
    length >= limit
}

/// Whether `s` meets `maxLength: limit`. A string has at most as many
/// code points as bytes, so one whose byte count the rule allows needs no
/// counting (a rule that allows a length allows every shorter one).
#[inline]
pub(crate) fn max_length_holds(s: &str, limit: f64) -> bool {
    max_length_allows(s.len() as f64, limit) || max_length_allows(js_length(s) as f64, limit)
}

/// Whether `s` meets `minLength: limit`. A string has at least a quarter
/// as many code points as bytes, so one whose quarter byte count the rule
/// allows needs no counting (a rule that allows a length allows every
/// longer one).
#[inline]
pub(crate) fn min_length_holds(s: &str, limit: f64) -> bool {
    min_length_allows(s.len() as f64 / 4.0, limit) || min_length_allows(js_length(s) as f64, limit)
}

/// The `maxLength` and `minLength` of one schema object as the leaf plan
/// and the flat plan hold them: the limits, and the byte counts between
/// which a string meets both without counting its code points (taken from
/// the rules when the plan is made, so they follow a change of the rules).
pub(crate) struct Lengths {
    max_bytes: usize,
    min_bytes: usize,
    max: Option<f64>,
    min: Option<f64>,
}

impl Lengths {
    pub(crate) fn new(max: Option<f64>, min: Option<f64>) -> Lengths {
        // Every string of at most `max_bytes` bytes has at most that many
        // code points; every string of at least `min_bytes` bytes at least
        // a quarter as many.
        let max_bytes = match max {
            Some(m) => last_allowed(|n| max_length_allows(n as f64, m)),
            None => Some(usize::MAX),
        };
        let min_bytes = match min {
            Some(m) => first_allowed(|n| min_length_allows(n as f64 / 4.0, m)),
            None => Some(0),
        };
        match (max_bytes, min_bytes) {
            (Some(max_bytes), Some(min_bytes)) => Lengths {
                max_bytes,
                min_bytes,
                max,
                min,
            },
            // No byte count is sure to pass: every string is measured.
            _ => Lengths {
                max_bytes: 0,
                min_bytes: usize::MAX,
                max,
                min,
            },
        }
    }

    /// Whether `s` meets both lengths.
    #[inline(always)]
    pub(crate) fn holds(&self, s: &str) -> bool {
        let n = s.len();
        (n <= self.max_bytes && n >= self.min_bytes) || self.measured(s)
    }

    /// Whether `s` meets both lengths, as the general evaluator decides.
    #[inline(never)]
    fn measured(&self, s: &str) -> bool {
        self.max.is_none_or(|m| max_length_holds(s, m)) && self.min.is_none_or(|m| min_length_holds(s, m))
    }
}

/// The largest `n` that `allows`, for a rule that allows every count below
/// one it allows (`None`: it allows none).
fn last_allowed(allows: impl Fn(usize) -> bool) -> Option<usize> {
    if !allows(0) {
        return None;
    }
    // allows(lo) holds; find the last such count up to usize::MAX.
    let (mut lo, mut hi) = (0usize, usize::MAX);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if allows(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// The smallest `n` that `allows`, for a rule that allows every count above
/// one it allows (`None`: it allows none).
fn first_allowed(allows: impl Fn(usize) -> bool) -> Option<usize> {
    if !allows(usize::MAX) {
        return None;
    }
    let (mut lo, mut hi) = (0usize, usize::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if allows(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}
