//! One table per fact: include/rcip.h (generated from src/ffi) is the one
//! list of exports, callback types and result codes, and every hand-written
//! table of them is checked against it here, so adding, removing or
//! changing an export or a code without updating each binding fails
//! `make test`:
//!
//! - `rcip_result`: the Rust enum's table (`rcip_result::all`, texts);
//! - the Python binding: `PROTOTYPES`, the callback types and `Result` in
//!   `bindings/python/rcip/_abi.py`, which `bindings/python/tools/gen_abi.py`
//!   generates from the header (`make test-abi` checks it is the generator's
//!   output byte for byte; this test checks what it declares), and the
//!   hand-written `_BY_CODE` in `bindings/python/rcip/errors.py`;
//! - the conformance runner's `extern "C"` block (`conformance/src/abi.rs`;
//!   its result constants are generated from the header by
//!   `conformance/build.rs`, and this test checks none is written by hand);
//! - the C++ wrapper, which declares nothing itself: it includes rcip.h
//!   (the compiler checks every call) and names codes by their macros;
//! - the dispatch desk's result names (`result_names` in
//!   `examples-c/dispatch_desk.c`, which it prints, and in
//!   `examples-c/dispatch/plan.c`, which plans may expect).
//!
//! Signatures are compared by ABI class: `str` (a `char` pointer), `ptr`
//! (any other single pointer: handles, `void *`, `bool *`), `mutstr` (a
//! `char *` the library gave out and takes back), `ptrptr` (a
//! pointer to a pointer), `fn(...)->...` (a callback, by its own classes),
//! and the scalar types.

use rcip_capi::result::rcip_result;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A signature by ABI class: return, then parameters.
type Sig = (String, Vec<String>);

struct Header {
    functions: BTreeMap<String, Sig>,
    callbacks: BTreeMap<String, Sig>,
    results: BTreeMap<String, u32>,
}

/// The ABI class of a C type (a parameter without its name, or a return).
fn c_class(ty: &str, callbacks: &BTreeMap<String, Sig>) -> String {
    let depth = ty.matches('*').count();
    let base: Vec<&str> = ty
        .split(|c: char| c == '*' || c.is_whitespace())
        .filter(|w| !w.is_empty() && *w != "const" && *w != "struct")
        .collect();
    assert_eq!(base.len(), 1, "a C type: {ty:?}");
    let base = base[0];
    match (depth, base) {
        (0, name) if callbacks.contains_key(name) => fn_class(&callbacks[name]),
        (0, "void") => "void".into(),
        (0, "bool") => "bool".into(),
        (0, "rcip_result") | (0, "uint32_t") => "u32".into(),
        (0, "int32_t") => "i32".into(),
        (0, "uint64_t") => "u64".into(),
        (0, "int64_t") => "i64".into(),
        (0, "size_t") => "size".into(),
        (0, "double") => "f64".into(),
        (1, "char") if ty.contains("const") => "str".into(),
        // A string the library gave out and takes back (`rcip_string_free`).
        (1, "char") => "mutstr".into(),
        (1, _) => "ptr".into(),
        (2, _) => "ptrptr".into(),
        _ => panic!("an unexpected C type: {ty:?}"),
    }
}

fn fn_class(sig: &Sig) -> String {
    format!("fn({})->{}", sig.1.join(","), sig.0)
}

/// A C parameter list's types, names removed.
fn c_params(list: &str) -> Vec<String> {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return Vec::new();
    }
    list.split(',')
        .map(|p| {
            let p = p.trim();
            // The name is the last identifier.
            let cut = p
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            p[..cut].trim().to_string()
        })
        .collect()
}

