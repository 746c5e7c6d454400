//! The project's own comparator, implementing the comparison rules of
//! conformance/FORMAT.md, so that `make test` needs no Python and no
//! ../shared.

use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};

/// Every `reason` text the scenario itself supplies (policy script, steps,
/// availability scripts).
fn host_reasons(scenario: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "reason" {
                        if let Value::String(s) = x {
                            out.insert(s.clone());
                        }
                    }
                    walk(x, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(&scenario["options"]["policy"], &mut out);
    walk(&scenario["steps"], &mut out);
    out
}

/// Replaces invocation and confirmation ids by their order of first
/// appearance (arrays in order, object keys in sorted order).
fn normalise(value: &Value, maps: &mut [HashMap<String, String>; 2], parent: Option<&str>) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| normalise(v, maps, parent)).collect()),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                let v = &m[key];
                let kind = if key == "invocationId" {
                    Some(0)
                } else if key == "id" && parent == Some("confirmation") {
                    Some(1)
                } else {
                    None
                };
                match (kind, v) {
                    (Some(k), Value::String(s)) => {
                        let n = maps[k].len() + 1;
                        let label = if k == 0 { "invocation" } else { "confirmation" };
                        let id = maps[k]
                            .entry(s.clone())
                            .or_insert_with(|| format!("<{label}#{n}>"))
                            .clone();
                        out.insert(key.clone(), Value::String(id));
                    }
                    _ => {
                        out.insert(key.clone(), normalise(v, maps, Some(key)));
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!(
            "{}...",
            &s[..s
                .char_indices()
                .take_while(|(i, _)| *i < 300)
                .last()
                .map_or(0, |(i, _)| i)]
        )
    } else {
        s
    }
}

fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    a.as_f64() == b.as_f64()
}

fn diff(actual: &Value, expected: &Value, path: &str, reasons: &BTreeSet<String>, in_error: bool) -> Option<String> {
    match (actual, expected) {
        (Value::Number(a), Value::Number(e)) => {
            (!same_number(a, e)).then(|| format!("{path}: expected {}, got {}", show(expected), show(actual)))
        }
        (Value::Object(a), Value::Object(e)) => {
            let mut missing: Vec<&String> = e.keys().filter(|k| !a.contains_key(*k)).collect();
            missing.sort();
            if let Some(k) = missing.first() {
                return Some(format!("{path}: missing key '{k}' (expected {})", show(&e[*k])));
            }
            let mut extra: Vec<&String> = a.keys().filter(|k| !e.contains_key(*k)).collect();
            extra.sort();
            if let Some(k) = extra.first() {
                return Some(format!("{path}: unexpected key '{k}' (got {})", show(&a[*k])));
            }
            let mut keys: Vec<&String> = e.keys().collect();
            keys.sort();
            for key in keys {
                let sub = format!("{path}.{key}");
                let (av, ev) = (&a[key], &e[key]);
                if in_error && key == "message" {
                    let Value::String(got) = av else {
                        return Some(format!("{sub}: expected a message string, got {}", show(av)));
                    };
                    if let Value::String(want) = ev {
                        if reasons.contains(want) && got != want {
                            return Some(format!(
                                "{sub}: expected host-supplied text {}, got {}",
                                show(ev),
                                show(av)
                            ));
                        }
                    }
                    continue;
                }
                if key == "reason" && e.get("reasonCode") == Some(&Value::String("AVAILABILITY_CHECK_FAILED".into())) {
                    match av {
                        Value::String(s) if !s.is_empty() => continue,
                        _ => return Some(format!("{sub}: expected a reason string, got {}", show(av))),
                    }
                }
                let problem = if in_error && key == "validationIssues" {
                    diff_issues(av, ev, &sub)
                } else {
                    diff(av, ev, &sub, reasons, key == "error")
                };
                if problem.is_some() {
                    return problem;
                }
            }
            None
        }
        (Value::Array(a), Value::Array(e)) => {
            if a.len() != e.len() {
                return Some(format!(
                    "{path}: expected {} items, got {} (expected {}, got {})",
                    e.len(),
                    a.len(),
                    show(expected),
                    show(actual)
                ));
            }
            a.iter()
                .zip(e)
                .enumerate()
                .find_map(|(i, (x, y))| diff(x, y, &format!("{path}[{i}]"), reasons, false))
        }
        _ => (actual != expected).then(|| format!("{path}: expected {}, got {}", show(expected), show(actual))),
    }
}

