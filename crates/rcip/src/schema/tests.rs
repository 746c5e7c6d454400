//! Strict rules and issue shapes of [`Schema`], each checked against what
//! the reference (Ajv 8, `Ajv2020`, `strict: true`, `allErrors: true`) does.

use super::eval::Mode;
use super::*;
use serde_json::json;

fn compile(schema: Value) -> Schema {
    match Schema::compile(&schema) {
        Ok(s) => s,
        Err(e) => panic!("{schema} should compile: {e:?}"),
    }
}

/// The rules of the errors `schema` is refused with.
fn refused(schema: Value) -> Vec<(String, &'static str)> {
    match Schema::compile(&schema) {
        Ok(_) => panic!("{schema} should be refused"),
        Err(e) => {
            assert!(!e.is_empty());
            e.into_iter().map(|e| (e.pointer, e.rule)).collect()
        }
    }
}

fn has(errors: &[(String, &'static str)], pointer: &str, rule: &str) -> bool {
    errors.iter().any(|(p, r)| p == pointer && *r == rule)
}

/// The (instancePath, keyword) pairs of the issues, sorted.
fn issues(schema: &Schema, data: Value) -> Vec<(String, String)> {
    let list = schema.validate(&data);
    assert_eq!(
        list.is_empty(),
        schema.is_valid(&data),
        "validate and is_valid disagree on {data}"
    );
    let mut pairs: Vec<(String, String)> = list.into_iter().map(|i| (i.instance_path, i.keyword)).collect();
    pairs.sort();
    pairs
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list.iter().map(|(p, k)| (p.to_string(), k.to_string())).collect();
    v.sort();
    v
}

// ---- strict compile -------------------------------------------------------

#[test]
fn unknown_keywords_are_refused_where_compiled() {
    let e = refused(json!({"type": "object", "properties": {"a": {"type": "string", "tpye": "x"}}}));
    assert!(has(&e, "/properties/a/tpye", "unknown keyword"));
    for kw in [
        "$anchor",
        "additionalItems",
        "example",
        "x-internal",
        "discriminator",
        "errorMessage",
    ] {
        let e = refused(json!({"type": "string", kw: "x"}));
        assert!(has(&e, &format!("/{kw}"), "unknown keyword"), "{kw}");
    }
    // A $defs entry nothing references is never compiled, so never checked.
    compile(json!({"type": "string", "$defs": {"x": {"x-note": 1, "format": "email"}}}));
    // A referenced one is.
    let e = refused(
        json!({"type": "object", "properties": {"c": {"$ref": "#/$defs/c"}}, "$defs": {"c": {"type": "string", "maxLenght": 3}}}),
    );
    assert!(has(&e, "/$defs/c/maxLenght", "unknown keyword"));
    // Annotations are known.
    compile(
        json!({"type": "string", "title": "t", "description": "d", "default": "x", "examples": ["a"],
        "deprecated": false, "readOnly": true, "writeOnly": false, "$comment": "c",
        "contentMediaType": "text/plain", "contentEncoding": "base64"}),
    );
}

#[test]
fn schema_dialect_and_meta_schema() {
    compile(json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}));
    compile(json!({"$schema": "https://json-schema.org/draft/2020-12/schema#", "type": "string"}));
    assert!(has(
        &refused(json!({"$schema": "http://json-schema.org/draft-07/schema#"})),
        "/$schema",
        "$schema"
    ));
    // $schema inside a subschema is ignored.
    compile(
        json!({"type": "object", "properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}}}),
    );
    let e = refused(json!({"type": "string", "minLength": -1}));
    assert!(has(&e, "/minLength", "meta-schema"));
    assert!(has(&refused(json!({"type": "strng"})), "/type", "meta-schema"));
    assert!(has(
        &refused(json!({"type": "number", "multipleOf": 0})),
        "/multipleOf",
        "meta-schema"
    ));
    // A non-object schema fails every vocabulary meta-schema the same way:
    // one problem, not eight copies.
    assert_eq!(refused(json!([])).len(), 1, "{:?}", refused(json!([])));
}

#[test]
fn nullable_and_id() {
    let s = compile(json!({"type": "string", "nullable": true}));
    assert!(s.is_valid(&json!(null)) && s.is_valid(&json!("a")) && !s.is_valid(&json!(1)));
    assert!(has(&refused(json!({"nullable": true})), "/nullable", "nullable"));
    assert!(has(
        &refused(json!({"type": ["string", "null"], "nullable": false})),
        "/nullable",
        "nullable"
    ));
    assert!(has(
        &refused(json!({"id": "https://example.com/x", "type": "string"})),
        "/id",
        "id"
    ));
}

#[test]
fn strict_types() {
    // Union types: only one type, or one type and null.
    assert!(has(
        &refused(json!({"type": ["string", "number"]})),
        "/type",
        "union type"
    ));
    assert!(has(
        &refused(json!({"type": ["number", "integer"]})),
        "/type",
        "union type"
    ));
    compile(json!({"type": ["string", "null"], "minLength": 1}));
    // Type-specific keywords need their type.
    assert!(has(&refused(json!({"minimum": 1})), "/minimum", "strict types"));
    assert!(has(
        &refused(json!({"type": "integer", "minLength": 1})),
        "/minLength",
        "strict types"
    ));
    compile(json!({"type": "integer", "minimum": 1, "multipleOf": 2}));
    // Types flow into allOf/anyOf/oneOf/not/if/then/else, not into properties.
    compile(json!({"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}]}));
    assert!(has(
        &refused(json!({"type": "object", "properties": {"a": {"minLength": 1}}})),
        "/properties/a/minLength",
        "strict types"
    ));
    // A type the context does not allow.
    let e = refused(json!({"type": "object", "oneOf": [{"type": "object"}, {"type": "array"}]}));
    assert!(has(&e, "/oneOf/1/type", "strict types"));
    compile(json!({"type": "number", "allOf": [{"type": "integer"}]}));
    assert!(has(
        &refused(json!({"type": "integer", "allOf": [{"type": "number"}]})),
        "/allOf/0/type",
        "strict types"
    ));
    // propertyNames applies to strings.
    compile(json!({"type": "object", "propertyNames": {"pattern": "^a"}}));
    assert!(has(
        &refused(json!({"type": "object", "propertyNames": {"type": "integer"}})),
        "/propertyNames/type",
        "strict types"
    ));
    // A schema whose only rule is $ref skips the check; the referring type does not reach the target.
    compile(
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string", "minLength": 1}}}),
    );
    assert!(has(
        &refused(json!({"type": "string", "$ref": "#/$defs/s", "$defs": {"s": {"minLength": 1}}})),
        "/$defs/s/minLength",
        "strict types"
    ));
}

#[test]
fn strict_required() {
    assert!(has(
        &refused(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]})),
        "/required",
        "strict required"
    ));
    assert!(has(
        &refused(json!({"type": "object", "additionalProperties": {"type": "string"}, "required": ["k"]})),
        "/required",
        "strict required"
    ));
    // required inside allOf does not see the parent's properties (compiled before them)...
    assert!(has(
        &refused(json!({"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"required": ["a"]}]})),
        "/allOf/0/required",
        "strict required"
    ));
    // ...but properties reached earlier through $ref count.
    compile(json!({"type": "object", "$ref": "#/$defs/p", "required": ["a"],
        "$defs": {"p": {"type": "object", "properties": {"a": {"type": "string"}}}}}));
    // dependentSchemas sees only the last non-trivial property.
    compile(
        json!({"type": "object", "properties": {"address": {"type": "string"}, "shipping": {"type": "boolean"}},
        "dependentSchemas": {"shipping": {"required": ["shipping"]}}}),
    );
    assert!(has(
        &refused(
            json!({"type": "object", "properties": {"address": {"type": "string"}, "shipping": {"type": "boolean"}},
            "dependentSchemas": {"shipping": {"required": ["address"]}}})
        ),
        "/dependentSchemas/shipping/required",
        "strict required"
    ));
}

#[test]
fn strict_tuples_conditionals_and_contains() {
    assert!(has(
        &refused(json!({"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]})),
        "/prefixItems",
        "strict tuple"
    ));
    compile(json!({"type": "array", "prefixItems": [{"type": "number"}], "minItems": 1, "maxItems": 1}));
    compile(json!({"type": "array", "prefixItems": [{"type": "number"}], "minItems": 1, "items": false}));
    assert!(has(
        &refused(
            json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "minItems": 1})
        ),
        "/prefixItems",
        "strict tuple"
    ));

    assert!(has(
        &refused(json!({"type": "number", "if": {"minimum": 0}})),
        "/if",
        "if/then/else"
    ));
    assert!(has(
        &refused(json!({"type": "number", "then": {"minimum": 0}})),
        "/then",
        "if/then/else"
    ));
    assert!(has(
        &refused(json!({"type": "number", "else": {"minimum": 0}})),
        "/else",
        "if/then/else"
    ));

    assert!(has(
        &refused(json!({"type": "array", "contains": {"type": "integer"}, "minContains": 0})),
        "/minContains",
        "contains"
    ));
    assert!(has(
        &refused(json!({"type": "array", "contains": {"type": "integer"}, "minContains": 3, "maxContains": 2})),
        "/minContains",
        "contains"
    ));
    assert!(has(
        &refused(json!({"type": "array", "contains": {"type": "integer"}, "maxContains": 0})),
        "/minContains",
        "contains"
    ));
    assert!(has(
        &refused(json!({"type": "array", "maxContains": 2})),
        "/maxContains",
        "contains"
    ));
}

#[test]
fn formats_enums_regexes_and_matching_properties() {
    assert!(has(
        &refused(json!({"type": "string", "format": "email"})),
        "/format",
        "format"
    ));
    assert!(has(&refused(json!({"type": "string", "enum": []})), "/enum", "enum"));
    assert!(has(
        &refused(json!({"type": "string", "pattern": "^[\\w-.]+$"})),
        "/pattern",
        "regular expression"
    ));
    assert!(has(
        &refused(json!({"type": "string", "pattern": "(unclosed"})),
        "/pattern",
        "regular expression"
    ));
    assert!(has(
        &refused(json!({"type": "string", "pattern": "a\\-b"})),
        "/pattern",
        "regular expression"
    ));
    assert!(has(
        &refused(json!({"type": "object", "patternProperties": {"^(x": {"type": "string"}}})),
        "/patternProperties/^(x",
        "regular expression"
    ));
    assert!(has(
        &refused(
            json!({"type": "object", "properties": {"x-id": {"type": "string"}}, "patternProperties": {"^x-": {"type": "string"}}})
        ),
        "/properties/x-id",
        "matching properties"
    ));
}

#[test]
fn references_and_identifiers() {
    assert!(has(
        &refused(json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/money"}}})),
        "/properties/a/$ref",
        "reference"
    ));
    assert!(has(
        &refused(json!({"$ref": "https://example.com/s.json"})),
        "/$ref",
        "reference"
    ));
    assert!(has(
        &refused(json!({"$ref": "./user.schema.json#/$defs/user"})),
        "/$ref",
        "reference"
    ));
    let e = refused(json!({"type": "object", "properties": {
        "a": {"$id": "https://example.com/dup", "type": "string"},
        "b": {"$id": "https://example.com/dup", "type": "integer"}}}));
    assert!(e.iter().any(|(_, r)| *r == "duplicate identifier"));
    assert!(has(
        &refused(json!({"$dynamicRef": "https://example.com/x#a"})),
        "/$dynamicRef",
        "dynamic reference"
    ));
    // Local references, an embedded $id, escaped pointers and the meta-schema resolve.
    let s = compile(json!({"$id": "https://example.com/root", "type": "object",
        "properties": {"a": {"$ref": "item"}, "b~/c": {"type": "integer"}, "d": {"$ref": "#/properties/b~0~1c"}},
        "$defs": {"i": {"$id": "item", "type": "string"}}}));
    assert_eq!(
        issues(&s, json!({"a": 1, "d": "x"})),
        pairs(&[("/a", "type"), ("/d", "type")])
    );
    let meta = compile(json!({"$ref": "https://json-schema.org/draft/2020-12/schema"}));
    assert!(meta.is_valid(&json!({"minLength": 1})));
    assert_eq!(
        issues(&meta, json!({"minLength": -1})),
        pairs(&[("/minLength", "minimum")])
    );
}

#[test]
fn every_problem_is_listed() {
    let e = refused(json!({"type": "object", "properties": {
        "a": {"type": "string", "format": "email"},
        "b": {"type": ["string", "integer"]},
        "c": {"type": "string", "minLenght": 1}}}));
    assert!(has(&e, "/properties/a/format", "format"));
    assert!(has(&e, "/properties/b/type", "union type"));
    assert!(has(&e, "/properties/c/minLenght", "unknown keyword"));
    let shown = Schema::compile(&json!({"type": "string", "format": "email"})).unwrap_err()[0].to_string();
    assert!(shown.starts_with("format at \"/format\": "), "{shown}");
}

// ---- issues ---------------------------------------------------------------

#[test]
fn type_and_keyword_issues() {
    let s = compile(json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "multipleOf": 2}}}));
    assert_eq!(issues(&s, json!({"n": "x"})), pairs(&[("/n", "type")]));
    assert_eq!(
        issues(&s, json!({"n": 3})),
        pairs(&[("/n", "minimum"), ("/n", "multipleOf")])
    );
    assert_eq!(
        issues(&s, json!({"n": 6.5})),
        pairs(&[("/n", "type"), ("/n", "multipleOf")])
    );
    assert!(s.validate(&json!({"n": 6})).is_empty());
    let messages = s.validate(&json!({"n": 3}));
    assert!(messages.iter().all(|i| !i.message.is_empty()));
}

#[test]
fn numbers_are_doubles() {
    let cents = compile(json!({"type": "number", "multipleOf": 0.01}));
    assert!(
        !cents.is_valid(&json!(19.99)),
        "19.99 / 0.01 is not an integer in doubles"
    );
    assert!(cents.is_valid(&json!(0.5)));
    let half = compile(json!({"type": "number", "multipleOf": 0.5}));
    assert!(!half.is_valid(&json!(1e308)));
    let big = compile(json!({"const": 9007199254740993u64}));
    let parse = |t: &str| crate::json::parse_str(t, &crate::json::Limits::default()).unwrap();
    let big = {
        let _ = big;
        compile(parse(r#"{"const": 9007199254740993}"#))
    };
    assert!(big.is_valid(&parse("9007199254740992")));
    assert!(!big.is_valid(&parse("9007199254740994")));
    let int = compile(json!({"type": "integer"}));
    assert!(int.is_valid(&parse("1.0")) && int.is_valid(&parse("1e300")) && !int.is_valid(&parse("1.5")));
}

#[test]
fn every_required_and_additional_property() {
    let s = compile(
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"], "additionalProperties": false}),
    );
    assert_eq!(
        issues(&s, json!({"x": 1, "y": 2})),
        pairs(&[
            ("", "required"),
            ("", "required"),
            ("", "additionalProperties"),
            ("", "additionalProperties")
        ])
    );
    let ap = compile(json!({"type": "object", "additionalProperties": {"type": "integer"}}));
    assert_eq!(
        issues(&ap, json!({"a": "1", "b": 2, "c": true})),
        pairs(&[("/a", "type"), ("/c", "type")])
    );
    let pat = compile(
        json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}),
    );
    assert_eq!(
        issues(&pat, json!({"x-a": 1, "b": 1})),
        pairs(&[("/x-a", "type"), ("", "additionalProperties")])
    );
}

#[test]
fn any_of_one_of_not() {
    let one = compile(json!({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}));
    assert_eq!(issues(&one, json!(5)), pairs(&[("", "oneOf")]));
    assert_eq!(
        issues(&one, json!(-1.5)),
        pairs(&[("", "type"), ("", "minimum"), ("", "oneOf")])
    );
    assert!(one.validate(&json!(2.5)).is_empty());
    // Once two branches match, later ones are not evaluated.
    let bools = compile(json!({"oneOf": [true, true, false]}));
    assert_eq!(issues(&bools, json!("x")), pairs(&[("", "oneOf")]));
    let any = compile(json!({"anyOf": [{"type": "string"}, {"type": "number"}]}));
    assert_eq!(
        issues(&any, json!(null)),
        pairs(&[("", "type"), ("", "type"), ("", "anyOf")])
    );
    assert!(any.validate(&json!(1)).is_empty());
    let not = compile(json!({"type": "string", "not": {"const": "root"}}));
    assert_eq!(issues(&not, json!("root")), pairs(&[("", "not")]));
}

#[test]
fn if_then_else_reports_the_branch_then_if() {
    let s = compile(
        json!({"type": "object", "properties": {"mode": {"type": "string"}, "config": {"type": "object"}},
        "if": {"properties": {"mode": {"const": "advanced"}}, "required": ["mode"]},
        "then": {"properties": {"config": {"type": "object", "properties": {"level": {"type": "integer"}}, "required": ["level"]}}, "required": ["config"]}}),
    );
    assert!(s.validate(&json!({"mode": "basic"})).is_empty());
    assert_eq!(
        issues(&s, json!({"mode": "advanced"})),
        pairs(&[("", "required"), ("", "if")])
    );
    assert_eq!(
        issues(&s, json!({"mode": "advanced", "config": {"level": "x"}})),
        pairs(&[("/config/level", "type"), ("", "if")])
    );
}

#[test]
fn contains_reports_each_scanned_item() {
    let s = compile(json!({"type": "array", "contains": {"type": "string", "const": "admin"}}));
    assert_eq!(issues(&s, json!(["user"])), pairs(&[("/0", "const"), ("", "contains")]));
    assert_eq!(issues(&s, json!([])), pairs(&[("", "contains")]));
    assert!(s.validate(&json!(["user", "admin"])).is_empty());
    let max = compile(json!({"type": "array", "contains": {"type": "integer"}, "maxContains": 1}));
    assert_eq!(
        issues(&max, json!([1, "a", 2, 3])),
        pairs(&[("/1", "type"), ("", "contains")])
    );
}

#[test]
fn property_names_dependent_required_and_items() {
    let names = compile(json!({"type": "object", "propertyNames": {"pattern": "^[a-z_]+$"}}));
    assert_eq!(
        issues(&names, json!({"A": 1, "b-c": 2, "ok": 3})),
        pairs(&[
            ("", "pattern"),
            ("", "propertyNames"),
            ("", "pattern"),
            ("", "propertyNames")
        ])
    );
    let dep = compile(
        json!({"type": "object", "properties": {"card": {"type": "string"}, "cvv": {"type": "string"}, "exp": {"type": "string"}},
        "dependentRequired": {"card": ["cvv", "exp"]}}),
    );
    assert_eq!(
        issues(&dep, json!({"card": "x"})),
        pairs(&[("", "dependentRequired"), ("", "dependentRequired")])
    );
    let tuple = compile(json!({"type": "array", "prefixItems": [{"type": "string"}], "minItems": 1, "items": false}));
    assert_eq!(issues(&tuple, json!(["a", 1, 2])), pairs(&[("", "items")]));
    let no_items = compile(json!({"type": "array", "items": false}));
    assert_eq!(
        issues(&no_items, json!([1, 2])),
        pairs(&[("/0", "false schema"), ("/1", "false schema")])
    );
}

#[test]
fn unevaluated_properties_and_items() {
    let s = compile(json!({"type": "object", "properties": {"a": {"type": "string"}},
        "allOf": [{"properties": {"b": {"type": "string"}}}], "unevaluatedProperties": false}));
    assert!(s.validate(&json!({"a": "x", "b": "y"})).is_empty());
    assert_eq!(
        issues(&s, json!({"a": "x", "c": 1, "d": 2})),
        pairs(&[("", "unevaluatedProperties"), ("", "unevaluatedProperties")])
    );
    // anyOf: only matching branches evaluate.
    let any = compile(
        json!({"type": "object", "anyOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]}, {"properties": {"b": {"const": 1}}, "required": ["b"]}],
        "unevaluatedProperties": false}),
    );
    assert!(any.is_valid(&json!({"a": 1})));
    assert_eq!(
        issues(&any, json!({"a": 1, "b": 2})),
        pairs(&[("", "unevaluatedProperties")])
    );
    // contains marks every item evaluated, as in the reference.
    let items =
        compile(json!({"type": "array", "contains": {"type": "string"}, "unevaluatedItems": {"type": "number"}}));
    assert!(items.is_valid(&json!(["a", true])));
}

#[test]
fn instance_paths_are_escaped_pointers() {
    let s = compile(json!({"type": "object", "properties": {
        "a/b": {"type": "integer"}, "c~d": {"type": "integer"}, "": {"type": "integer"},
        "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}}}}));
    assert_eq!(
        issues(
            &s,
            json!({"a/b": "1", "c~d": "1", "": "1", "list": [{"x": 1}, {"x": "2"}]})
        ),
        pairs(&[
            ("/a~1b", "type"),
            ("/c~0d", "type"),
            ("/", "type"),
            ("/list/1/x", "type")
        ])
    );
}

#[test]
fn patterns_match_as_javascript() {
    let s = compile(json!({"type": "string", "pattern": "^\\d+$"}));
    assert!(s.is_valid(&json!("123")));
    assert!(!s.is_valid(&json!("١٢٣")), "\\d is ASCII only in JavaScript");
    let letters = compile(json!({"type": "string", "pattern": "^\\p{L}+$"}));
    assert!(letters.is_valid(&json!("héllo")));
    let unanchored = compile(json!({"type": "string", "pattern": "b"}));
    assert!(unanchored.is_valid(&json!("abc")));
}

#[test]
fn boolean_schemas_and_loops() {
    let f = compile(json!(false));
    assert_eq!(issues(&f, json!(1)), pairs(&[("", "false schema")]));
    assert!(compile(json!(true)).is_valid(&json!({"any": 1})));
    let p = compile(json!({"type": "object", "properties": {"a": false}}));
    assert_eq!(issues(&p, json!({"a": 1})), pairs(&[("/a", "false schema")]));
    // A recursive schema follows the data.
    let tree = compile(json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}));
    assert!(tree.is_valid(&json!({"kids": [{"kids": []}]})));
    assert_eq!(
        issues(&tree, json!({"kids": [{"kids": [1]}]})),
        pairs(&[("/kids/0/kids/0", "type")])
    );
}

#[test]
fn schema_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Schema>();
}

#[test]
fn deep_instances_within_the_payload_depth_limit() {
    // Payloads may nest 1000 levels (crate::json::DEFAULT_MAX_DEPTH); a
    // recursive schema follows them on a host thread's stack.
    let depth = crate::json::DEFAULT_MAX_DEPTH;
    let text = "[".repeat(depth) + &"]".repeat(depth);
    let data = crate::json::parse_str(&text, &crate::json::Limits::default()).unwrap();
    let s = compile(json!({"type": "array", "items": {"$ref": "#"}}));
    let handle = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || (s.is_valid(&data), s.validate(&data).len()))
        .unwrap();
    assert_eq!(handle.join().unwrap(), (true, 0));
}

/// Valid-path speed against the jsonschema crate on a typical contract:
/// `cargo test --release --lib schema::tests::valid_path_speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn valid_path_speed() {
    let schema = json!({
        "type": "object",
        "properties": {
            "customer": {"type": "string", "minLength": 1, "maxLength": 80},
            "currency": {"enum": ["EUR", "USD", "GBP"]},
            "lines": {"type": "array", "minItems": 1, "items": {
                "type": "object",
                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"}, "qty": {"type": "integer", "minimum": 1}, "price": {"type": "number", "minimum": 0}},
                "required": ["sku", "qty", "price"], "additionalProperties": false}},
            "note": {"type": ["string", "null"]}
        },
        "required": ["customer", "currency", "lines"],
        "additionalProperties": false
    });
    let data = json!({"customer": "ACME", "currency": "EUR", "note": null, "lines": [
        {"sku": "ABC-1234", "qty": 2, "price": 9.5}, {"sku": "XYZ-0001", "qty": 1, "price": 100},
        {"sku": "DEF-0042", "qty": 10, "price": 0.25}]});
    let ours = compile(schema.clone());
    let crate_validator = jsonschema::draft202012::options()
        .should_validate_formats(false)
        .build(&schema)
        .unwrap();
    assert!(ours.validate(&data).is_empty() && crate_validator.is_valid(&data));
    let n: u32 = std::env::var("RCIP_SPEED_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let t = std::time::Instant::now();
    for _ in 0..n {
        assert!(ours.validate(std::hint::black_box(&data)).is_empty());
    }
    let a = t.elapsed();
    let t = std::time::Instant::now();
    for _ in 0..n {
        assert!(crate_validator.is_valid(std::hint::black_box(&data)));
    }
    let b = t.elapsed();
    println!(
        "rcip validate (valid): {:?}/call; jsonschema is_valid: {:?}/call",
        a / n,
        b / n
    );
}

#[test]
fn evaluated_properties_forgotten_by_a_failing_conditional_merge() {
    // Ajv forgets the properties it knew were evaluated before a merge that
    // only happens on success, when that merge does not happen.
    let s = compile(json!({"type": "object",
        "properties": {"p": {"type": "object"}},
        "dependentSchemas": {"p": {"properties": {"z": {"type": "boolean"}}}},
        "unevaluatedProperties": false}));
    assert!(s.is_valid(&json!({"p": {}, "z": true})));
    assert_eq!(
        issues(&s, json!({"p": {}, "z": 1})),
        pairs(&[
            ("/z", "type"),
            ("", "unevaluatedProperties"),
            ("", "unevaluatedProperties")
        ])
    );
    // $ref is applied before anyOf: a failing first branch loses "a" even
    // when the second branch passes (checked against Ajv 8.20.0).
    let any = compile(json!({"type": "object",
        "$ref": "#/$defs/base", "$defs": {"base": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        "anyOf": [{"properties": {"b": {"type": "string"}}, "required": ["b"]}, {"properties": {"c": {"type": "string"}}}],
        "unevaluatedProperties": false}));
    assert!(any.is_valid(&json!({"a": 1, "b": "x"})));
    assert_eq!(
        issues(&any, json!({"a": 1, "c": "x"})),
        pairs(&[("", "unevaluatedProperties")])
    );
}

/// `$defs` where each level names the next twice (the shape of issue 17).
pub(super) fn fan_out_schema(levels: usize, applicator: &str) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(format!("d{i}"), json!({applicator: [{"$ref": next}, {"$ref": next}]}));
    }
    defs.insert(format!("d{levels}"), json!({"type": "string"}));
    json!({"$ref": "#/$defs/d0", "$defs": defs})
}

#[test]
fn references_that_fan_out_are_evaluated_once_per_location() {
    let s = compile(fan_out_schema(30, "allOf"));
    assert!(s.is_valid(&json!("x")));
    // Ajv reports the leaf's issue 2^30 times; rcip once per use in the
    // last level (the leaf has no reference, so each use is its own copy,
    // as in the reference): twice (**rcip**).
    assert_eq!(issues(&s, json!(1)), pairs(&[("", "type"), ("", "type")]));
    let any = compile(fan_out_schema(30, "anyOf"));
    assert!(any.is_valid(&json!("x")));
    let got = issues(&any, json!(1));
    assert_eq!(got.iter().filter(|(_, k)| k == "anyOf").count(), 30);
    assert_eq!(got.iter().filter(|(_, k)| k == "type").count(), 2);
    // Inside items: each item is its own location.
    let mut root = fan_out_schema(25, "allOf");
    root["type"] = json!("array");
    root["items"] = json!({"$ref": "#/$defs/d0"});
    root.as_object_mut().unwrap().remove("$ref");
    let items = compile(root);
    assert_eq!(
        issues(&items, json!(["a", 1, 2])),
        pairs(&[("/1", "type"), ("/1", "type"), ("/2", "type"), ("/2", "type")])
    );
    // The cost stays far below the budget.
    let cost = s.validation_cost(&json!(1), Budget::default());
    assert!(!cost.exhausted && cost.spent < 1000, "{cost:?}");
    // And `rcip check` hears about it.
    let w = s.performance_warnings();
    assert!(
        w.iter()
            .any(|w| w.rule == "reference fan-out" && w.pointer == "/$defs/d1"),
        "{w:?}"
    );
}

#[test]
fn a_memoised_result_reports_its_issues_where_they_were_dropped() {
    // The first use of #/$defs/n fails inside an anyOf whose other branch
    // passes, so its issues are dropped; the second use must report them.
    let s = compile(json!({
        "$defs": {"n": {"type": "string"}},
        "anyOf": [{"$ref": "#/$defs/n"}, {"type": "number"}],
        "allOf": [{"$ref": "#/$defs/n"}]
    }));
    assert_eq!(issues(&s, json!(1)), pairs(&[("", "type")]));
    // Evaluated first under `not` (no issues kept), then for real.
    let s = compile(json!({
        "$defs": {"n": {"type": "string"}},
        "not": {"$ref": "#/$defs/n"},
        "allOf": [{"$ref": "#/$defs/n"}]
    }));
    assert_eq!(issues(&s, json!(1)), pairs(&[("", "type")]));
}

#[test]
fn the_budget_ends_a_validation_with_one_issue() {
    let s = compile(json!({"type": "array", "items": {"type": "string", "pattern": "^(a+)+$(?<=a)"}}));
    assert!(s
        .performance_warnings()
        .iter()
        .any(|w| w.rule == "backtracking pattern" && w.pointer == "/items/pattern"));
    let hostile = json!([format!("{}!", "a".repeat(64))]);
    let small = Budget {
        floor: 100_000,
        per_pair: 1,
    };
    let got = s.validate_within(&hostile, small);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].instance_path.as_str(), got[0].keyword.as_str()), ("", "budget"));
    assert!(!s.validate_within(&hostile, small).is_empty());
    // A cheap value passes under the same budget.
    assert!(s.validate_within(&json!(["aaa"]), small).is_empty());
    let cost = s.validation_cost(&hostile, small);
    assert!(cost.exhausted && cost.limit == 100_000, "{cost:?}");
    // The budget grows with the instance: 10^5 items of a cheap schema.
    let many = compile(json!({"type": "array", "items": {"type": "integer"}}));
    let big = Value::Array((0..100_000).map(|i| json!(i)).collect());
    let tight = Budget {
        floor: 1000,
        per_pair: 1,
    };
    let cost = many.validation_cost(&big, tight);
    assert!(!cost.exhausted && cost.limit > 100_000, "{cost:?}");
}

