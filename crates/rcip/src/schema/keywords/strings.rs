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
                // A string has at most as many code points as bytes, so a
                // short one needs no counting.
                let ok = (s.len() as f64) <= *m || (js_length(s) as f64) <= *m;
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
                // And at least a quarter as many code points as bytes.
                let ok = (s.len() as f64) >= 4.0 * *m || (js_length(s) as f64) >= *m;
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
