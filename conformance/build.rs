//! Links the runner against the librcip shared library built in the same
//! target directory (`make conformance` builds the library first). The
//! runner uses the C ABI only, as a C host would.

use std::env;
use std::path::PathBuf;

fn main() {
    // OUT_DIR is target/<profile>/build/<pkg>-<hash>/out: the library sits
    // three levels up.
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let lib_dir = out.ancestors().nth(3).expect("target profile directory").to_path_buf();
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=rcip");
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN");
    // Test binaries live one level deeper, in deps/.
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/..");
    println!("cargo:rerun-if-changed=build.rs");
}
