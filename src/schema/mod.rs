//! Strict JSON Schema 2020-12 on top of the `jsonschema` crate.
//!
//! The reference judges contracts with Ajv 8 (`Ajv2020`, `strict: true`,
//! `allErrors: true`, no formats, no custom keywords, no remote references).
//! [`Schema::compile`] refuses what that configuration refuses and
//! [`Schema::validate`] reports issues the way it reports them
//! (`instancePath` as a JSON pointer, Ajv's keyword names).
//!
//! Instances are expected to be normalised by [`crate::json`] (numbers as
//! doubles).

use serde_json::Value;
use std::fmt;

/// One validation issue, as the reference reports it
/// (`{"instancePath", "keyword", "message"}`).
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Short name of the rule (`meta-schema`, `unknown keyword`, `format`,
    /// `reference`, `strict types`, ...).
    pub rule: &'static str,
    /// A sentence in rcip's own words.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() { "the root".to_string() } else { format!("\"{}\"", self.pointer) };
        write!(f, "{} at {}: {}", self.rule, at, self.message)
    }
}

/// A compiled schema: immutable, `Send + Sync`, shared by every runtime made
/// from the catalog that holds it.
pub struct Schema {
    validator: jsonschema::Validator,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Schema")
    }
}

const KNOWN_KEYWORDS: &[&str] = &[
    "$async", "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$schema", "$id",
    "$defs", "$vocabulary", "$comment", "definitions", "id", "$ref", "maximum", "minimum",
    "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "maxLength", "minLength", "pattern",
    "maxProperties", "minProperties", "required", "maxItems", "minItems", "uniqueItems", "type",
    "nullable", "const", "enum", "not", "anyOf", "oneOf", "allOf", "if", "then", "else",
    "propertyNames", "additionalProperties", "dependencies", "properties", "patternProperties",
    "prefixItems", "items", "contains", "format", "title", "description", "default", "deprecated",
    "readOnly", "writeOnly", "examples", "contentMediaType", "contentEncoding", "contentSchema",
    "dependentRequired", "dependentSchemas", "maxContains", "minContains", "unevaluatedProperties",
    "unevaluatedItems",
];

/// Keywords whose value is a map of name to subschema.
const MAP_OF_SCHEMAS: &[&str] = &["$defs", "definitions", "properties", "patternProperties", "dependentSchemas"];
/// Keywords whose value is a subschema.
const ONE_SCHEMA: &[&str] = &[
    "not", "if", "then", "else", "propertyNames", "additionalProperties", "items", "contains",
    "unevaluatedProperties", "unevaluatedItems", "contentSchema",
];
/// Keywords whose value is a list of subschemas.
const LIST_OF_SCHEMAS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

impl Schema {
    /// Compiles `schema` as strict JSON Schema 2020-12. Every problem found
    /// is returned (at least one on failure).
    pub fn compile(schema: &Value) -> Result<Schema, Vec<SchemaError>> {
        let mut errors = Vec::new();
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            errors.push(SchemaError {
                pointer: e.instance_path().to_string(),
                rule: "meta-schema",
                message: format!("not a valid JSON Schema 2020-12 ({})", e),
            });
            return Err(errors);
        }
        strict_walk(schema, "", &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(false)
            .build(schema)
            .map_err(|e| {
                vec![SchemaError { pointer: String::new(), rule: "reference", message: e.to_string() }]
            })?;
        Ok(Schema { validator })
    }

    /// True when `instance` satisfies the schema.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Every issue of `instance` (empty when valid).
    pub fn validate(&self, instance: &Value) -> Vec<ValidationIssue> {
        if self.validator.is_valid(instance) {
            return Vec::new();
        }
        self.validator
            .iter_errors(instance)
            .map(|e| {
                let keyword = match e.kind().keyword() {
                    "falseSchema" => "false schema".to_string(),
                    k => k.to_string(),
                };
                ValidationIssue {
                    instance_path: e.instance_path().to_string(),
                    keyword,
                    message: e.to_string(),
                }
            })
            .collect()
    }
}

/// A first pass of Ajv's strict checks: unknown keywords, `format`, and
/// references that leave the document.
fn strict_walk(schema: &Value, pointer: &str, errors: &mut Vec<SchemaError>) {
    let map = match schema {
        Value::Object(map) => map,
        _ => return,
    };
    for (key, value) in map {
        let here = format!("{}/{}", pointer, escape_pointer_token(key));
        if !KNOWN_KEYWORDS.contains(&key.as_str()) {
            errors.push(SchemaError {
                pointer: here.clone(),
                rule: "unknown keyword",
                message: format!("\"{key}\" is not a JSON Schema 2020-12 keyword (strict mode)"),
            });
            continue;
        }
        match key.as_str() {
            "format" => errors.push(SchemaError {
                pointer: here.clone(),
                rule: "format",
                message: "no format is known, so \"format\" is refused (strict mode)".to_string(),
            }),
            "$ref" | "$dynamicRef" => {
                if let Value::String(r) = value {
                    if !r.starts_with('#') {
                        errors.push(SchemaError {
                            pointer: here.clone(),
                            rule: "reference",
                            message: format!("\"{r}\" leaves the document; only local references resolve"),
                        });
                    }
                }
            }
            _ => {}
        }
        if MAP_OF_SCHEMAS.contains(&key.as_str()) {
            if let Value::Object(children) = value {
                for (name, child) in children {
                    strict_walk(child, &format!("{}/{}", here, escape_pointer_token(name)), errors);
                }
            }
        } else if ONE_SCHEMA.contains(&key.as_str()) {
            strict_walk(value, &here, errors);
        } else if LIST_OF_SCHEMAS.contains(&key.as_str()) {
            if let Value::Array(items) = value {
                for (i, child) in items.iter().enumerate() {
                    strict_walk(child, &format!("{here}/{i}"), errors);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_and_reports_issues() {
        let s = Schema::compile(&json!({
            "type": "object",
            "properties": {"done": {"type": "boolean"}},
            "required": ["done"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(s.validate(&json!({"done": true})).is_empty());
        let issues = s.validate(&json!({"done": "yes"}));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].instance_path, "/done");
        assert_eq!(issues[0].keyword, "type");
    }

    #[test]
    fn refuses_what_strict_mode_refuses() {
        let e = Schema::compile(&json!({"type": "string", "format": "email"})).unwrap_err();
        assert_eq!(e[0].rule, "format");
        let e = Schema::compile(&json!({"properties": {"a": {"tpye": "string"}}})).unwrap_err();
        assert_eq!(e[0].rule, "unknown keyword");
        assert_eq!(e[0].pointer, "/properties/a/tpye");
        let e = Schema::compile(&json!({"$ref": "http://example.com/s.json"})).unwrap_err();
        assert_eq!(e[0].rule, "reference");
        assert!(Schema::compile(&json!({"type": 5})).is_err());
    }
}
