//! The layers of docs/ARCHITECTURE.md hold in the code. Between crates the
//! compiler keeps them (`rcip-capi` -> `rcip-mcp` -> `rcip`, each using only
//! the public API of the crates below it); inside the core crate `rcip`
//! every module names only the modules below it, which this test checks. The check reads the sources with
//! `syn` (not a text search): every `use` tree, re-exports included, every
//! path in items, types, expressions and patterns, and the paths inside
//! macro calls, each resolved from the module it is written in (`crate::`,
//! `self::`, `super::`, child modules and names brought in by `use`).
//!
//! - `json`, `foreign` and `platform` are the bottom and name no other
//!   module; `schema` names `json`; `catalog` names `json` and `schema`;
//!   `runtime` names those, `foreign` and `platform`; only the crate root,
//!   which declares the modules, names them all.
//! - The C ABI crate alone converts handles (`handle.rs`), and the
//!   conformance runner names no Rust item of it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Each top module and the top modules it may name.
const LAYERS: &[(&str, &[&str])] = &[
    ("json", &[]),
    ("foreign", &[]),
    ("platform", &[]),
    ("schema", &["json"]),
    ("catalog", &["json", "schema"]),
    ("runtime", &["json", "schema", "catalog", "foreign", "platform"]),
];

/// What a checked source may name.
struct Rules {
    /// The crate's top modules (`src/*.rs`, `src/*/mod.rs`).
    top_modules: BTreeSet<String>,
}

/// One source file to check: its module path in the crate (empty for the
/// crate root and for a binary) and its text.
struct Source {
    file: String,
    module: Vec<String>,
    text: String,
    /// A binary of the package: paths start at the library's name.
    binary: bool,
}

struct Walker<'r> {
    rules: &'r Rules,
    file: String,
    binary: bool,
    /// The module being read, and for each enclosing module its child
    /// modules and its `use` names (alias -> absolute path).
    stack: Vec<Scope>,
    violations: Vec<String>,
}

#[derive(Default, Clone)]
struct Scope {
    module: Vec<String>,
    children: BTreeSet<String>,
    aliases: HashMap<String, Vec<String>>,
}