fn header() -> Header {
    let text = read("include/rcip.h");
    let mut callbacks = BTreeMap::new();
    let mut functions = BTreeMap::new();
    let mut results = BTreeMap::new();
    // Callback typedefs first (functions name them).
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("typedef ") {
            if let Some(open) = rest.find("(*") {
                let ret = rest[..open].trim().to_string();
                let close = rest[open..].find(')').unwrap() + open;
                let name = rest[open + 2..close].to_string();
                let params = &rest[close + 2..rest.rfind(')').unwrap()];
                callbacks.insert(name, (ret, c_params(params)));
            }
        }
    }
    let raw = callbacks.clone();
    let callbacks: BTreeMap<String, Sig> = raw
        .iter()
        .map(|(n, (r, p))| {
            (
                n.clone(),
                (c_class(r, &raw), p.iter().map(|t| c_class(t, &raw)).collect()),
            )
        })
        .collect();
    for line in text.lines() {
        let line = line.trim_end();
        if line.starts_with(' ') || line.starts_with('#') || line.starts_with("typedef") || !line.ends_with(");") {
            if let Some(rest) = line.trim().strip_prefix("RCIP_RESULT_") {
                let (name, value) = rest.trim_end_matches(',').split_once(" = ").unwrap();
                results.insert(name.to_string(), value.parse().unwrap());
            }
            continue;
        }
        let open = line.find('(').unwrap();
        let head = &line[..open];
        let cut = head.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap() + 1;
        let name = head[cut..].to_string();
        assert!(name.starts_with("rcip_"), "{line}");
        let ret = c_class(&head[..cut], &callbacks);
        let params = c_params(&line[open + 1..line.len() - 2])
            .iter()
            .map(|t| c_class(t, &callbacks))
            .collect();
        functions.insert(name, (ret, params));
    }
    assert!(
        functions.len() > 60,
        "the header's functions were found ({})",
        functions.len()
    );
    assert!(callbacks.len() > 10 && results.len() > 10);
    Header {
        functions,
        callbacks,
        results,
    }
}

