//! Build script:
//! 1. generates the C header from the Rust definitions with cbindgen into
//!    `$OUT_DIR/c_api.h` (tests/header.rs diffs it against the checked-in copy at
//!    `include/tensorflow/lite/core/c/c_api.h`; `BLESS=1 cargo test --test header`
//!    refreshes it);
//! 2. compiles `src/c_api/variadic.c` (C varargs cannot be written in stable Rust);
//! 3. gives the cdylib TFLite's soname and the `VERS_1.0` version script
//!    (`../shared/design/ABI.md` §1). rustc adds a version script of its own that would
//!    leave Rust-defined symbols unversioned; the linker wrapper `tools/linker/cc`
//!    (selected in `.cargo/config.toml`) drops it for this library.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));

    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=tensorflowlite_c.lds");

    cc::Build::new()
        .file(manifest.join("src/c_api/variadic.c"))
        .flag_if_supported("-std=c99")
        .warnings(true)
        .compile("tflite_variadic");

    let script = manifest.join("tensorflowlite_c.lds");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", script.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtensorflowlite_c.so");

    generate_header(&manifest, &out.join("c_api.h"));
}

fn generate_header(manifest: &Path, dest: &Path) {
    let mut config = cbindgen::Config::from_file(manifest.join("cbindgen.toml")).expect("cbindgen.toml");
    // builtin_op_data.h's structs are not reachable from any function, so list them all.
    let op_data = fs::read_to_string(manifest.join("src/abi/builtin_op_data.rs")).unwrap_or_default();
    for line in op_data.lines() {
        let t = line.trim_start();
        for kw in ["pub struct ", "pub enum "] {
            if let Some(rest) = t.strip_prefix(kw) {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    config.export.include.push(name);
                }
            }
        }
    }
    match cbindgen::Builder::new().with_crate(manifest).with_config(config).generate() {
        Ok(bindings) => {
            let mut buf = Vec::new();
            bindings.write(&mut buf);
            let text = String::from_utf8(buf).expect("cbindgen output is UTF-8");
            let text = text
                .replace("  int data[0];", &flexible_array_member("int data[];"))
                .replace("  float data[0];", &flexible_array_member("float data[];"));
            fs::write(dest, text).expect("write header");
        }
        Err(e) => panic!("cbindgen failed: {e}"),
    }
}

/// Rust spells a flexible array member `[T; 0]`; C99 spells it `T data[]` (a zero-length
/// array is a GNU extension and fails -pedantic). C++ has no flexible array members; GCC
/// and Clang accept them as an extension, so in C++ the member is declared with
/// -Wpedantic silenced (the header must compile with `-std=c++17 -Wpedantic -Werror`).
fn flexible_array_member(decl: &str) -> String {
    let guard = "#if defined(__cplusplus) && defined(__GNUC__)";
    format!(
        "{guard}\n#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Wpedantic\"\n#endif\n  {decl}\n\
         {guard}\n#pragma GCC diagnostic pop\n#endif"
    )
}
