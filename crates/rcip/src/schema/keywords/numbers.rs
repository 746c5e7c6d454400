//! Numbers: `maximum`, `minimum`, `exclusiveMaximum`, `exclusiveMinimum`
//! and `multipleOf`, in double arithmetic as the reference computes them.

use crate::schema::compile::Compiler;
use crate::schema::eval::{num, Evaluator, Path};
use crate::schema::node::Kw;
use crate::schema::value::{as_f64, is_multiple_of};
use serde_json::{Map, Value};

pub(crate) enum NumberKw {
    Maximum(f64),
    Minimum(f64),
    ExclusiveMaximum(f64),
    ExclusiveMinimum(f64),
    MultipleOf(f64),
}

/// Builds a keyword from its limit.
type Make = fn(f64) -> NumberKw;

impl Compiler<'_> {
    pub(in crate::schema) fn compile_numbers(&mut self, m: &Map<String, Value>, kws: &mut Vec<Kw>) {
        let num = |k: &str| m.get(k).and_then(|v| v.as_f64());
        let table: [(&str, Make); 5] = [
            ("maximum", NumberKw::Maximum),
            ("minimum", NumberKw::Minimum),
            ("exclusiveMaximum", NumberKw::ExclusiveMaximum),
            ("exclusiveMinimum", NumberKw::ExclusiveMinimum),
            ("multipleOf", NumberKw::MultipleOf),
        ];
        for (name, make) in table {
            if let Some(x) = num(name) {
                kws.push(Kw::Number(make(x)));
            }
        }
    }
}

impl NumberKw {
    /// Whether the number `x` satisfies the keyword: the rule of its
    /// variant below. The general evaluator ([`Evaluator::eval_number`])
    /// and the check mode call this; the leaf plan (`Leaf::holds`,
    /// eval.rs) and the flat plan (`NumPlan::holds`, flat.rs) hold the
    /// limits in fields of their own and call the rules directly.
    #[inline]
    pub(crate) fn holds(&self, x: f64) -> bool {
        match *self {
            NumberKw::Maximum(m) => maximum_holds(x, m),
            NumberKw::Minimum(m) => minimum_holds(x, m),
            NumberKw::ExclusiveMaximum(m) => exclusive_maximum_holds(x, m),
            NumberKw::ExclusiveMinimum(m) => exclusive_minimum_holds(x, m),
            NumberKw::MultipleOf(m) => multiple_of_holds(x, m),
        }
    }
}

// The rules: what each number keyword accepts, written once. Every
// evaluation path calls these (issue 35), so changing one changes every
// path. The flat plan plans an absent bound as an infinite one (instance
// numbers are finite), which each bound's rule must therefore allow.

/// `maximum`: `x` is at most the limit.
#[inline(always)]
pub(crate) fn maximum_holds(x: f64, limit: f64) -> bool {
    x <= limit
}

/// `minimum`: `x` is at least the limit.
#[inline(always)]
pub(crate) fn minimum_holds(x: f64, limit: f64) -> bool {
    x >= limit
}

/// `exclusiveMaximum`: `x` is below the limit.
#[inline(always)]
pub(crate) fn exclusive_maximum_holds(x: f64, limit: f64) -> bool {
    x < limit
}

/// `exclusiveMinimum`: `x` is above the limit.
#[inline(always)]
pub(crate) fn exclusive_minimum_holds(x: f64, limit: f64) -> bool {
    x > limit
}

/// `multipleOf`: `x` divided by `m` is an integer, in the reference's
/// double arithmetic ([`is_multiple_of`]).
#[inline(always)]
pub(crate) fn multiple_of_holds(x: f64, m: f64) -> bool {
    is_multiple_of(x, m)
}

impl Evaluator<'_> {
    pub(in crate::schema) fn eval_number(&mut self, k: &NumberKw, inst: &Value, path: &Path<'_>) -> bool {
        let Value::Number(n) = inst else { return true };
        let ok = k.holds(as_f64(n));
        if !ok {
            let (keyword, message) = match *k {
                NumberKw::Maximum(m) => ("maximum", format!("must be <= {}", num(m))),
                NumberKw::Minimum(m) => ("minimum", format!("must be >= {}", num(m))),
                NumberKw::ExclusiveMaximum(m) => ("exclusiveMaximum", format!("must be < {}", num(m))),
                NumberKw::ExclusiveMinimum(m) => ("exclusiveMinimum", format!("must be > {}", num(m))),
                NumberKw::MultipleOf(m) => ("multipleOf", format!("must be a multiple of {}", num(m))),
            };
            self.issue(path, keyword, message);
        }
        ok
    }
}