/// Validation issues compare as a multiset of (instancePath, keyword).
fn diff_issues(actual: &Value, expected: &Value, path: &str) -> Option<String> {
    fn keys(v: &Value) -> Option<Vec<(String, String)>> {
        let items = v.as_array()?;
        let mut out = Vec::new();
        for i in items {
            let m = i.as_object()?;
            let s = |k: &str| match m.get(k) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "None".into(),
            };
            out.push((s("instancePath"), s("keyword")));
        }
        out.sort();
        Some(out)
    }
    let Some(a) = keys(actual) else {
        return Some(format!("{path}: expected a list of issues, got {}", show(actual)));
    };
    let e = keys(expected).unwrap_or_default();
    (a != e).then(|| format!("{path}: expected issues {e:?}, got {a:?}"))
}

/// The first difference between a runner output and a scenario's expected
/// transcript, or `None`.
pub fn compare(output: &Value, scenario: &Value) -> Option<String> {
    let expected = &scenario["expected"];
    if !output.is_object() {
        return Some("$: runner output is not an object".into());
    }
    let reasons = host_reasons(scenario);
    for key in ["create", "transcript"] {
        let Some(a) = output.get(key) else {
            return Some(format!("$: runner output has no '{key}'"));
        };
        let a = normalise(a, &mut [HashMap::new(), HashMap::new()], None);
        let e = normalise(&expected[key], &mut [HashMap::new(), HashMap::new()], None);
        if let Some(p) = diff(&a, &e, &format!("$.{key}"), &reasons, false) {
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scenario(expected: Value) -> Value {
        json!({"options": {"policy": [{"decision": "deny", "reason": "host says no"}]}, "steps": [], "expected": expected})
    }

    #[test]
    fn ids_are_normalised_by_first_appearance() {
        let s = scenario(
            json!({"create": {"ok": true}, "transcript": [{"outcome": {"invocationId": "a"}}, {"outcome": {"invocationId": "a"}}]}),
        );
        let same = json!({"create": {"ok": true}, "transcript": [{"outcome": {"invocationId": "x"}}, {"outcome": {"invocationId": "x"}}]});
        assert_eq!(compare(&same, &s), None);
        let different = json!({"create": {"ok": true}, "transcript": [{"outcome": {"invocationId": "x"}}, {"outcome": {"invocationId": "y"}}]});
        assert!(compare(&different, &s).is_some());
    }

    #[test]
    fn messages_free_except_host_text() {
        let s = scenario(json!({"create": {"ok": true}, "transcript": [
            {"outcome": {"error": {"code": "POLICY_DENIED", "message": "host says no"}}},
            {"outcome": {"error": {"code": "INPUT_INVALID", "message": "anything", "validationIssues": [
                {"instancePath": "/a", "keyword": "type", "message": "m"}, {"instancePath": "", "keyword": "required", "message": "m"}]}}}
        ]}));
        let good = json!({"create": {"ok": true}, "transcript": [
            {"outcome": {"error": {"code": "POLICY_DENIED", "message": "host says no"}}},
            {"outcome": {"error": {"code": "INPUT_INVALID", "message": "other words", "validationIssues": [
                {"instancePath": "", "keyword": "required", "message": "x"}, {"instancePath": "/a", "keyword": "type", "message": "y"}]}}}
        ]});
        assert_eq!(compare(&good, &s), None);
        let mut bad = good.clone();
        bad["transcript"][0]["outcome"]["error"]["message"] = json!("rcip words");
        assert!(compare(&bad, &s).unwrap().contains("host-supplied"));
        let mut bad = good.clone();
        bad["transcript"][1]["outcome"]["error"]["validationIssues"][0]["keyword"] = json!("minLength");
        assert!(compare(&bad, &s).unwrap().contains("issues"));
    }

    #[test]
    fn numbers_compare_as_doubles_and_keys_matter() {
        let s = scenario(json!({"create": {"ok": true}, "transcript": [{"v": 1, "big": 12345678901234567890u64}]}));
        assert_eq!(
            compare(
                &json!({"create": {"ok": true}, "transcript": [{"v": 1.0, "big": 12345678901234567000.0}]}),
                &s
            ),
            None
        );
        assert!(compare(&json!({"create": {"ok": true}, "transcript": [{"v": 2, "big": 1}]}), &s).is_some());
        assert!(compare(
            &json!({"create": {"ok": true}, "transcript": [{"v": 1, "big": 12345678901234567890u64, "x": null}]}),
            &s
        )
        .is_some());
        assert!(compare(
            &json!({"create": {"ok": true}, "transcript": [{"v": true, "big": 12345678901234567890u64}]}),
            &s
        )
        .is_some());
    }
}
