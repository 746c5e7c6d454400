//! The committed header must equal the one build.rs generates (docs/C-ABI.md,
//! "The header"), and the ABI version macro must match the library.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/rcip.h"));
    let committed =
        std::fs::read_to_string(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("include/rcip.h"))
            .expect("include/rcip.h exists");
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "the end".to_string(), |i| format!("line {}", i + 1));
        panic!("include/rcip.h is stale (first difference at {line}): run `make header` and commit it");
    }
}

#[test]
fn abi_version_macro_matches_the_library() {
    let header = include_str!(concat!(env!("OUT_DIR"), "/rcip.h"));
    let line = header
        .lines()
        .find(|l| l.starts_with("#define RCIP_ABI_VERSION "))
        .expect("RCIP_ABI_VERSION");
    let value: u32 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(value, rcip_capi::string::rcip_abi_version());
    let major: u32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap();
    let minor: u32 = env!("CARGO_PKG_VERSION_MINOR").parse().unwrap();
    let patch: u32 = env!("CARGO_PKG_VERSION_PATCH").parse().unwrap();
    assert_eq!(value, major * 10000 + minor * 100 + patch);
}

/// The header answers what a newcomer had to find out by trial (issue 18,
/// item 7): each phrase below is part of one of those answers.
#[test]
fn the_header_answers_the_newcomer_questions() {
    let header = include_str!(concat!(env!("OUT_DIR"), "/rcip.h"));
    let doc_of = |item: &str| -> String {
        // The comment block right before the first line naming `item` as a
        // declaration (`typedef struct item` or `item(`).
        let typedef = format!("typedef struct {item} {item};");
        let call = format!("{item}(");
        let mut offset = 0;
        let mut at = None;
        for line in header.split_inclusive('\n') {
            let code = !line.starts_with(" *") && !line.starts_with("/*");
            if code
                && (line.starts_with(&typedef)
                    || line.contains(&format!(" {call}"))
                    || line.contains(&format!("*{call}")))
            {
                at = Some(offset);
                break;
            }
            offset += line.len();
        }
        let at = at.unwrap_or_else(|| panic!("{item} is not declared"));
        let start = header[..at].rfind("/**").expect("a doc comment");
        header[start..at].to_string()
    };
    let conventions = &header[..header.find("#ifndef RCIP_H").unwrap()];
    for phrase in [
        "Callbacks at a glance",
        "handler (host_bind)",
        "confirmation callback",
        "clock, id generator",
        "on_cancel (token_on_cancel)",
        "A handle handed to another thread belongs to that thread",
        "share/rcip/rcip.supp",
    ] {
        assert!(conventions.contains(phrase), "conventions lack {phrase:?}");
    }
    assert!(
        doc_of("rcip_runtime").contains("`rcip_runtime_close`"),
        "rcip_runtime lists no rcip_runtime_close"
    );
    let snapshot = doc_of("rcip_snapshot_json");
    for phrase in [
        "`availability` is `{\"available\": bool, \"reasonCode\"?: string, \"reason\"?:",
        "`parentId` does not",
        "AVAILABILITY_CHECK_FAILED",
    ] {
        assert!(snapshot.contains(phrase), "rcip_snapshot_json lacks {phrase:?}");
    }
    assert!(
        doc_of("rcip_invocation_complete").contains("After the consumer cancelled the invocation's token"),
        "rcip_invocation_complete does not say what completing after a cancellation returns"
    );
    assert!(
        doc_of("rcip_host_bind").contains("every `rcip_invocation` handed"),
        "rcip_host_bind does not say the user data outlives held invocations"
    );
}

/// A header defines only names in rcip's namespace: a macro such as
/// `DEFAULT_WORKERS` (src/mcp's Rust constant, once emitted by cbindgen)
/// clashes with the host's own, and its docs point at Rust items.
#[test]
fn every_name_the_header_defines_is_prefixed() {
    let header = include_str!(concat!(env!("OUT_DIR"), "/rcip.h"));
    let foreign: Vec<&str> = header
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| l.split([' ', '(']).next())
        .filter(|name| !name.starts_with("RCIP_"))
        .collect();
    assert!(foreign.is_empty(), "unprefixed macros in include/rcip.h: {foreign:?}");
    for kind in ["typedef struct ", "typedef enum "] {
        for line in header.lines().filter_map(|l| l.strip_prefix(kind)) {
            assert!(
                line.starts_with("rcip_"),
                "unprefixed type in include/rcip.h: {kind}{line}"
            );
        }
    }
}