/// The validity-only pass (`Evaluator::check`, with the fused plain-object
/// check) answers exactly what the keyword-by-keyword evaluator answers, on
/// every instance of every schema corpus, and spends the same units on a
/// valid one.
#[test]
fn fast_validity_pass_agrees_with_the_general_evaluator_on_every_corpus() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/data/schema-corpus");
    let mut checked = 0;
    let mut flat = 0;
    for name in [
        "ajv2020-strict-suite.json",
        "ajv2020-strict-probes.json",
        "ajv2020-rcip-probes.json",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect("corpus file");
        let corpus: Value = serde_json::from_str(&text).expect("corpus JSON");
        for entry in corpus["entries"].as_array().expect("entries") {
            let Ok(schema) = Schema::compile(&entry["schema"]) else {
                continue;
            };
            for t in entry["tests"].as_array().expect("tests") {
                let data = &t["data"];
                if let Err(e) = super::compare_modes(&schema, data) {
                    panic!("{name} {}: {e}", entry["id"]);
                }
                flat += schema.program.flat.is_some() as usize;
                checked += 1;
            }
        }
    }
    assert!(checked > 500, "only {checked} instances");
    assert!(flat > 200, "only {flat} instances of schemas with a flat plan");
}

/// The desk's input schemas and the benchmark's get a flat plan (the
/// validator fast path of issue 20), and on instances made to hit each
/// of its checks (names of one length, code points against bytes, enum
/// strings against other kinds, integers written as doubles, patterns)
/// it answers as the general evaluator, with the same units when valid.
#[test]
fn flat_plan_covers_the_desk_and_answers_as_the_evaluator() {
    let text = std::fs::read_to_string(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("examples-c/dispatch/catalog.json"),
    )
    .expect("desk catalog");
    let desk: Value = serde_json::from_str(&text).expect("desk JSON");
    let mut schemas: Vec<Value> = desk["capabilities"]
        .as_array()
        .expect("capabilities")
        .iter()
        .map(|c| c["inputSchema"].clone())
        .collect();
    let bench = json!({"type": "object", "properties": {"title": {"type": "string", "maxLength": 200},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5}, "done": {"type": "boolean"}},
        "required": ["title", "priority"], "additionalProperties": false});
    schemas.push(bench);
    let mixed = json!({"type": "object", "properties": {"ab": {"const": "x"}, "ba": {"enum": [1, "y", null]},
        "aa": {"type": ["integer", "null"]}, "s": {"type": "string", "minLength": 2, "maxLength": 3},
        "list": {"type": "array", "prefixItems": [{"type": "string"}], "minItems": 1, "items": false},
        "nums": {"type": "array", "items": {"type": "number", "multipleOf": 0.5}, "minItems": 1}},
        "required": ["ab"], "additionalProperties": {"type": "boolean"}, "maxProperties": 4});
    schemas.push(mixed);
    let instances = [
        json!({"priority": "urgent"}),
        json!({"unassignedOnly": true, "limit": 5}),
        json!({"limit": 5.0}),
        json!({"limit": 5.5}),
        json!({"limit": 25}),
        json!({"priority": "Urgent"}),
        json!({"priority": 1}),
        json!({"technicianId": "T-0x"}),
        json!({"query": "boiler"}),
        json!({"query": "\u{20ac}"}),
        json!({"query": "b"}),
        json!({"visitId": "V-1003", "technicianId": "T-02"}),
        json!({"visitId": "V-1003", "technicianId": "T-02", "extra": 1}),
        json!({"visitId": "V-1003", "date": "2026-01-07", "window": "afternoon"}),
        json!({"visitId": "V-1003", "date": "2026-01-0x", "window": "afternoon"}),
        json!({"visitId": "V-\u{660}003", "text": "x"}),
        json!({"visitId": "V-1003", "text": ""}),
        json!({"visitId": "V-1003", "resolution": "fixed", "summary": "Done."}),
        json!({"title": "Buy milk", "priority": 3, "done": false}),
        json!({"title": "Buy milk", "priority": 3.0}),
        json!({"title": "x".repeat(201), "priority": 3}),
        json!({"title": "\u{20ac}".repeat(200), "priority": 3}),
        json!({"ab": "x", "zz": true}),
        json!({"ab": "x", "zz": 1}),
        json!({"ab": "x", "zz": true, "ba": "y", "aa": null}),
        json!({"ab": "x", "zz": true, "ba": 1.0, "aa": 2.0}),
        json!({"ab": "x", "zz": true, "ba": "z"}),
        json!({"ab": "x", "zz": true, "s": "\u{20ac}\u{20ac}\u{20ac}"}),
        json!({"ab": "x", "zz": true, "s": "\u{20ac}"}),
        json!({"ab": "x", "zz": true, "list": ["a"]}),
        json!({"ab": "x", "zz": true, "list": ["a", 1]}),
        json!({"ab": "x", "zz": true, "list": [1]}),
        json!({"ab": "x", "zz": true, "nums": [1.5, 2]}),
        json!({"ab": "x", "zz": true, "nums": [1.25]}),
        json!({"ab": "x", "zz": true, "nums": []}),
        json!({"ab": "x", "zz": true, "s": "ab", "aa": 1, "ba": null}),
        json!({"ab": "y", "zz": true}),
        json!([1]),
        json!("text"),
        json!(null),
    ];
    let mut valid = 0;
    for schema in &schemas {
        let s = compile(schema.clone());
        assert!(s.program.flat.is_some(), "no flat plan for {schema}");
        for data in &instances {
            let budget = Budget::default();
            let general = Evaluator::run_with(&s.program, data, false, budget, Mode::General);
            let fast = Evaluator::run_with(&s.program, data, false, budget, Mode::Fastest);
            assert_eq!(fast.valid, general.valid, "{schema}: {data}");
            if fast.valid {
                assert_eq!(fast.spent, general.spent, "{schema}: units of {data}");
                valid += 1;
            }
        }
    }
    assert!(valid > 10, "only {valid} valid pairs");
    // Not planned: a reference, an applicator, a backtracking pattern.
    for other in [
        json!({"$defs": {"a": {"type": "string"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}}),
        json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
        json!({"type": "string", "pattern": "^(a+)+\\1$"}),
    ] {
        assert!(compile(other.clone()).program.flat.is_none(), "{other}");
    }
}