/// `NullArgument` -> `NULL_ARGUMENT`.
fn screaming(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[test]
fn the_result_table_is_the_enum_of_the_header() {
    let h = header();
    let ours: BTreeMap<String, u32> = rcip_result::all()
        .iter()
        .map(|r| (screaming(&format!("{r:?}")), *r as u32))
        .collect();
    assert_eq!(
        ours, h.results,
        "rcip_result::all() and the header's rcip_result differ"
    );
    let mut texts = BTreeSet::new();
    for r in rcip_result::all() {
        assert_eq!(rcip_result::from_code(*r as u32), Some(*r));
        let text = r.text().to_str().unwrap();
        assert!(!text.is_empty() && texts.insert(text), "{r:?}: a text of its own");
        let via_c = unsafe { std::ffi::CStr::from_ptr(rcip_capi::result::rcip_result_str(*r as u32)) };
        assert_eq!(via_c.to_str().unwrap(), text);
    }
    assert_eq!(rcip_result::from_code(7), None);
}

// ----- The dispatch desk

#[test]
fn the_desk_names_every_result_code() {
    let h = header();
    let expected: BTreeSet<String> = h
        .results
        .keys()
        .map(|k| k.strip_prefix("RCIP_RESULT_").unwrap_or(k).to_string())
        .collect();
    // dispatch_desk.c: `{RCIP_RESULT_X, "X"},` rows, the name the suffix.
    let desk = read("examples-c/dispatch_desk.c");
    let start = desk
        .find("} result_names[] = {")
        .expect("dispatch_desk.c: result_names");
    let table = &desk[start..start + desk[start..].find("};").unwrap()];
    let mut printed = BTreeSet::new();
    for row in table.split('{').skip(2) {
        let row = row.split('}').next().unwrap();
        let (code, name) = row.split_once(',').unwrap();
        let name = name.trim().trim_matches('"');
        assert_eq!(code.trim(), format!("RCIP_RESULT_{name}"), "dispatch_desk.c: row {row}");
        assert!(printed.insert(name.to_string()), "dispatch_desk.c: {name} twice");
    }
    assert_eq!(
        printed, expected,
        "dispatch_desk.c result_names differ from include/rcip.h"
    );
    // plan.c: the names a plan's "expect.result" may give.
    let plan = read("examples-c/dispatch/plan.c");
    let start = plan.find("result_names[] = {").expect("plan.c: result_names");
    let table = &plan[start..start + plan[start..].find("};").unwrap()];
    let expectable: BTreeSet<String> = table.split('"').skip(1).step_by(2).map(str::to_string).collect();
    assert_eq!(expectable, expected, "plan.c result_names differ from include/rcip.h");
}

// ----- Python

/// Splits `text` at top-level commas (outside brackets).
fn split_top(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The text inside the brackets that open at `open` (an index of `(`,
/// `[` or `{`).
fn bracketed(text: &str, open: usize) -> &str {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced brackets")
}

/// Drops `# ...` comments (the tables hold no `#` inside strings).
fn no_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.split_once('#').map_or(l, |(a, _)| a))
        .collect::<Vec<_>>()
        .join("\n")
}

fn py_class(expr: &str, callbacks: &BTreeMap<String, Sig>) -> String {
    match expr.trim() {
        "None" => "void".into(),
        "_R" | "c_uint32" => "u32".into(),
        "c_bool" => "bool".into(),
        "c_int32" => "i32".into(),
        "c_uint64" => "u64".into(),
        "c_int64" => "i64".into(),
        "c_size_t" => "size".into(),
        "c_double" => "f64".into(),
        "c_char_p" => "str".into(),
        "_P" | "c_void_p" => "ptr".into(),
        "_PP" => "ptrptr".into(),
        e if e.starts_with("POINTER(") => match py_class(&e[8..e.len() - 1], callbacks).as_str() {
            "str" | "ptr" => "ptrptr".into(),
            _ => "ptr".into(),
        },
        e if callbacks.contains_key(e) => fn_class(&callbacks[e]),
        e => panic!("an unknown ctypes type in _abi.py: {e}"),
    }
}

#[test]
fn the_python_prototypes_and_results_are_the_header() {
    let h = header();
    let text = no_comments(&read("bindings/python/rcip/_abi.py"));
    // Callback types: NAME = CFUNCTYPE(ret, args...).
    let mut py_callbacks = BTreeMap::new();
    for line in text.lines() {
        if let Some((name, rest)) = line.split_once(" = CFUNCTYPE(") {
            let parts = split_top(&rest[..rest.rfind(')').unwrap()]);
            py_callbacks.insert(name.trim().to_string(), parts);
        }
    }
    let empty = BTreeMap::new();
    let py_callbacks: BTreeMap<String, Sig> = py_callbacks
        .into_iter()
        .map(|(n, parts)| {
            let ret = py_class(&parts[0], &empty);
            (n, (ret, parts[1..].iter().map(|p| py_class(p, &empty)).collect()))
        })
        .collect();
    for (c_name, sig) in &h.callbacks {
        let py_name = format!(
            "{}_CALLBACK",
            c_name["rcip_".len()..c_name.len() - "_callback".len()].to_uppercase()
        );
        match py_callbacks.get(&py_name) {
            None => panic!("_abi.py has no {py_name} for {c_name}"),
            Some(py) => assert_eq!(py, sig, "{py_name} differs from {c_name}"),
        }
    }
    // PROTOTYPES = { "name": (ret, [args]), ... }
    let start = text.find("PROTOTYPES = {").expect("PROTOTYPES");
    let body = bracketed(&text, start + "PROTOTYPES = ".len());
    let mut prototypes = BTreeMap::new();
    for entry in split_top(body) {
        let (name, value) = entry.split_once(':').unwrap();
        let name = name.trim().trim_matches('"').to_string();
        let value = value.trim();
        let parts = split_top(bracketed(value, 0));
        assert_eq!(parts.len(), 2, "{name}: (restype, [argtypes])");
        let args = split_top(bracketed(&parts[1], 0));
        let sig = (
            py_class(&parts[0], &py_callbacks),
            args.iter().map(|a| py_class(a, &py_callbacks)).collect(),
        );
        assert!(prototypes.insert(name.clone(), sig).is_none(), "{name} twice");
    }
    let ours: BTreeSet<&String> = prototypes.keys().collect();
    let theirs: BTreeSet<&String> = h.functions.keys().collect();
    let missing: Vec<_> = theirs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&theirs).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "_abi.py PROTOTYPES: missing {missing:?}, not in the header {extra:?}"
    );
    for (name, sig) in &prototypes {
        // A string the library gave out is passed back as the address it
        // was read as (`c_void_p`), so ctypes does not copy it.
        let expected = &h.functions[name];
        let expected_py = (
            expected.0.clone(),
            expected
                .1
                .iter()
                .zip(&sig.1)
                .map(|(e, got): (&String, &String)| {
                    if e == "mutstr" && got == "ptr" {
                        got.clone()
                    } else {
                        e.clone()
                    }
                })
                .collect::<Vec<_>>(),
        );
        assert_eq!(sig, &expected_py, "_abi.py: {name} differs from include/rcip.h");
    }

    // _abi.py: class Result(enum.IntEnum) with NAME = value lines (the
    // last class of the file); errors.py re-exports it, and its _BY_CODE
    // maps every failure code to <CamelName>Error.
    let start = text.find("class Result(").expect("class Result");
    let mut results = BTreeMap::new();
    for line in text[start..].lines().skip(1) {
        if line.starts_with("class ") {
            break;
        }
        if let Some((name, value)) = line.trim().split_once(" = ") {
            results.insert(name.to_string(), value.trim().parse::<u32>().unwrap());
        }
    }
    assert_eq!(results, h.results, "_abi.py Result differs from include/rcip.h");
    let errors = no_comments(&read("bindings/python/rcip/errors.py"));
    assert!(
        errors.contains("from ._abi import Result as Result"),
        "errors.py re-exports the generated Result"
    );
    let start = errors.find("_BY_CODE").unwrap();
    let body = bracketed(&errors, start + errors[start..].find('{').unwrap());
    let by_code: BTreeMap<String, String> = split_top(body)
        .into_iter()
        .map(|e| {
            let (k, v) = e.split_once(':').unwrap();
            (k.trim().trim_start_matches("Result.").to_string(), v.trim().to_string())
        })
        .collect();
    let expected: BTreeMap<String, String> = rcip_result::all()
        .iter()
        .filter(|r| **r != rcip_result::Ok)
        .map(|r| (screaming(&format!("{r:?}")), format!("{r:?}Error")))
        .collect();
    assert_eq!(by_code, expected, "errors.py _BY_CODE");
}

