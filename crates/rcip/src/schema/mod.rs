//! rcip's JSON Schema 2020-12 validator: the reference's dialect (Ajv 8,
//! `Ajv2020`, `strict: true`, `allErrors: true`, no formats, no custom
//! keywords, no remote references), implemented here.
//!
//! [`Schema::compile`] refuses what that configuration refuses (every
//! violation at once) and [`Schema::validate`] reports issues the way it
//! reports them (`instancePath` as a JSON pointer, Ajv's keyword names).
//! The jsonschema crate is used for one thing only: the 2020-12 meta-schema
//! (checking a schema before compiling it, and a `$ref` to the meta-schema).
//!
//! Layout:
//! - `compile`: the walk over a schema as the reference compiles it
//!   (identifiers, reference resolution, `type`/`nullable`, the strict
//!   rules that span keywords), building the arena of `node`s;
//! - `eval`: the evaluator of that arena (instance paths, which issues
//!   are kept, evaluated properties and items for `unevaluated*`);
//! - `flat`: the validity pass of a schema made only of simple keywords,
//!   as one record per node built at compile (a valid instance is answered
//!   without setting up the evaluator);
//! - `keywords`: one file per keyword family, with that family's closed
//!   enum, its compile code and its evaluation code side by side;
//! - `regex` (ECMAScript `u`-flag patterns), `value` (JSON values as the
//!   reference sees them: numbers as doubles), `uri` (identifiers).
//!
//! Instances are expected to be normalised by [`crate::json`] (numbers as
//! doubles).

mod compile;
mod eval;
mod flat;
mod keywords;
mod node;
mod regex;
mod uri;
mod value;

use compile::Compiler;
use eval::Evaluator;
pub use eval::{Budget, IssueLimit};
use node::Program;
use serde_json::Value;
use std::fmt;

/// One validation issue, as the reference reports it
/// (`{"instancePath", "keyword", "message"}`; serde reads and writes that
/// shape).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationIssue {
    /// JSON pointer to the failing part of the instance (`""` for the root).
    pub instance_path: String,
    /// The keyword as Ajv names it (`type`, `required`, `false schema`, ...).
    pub keyword: String,
    /// A sentence in rcip's own words.
    pub message: String,
}

/// Why a schema does not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON pointer inside the schema where the problem is (`""` = root).
    pub pointer: String,
    /// Short name of the rule: `$schema`, `meta-schema`, `unknown keyword`,
    /// `nullable`, `id`, `async`, `strict types`, `union type`,
    /// `strict required`, `strict tuple`, `if/then/else`, `contains`,
    /// `regular expression`, `matching properties`, `format`, `enum`,
    /// `reference`, `dynamic reference`, `identifier`,
    /// `duplicate identifier` or `anchor`.
    pub rule: &'static str,
    /// A sentence in rcip's own words.
    pub message: String,
}

/// `<rule> at <where>: <message>`, where is "the root" or the quoted pointer.
fn write_located(f: &mut fmt::Formatter<'_>, rule: &str, pointer: &str, message: &str) -> fmt::Result {
    if pointer.is_empty() {
        write!(f, "{rule} at the root: {message}")
    } else {
        write!(f, "{rule} at \"{pointer}\": {message}")
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_located(f, self.rule, &self.pointer, &self.message)
    }
}

/// A compiled schema: immutable, `Send + Sync`, shared by every runtime made
/// from the catalog that holds it.
pub struct Schema {
    program: Program,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Schema")
    }
}

/// The meta-schema URI the reference knows (with or without a final `#`).
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

