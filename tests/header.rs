//! The checked-in header must equal what build.rs generates from the Rust sources, and
//! every public header must compile on its own (included twice) as C99 and as C++17 with
//! -Wall -Wextra -Werror and the pedantic warnings on (ISO C / ISO C++ only, no GNU
//! extensions such as zero-length arrays).
//! `BLESS=1 cargo test --test header` rewrites the checked-in copy.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generated() -> PathBuf {
    // The build script's OUT_DIR is not visible to integration tests; find the newest
    // build output of this crate.
    let target = repo().join("target");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for profile in ["debug", "release"] {
        let build = target.join(profile).join("build");
        let Ok(entries) = std::fs::read_dir(&build) else { continue };
        for e in entries.flatten() {
            let p = e.path().join("out").join("c_api.h");
            if let Ok(m) = p.metadata().and_then(|m| m.modified())
                && best.as_ref().is_none_or(|(t, _)| m > *t)
            {
                best = Some((m, p));
            }
        }
    }
    best.expect("no generated header found under target/*/build/*/out/c_api.h").1
}

#[test]
fn checked_in_header_matches_generated() {
    let gen_path = generated();
    let gen_text = std::fs::read_to_string(&gen_path).expect("read generated header");
    let checked = repo().join("include/tensorflow/lite/core/c/c_api.h");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&checked, &gen_text).expect("write header");
        return;
    }
    let cur = std::fs::read_to_string(&checked).unwrap_or_default();
    assert!(
        cur == gen_text,
        "include/tensorflow/lite/core/c/c_api.h differs from the header build.rs generates ({}). \
         Run `BLESS=1 cargo test --test header` and commit the result.",
        gen_path.display()
    );
}

fn public_headers(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read include dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            public_headers(&p, out);
        } else if p.extension().is_some_and(|x| x == "h") {
            out.push(p);
        }
    }
}

fn compile(lang: &str, std_flag: &str, pedantic_flag: &str, header: &Path, scratch: &Path) {
    let inc = repo().join("include");
    let rel = header.strip_prefix(&inc).expect("header under include");
    let src = scratch.join(format!(
        "tu_{}.{}",
        rel.to_string_lossy().replace(['/', '.'], "_"),
        if lang == "c" { "c" } else { "cc" }
    ));
    std::fs::write(
        &src,
        format!("#include \"{}\"\n#include \"{}\"\nint main(void) {{ return 0; }}\n", rel.display(), rel.display()),
    )
    .expect("write TU");
    let compiler = if lang == "c" {
        std::env::var("CC").unwrap_or_else(|_| "cc".into())
    } else {
        std::env::var("CXX").unwrap_or_else(|_| "c++".into())
    };
    let out = Command::new(&compiler)
        .args([std_flag, pedantic_flag, "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
        .arg(&inc)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{} does not compile as {lang} ({std_flag} {pedantic_flag}):\n{}",
        rel.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_header_compiles_alone_as_pedantic_c99_and_cxx17() {
    let mut headers = Vec::new();
    public_headers(&repo().join("include"), &mut headers);
    assert!(headers.len() >= 10, "expected the public headers under include/");
    let scratch = std::env::temp_dir().join(format!("tflite_header_tu_{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    for h in &headers {
        compile("c", "-std=c99", "-pedantic", h, &scratch);
        compile("c++", "-std=c++17", "-Wpedantic", h, &scratch);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
