//! Generates the C header from this crate's `src` into `OUT_DIR/rcip.h`
//! (docs/C-ABI.md, "The header"). `make header` copies it to `include/rcip.h`, which is
//! committed; `tests/header.rs` fails when the two differ.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let major: u32 = env::var("CARGO_PKG_VERSION_MAJOR").unwrap().parse().unwrap();
    let minor: u32 = env::var("CARGO_PKG_VERSION_MINOR").unwrap().parse().unwrap();
    let patch: u32 = env::var("CARGO_PKG_VERSION_PATCH").unwrap().parse().unwrap();
    // The ABI version: MAJOR * 10000 + MINOR * 100 + PATCH, one source of truth.
    let abi = major * 10000 + minor * 100 + patch;
    println!("cargo:rustc-env=RCIP_ABI_VERSION={abi}");
    // SONAME carries the ABI major version (librcip.so.MAJOR).
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librcip.so.{major}");
    }

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n/** Library version, from Cargo.toml. */\n#define RCIP_VERSION_MAJOR {major}\n#define RCIP_VERSION_MINOR {minor}\n#define RCIP_VERSION_PATCH {patch}\n/** ABI version: MAJOR * 10000 + MINOR * 100 + PATCH; equals rcip_abi_version() of a matching library. */\n#define RCIP_ABI_VERSION {abi}\n"
    ));
    match cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
    {
        Ok(bindings) => {
            bindings.write_to_file(out_dir.join("rcip.h"));
        }
        Err(e) => panic!("cbindgen could not generate rcip.h: {e}"),
    }
}
