//! Generates the C header `bmrm.h` from `src/ffi` with cbindgen, and on
//! ELF targets gives the shared library the SONAME `libbmrm.so.<ABI>`, the
//! `BMRM_ABI_VERSION` of `src/ffi/types.rs` (scripts/install.sh makes the
//! `libbmrm.so -> libbmrm.so.<ABI> -> libbmrm.so.<ABI>.<version>` links).
//!
//! The header is always written to `$OUT_DIR/bmrm.h`. In a git checkout and
//! outside CI (the `CI` environment variable unset, empty, `0` or `false`)
//! it is also written to `include/bmrm.h` when it changed, so the committed
//! header follows the code; commit it with the change. In CI the source tree
//! is left alone and the test `header_is_current` (tests/ffi.rs) fails when
//! the committed header differs from the generated one.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let ffi = root.join("src").join("ffi");
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=include/bmrm.h");
    println!("cargo:rerun-if-env-changed=CI");

    let abi = abi_version(&ffi.join("types.rs"));
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !matches!(os.as_str(), "macos" | "ios" | "windows") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libbmrm.so.{abi}");
    }

    let config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cannot read cbindgen.toml: {e}"));
    // cbindgen follows the `mod` declarations of src/ffi/mod.rs.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(ffi.join("mod.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen cannot generate bmrm.h: {e}"));

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("bmrm.h");
    bindings.write_to_file(&out);
    if writes_source_tree(&root) {
        // Writes only when the contents differ (no needless rebuilds).
        bindings.write_to_file(root.join("include").join("bmrm.h"));
    }
}

/// The `BMRM_ABI_VERSION` declared in `types` (the one place it is written).
fn abi_version(types: &Path) -> u32 {
    let text = std::fs::read_to_string(types)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", types.display()));
    text.lines()
        .find_map(|l| l.trim().strip_prefix("pub const BMRM_ABI_VERSION: u32 = "))
        .and_then(|v| v.trim_end_matches(';').trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no `pub const BMRM_ABI_VERSION: u32 = N;` in {}",
                types.display()
            )
        })
}

/// Whether to refresh the committed `include/bmrm.h`.
fn writes_source_tree(root: &Path) -> bool {
    let ci = env::var("CI").unwrap_or_default();
    let in_ci = !(ci.is_empty() || ci == "0" || ci.eq_ignore_ascii_case("false"));
    !in_ci && root.join(".git").exists()
}