#[test]
fn fused_object_check_keeps_every_keyword() {
    let s = compile(json!({"type": "object",
        "properties": {"a": {"type": "integer", "maximum": 3}, "b": {"type": "string", "maxLength": 2}},
        "required": ["a"], "additionalProperties": false, "minProperties": 1, "maxProperties": 2}));
    assert!(
        s.program.closed[s.program.root].is_some(),
        "the root is a plain object schema"
    );
    assert!(s.is_valid(&json!({"a": 1})));
    assert!(s.is_valid(&json!({"a": 3, "b": "xy"})));
    assert!(!s.is_valid(&json!("not an object: type fails")));
    assert!(!s.is_valid(&json!({"b": "x"})), "required");
    assert!(!s.is_valid(&json!({"a": 1, "c": 1})), "additionalProperties");
    assert!(!s.is_valid(&json!({"a": 4})), "maximum below");
    assert!(!s.is_valid(&json!({"a": 1, "b": "xyz"})), "maxLength below");
    assert!(!s.is_valid(&json!({"a": 1.5})), "integer below");
    assert!(!s.is_valid(&json!({})), "minProperties (and required)");
    // Code points, not bytes: two code points in six bytes.
    assert!(s.is_valid(&json!({"a": 1, "b": "\u{20ac}\u{20ac}"})));
    assert!(!s.is_valid(&json!({"a": 1, "b": "\u{20ac}\u{20ac}\u{20ac}"})));
    let open = compile(json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}));
    assert!(open.program.closed[open.program.root].is_some());
    assert!(open.is_valid(&json!({"a": 1, "other": true})));
    assert!(!open.is_valid(&json!({"a": "1"})));
    assert!(!open.is_valid(&json!({"other": 1})));
}