impl Schema {
    /// Compiles `schema` as strict JSON Schema 2020-12. Every problem found
    /// is returned (at least one on failure).
    ///
    /// Order, as in the reference: `$schema` names the 2020-12 dialect, the
    /// schema is valid against the 2020-12 meta-schema (checked by the
    /// jsonschema crate), then the strict rules hold on every subschema the
    /// reference compiles.
    pub fn compile(schema: &Value) -> Result<Schema, Vec<SchemaError>> {
        if let Some(dialect) = schema.get("$schema") {
            let known = dialect
                .as_str()
                .is_some_and(|d| d.strip_suffix('#').unwrap_or(d) == DIALECT);
            if !known {
                return Err(vec![SchemaError {
                    pointer: "/$schema".to_string(),
                    rule: "$schema",
                    message: format!(
                        "{} is not a known meta-schema; only \"{DIALECT}\" (JSON Schema 2020-12) is supported",
                        dialect
                    ),
                }]);
            }
        }
        let meta = jsonschema::draft202012::meta::validator();
        if !meta.is_valid(schema) {
            // The 2020-12 meta-schema is the union of eight vocabulary
            // meta-schemas, several of which reject the same thing (a
            // non-object schema fails all eight): report each problem once.
            let mut errors: Vec<SchemaError> = Vec::new();
            for e in meta.iter_errors(schema) {
                let error = SchemaError {
                    pointer: e.instance_path().to_string(),
                    rule: "meta-schema",
                    message: format!("not a valid JSON Schema 2020-12: {e}"),
                };
                if !errors.contains(&error) {
                    errors.push(error);
                }
            }
            return Err(errors);
        }
        let program = Compiler::compile(schema)?;
        Ok(Schema { program })
    }

    /// True when `instance` satisfies the schema (within the default
    /// [`Budget`]; an instance that exhausts it is not valid).
    pub fn is_valid(&self, instance: &Value) -> bool {
        Evaluator::run(&self.program, instance, false, Budget::default()).valid
    }

    /// Every issue of `instance` (empty when valid), as the reference
    /// reports them with `allErrors`, within the default [`Budget`].
    pub fn validate(&self, instance: &Value) -> Vec<ValidationIssue> {
        self.validate_within(instance, Budget::default())
    }

    /// [`Schema::validate`] under `budget`: each of its two passes (validity,
    /// then the issues of an invalid instance) may spend the budget once.
    /// When a pass exhausts it, the one issue is [`budget_issue`] (or
    /// [`steps_issue`] when one backtracking search took its own step
    /// bound; **rcip**: the reference has no budget). Every issue is
    /// listed (no [`IssueLimit`]).
    pub fn validate_within(&self, instance: &Value, budget: Budget) -> Vec<ValidationIssue> {
        // As `validate_limited`, with the flat plan's valid answer first
        // (the hot path returns an empty Vec, which allocates nothing).
        if let Some(flat) = &self.program.flat {
            return match flat.walk(instance) {
                (true, spent) if spent <= budget.floor => Vec::new(),
                (true, spent) => self.beyond_floor(instance, budget, spent).issues,
                (false, _) => self.issues_within(instance, budget, IssueLimit::UNLIMITED).issues,
            };
        }
        self.validate_general(instance, budget, IssueLimit::UNLIMITED).issues
    }

    /// [`Schema::validate_within`] keeping at most the issues `limit`
    /// allows (**rcip**, issue 27): the first ones of the full list, and
    /// whether some were left out ([`Validation::truncated`]). The issue
    /// pass stops once the list is final. Validity is unchanged: the list
    /// is empty exactly when the value is valid. The runtime validates
    /// inputs and outputs this way (PIPELINE.md section 8).
    pub fn validate_limited(&self, instance: &Value, budget: Budget, limit: IssueLimit) -> Validation {
        // The flat plan answers a valid instance without setting up an
        // evaluator (and an empty Vec allocates nothing).
        if let Some(flat) = &self.program.flat {
            return match flat.walk(instance) {
                (true, spent) if spent <= budget.floor => Validation::default(),
                (true, spent) => self.beyond_floor(instance, budget, spent),
                (false, _) => self.issues_within(instance, budget, limit),
            };
        }
        self.validate_general(instance, budget, limit)
    }

