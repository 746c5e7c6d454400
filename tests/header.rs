//! The committed header must equal the one build.rs generates (STYLE.md
//! section 6), and the ABI version macro must match the library.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/rcip.h"));
    let committed = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/rcip.h"))
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
    assert_eq!(value, rcip::ffi::string::rcip_abi_version());
    let major: u32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap();
    let minor: u32 = env!("CARGO_PKG_VERSION_MINOR").parse().unwrap();
    let patch: u32 = env!("CARGO_PKG_VERSION_PATCH").parse().unwrap();
    assert_eq!(value, major * 10000 + minor * 100 + patch);
}