#[test]
fn property_name_equality_covers_every_byte() {
    use super::eval::same;
    let names = [
        "",
        "a",
        "ab",
        "abc",
        "abcd",
        "abcde",
        "abcdefgh",
        "abcdefghi",
        "abcdefghijklmnop",
        "abcdefghijklmnopq",
    ];
    for a in names {
        for b in names {
            assert_eq!(same(a, b), a == b, "{a} {b}");
        }
        // One byte changed anywhere.
        for i in 0..a.len() {
            let mut c = a.as_bytes().to_vec();
            c[i] = b'Z';
            let c = String::from_utf8(c).unwrap();
            assert!(!same(a, &c), "{a} {c}");
        }
    }
}

/// The validity pass checks the stack every few levels: a schema nested 900
/// levels deep (no references, so no level goes through the general
/// evaluator) validates on a thread with a small stack.
#[test]
fn fast_validity_pass_grows_the_stack_for_deep_schemas() {
    let mut schema = json!({"type": "integer"});
    let mut data = json!(1);
    // Nested by moving values (json! would serialize the inner value again,
    // recursively: 900 levels overflow a debug test thread's stack).
    let wrap = |inner: Value| Value::Object([("a".to_string(), inner)].into_iter().collect());
    for _ in 0..900 {
        let mut level = json!({"type": "object", "required": ["a"], "additionalProperties": false});
        level["properties"] = wrap(schema);
        schema = level;
        data = wrap(data);
    }
    // The catalog's meta-schema check (the jsonschema crate) recurses per
    // level: in a debug build 900 levels need more than a test thread's stack.
    let compiled = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || compile(schema))
        .unwrap()
        .join()
        .unwrap();
    // Borrowed by the small thread, so the deep values are built and
    // dropped (recursively) on this thread's stack, not on the 128 KiB one.
    let ok = std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn_scoped(s, || {
                (compiled.validate(&data).is_empty(), compiled.is_valid(&json!({"a": 1})))
            })
            .unwrap()
            .join()
            .expect("no stack overflow")
    });
    assert_eq!(ok, (true, false));
}