// ----- conformance runner

fn rust_class(ty: &syn::Type, aliases: &BTreeMap<String, syn::Type>) -> String {
    match ty {
        syn::Type::Ptr(p) => match &*p.elem {
            syn::Type::Ptr(_) => "ptrptr".into(),
            syn::Type::Path(e) if e.path.is_ident("c_char") => {
                if p.mutability.is_some() {
                    "mutstr".into()
                } else {
                    "str".into()
                }
            }
            _ => "ptr".into(),
        },
        syn::Type::Path(t) => {
            let last = t.path.segments.last().unwrap();
            let name = last.ident.to_string();
            match name.as_str() {
                "u32" | "rcip_result" => "u32".into(),
                "i32" => "i32".into(),
                "u64" => "u64".into(),
                "i64" => "i64".into(),
                "usize" => "size".into(),
                "f64" => "f64".into(),
                "bool" => "bool".into(),
                "Option" => match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                        Some(syn::GenericArgument::Type(syn::Type::BareFn(f))) => bare_fn_class(f, aliases),
                        _ => panic!("abi.rs: Option of a non-function"),
                    },
                    _ => panic!("abi.rs: Option without argument"),
                },
                alias if aliases.contains_key(alias) => rust_class(&aliases[alias], aliases),
                other => panic!("abi.rs: unknown type {other}"),
            }
        }
        syn::Type::BareFn(f) => bare_fn_class(f, aliases),
        _ => panic!("abi.rs: unexpected type"),
    }
}