    /// [`Schema::validate_limited`] of a schema without a flat plan.
    #[inline(never)]
    fn validate_general(&self, instance: &Value, budget: Budget, limit: IssueLimit) -> Validation {
        let pass = Evaluator::run(&self.program, instance, false, budget);
        if pass.valid {
            return Validation::default();
        }
        if pass.exhausted {
            return Validation::one(pass.stop_issue());
        }
        self.issues_within(instance, budget, limit)
    }

    /// A valid instance of a flat plan that spent more than the budget's
    /// floor: valid within the full budget, or out of it.
    #[cold]
    #[inline(never)]
    fn beyond_floor(&self, instance: &Value, budget: Budget, spent: u64) -> Validation {
        match flat::Flat::judge(&self.program, instance, budget, spent) {
            flat::Verdict::Exhausted { limit, .. } => Validation::one(budget_issue(limit)),
            _ => Validation::default(),
        }
    }

    /// The issue pass of an instance the validity pass found invalid.
    #[inline(never)]
    fn issues_within(&self, instance: &Value, budget: Budget, limit: IssueLimit) -> Validation {
        let pass = Evaluator::run_issues(&self.program, instance, budget, limit);
        if pass.exhausted {
            return Validation::one(pass.stop_issue());
        }
        let truncated = pass.truncated;
        let mut issues = pass.issues;
        if issues.is_empty() {
            // Every failing keyword reports an issue; keep "empty = valid"
            // true even if one did not.
            debug_assert!(false, "an invalid instance got no issue");
            issues.push(ValidationIssue {
                instance_path: String::new(),
                keyword: "false schema".to_string(),
                message: "the value does not match the schema".to_string(),
            });
        }
        Validation { issues, truncated }
    }

    /// What validating `instance` spends of `budget`: the units of the
    /// pass that spent most (the issue pass too, for an invalid instance)
    /// and that pass's budget. For tests and benchmarks that check how far
    /// real inputs stay from the budget.
    pub fn validation_cost(&self, instance: &Value, budget: Budget) -> ValidationCost {
        let first = Evaluator::run(&self.program, instance, false, budget);
        let mut cost = ValidationCost {
            spent: first.spent,
            limit: first.limit,
            exhausted: first.exhausted,
        };
        if !first.valid && !first.exhausted {
            let second = Evaluator::run(&self.program, instance, true, budget);
            if second.spent > cost.spent {
                cost = ValidationCost {
                    spent: second.spent,
                    limit: second.limit,
                    exhausted: second.exhausted,
                };
            }
        }
        cost
    }

    /// What the compile found that can make validation slow: patterns on
    /// the backtracking engine and references that fan out (`rcip check`
    /// prints them as warnings).
    pub fn performance_warnings(&self) -> &[PerformanceWarning] {
        &self.program.warnings
    }
}

/// The issue a validation that exhausted its budget reports (**rcip**):
/// `{"instancePath": "", "keyword": "budget", "message": ...}`.
pub fn budget_issue(limit: u64) -> ValidationIssue {
    ValidationIssue {
        instance_path: String::new(),
        keyword: "budget".to_string(),
        message: format!(
            "validation stopped: it exceeded its work budget of {limit} units (a schema and value this costly are refused)"
        ),
    }
}

/// The issue a validation reports when one search on the backtracking
/// engine took its own step bound (**rcip**, issue 27): the shape of
/// [`budget_issue`] (`{"instancePath": "", "keyword": "budget", ...}`),
/// naming the bound.
pub fn steps_issue(bound: u64) -> ValidationIssue {
    ValidationIssue {
        instance_path: String::new(),
        keyword: "budget".to_string(),
        message: format!(
            "validation stopped: one regular-expression search exceeded its own bound of {bound} steps (100000 plus 1000 per byte of the text; a pattern and value this costly are refused)"
        ),
    }
}