impl Walker<'_> {
    fn scope(&self) -> &Scope {
        self.stack.last().expect("a scope")
    }

    /// The absolute path (from the crate root) `segments` names, if it
    /// names something of this crate.
    fn resolve(&self, segments: &[String], leading_colon: bool) -> Option<Vec<String>> {
        let first = segments.first()?;
        if leading_colon {
            // `::name` is an external crate (for a binary: the library too).
            return (self.binary && first == "rcip").then(|| segments[1..].to_vec());
        }
        let scope = self.scope();
        match first.as_str() {
            "crate" if !self.binary => Some(segments[1..].to_vec()),
            "self" => {
                let mut p = scope.module.clone();
                p.extend_from_slice(&segments[1..]);
                Some(p)
            }
            "super" => {
                let mut p = scope.module.clone();
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    p.pop()?;
                    rest = &rest[1..];
                }
                p.extend_from_slice(rest);
                Some(p)
            }
            "rcip" if self.binary => Some(segments[1..].to_vec()),
            name => {
                if let Some(target) = scope.aliases.get(name) {
                    let mut p = target.clone();
                    p.extend_from_slice(&segments[1..]);
                    Some(p)
                } else if scope.children.contains(name) {
                    let mut p = scope.module.clone();
                    p.extend_from_slice(segments);
                    Some(p)
                } else {
                    None
                }
            }
        }
    }

    /// Records a violation when the module being read may not name `target`.
    fn check(&mut self, target: &[String], what: &str) {
        let from = self.scope().module.clone();
        let from_top = from.first().map(String::as_str).unwrap_or("");
        let Some(to_top) = target.first().map(String::as_str) else {
            return;
        };
        let mut bad = None;
        if self.binary {
            if to_top == "*" {
                bad = Some("the CLI glob-imports the library".to_string());
            }
        } else if from_top.is_empty() || to_top == from_top {
            // The crate root declares the modules; a module may name its
            // own parts.
        } else if to_top == "*" {
            bad = Some("a glob import of the crate root".to_string());
        } else if !self.rules.top_modules.contains(to_top) {
            // An item of the crate root (`crate::abi_version`).
        } else {
            let allowed = LAYERS
                .iter()
                .find(|(m, _)| *m == from_top)
                .map(|(_, a)| *a)
                .unwrap_or(&[]);
            if !allowed.contains(&to_top) {
                bad = Some(format!("`{from_top}` may not name `crate::{}`", target.join("::")));
            }
        }
        if let Some(why) = bad {
            self.violations
                .push(format!("{} (module `{}`, {what}): {why}", self.file, from.join("::")));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, leading_colon: bool, out: &mut Vec<UsePath>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, leading_colon, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                let name = n.ident.to_string();
                if name != "self" {
                    path.push(name.clone());
                }
                let alias = if name == "self" {
                    prefix.last().cloned()
                } else {
                    Some(name)
                };
                out.push(UsePath {
                    path,
                    alias,
                    leading_colon,
                });
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                out.push(UsePath {
                    path,
                    alias: Some(r.rename.to_string()),
                    leading_colon,
                });
            }
            syn::UseTree::Glob(_) => {
                let mut path = prefix.clone();
                path.push("*".to_string());
                out.push(UsePath {
                    path,
                    alias: None,
                    leading_colon,
                });
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, leading_colon, out);
                }
            }
        }
    }

    /// Reads the `use` items and child modules of one module's items first,
    /// so that paths anywhere in it resolve through them.
    fn enter(&mut self, module: Vec<String>, items: &[syn::Item]) {
        let mut scope = Scope {
            module,
            ..Scope::default()
        };
        for item in items {
            if let syn::Item::Mod(m) = item {
                scope.children.insert(m.ident.to_string());
            }
        }
        self.stack.push(scope);
        for item in items {
            if let syn::Item::Use(u) = item {
                let mut paths = Vec::new();
                self.use_tree(&mut Vec::new(), &u.tree, u.leading_colon.is_some(), &mut paths);
                for p in paths {
                    let Some(abs) = self.resolve(&p.path, p.leading_colon) else {
                        continue;
                    };
                    self.check(&abs, "use");
                    if let Some(alias) = p.alias {
                        if abs.last().map(String::as_str) != Some("*") {
                            self.stack.last_mut().unwrap().aliases.insert(alias, abs);
                        }
                    }
                }
            }
        }
        for item in items {
            match item {
                syn::Item::Use(_) => {}
                syn::Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        let mut module = self.scope().module.clone();
                        module.push(m.ident.to_string());
                        self.enter(module, inner);
                    }
                }
                other => self.visit_item(other),
            }
        }
        self.stack.pop();
    }

    fn path_segments(&mut self, segments: Vec<String>, leading_colon: bool, what: &str) {
        if let Some(abs) = self.resolve(&segments, leading_colon) {
            self.check(&abs, what);
        }
    }

    /// Paths inside a macro call's tokens: `a::b::c` runs of identifiers
    /// that start at `crate`, `self`, `super` or a `use` name (so
    /// `$crate::ffi::x` counts as `crate::ffi::x`).
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let flat: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < flat.len() {
            match &flat[i] {
                proc_macro2::TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                proc_macro2::TokenTree::Ident(id) => {
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    loop {
                        let colons = matches!((flat.get(j), flat.get(j + 1)),
                            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                            if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, flat.get(j + 2)) {
                            (true, Some(proc_macro2::TokenTree::Ident(next))) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segments.len() > 1 {
                        self.path_segments(segments, false, "macro call");
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

struct UsePath {
    path: Vec<String>,
    alias: Option<String>,
    leading_colon: bool,
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.path_segments(segments, path.leading_colon.is_some(), "path");
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A `use` inside a function body: checked, not remembered.
        let mut paths = Vec::new();
        self.use_tree(&mut Vec::new(), &u.tree, u.leading_colon.is_some(), &mut paths);
        for p in paths {
            if let Some(abs) = self.resolve(&p.path, p.leading_colon) {
                self.check(&abs, "use");
            }
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // A module inside a function body.
        if let Some((_, inner)) = &m.content {
            let mut module = self.scope().module.clone();
            module.push(m.ident.to_string());
            self.enter(module, inner);
        }
    }
}

/// The violations in `sources` under `rules`.
fn violations(rules: &Rules, sources: &[Source]) -> Vec<String> {
    let mut all = Vec::new();
    for s in sources {
        let file = syn::parse_file(&s.text).unwrap_or_else(|e| panic!("{}: {e}", s.file));
        let mut w = Walker {
            rules,
            file: s.file.clone(),
            binary: s.binary,
            stack: Vec::new(),
            violations: Vec::new(),
        };
        w.enter(s.module.clone(), &file.items);
        all.extend(w.violations);
    }
    all
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A crate's sources with their module paths: `crate_dir` is relative to
/// this crate's directory (`.` for this crate, `../rcip` for the core).
fn crate_sources(crate_dir: &str) -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(crate_dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(&src).unwrap();
            let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            let binary = parts.first().map(String::as_str) == Some("bin");
            let mut module: Vec<String> = parts.iter().map(|p| p.trim_end_matches(".rs").to_string()).collect();
            if binary {
                module.clear();
            } else if module.last().map(String::as_str) == Some("mod") || module == ["lib"] {
                module.pop();
            }
            Source {
                file: format!("src/{}", rel.display()),
                module,
                text: std::fs::read_to_string(&path).unwrap(),
                binary,
            }
        })
        .collect()
}

fn rules_of(sources: &[Source]) -> Rules {
    let top_modules = sources
        .iter()
        .filter(|s| !s.binary)
        .filter_map(|s| s.module.first().cloned())
        .collect();
    Rules { top_modules }
}

#[test]
fn no_module_names_a_layer_above_it() {
    let sources = crate_sources("../rcip");
    assert!(sources.len() > 30, "the sources were found");
    let rules = rules_of(&sources);
    assert!(rules.top_modules.contains("runtime") && rules.top_modules.contains("json"));
    let found = violations(&rules, &sources);
    assert!(found.is_empty(), "layer back-edges:\n{}", found.join("\n"));
}

/// The checker itself finds each form of back-edge.
#[test]
fn the_checker_finds_each_form_of_back_edge() {
    let rules = Rules {
        top_modules: ["json", "foreign", "schema", "catalog", "runtime"]
            .into_iter()
            .map(String::from)
            .collect(),
    };
    let one = |file: &str, module: &[&str], text: &str, binary: bool| Source {
        file: file.to_string(),
        module: module.iter().map(|m| m.to_string()).collect(),
        text: text.to_string(),
        binary,
    };
    let bad = [
        one("a", &["catalog", "check"], "use crate::runtime::invoke::Shared;", false),
        one("b", &["schema", "eval"], "use super::super::catalog::Catalog;", false),
        one(
            "c",
            &["catalog"],
            "pub use crate::{schema, runtime::callbacks::Sink};",
            false,
        ),
        one(
            "d",
            &["foreign"],
            "struct S { c: Option<crate::runtime::DirectCheck> }",
            false,
        ),
        one(
            "e",
            &["json"],
            "fn f() { let _ = format!(\"{}\", crate::schema::x()); }",
            false,
        ),
        one(
            "f",
            &["schema"],
            "use crate as root; fn f() -> root::catalog::T { todo!() }",
            false,
        ),
        one(
            "g",
            &["catalog"],
            "mod inner { use super::super::runtime as f; }",
            false,
        ),
        one("h", &["schema"], "use crate::runtime::Runtime;", false),
        one("i", &["json"], "use crate::foreign::UserData;", false),
        one("j", &["foreign"], "use crate::json; fn f(_: json::Limits) {}", false),
        one("k", &["runtime"], "use crate::*;", false),
        one("l", &[], "use rcip::*;", true),
        one(
            "n",
            &["schema"],
            "macro_rules! m { () => { $crate::runtime::x() }; }",
            false,
        ),
    ];
    for s in &bad {
        let found = violations(&rules, std::slice::from_ref(s));
        assert!(!found.is_empty(), "not found in {}: {}", s.file, s.text);
    }
    let good = [
        one(
            "A",
            &["runtime", "invoke"],
            "use super::shared::Shared; use crate::json::Limits;",
            false,
        ),
        one(
            "B",
            &["runtime"],
            "use crate::foreign::{OnceText, UserData}; use crate::catalog::Catalog;",
            false,
        ),
        one("C", &[], "pub mod runtime; pub use runtime::Runtime;", false),
        one(
            "D",
            &[],
            "use rcip::catalog::Catalog; fn main() { rcip::abi_version(); }",
            true,
        ),
        one(
            "E",
            &["runtime"],
            "use std::ffi::CStr; fn f(_: &std::ffi::CStr) {}",
            false,
        ),
    ];
    for s in &good {
        let found = violations(&rules, std::slice::from_ref(s));
        assert!(found.is_empty(), "{}: {found:?}", s.file);
    }
}

/// Every opaque handle of this crate is a marker declared with `handle_kind!`
/// in its file, and only src/handle.rs turns pointers into boxes or
/// counted references and back (docs/ARCHITECTURE.md, "Handles").
#[test]
fn handles_convert_only_in_the_handle_module() {
    struct Raw<'a> {
        file: &'a str,
        found: Vec<String>,
    }
    impl<'ast> Visit<'ast> for Raw<'_> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            let s: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            if s.len() >= 2 {
                let (owner, f) = (&s[s.len() - 2], &s[s.len() - 1]);
                if (owner == "Box" || owner == "Arc" || owner == "Rc")
                    && matches!(
                        f.as_str(),
                        "from_raw" | "into_raw" | "increment_strong_count" | "decrement_strong_count"
                    )
                {
                    self.found.push(format!("{}: {}", self.file, s.join("::")));
                }
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut handles = 0;
    for s in crate_sources(".") {
        if s.file == "src/handle.rs" {
            continue;
        }
        let file = syn::parse_file(&s.text).unwrap();
        let mut raw = Raw {
            file: &s.file,
            found: Vec::new(),
        };
        raw.visit_file(&file);
        assert!(
            raw.found.is_empty(),
            "handle conversions outside src/handle.rs: {:?}",
            raw.found
        );
        for item in &file.items {
            let syn::Item::Struct(st) = item else { continue };
            let name = st.ident.to_string();
            if !(name.starts_with("rcip_") && matches!(st.vis, syn::Visibility::Public(_))) {
                continue;
            }
            handles += 1;
            let marker = match &st.fields {
                syn::Fields::Named(f) => {
                    f.named.len() == 1 && f.named[0].ident.as_ref().is_some_and(|i| i == "_opaque")
                }
                _ => false,
            };
            assert!(
                marker,
                "{}: {name} is not an opaque marker {{ _opaque: [u8; 0] }}",
                s.file
            );
            let declared = file.items.iter().any(|i| match i {
                syn::Item::Macro(m) => {
                    m.mac.path.is_ident("handle_kind") && {
                        let t = m.mac.tokens.to_string();
                        t.split_whitespace().nth(1) == Some(name.as_str())
                    }
                }
                _ => false,
            });
            assert!(declared, "{}: {name} has no handle_kind! declaration", s.file);
        }
    }
    assert!(handles >= 15, "the handle types were found ({handles})");
}

/// The conformance runner links the library only to get its C functions
/// (conformance/Cargo.toml): it names no Rust item of it, so it can do only
/// what a C host can. `use rcip_capi as _;` is the one mention allowed.
#[test]
fn the_conformance_runner_names_no_rust_item_of_the_library() {
    struct Names(Vec<String>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if path
                .segments
                .first()
                .is_some_and(|s| s.ident == "rcip_capi" || s.ident == "rcip")
            {
                let p: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
                self.0.push(p.join("::"));
            }
            syn::visit::visit_path(self, path);
        }
        fn visit_use_tree(&mut self, tree: &'ast syn::UseTree) {
            match tree {
                syn::UseTree::Rename(r) if r.ident == "rcip_capi" && r.rename == "_" => {}
                syn::UseTree::Path(p) if p.ident == "rcip_capi" || p.ident == "rcip" => {
                    self.0.push(format!("use {}::...", p.ident))
                }
                syn::UseTree::Name(n) if n.ident == "rcip_capi" || n.ident == "rcip" => {
                    self.0.push(format!("use {}", n.ident))
                }
                syn::UseTree::Rename(r) if r.ident == "rcip_capi" || r.ident == "rcip" => {
                    self.0.push(format!("use {} as {}", r.ident, r.rename))
                }
                _ => syn::visit::visit_use_tree(self, tree),
            }
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            // `rcip::` among the tokens (string literals are single tokens).
            fn scan(tokens: proc_macro2::TokenStream, out: &mut Vec<String>) {
                let flat: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
                for (i, t) in flat.iter().enumerate() {
                    match t {
                        proc_macro2::TokenTree::Group(g) => scan(g.stream(), out),
                        proc_macro2::TokenTree::Ident(id) if id == "rcip" || id == "rcip_capi" => {
                            if matches!(flat.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':') {
                                out.push("rcip:: in a macro call".into());
                            }
                        }
                        _ => {}
                    }
                }
            }
            scan(mac.tokens.clone(), &mut self.0);
        }
    }
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("conformance/src");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    assert!(files.len() >= 3);
    let mut found = Vec::new();
    for f in files {
        let file = syn::parse_file(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let mut names = Names(Vec::new());
        names.visit_file(&file);
        found.extend(names.0.into_iter().map(|n| format!("{}: {n}", f.display())));
    }
    assert!(
        found.is_empty(),
        "the conformance runner names the library's Rust items: {found:?}"
    );
}
