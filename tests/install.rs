//! The library installed and used as a C library: `tools/install.sh` installs it with a
//! DESTDIR into a staging tree under the target directory, then `examples_c/minimal.c`
//! is built three ways from that tree and run on `examples_c/demo_model.tflite`:
//! 1. `pkg-config --cflags --libs tensorflowlite_c`, run with LD_LIBRARY_PATH on the
//!    installed lib/ (PKG_CONFIG_SYSROOT_DIR maps the .pc file's prefix into the stage);
//! 2. the static library with the .pc file's `Libs.private` (no LD_LIBRARY_PATH);
//! 3. a CMake project using `find_package(tensorflowlite_c REQUIRED)`, once with the
//!    shared target and once with the static one (the package finds its files relative
//!    to itself, so it works from the staging tree as installed).
//!
//! Each run must print the model's outputs f(x) = sin(x) + x + sin(2x) for the ramp
//! minimal.c feeds. `pkg-config`, `cmake` and a C compiler (`$CC`, default `cc`) are
//! required: a missing one fails the test and says what to install.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The prefix the files are installed for; they land in `<stage>/opt/tensorflowlite_c`.
const PREFIX: &str = "/opt/tensorflowlite_c";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cc() -> String {
    env::var("CC").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "cc".into())
}

/// Panics with what to install when `tool` cannot be run.
fn require_tool(tool: &str, debian_package: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(
        found,
        "`{tool}` is needed by this test and was not found: install it (`apt-get install -y {debian_package}`)"
    );
}