fn bare_fn_class(f: &syn::TypeBareFn, aliases: &BTreeMap<String, syn::Type>) -> String {
    let ret = match &f.output {
        syn::ReturnType::Default => "void".to_string(),
        syn::ReturnType::Type(_, t) => rust_class(t, aliases),
    };
    let params: Vec<String> = f.inputs.iter().map(|a| rust_class(&a.ty, aliases)).collect();
    format!("fn({})->{ret}", params.join(","))
}

#[test]
fn the_conformance_runner_declares_the_header() {
    let h = header();
    let file = syn::parse_file(&read("conformance/src/abi.rs")).unwrap();
    let mut aliases = BTreeMap::new();
    let mut consts = BTreeMap::new();
    let mut declared = 0;
    for item in &file.items {
        match item {
            syn::Item::Type(t) => {
                aliases.insert(t.ident.to_string(), (*t.ty).clone());
            }
            syn::Item::Const(c) => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i), ..
                }) = &*c.expr
                {
                    consts.insert(c.ident.to_string(), i.base10_parse::<u32>().unwrap());
                }
            }
            _ => {}
        }
    }
    for item in &file.items {
        let syn::Item::ForeignMod(m) = item else { continue };
        for f in &m.items {
            let syn::ForeignItem::Fn(f) = f else { continue };
            let name = f.sig.ident.to_string();
            let Some(expected) = h.functions.get(&name) else {
                panic!("abi.rs declares {name}, which include/rcip.h does not export")
            };
            let ret = match &f.sig.output {
                syn::ReturnType::Default => "void".to_string(),
                syn::ReturnType::Type(_, t) => rust_class(t, &aliases),
            };
            let params: Vec<String> = f
                .sig
                .inputs
                .iter()
                .map(|a| match a {
                    syn::FnArg::Typed(t) => rust_class(&t.ty, &aliases),
                    syn::FnArg::Receiver(_) => unreachable!(),
                })
                .collect();
            assert_eq!(&(ret, params), expected, "abi.rs: {name} differs from include/rcip.h");
            declared += 1;
        }
    }
    assert!(declared > 20, "abi.rs's declarations were found");
    // The result codes are generated from the header (conformance/build.rs),
    // not copied: abi.rs includes them and writes none of its own.
    assert!(
        consts.keys().all(|name| !h.results.contains_key(name)),
        "abi.rs writes result codes by hand: {:?} (conformance/build.rs generates them)",
        consts.keys().collect::<Vec<_>>()
    );
    assert!(
        read("conformance/src/abi.rs").contains(r#"include!(concat!(env!("OUT_DIR"), "/results.rs"));"#),
        "abi.rs includes the generated result codes"
    );
    let build = read("conformance/build.rs");
    assert!(build.contains("include/rcip.h") && build.contains("RCIP_RESULT_"));
}

// ----- C++ wrapper

#[test]
fn the_cpp_wrapper_declares_nothing_of_its_own() {
    let h = header();
    let text = read("bindings/cpp/include/rcip/rcip.hpp");
    assert!(text.contains("#include \"rcip.h\"") || text.contains("#include <rcip.h>"));
    assert!(!text.contains("extern \"C\""), "rcip.hpp declares C functions itself");
    // Codes by their macros only, never by value.
    for line in text.lines() {
        let code = line.split("//").next().unwrap();
        for value in h.results.values().filter(|v| **v >= 100) {
            for pattern in [
                format!("rc == {value}"),
                format!("case {value}:"),
                format!("= {value};"),
            ] {
                assert!(
                    !code.contains(&pattern),
                    "rcip.hpp uses the code {value} by value: {line}"
                );
            }
        }
    }
    // Every RCIP_RESULT_ name it uses exists.
    for (i, _) in text.match_indices("RCIP_RESULT_") {
        let name: String = text[i + 12..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        assert!(h.results.contains_key(&name), "rcip.hpp names RCIP_RESULT_{name}");
    }
}