/// What [`Schema::validate_limited`] found: the issues kept (empty exactly
/// when the value is valid) and whether the [`IssueLimit`] left some out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validation {
    /// The first issues of the full list, in its order.
    pub issues: Vec<ValidationIssue>,
    /// Issues were left out (**rcip**; the reference's `allErrors` lists
    /// them all). The runtime states it as `error.validationIssuesTruncated`.
    pub truncated: bool,
}

impl Validation {
    fn one(issue: ValidationIssue) -> Validation {
        Validation {
            issues: vec![issue],
            truncated: false,
        }
    }
}

/// What one validation spent of its [`Budget`] (see
/// [`Schema::validation_cost`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidationCost {
    /// Units spent by the costliest pass.
    pub spent: u64,
    /// That pass's budget.
    pub limit: u64,
    /// The budget ran out.
    pub exhausted: bool,
}

/// Something in a compiled schema that can make validation slow, found at
/// compile time (a warning: the schema compiles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerformanceWarning {
    /// JSON pointer inside the schema.
    pub pointer: String,
    /// `backtracking pattern` or `reference fan-out`.
    pub rule: &'static str,
    /// A sentence in rcip's own words.
    pub message: String,
}

impl fmt::Display for PerformanceWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_located(f, self.rule, &self.pointer, &self.message)
    }
}

/// For the regex-equivalence fuzz target (`fuzz/fuzz_targets/regex_equiv.rs`)
/// and tests: compiles `pattern` as the schema compiler does and, when it
/// runs on the linear-time engine, answers JavaScript's
/// `new RegExp(pattern, "u").test(text)` twice: `(translation, regress)`.
/// `None` when the pattern is refused, stays on the backtracking engine,
/// or regress runs out of its `steps` (then it has no answer).
#[doc(hidden)]
pub fn compare_pattern_engines(pattern: &str, text: &str, steps: u64) -> Option<(bool, bool)> {
    let re = regex::JsRegex::new(pattern).ok()?;
    if re.backtracking().is_some() {
        return None;
    }
    let mut budget = u64::MAX;
    let ours = re.search(text, &mut budget)?;
    let reference = ::regress::Regex::with_flags(pattern, "u").ok()?;
    let before = ::regress::set_step_budget(steps);
    let found = reference.find(text).is_some();
    let left = ::regress::set_step_budget(before);
    (left > 0).then_some((ours, found))
}

/// Compares every evaluation path of `schema` on `data` (**rcip** test
/// support for the unit tests and the `schema_modes` fuzz target; not a
/// stable API): the flat plan (when the schema has one), the check mode
/// (with its leaf and closed-object plans) and the keyword-by-keyword
/// evaluator must agree on validity and exhaustion, spend the same budget
/// units on a valid instance, and, under the default budget and three tight
/// ones (the units a valid instance needs, one less, half), give the same
/// issue list through [`Schema::validate_within`], [`Schema::validate_limited`]
/// and the evaluator's own issue pass. `Err` names the first disagreement.
#[doc(hidden)]
pub fn compare_modes(schema: &Schema, data: &Value) -> Result<(), String> {
    use eval::Mode;
    let prog = &schema.program;
    let budget = Budget::default();
    let general = Evaluator::run_with(prog, data, false, budget, Mode::General);
    for mode in [Mode::Fastest, Mode::Check] {
        let fast = Evaluator::run_with(prog, data, false, budget, mode);
        if (fast.valid, fast.exhausted) != (general.valid, general.exhausted) {
            return Err(format!(
                "{mode:?}: valid {} exhausted {} (general: {} {}) on {data}",
                fast.valid, fast.exhausted, general.valid, general.exhausted
            ));
        }
        if fast.valid && (fast.spent, fast.limit) != (general.spent, general.limit) {
            return Err(format!(
                "{mode:?}: spent {}/{} (general: {}/{}) on {data}",
                fast.spent, fast.limit, general.spent, general.limit
            ));
        }
    }
    if schema.is_valid(data) != general.valid {
        return Err(format!("is_valid disagrees with the general evaluator on {data}"));
    }
    let mut floors = vec![
        budget.floor,
        general.spent,
        general.spent.saturating_sub(1),
        general.spent / 2,
    ];
    floors.dedup();
    for floor in floors {
        let tight = Budget { floor, ..budget };
        let g = Evaluator::run_with(prog, data, false, tight, Mode::General);
        let f = Evaluator::run_with(prog, data, false, tight, Mode::Fastest);
        if general.valid && (f.valid, f.exhausted, f.spent, f.limit) != (g.valid, g.exhausted, g.spent, g.limit) {
            return Err(format!(
                "floor {floor}: the fastest path (valid {}, exhausted {}, {}/{}) differs from the general one ({}, {}, {}/{}) on {data}",
                f.valid, f.exhausted, f.spent, f.limit, g.valid, g.exhausted, g.spent, g.limit
            ));
        }
        let expected = if g.valid {
            Vec::new()
        } else if g.exhausted {
            vec![budget_issue(g.limit)]
        } else {
            let issues = Evaluator::run_with(prog, data, true, tight, Mode::General);
            if issues.exhausted {
                vec![budget_issue(issues.limit)]
            } else {
                issues.issues
            }
        };
        let within = schema.validate_within(data, tight);
        if within != expected {
            return Err(format!(
                "floor {floor}: validate_within gave {within:?}, the general evaluator {expected:?} on {data}"
            ));
        }
        let limited = schema.validate_limited(data, tight, IssueLimit::UNLIMITED);
        if limited.issues != within || limited.truncated {
            return Err(format!(
                "floor {floor}: validate_limited gave {:?}, validate_within {within:?} on {data}",
                limited.issues
            ));
        }
    }
    Ok(())
}

