//! Reads the C ABI crate's src and enforces the boundary conventions
//! (docs/C-ABI.md, "Errors", "Panics, NULL, UTF-8, threads" and
//! "Documentation labels"): every export's body is the panic guard, no Rust enum
//! crosses into the library, and every export documents what it must.

use std::path::Path;

struct Export {
    file: String,
    name: String,
    docs: Vec<String>,
    signature: String,
    body_start: String,
}

fn exports() -> Vec<Export> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[unsafe(no_mangle)]" {
                continue;
            }
            // Docs above (skipping other attributes).
            let mut docs = Vec::new();
            let mut j = i;
            while j > 0 {
                j -= 1;
                let l = lines[j].trim();
                if let Some(d) = l.strip_prefix("///") {
                    docs.push(d.trim().to_string());
                } else if l.starts_with("#[") {
                    continue;
                } else {
                    break;
                }
            }
            docs.reverse();
            // Signature: from the fn line to the opening brace of the body.
            let mut k = i + 1;
            while lines[k].trim().starts_with("#[") {
                k += 1;
            }
            let mut signature = String::new();
            while !lines[k].trim_end().ends_with('{') {
                signature.push_str(lines[k].trim());
                signature.push(' ');
                k += 1;
            }
            signature.push_str(lines[k].trim());
            let name = signature
                .split("fn ")
                .nth(1)
                .unwrap()
                .split('(')
                .next()
                .unwrap()
                .to_string();
            out.push(Export {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                name,
                docs,
                signature,
                body_start: lines[k + 1].trim().to_string(),
            });
        }
    }
    out
}

#[test]
fn the_surface_is_large_enough_to_mean_something() {
    let all = exports();
    assert!(all.len() >= 60, "found only {} exports", all.len());
    assert!(
        all.iter().all(|e| e.name.starts_with("rcip_")),
        "every symbol starts with rcip_"
    );
}

#[test]
fn every_export_body_is_the_panic_guard() {
    for e in exports() {
        assert!(
            e.body_start.starts_with("ffi_guard!(") || e.body_start.starts_with("ffi_guard_or!("),
            "{} ({}) does not start with the guard: {}",
            e.name,
            e.file,
            e.body_start
        );
        let result_export = e.signature.contains("-> rcip_result");
        if result_export {
            assert!(
                e.body_start.starts_with("ffi_guard!("),
                "{}: rcip_result exports use ffi_guard!",
                e.name
            );
        }
    }
}

#[test]
fn no_rust_enum_is_accepted_from_c() {
    // The only enum in the ABI is rcip_result, and it is only ever returned.
    for e in exports() {
        let params = e.signature.split_once('(').unwrap().1.split("->").next().unwrap();
        assert!(
            !params.contains("rcip_result"),
            "{} takes an rcip_result argument",
            e.name
        );
        for bad in ["Option<bool>", "Effect", "OutcomeStatus", "ErrorCode", "EventPhase"] {
            assert!(
                !e.signature.contains(bad),
                "{} has a Rust enum in its signature: {bad}",
                e.name
            );
        }
    }
}