// ---- issue 27: hostile input against the validator -------------------------

/// The units a valid `data` spends, by every validity path (which agree).
fn units(schema: &Schema, data: &Value) -> u64 {
    let budget = Budget::default();
    let general = Evaluator::run_with(&schema.program, data, false, budget, Mode::General);
    assert!(general.valid && !general.exhausted, "{data} should be valid");
    for mode in [Mode::Fastest, Mode::Check] {
        let other = Evaluator::run_with(&schema.program, data, false, budget, mode);
        assert_eq!((other.valid, other.spent), (true, general.spent), "{mode:?} on {data}");
    }
    general.spent
}

/// A chain `{"a": {"a": ... leaf}}` of `depth` objects.
fn chain(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, _| json!({ "a": inner }))
}

/// Item 1: `unevaluatedProperties` charges one unit per member it looks
/// up (and looks each up in a set: the hostile-input benchmark measures
/// the time), `additionalProperties` likewise, on every validity path.
#[test]
fn unevaluated_and_additional_properties_charge_each_member() {
    let n = 5_000u64;
    let object = Value::Object((0..n).map(|i| (format!("k{i}"), json!(i))).collect());
    let uneval = compile(json!({"type": "object",
        "patternProperties": {"^k": {"type": "integer"}}, "unevaluatedProperties": false}));
    // The node (1 + 2 keywords), per member: a search (1), the integer
    // schema (1), and the member's unevaluatedProperties lookup (1).
    assert_eq!(units(&uneval, &object), 3 + 3 * n);
    let additional = compile(json!({"type": "object",
        "patternProperties": {"^k": {"type": "integer"}}, "additionalProperties": false}));
    // Per member: two searches, the integer schema, the lookup.
    assert_eq!(units(&additional, &object), 3 + 4 * n);
    // The flat plan and the fused object check charge the same.
    let closed = compile(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "additionalProperties": false}));
    assert!(closed.program.flat.is_some());
    assert_eq!(units(&closed, &json!({"a": 1})), 3 + 1 + 1);
    let open = compile(json!({"type": "object", "additionalProperties": {"type": "integer"}}));
    assert_eq!(units(&open, &json!({"a": 1, "b": 2})), 2 + 2 + 2);
    // The verdicts are the linear scan's.
    assert!(uneval.is_valid(&object));
    let mut with_extra = object.as_object().unwrap().clone();
    with_extra.insert("x".into(), json!(1));
    assert_eq!(
        issues(&uneval, Value::Object(with_extra)),
        pairs(&[("", "unevaluatedProperties")])
    );
}