/// Runs `cmd`; panics with its output unless it exits 0.
fn check(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {cmd:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn pkg_config(root: &Path, stage: &Path, args: &[&str]) -> Vec<String> {
    let out = check(
        Command::new("pkg-config")
            .args(args)
            .arg("tensorflowlite_c")
            .env("PKG_CONFIG_PATH", root.join("lib/pkgconfig"))
            .env("PKG_CONFIG_SYSROOT_DIR", stage),
        "pkg-config",
    );
    String::from_utf8(out.stdout).expect("pkg-config output is UTF-8").split_whitespace().map(str::to_owned).collect()
}

/// Runs minimal on the demo model and checks the eight values it prints.
fn run_minimal(exe: &Path, lib_path: Option<&Path>) {
    let model = repo().join("examples_c/demo_model.tflite");
    let mut cmd = Command::new(exe);
    cmd.arg(&model).env_remove("LD_LIBRARY_PATH");
    if let Some(dir) = lib_path {
        cmd.env("LD_LIBRARY_PATH", dir);
    }
    let out = check(&mut cmd, &format!("running {}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // minimal.c feeds x = 0, 0.25, 0.5, ... and prints `  y[i] = %.6f`.
    let values: Vec<f64> =
        stdout.lines().filter_map(|l| l.trim().strip_prefix("y[")?.split_once("] = ")?.1.parse().ok()).collect();
    assert_eq!(values.len(), 8, "{} printed:\n{stdout}", exe.display());
    for (i, y) in values.iter().enumerate() {
        let x = i as f64 * 0.25;
        let want = x.sin() + x + (2.0 * x).sin();
        assert!((y - want).abs() < 1e-5, "{}: y[{i}] = {y}, expected {want}\n{stdout}", exe.display());
    }
}

/// The NEEDED entries of an ELF file.
fn needed(elf: &Path) -> String {
    let out = check(Command::new("readelf").arg("-d").arg(elf), "readelf");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("(NEEDED)")).collect::<Vec<_>>().join("\n")
}

#[test]
fn installed_library_builds_and_runs_minimal_with_pkg_config_and_cmake() {
    require_tool("pkg-config", "pkg-config");
    require_tool("cmake", "cmake");
    require_tool(&cc(), "gcc");

    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("install");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("create the work directory");
    let stage = work.join("stage");
    let root = stage.join(PREFIX.trim_start_matches('/'));
    let lib = root.join("lib");

    check(
        Command::new("bash")
            .arg(repo().join("tools/install.sh"))
            .arg(format!("--prefix={PREFIX}"))
            .arg(format!("--destdir={}", stage.display())),
        "tools/install.sh",
    );

    // The layout a C library has.
    let version = env!("CARGO_PKG_VERSION");
    let so = lib.join(format!("libtensorflowlite_c.so.{version}"));
    assert!(so.is_file(), "{} was not installed", so.display());
    let link = std::fs::read_link(lib.join("libtensorflowlite_c.so")).expect("lib/libtensorflowlite_c.so is a symlink");
    assert_eq!(link, Path::new(&format!("libtensorflowlite_c.so.{version}")));
    let sections = check(Command::new("readelf").arg("-S").arg(&so), "readelf -S");
    assert!(
        !String::from_utf8_lossy(&sections.stdout).contains(".debug_info"),
        "the installed .so still has debug info"
    );
    for f in
        ["lib/libtensorflowlite_c.a", "include/tensorflow/lite/c/c_api.h", "include/tensorflow/lite/core/c/c_api.h"]
    {
        assert!(root.join(f).is_file(), "{f} was not installed");
    }
    let pc = std::fs::read_to_string(lib.join("pkgconfig/tensorflowlite_c.pc")).expect("read the .pc file");
    assert!(
        pc.contains(&format!("prefix={PREFIX}\n")),
        "the .pc file must name the prefix, not the staging tree:\n{pc}"
    );

    let minimal = repo().join("examples_c/minimal.c");
    let warnings = ["-std=c99", "-Wall", "-Wextra", "-Werror"];

    // 1. pkg-config, shared library.
    let exe = work.join("minimal_pkgconfig");
    check(
        Command::new(cc())
            .args(warnings)
            .arg(&minimal)
            .args(pkg_config(&root, &stage, &["--cflags", "--libs"]))
            .arg("-o")
            .arg(&exe),
        "cc with pkg-config",
    );
    assert!(
        needed(&exe).contains("[libtensorflowlite_c.so]"),
        "minimal_pkgconfig does not need libtensorflowlite_c.so"
    );
    run_minimal(&exe, Some(&lib));

    // 2. pkg-config, static library: the .a plus Libs.private.
    let exe = work.join("minimal_pkgconfig_static");
    let private: Vec<String> = pkg_config(&root, &stage, &["--static", "--libs-only-l"])
        .into_iter()
        .filter(|l| l != "-ltensorflowlite_c")
        .collect();
    check(
        Command::new(cc())
            .args(warnings)
            .arg(&minimal)
            .args(pkg_config(&root, &stage, &["--cflags"]))
            .arg(lib.join("libtensorflowlite_c.a"))
            .args(&private)
            .arg("-o")
            .arg(&exe),
        "cc with the static library and Libs.private",
    );
    assert!(!needed(&exe).contains("tensorflowlite"), "minimal_pkgconfig_static needs a shared libtensorflowlite_c");
    run_minimal(&exe, None);

    // 3. CMake, shared and static targets.
    let project = work.join("cmake_project");
    std::fs::create_dir_all(&project).expect("create the CMake project directory");
    let src = minimal.display();
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\nproject(minimal C)\nfind_package(tensorflowlite_c REQUIRED)\n\
             add_executable(minimal {src})\ntarget_link_libraries(minimal PRIVATE tensorflowlite_c::tensorflowlite_c)\n\
             add_executable(minimal_static {src})\n\
             target_link_libraries(minimal_static PRIVATE tensorflowlite_c::tensorflowlite_c_static)\n"
        ),
    )
    .expect("write CMakeLists.txt");
    let build = work.join("cmake_build");
    check(
        Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", root.display()))
            .arg(format!("-DCMAKE_C_COMPILER={}", cc()))
            .arg("-DCMAKE_C_FLAGS=-std=c99 -Wall -Wextra -Werror"),
        "cmake configure",
    );
    check(Command::new("cmake").arg("--build").arg(&build), "cmake --build");
    run_minimal(&build.join("minimal"), Some(&lib));
    assert!(
        !needed(&build.join("minimal_static")).contains("tensorflowlite"),
        "minimal_static needs the shared library"
    );
    run_minimal(&build.join("minimal_static"), None);
}