#[test]
fn every_export_documents_its_contract() {
    let mut problems = Vec::new();
    for e in exports() {
        if let Err(p) = std::panic::catch_unwind(|| check_docs(&e)) {
            problems.push(p.downcast_ref::<String>().cloned().unwrap_or_default());
        }
    }
    assert!(
        problems.is_empty(),
        "{} exports lack documentation:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn check_docs(e: &Export) {
    {
        let text = e.docs.join("\n");
        assert!(
            !e.docs.is_empty() && !e.docs[0].is_empty(),
            "{}: no one-line summary",
            e.name
        );
        assert!(text.contains("Thread safety:"), "{}: no `Thread safety:` label", e.name);
        if e.signature.contains("-> rcip_result") {
            assert!(
                text.contains("Errors:"),
                "{}: an rcip_result export needs `Errors:`",
                e.name
            );
        }
        let takes_pointer = e
            .signature
            .split_once('(')
            .unwrap()
            .1
            .split("->")
            .next()
            .unwrap()
            .contains('*');
        let frees = e.name.ends_with("_free");
        if takes_pointer || e.signature.contains("-> *") {
            assert!(
                text.contains("Ownership:") || frees && text.contains("consumes"),
                "{}: no `Ownership:` label",
                e.name
            );
        }
        if e.signature.contains("user_data_free") {
            assert!(
                text.contains("Callbacks:"),
                "{}: a registration needs `Callbacks:`",
                e.name
            );
        }
        // Labels in docs/C-ABI.md's order (Shape, Units, Ownership, Errors,
        // Thread safety, Callbacks, Rule).
        for pair in [
            ("Shape:", "Units:"),
            ("Units:", "Ownership:"),
            ("Shape:", "Ownership:"),
            ("Ownership:", "Errors:"),
            ("Errors:", "Rule:"),
        ] {
            if let (Some(a), Some(b)) = (text.find(pair.0), text.find(pair.1)) {
                assert!(a < b, "{}: `{}` must come before `{}`", e.name, pair.0, pair.1);
            }
        }
    }
}

#[test]
fn every_opaque_type_lists_its_functions_and_ownership() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix("pub struct rcip_") else {
                continue;
            };
            let name = format!(
                "rcip_{}",
                rest.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap()
            );
            let mut docs = String::new();
            let mut j = i;
            while j > 0 && lines[j - 1].trim_start().starts_with("///") {
                j -= 1;
                docs.insert_str(0, lines[j]);
            }
            assert!(
                docs.contains("Functions:"),
                "{name}: the type doc must list its functions"
            );
            assert!(
                docs.contains("Thread safety:"),
                "{name}: the type doc must give its thread-safety value"
            );
            assert!(
                docs.contains("Ownership:") || docs.contains("Borrowed"),
                "{name}: the type doc must give its ownership"
            );
        }
    }
}

/// The exports in `text` (a source file of src/) that take a raw pointer
/// and are not `unsafe fn`: the caller must promise the pointer is valid,
/// so the Rust signature says so (C sees no difference).
fn safe_exports_taking_pointers(text: &str) -> Vec<String> {
    fn is_export(attrs: &[syn::Attribute]) -> bool {
        attrs.iter().any(|a| {
            a.path().is_ident("no_mangle")
                || a.path().is_ident("unsafe") && a.parse_args::<syn::Path>().is_ok_and(|p| p.is_ident("no_mangle"))
        })
    }
    fn is_pointer(ty: &syn::Type) -> bool {
        match ty {
            syn::Type::Ptr(_) => true,
            syn::Type::Paren(p) => is_pointer(&p.elem),
            syn::Type::Group(g) => is_pointer(&g.elem),
            _ => false,
        }
    }
    fn visit(items: &[syn::Item], out: &mut Vec<String>) {
        for item in items {
            match item {
                syn::Item::Fn(f) if is_export(&f.attrs) => {
                    let takes_pointer = f.sig.inputs.iter().any(|arg| match arg {
                        syn::FnArg::Typed(t) => is_pointer(&t.ty),
                        syn::FnArg::Receiver(_) => false,
                    });
                    if takes_pointer && f.sig.unsafety.is_none() {
                        out.push(f.sig.ident.to_string());
                    }
                }
                syn::Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        visit(inner, out);
                    }
                }
                _ => {}
            }
        }
    }
    let file = syn::parse_file(text).unwrap();
    let mut out = Vec::new();
    visit(&file.items, &mut out);
    out
}

#[test]
fn every_export_taking_a_pointer_is_unsafe() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for name in safe_exports_taking_pointers(&text) {
            problems.push(format!("{} ({})", name, path.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(
        problems.is_empty(),
        "exports that take a raw pointer must be `pub unsafe extern \"C\" fn`:\n{}",
        problems.join("\n")
    );
    // The check sees both attribute spellings, and only pointer parameters.
    let sample = r#"
        #[unsafe(no_mangle)]
        pub extern "C" fn rcip_a(x: *const u8) {}
        #[no_mangle]
        pub extern "C" fn rcip_b(x: u32, y: *mut *const u8) {}
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn rcip_c(x: *const u8) {}
        #[unsafe(no_mangle)]
        pub extern "C" fn rcip_d(x: u32) -> *const u8 { std::ptr::null() }
        pub fn not_an_export(x: *const u8) {}
    "#;
    assert_eq!(safe_exports_taking_pointers(sample), ["rcip_a", "rcip_b"]);
}