/// Item 1: `const` and `enum` charge the pairs of values they compare; a
/// large enum is looked up by hash, so the units (and the time) of a
/// lookup do not depend on where the member is in the enum.
#[test]
fn const_and_enum_charge_the_nodes_they_compare() {
    let deep = chain(40, json!(0));
    let c = compile(json!({"const": deep}));
    // The node (1 + 1 keyword), then 41 pairs (40 objects and the leaf).
    assert_eq!(units(&c, &deep), 2 + 41);
    // A short enum compares in order: 41 pairs per member compared.
    let short: Vec<Value> = (0..4).map(|i| chain(40, json!(i))).collect();
    let s = compile(json!({"enum": short}));
    assert_eq!(units(&s, &short[3]), 2 + 4 * 41);
    // A scalar against a short enum: one pair per member compared.
    let scalars = compile(json!({"enum": [1, "a", {"x": 1}, "b"]}));
    assert_eq!(units(&scalars, &json!("a")), 2 + 2);
    assert_eq!(units(&scalars, &json!("b")), 2 + 4);
    assert_eq!(units(&compile(json!({"const": "b"})), &json!("b")), 2 + 1);
    // A long one hashes the instance (41 nodes) and compares one member.
    let long: Vec<Value> = (0..1000).map(|i| chain(40, json!(i))).collect();
    let l = compile(json!({"enum": long}));
    assert_eq!(units(&l, &long[999]), 2 + 41 + 41);
    assert_eq!(units(&l, &long[0]), 2 + 41 + 41);
    // An instance larger than every member stops hashing there.
    assert!(!l.is_valid(&chain(1000, json!(0))));
    let cost = l.validation_cost(&chain(1000, json!(0)), Budget::default());
    assert!(cost.spent <= 2 + 42, "{cost:?}");
    // Strings, through the flat plan: the same units first or last.
    let strings: Vec<Value> = (0..10_000).map(|i| json!(format!("s{i}"))).collect();
    let e = compile(json!({"type": "array", "items": {"enum": strings}}));
    assert!(e.program.flat.is_some());
    let first = units(&e, &json!(["s0", "s0"]));
    assert_eq!(first, units(&e, &json!(["s9999", "s9999"])));
    // The array node (1 + 1), per item: its node (1 + 1), a hash, a pair.
    assert_eq!(first, 2 + 2 * (2 + 1 + 1));
    // The answers are deep equality's (numbers as doubles, any order).
    let mixed = compile(json!({"enum": [1, "a", null, true, [1, {"b": 2}], {"x": 1, "y": [0]},
        2, 3, 4, 5, 6, 7, {"z": {}}]}));
    for yes in [
        json!(1.0),
        json!("a"),
        json!(null),
        json!([1.0, {"b": 2}]),
        json!({"y": [0], "x": 1}),
    ] {
        assert!(mixed.is_valid(&yes), "{yes}");
    }
    for no in [
        json!(false),
        json!("b"),
        json!([1, {"b": 3}]),
        json!({"x": 1}),
        json!({"z": {"w": 1}}),
    ] {
        assert_eq!(issues(&mixed, no.clone()), pairs(&[("", "enum")]), "{no}");
    }
}

/// Item 2: an issue list is cut at the [`IssueLimit`], keeps the first
/// issues of the full list, says it was cut, and the issue pass stops
/// there (its units show it).
#[test]
fn the_issue_limit_keeps_the_first_issues_and_stops_the_pass() {
    let s = compile(json!({"type": "array", "items": {"type": "string"}}));
    let bad = Value::Array((0..10_000).map(|i| json!(i)).collect());
    let full = s.validate(&bad);
    assert_eq!(full.len(), 10_000);
    let limit = IssueLimit {
        max_issues: 100,
        max_bytes: usize::MAX,
    };
    let cut = s.validate_limited(&bad, Budget::default(), limit);
    assert!(cut.truncated);
    assert_eq!(cut.issues, full[..100]);
    // The pass stopped at the 101st issue: about 101 items' units, not
    // 10,000 (each item's node is 1 unit).
    let pass = Evaluator::run_issues(&s.program, &bad, Budget::default(), limit);
    assert!(!pass.exhausted && pass.truncated && pass.spent < 200, "{}", pass.spent);
    // Bytes: each issue is "/i" + "type" + its message.
    let size = |i: &ValidationIssue| i.instance_path.len() + i.keyword.len() + i.message.len();
    let bytes: usize = full[..10].iter().map(size).sum();
    let by_bytes = IssueLimit {
        max_issues: usize::MAX,
        max_bytes: bytes,
    };
    assert_eq!(s.validate_limited(&bad, Budget::default(), by_bytes).issues, full[..10]);
    // The first issue is kept whatever its size.
    let tiny = IssueLimit {
        max_issues: 0,
        max_bytes: 1,
    };
    let one = s.validate_limited(&bad, Budget::default(), tiny);
    assert_eq!((one.issues.len(), one.truncated), (1, true));
    // A list within the bound is whole and not marked.
    let few = s.validate_limited(&json!([1, "a", 2]), Budget::default(), limit);
    assert_eq!((few.issues.len(), few.truncated), (2, false));
    // Issues a passing anyOf branch drops do not count against the bound:
    // the list is the unlimited one's first issues.
    let any = compile(json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}));
    let data = Value::Array(
        (0..500)
            .map(|i| if i % 3 == 0 { json!(null) } else { json!(i) })
            .collect(),
    );
    let whole = any.validate(&data);
    for max in [1, 2, 5, 50] {
        let l = IssueLimit {
            max_issues: max,
            max_bytes: usize::MAX,
        };
        let got = any.validate_limited(&data, Budget::default(), l);
        assert_eq!(got.issues, whole[..max.min(whole.len())], "max {max}");
        assert_eq!(got.truncated, whole.len() > max, "max {max}");
    }
}

