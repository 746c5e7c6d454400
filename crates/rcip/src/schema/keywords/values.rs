//! Values: `const` and `enum` (deep equality with numbers as doubles).

use crate::schema::compile::{join, Compiler, Cx};
use crate::schema::eval::{short_json, Evaluator, Path};
use crate::schema::node::Kw;
use crate::schema::value::js_equal;
use serde_json::{Map, Value};

pub(crate) enum ValueKw {
    Const(Value),
    Enum(Vec<Value>),
}

impl Compiler<'_> {
    pub(in crate::schema) fn compile_values(&mut self, m: &Map<String, Value>, cx: &Cx, kws: &mut Vec<Kw>) {
        if let Some(v) = m.get("const") {
            kws.push(Kw::Value(ValueKw::Const(v.clone())));
        }
        if let Some(Value::Array(list)) = m.get("enum") {
            if list.is_empty() {
                self.error(
                    join(&cx.ptr, "enum"),
                    "enum",
                    "\"enum\" must list at least one value".to_string(),
                );
            }
            kws.push(Kw::Value(ValueKw::Enum(list.clone())));
        }
    }
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_value(&mut self, k: &ValueKw, inst: &Value, path: &Path<'_>) -> bool {
        match k {
            ValueKw::Const(c) => {
                let ok = js_equal(inst, c);
                if !ok {
                    self.issue(path, "const", format!("must be exactly {}", short_json(c)));
                }
                ok
            }
            ValueKw::Enum(list) => {
                let ok = list.iter().any(|v| js_equal(inst, v));
                if !ok {
                    let shown: Vec<String> = list.iter().take(10).map(short_json).collect();
                    self.issue(path, "enum", format!("must be one of {}", shown.join(", ")));
                }
                ok
            }
        }
    }
}