/// Runs a schema corpus (the layout of the shared Ajv corpus files) and
/// returns the results in the layout `compare_schema.py` reads (`valid`
/// from [`Schema::is_valid`], `issues` from [`Schema::validate`], so both
/// evaluation passes are compared with the reference):
/// `{"entries": [{"id", "compile", "compileErrors"?, "tests": [{"valid", "issues"}]}]}`.
pub fn corpus_results(corpus: &Value) -> Value {
    let mut entries = Vec::new();
    let empty = Vec::new();
    let list = corpus.get("entries").and_then(Value::as_array).unwrap_or(&empty);
    for entry in list {
        let id = entry.get("id").cloned().unwrap_or(Value::Null);
        let schema = entry.get("schema").cloned().unwrap_or(Value::Bool(true));
        let tests = entry.get("tests").and_then(Value::as_array).unwrap_or(&empty);
        let mut out = serde_json::Map::new();
        out.insert("id".into(), id);
        match Schema::compile(&schema) {
            Ok(compiled) => {
                out.insert("compile".into(), "ok".into());
                let results: Vec<Value> = tests
                    .iter()
                    .map(|t| {
                        let data = t.get("data").unwrap_or(&Value::Null);
                        let issues = compiled.validate(data);
                        // Validity from the validity pass (flat plan, or the
                        // check mode with its leaf and closed-object plans),
                        // the issues from the issue pass: a path that
                        // disagrees with the other shows as a difference
                        // from the reference instead of being masked.
                        let valid = compiled.is_valid(data);
                        serde_json::json!({
                            "valid": valid,
                            "issues": issues.iter().map(|i| serde_json::json!({
                                "instancePath": i.instance_path,
                                "keyword": i.keyword,
                                "message": i.message,
                            })).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                out.insert("tests".into(), Value::Array(results));
            }
            Err(errors) => {
                out.insert("compile".into(), "error".into());
                out.insert(
                    "compileErrors".into(),
                    Value::Array(errors.iter().map(|e| Value::String(e.to_string())).collect()),
                );
                out.insert("tests".into(), Value::Array(Vec::new()));
            }
        }
        entries.push(Value::Object(out));
    }
    serde_json::json!({ "entries": entries })
}

#[cfg(test)]
mod tests;