/// Item 2: a pass whose budget ran out while its issue list was full ends
/// with the budget issue, not a cut list (an issue reported after the
/// exhaustion, here `contains`, must not stop it as a full list).
#[test]
fn an_exhausted_pass_with_a_full_issue_list_reports_the_budget() {
    let s = compile(json!({"type": "array", "items": {"type": "string"}, "contains": {"type": "boolean"}}));
    let mut data: Vec<Value> = vec![json!(1), json!(2), json!(3)];
    data.extend((0..1000).map(|_| json!("a")));
    let data = Value::Array(data);
    let tight = Budget {
        floor: 100,
        per_pair: 0,
    };
    let limit = IssueLimit {
        max_issues: 3,
        max_bytes: usize::MAX,
    };
    let got = s.validate_limited(&data, tight, limit);
    assert_eq!(got.issues, vec![budget_issue(100)]);
    assert!(!got.truncated);
}

/// Item 3: one search on the backtracking engine may take at most
/// `100000 + 1000 × bytes` steps, whatever budget the instance brings; a
/// search that takes them ends the validation with the one `budget`
/// issue, at once.
#[test]
fn each_backtracking_search_has_its_own_step_bound() {
    use super::regex::pattern_steps;
    assert_eq!(pattern_steps(""), 100_000);
    assert_eq!(pattern_steps(&"a".repeat(31)), 131_000);
    let s = compile(json!({"type": "string", "pattern": "^(a+)+$(?<=a)"}));
    let text = json!(format!("{}!", "a".repeat(22)));
    // A budget far larger than the bound (as 2M junk nodes would bring).
    let huge = Budget {
        floor: 1 << 40,
        per_pair: 64,
    };
    let got = s.validate_within(&text, huge);
    assert_eq!(got, vec![steps_issue(pattern_steps(text.as_str().unwrap()))]);
    assert_eq!((got[0].instance_path.as_str(), got[0].keyword.as_str()), ("", "budget"));
    let cost = s.validation_cost(&text, huge);
    assert!(cost.exhausted, "{cost:?}");
    // A value the pattern answers quickly is unchanged.
    assert!(s.validate_within(&json!("a".repeat(23)), huge).is_empty());
    assert_eq!(
        s.validate_within(&json!("b"), huge)
            .iter()
            .map(|i| i.keyword.as_str())
            .collect::<Vec<_>>(),
        ["pattern"]
    );
}

// ---- keywords at their limits, in every evaluation path (issue 35) --------

/// Where a keyword's schema object sits, so that each validity path meets
/// it: alone at the root (the leaf plan for bounds and lengths, the
/// closed-object plan for an object schema, the flat plan when it plans
/// the keyword); beside `not: false` (no plan: the check mode's keyword
/// arms); as a property of a closed object (the closed-object plan around
/// it); as the schema of every item (the check mode's `items` arm and the
/// flat plan's item loop).
#[derive(Clone, Copy, Debug)]
enum Placed {
    Root,
    NoPlan,
    InClosedObject,
    InItems,
}

impl Placed {
    const ALL: [Placed; 4] = [Placed::Root, Placed::NoPlan, Placed::InClosedObject, Placed::InItems];

    fn schema(self, kw: &Value) -> Value {
        match self {
            Placed::Root => kw.clone(),
            Placed::NoPlan => {
                let mut s = kw.clone();
                s["not"] = json!(false);
                s
            }
            Placed::InClosedObject => json!({"type": "object", "properties": {"a": kw}, "required": ["a"],
                "additionalProperties": false}),
            Placed::InItems => json!({"type": "array", "items": kw}),
        }
    }

    fn data(self, v: &Value) -> Value {
        match self {
            Placed::Root | Placed::NoPlan => v.clone(),
            Placed::InClosedObject => json!({"a": v}),
            Placed::InItems => json!([v]),
        }
    }

    fn path(self) -> &'static str {
        match self {
            Placed::Root | Placed::NoPlan => "",
            Placed::InClosedObject => "/a",
            Placed::InItems => "/0",
        }
    }
}

/// Checks `kw` (one keyword's schema object) placed every way, on each
/// `(value, valid)`: the expected validity from the fastest path (the flat
/// plan when there is one), the check mode, the general evaluator,
/// `is_valid`, and the issue pass (an issue of `keyword` at the value's
/// path exactly when invalid), and `compare_modes`. Returns every
/// disagreement, so a wrong rule shows in each path it reaches.
fn at_limits(keyword: &str, kw: Value, flat: bool, cases: &[(Value, bool)]) -> Vec<String> {
    let mut wrong = Vec::new();
    let budget = Budget::default();
    for placed in Placed::ALL {
        let schema = compile(placed.schema(&kw));
        let prog = &schema.program;
        let root = prog.root;
        let root_planned = prog.leaves[root].is_some() || prog.closed[root].is_some();
        match placed {
            Placed::NoPlan => assert!(prog.flat.is_none() && !root_planned, "{kw} {placed:?}"),
            Placed::InClosedObject => assert!(prog.closed[root].is_some(), "{kw} {placed:?}"),
            _ => {}
        }
        assert_eq!(
            prog.flat.is_some(),
            flat && !matches!(placed, Placed::NoPlan),
            "flat plan of {kw} {placed:?}"
        );
        for (v, valid) in cases {
            let data = placed.data(v);
            let mut got = Vec::new();
            for mode in [Mode::Fastest, Mode::Check, Mode::General] {
                got.push((
                    format!("{mode:?}"),
                    Evaluator::run_with(prog, &data, false, budget, mode).valid,
                ));
            }
            got.push(("is_valid".to_string(), schema.is_valid(&data)));
            let issues = schema.validate(&data);
            let reported = issues
                .iter()
                .any(|i| i.keyword == keyword && i.instance_path == placed.path());
            got.push(("issue pass".to_string(), issues.is_empty()));
            for (path, answer) in got {
                if answer != *valid {
                    wrong.push(format!(
                        "{kw} {placed:?} {path}: {data} valid {answer}, expected {valid}"
                    ));
                }
            }
            if !valid && !reported {
                wrong.push(format!("{kw} {placed:?}: no {keyword} issue for {data}: {issues:?}"));
            }
            if let Err(e) = super::compare_modes(&schema, &data) {
                wrong.push(format!("{kw} {placed:?}: {e}"));
            }
        }
    }
    wrong
}

