//! Build script:
//! 1. generates the C header from the Rust definitions with cbindgen into
//!    `$OUT_DIR/c_api.h` (tests/header.rs diffs it against the checked-in copy at
//!    `include/tensorflow/lite/core/c/c_api.h`; `BLESS=1 cargo test --test header`
//!    refreshes it);
//! 2. compiles `src/c_api/variadic.c` (C varargs cannot be written in stable Rust);
//! 3. gives the cdylib TFLite's soname and the `VERS_1.0` version node
//!    (`../shared/design/ABI.md` §1), and writes `.symver` directives so every exported
//!    `TfLite*` function is `@@VERS_1.0` (rustc's own version script would otherwise keep
//!    Rust-defined symbols unversioned).

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

    write_symver(&manifest.join("src"), &out.join("symver.rs"));
    generate_header(&manifest, &out.join("c_api.h"));
}

/// Collects every `pub ... extern "C" fn TfLite*` under `src` and emits a
/// `global_asm!` with one `.symver NAME, NAME@@VERS_1.0` line each.
fn write_symver(dir: &Path, dest: &Path) {
    let mut names = Vec::new();
    collect_exports(dir, &mut names);
    names.sort();
    names.dedup();
    let mut asm = String::new();
    for n in &names {
        asm.push_str(&format!(".symver {n}, {n}@@VERS_1.0\n"));
    }
    let body = format!("core::arch::global_asm!({asm:?});\n");
    fs::write(dest, body).expect("write symver.rs");
}

fn collect_exports(dir: &Path, names: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read src/c_api").flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            collect_exports(&p, names);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = fs::read_to_string(&p).expect("read source");
            for line in text.lines() {
                let t = line.trim_start();
                if !(t.starts_with("pub unsafe extern \"C\" fn ") || t.starts_with("pub extern \"C\" fn ")) {
                    continue;
                }
                let after = t.split("fn ").nth(1).unwrap_or("");
                let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if name.starts_with("TfLite") {
                    names.push(name);
                }
            }
        }
    }
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
            bindings.write_to_file(dest);
        }
        Err(e) => panic!("cbindgen failed: {e}"),
    }
}