fn assert_at_limits(keyword: &str, kw: Value, flat: bool, cases: &[(Value, bool)]) {
    let wrong = at_limits(keyword, kw, flat, cases);
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn number_bounds_at_their_limits_in_every_path() {
    let leaf = |kw: &Value| {
        let s = compile(kw.clone());
        assert!(s.program.leaves[s.program.root].is_some(), "{kw} is a leaf");
    };
    for (keyword, cases) in [
        (
            "maximum",
            vec![
                (json!(3), true),
                (json!(3.0), true),
                (json!(2.5), true),
                (json!(4), false),
                (json!(3.000001), false),
            ],
        ),
        (
            "minimum",
            vec![
                (json!(3), true),
                (json!(3.0), true),
                (json!(4), true),
                (json!(2), false),
                (json!(2.999999), false),
            ],
        ),
        (
            "exclusiveMaximum",
            vec![
                (json!(2), true),
                (json!(2.999999), true),
                (json!(3), false),
                (json!(3.0), false),
                (json!(4), false),
            ],
        ),
        (
            "exclusiveMinimum",
            vec![
                (json!(4), true),
                (json!(3.000001), true),
                (json!(3), false),
                (json!(3.0), false),
                (json!(2), false),
            ],
        ),
    ] {
        let kw = json!({"type": "number", keyword: 3});
        leaf(&kw);
        assert_at_limits(keyword, kw, true, &cases);
        // With every other bound of the leaf plan, far away.
        let mut wide = json!({"type": "number", "maximum": 100, "minimum": -100, "exclusiveMaximum": 100, "exclusiveMinimum": -100});
        wide[keyword] = json!(3);
        leaf(&wide);
        assert_at_limits(keyword, wide, true, &cases);
    }
    // Negative and fractional limits.
    assert_at_limits(
        "minimum",
        json!({"type": "number", "minimum": -1.5}),
        true,
        &[
            (json!(-1.5), true),
            (json!(-1), true),
            (json!(-2), false),
            (json!(-1.5000001), false),
        ],
    );
    assert_at_limits(
        "exclusiveMaximum",
        json!({"type": "number", "exclusiveMaximum": -1.5}),
        true,
        &[
            (json!(-1.5000001), true),
            (json!(-2), true),
            (json!(-1.5), false),
            (json!(0), false),
        ],
    );
}

#[test]
fn multiple_of_at_its_limits_in_every_path() {
    assert_at_limits(
        "multipleOf",
        json!({"type": "number", "multipleOf": 3}),
        true,
        &[
            (json!(9), true),
            (json!(0), true),
            (json!(-3), true),
            (json!(9.0), true),
            (json!(10), false),
            (json!(8.5), false),
        ],
    );
    assert_at_limits(
        "multipleOf",
        json!({"type": "number", "multipleOf": 0.5}),
        true,
        &[
            (json!(1.5), true),
            (json!(2), true),
            (json!(1.25), false),
            (json!(1.0000001), false),
        ],
    );
    // The reference's double arithmetic: 0.3 / 0.1 is not an integer.
    assert_at_limits(
        "multipleOf",
        json!({"type": "number", "multipleOf": 0.1}),
        true,
        &[(json!(0.5), true), (json!(0.3), false)],
    );
}

#[test]
fn string_lengths_at_their_limits_in_every_path() {
    // Three code points in one, three and four bytes each, and one more.
    let max = [
        (json!(""), true),
        (json!("abc"), true),
        (json!("\u{20ac}\u{20ac}\u{20ac}"), true),
        (json!("\u{1f600}\u{1f600}\u{1f600}"), true),
        (json!("abcd"), false),
        (json!("\u{20ac}\u{20ac}\u{20ac}\u{20ac}"), false),
        (json!("ab\u{1f600}d"), false),
    ];
    assert_at_limits("maxLength", json!({"type": "string", "maxLength": 3}), true, &max);
    let min = [
        (json!("abc"), true),
        (json!("\u{20ac}\u{20ac}\u{20ac}"), true),
        (json!("\u{1f600}\u{1f600}\u{1f600}"), true),
        (json!("abcd"), true),
        (json!("ab"), false),
        (json!("\u{20ac}\u{20ac}"), false),
        (json!("\u{1f600}\u{1f600}"), false),
        (json!(""), false),
    ];
    assert_at_limits("minLength", json!({"type": "string", "minLength": 3}), true, &min);
    // Both at once (the byte bounds of both in one record).
    for (keyword, cases) in [("maxLength", &max[..]), ("minLength", &min[..])] {
        let cases: Vec<(Value, bool)> = cases
            .iter()
            .filter(|(v, valid)| !valid || v.as_str().is_none_or(|s| s.chars().count() == 3))
            .filter(|(v, valid)| {
                // An invalid value must fail this keyword (the other holds).
                *valid || {
                    let n = v.as_str().map_or(3, |s| s.chars().count());
                    (keyword == "maxLength") == (n > 3)
                }
            })
            .cloned()
            .collect();
        assert_at_limits(
            keyword,
            json!({"type": "string", "maxLength": 3, "minLength": 3}),
            true,
            &cases,
        );
    }
    // Zero, and a limit no string reaches.
    assert_at_limits(
        "maxLength",
        json!({"type": "string", "maxLength": 0}),
        true,
        &[(json!(""), true), (json!("a"), false), (json!("\u{20ac}"), false)],
    );
    assert_at_limits(
        "minLength",
        json!({"type": "string", "minLength": 0}),
        true,
        &[(json!(""), true), (json!("a"), true)],
    );
}

#[test]
fn item_counts_and_unique_items_at_their_limits_in_every_path() {
    let list = |n: usize| Value::Array((0..n).map(|i| json!(i)).collect());
    assert_at_limits(
        "maxItems",
        json!({"type": "array", "maxItems": 2}),
        true,
        &[(list(0), true), (list(2), true), (list(3), false)],
    );
    assert_at_limits(
        "minItems",
        json!({"type": "array", "minItems": 2}),
        true,
        &[(list(2), true), (list(3), true), (list(1), false), (list(0), false)],
    );
    // `items: false` after a tuple of two.
    assert_at_limits(
        "items",
        json!({"type": "array", "prefixItems": [{}, {}], "minItems": 2, "items": false}),
        true,
        &[(list(2), true), (list(3), false), (list(4), false)],
    );
    // No flat plan for `uniqueItems`.
    assert_at_limits(
        "uniqueItems",
        json!({"type": "array", "uniqueItems": true}),
        false,
        &[
            (list(3), true),
            (json!([1, "1", [1], {"a": 1}]), true),
            (json!([1, 2, 1]), false),
            (json!([1, 1.0]), false),
            (json!([{"a": [1]}, {"a": [1.0]}]), false),
            (json!([]), true),
        ],
    );
}

#[test]
fn property_counts_at_their_limits_in_every_path() {
    let object = |n: usize| Value::Object((0..n).map(|i| (format!("p{i}"), json!(i))).collect());
    // Closed objects (the closed-object plan at the root), and a plain one.
    let declared = |n: usize| Value::Object((0..n).map(|i| (format!("p{i}"), json!({}))).collect());
    for closed in [true, false] {
        let with = |kw: &str, limit: usize| {
            let mut s = json!({"type": "object", kw: limit});
            if closed {
                s["properties"] = declared(20);
                s["additionalProperties"] = json!(false);
            }
            s
        };
        assert_at_limits(
            "maxProperties",
            with("maxProperties", 2),
            true,
            &[(object(0), true), (object(2), true), (object(3), false)],
        );
        assert_at_limits(
            "minProperties",
            with("minProperties", 2),
            true,
            &[
                (object(2), true),
                (object(3), true),
                (object(1), false),
                (object(0), false),
            ],
        );
        // Beyond the closed-object plan's 16 members.
        assert_at_limits(
            "maxProperties",
            with("maxProperties", 17),
            true,
            &[(object(17), true), (object(16), true), (object(18), false)],
        );
        assert_at_limits(
            "minProperties",
            with("minProperties", 17),
            true,
            &[(object(17), true), (object(18), true), (object(16), false)],
        );
    }
    let s =
        compile(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false, "maxProperties": 2}));
    assert!(s.program.closed[s.program.root].is_some());
}

#[test]
fn const_and_enum_at_their_limits_in_every_path() {
    assert_at_limits(
        "const",
        json!({"const": "ab"}),
        true,
        &[
            (json!("ab"), true),
            (json!("abc"), false),
            (json!("a"), false),
            (json!(["ab"]), false),
        ],
    );
    assert_at_limits(
        "const",
        json!({"const": {"a": [1, 2]}}),
        true,
        &[
            (json!({"a": [1.0, 2]}), true),
            (json!({"a": [1, 2, 3]}), false),
            (json!({"a": [1]}), false),
        ],
    );
    // A short enum (searched in order) and a long one (hashed).
    assert_at_limits(
        "enum",
        json!({"enum": [1, "x", null]}),
        true,
        &[
            (json!(1.0), true),
            (json!("x"), true),
            (json!(null), true),
            (json!(2), false),
            (json!("xx"), false),
        ],
    );
    let long: Vec<Value> = (0..10).map(|i| json!(i)).collect();
    assert_at_limits(
        "enum",
        json!({ "enum": long }),
        true,
        &[
            (json!(9), true),
            (json!(9.0), true),
            (json!(0), true),
            (json!(10), false),
            (json!(-1), false),
        ],
    );
}
