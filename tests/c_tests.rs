//! Builds and runs the plain C test programs in `c_tests/` and the example
//! programs in `examples_c/` against a `libtensorflowlite_c.so`, one
//! `#[test]` per program so cargo's summary counts them.
//!
//! Each program is compiled with `$CC` (default `cc`) as
//! `-std=c99 -Wall -Wextra -Werror -I<include> -I<repo>/c_tests` (C11 where a
//! program says so), linked with
//! `-L<libdir> -ltensorflowlite_c -Wl,-rpath,<libdir> -lm -pthread`, and run from the
//! repository root with `TFLITE_CORPUS_DIR` and `LD_LIBRARY_PATH` set. It
//! passes when it exits 0; otherwise its stdout and stderr are shown.
//!
//! Environment:
//! * `TFLITE_C_LIB_DIR`: directory holding the `libtensorflowlite_c.so` to
//!   test. Default: the crate's own cdylib, built by cargo for this test run
//!   (`cargo test` leaves it in `<target>/<profile>/deps/`, which is searched
//!   first; `<target>/<profile>/` is the fallback). CI also sets this to a
//!   real TensorFlow Lite build to prove the tests themselves are right.
//! * `TFLITE_C_INCLUDE_DIR`: include directory for the TFLite headers.
//!   Default: `<repo>/include`.
//! * `TFLITE_CORPUS_DIR`: the shared model corpus. Default:
//!   `<repo>/../shared/corpus`. Missing corpus = failing tests, never skips.
//! * `CC`: the C compiler. `C_TESTS_CFLAGS`: extra flags, whitespace
//!   separated (e.g. `-fsanitize=address -g`). `C_TESTS_RUNNER`: a command
//!   prefix for running the programs (e.g. `valgrind --error-exitcode=1`).
//! * `C_TESTS_TIMEOUT_SECS`: per-program run time limit (default 300).

use std::env;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const LIB_FILE: &str = "libtensorflowlite_c.so";

/// The repository root (where Cargo.toml is).
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>/<profile>`: this test binary runs from `<target>/<profile>/deps/`.
fn profile_dir() -> PathBuf {
    let exe = env::current_exe().expect("current_exe() failed");
    let deps = exe.parent().unwrap_or_else(|| panic!("test binary {} has no parent dir", exe.display()));
    deps.parent().unwrap_or_else(|| panic!("{} has no parent dir", deps.display())).to_path_buf()
}

/// Directory holding the library under test; panics with a clear message if
/// the library is not there.
fn lib_dir() -> PathBuf {
    if let Some(dir) = env::var_os("TFLITE_C_LIB_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        let lib = dir.join(LIB_FILE);
        assert!(lib.is_file(), "TFLITE_C_LIB_DIR={} but {} does not exist", dir.display(), lib.display());
        return absolute(&dir);
    }
    let profile = profile_dir();
    // `cargo test` builds the crate's cdylib into <target>/<profile>/deps/
    // (it only copies it up to <target>/<profile>/ on `cargo build`), so the
    // deps/ copy is the one built from the sources under test; the copy in
    // <target>/<profile>/ may be left over from an older `cargo build`.
    for dir in [profile.join("deps"), profile.clone()] {
        if dir.join(LIB_FILE).is_file() {
            return dir;
        }
    }
    panic!(
        "the library under test was not found: expected {} (the crate's cdylib, built \
         by `cargo test`). Build it with `cargo build` for this profile, or set \
         TFLITE_C_LIB_DIR to a directory containing {LIB_FILE}.",
        profile.join(LIB_FILE).display()
    );
}

fn include_dir() -> PathBuf {
    let dir = match env::var_os("TFLITE_C_INCLUDE_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => repo_root().join("include"),
    };
    assert!(dir.is_dir(), "TFLite include directory {} does not exist (set TFLITE_C_INCLUDE_DIR)", dir.display());
    absolute(&dir)
}

/// The shared model corpus; panics loudly when it is missing.
fn corpus_dir() -> PathBuf {
    let dir = match env::var_os("TFLITE_CORPUS_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => repo_root().join("..").join("shared").join("corpus"),
    };
    assert!(
        dir.join("capi").is_dir(),
        "MODEL CORPUS MISSING: {} has no capi/ directory. The C tests need the shared \
         corpus at <repo>/../shared/corpus (or set TFLITE_CORPUS_DIR). Refusing to \
         pass without it.",
        dir.display()
    );
    absolute(&dir)
}

fn absolute(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|e| panic!("cannot resolve {}: {e}", p.display()))
}

/// Where compiled programs go: `<target>/<profile>/c_tests_build/`.
fn build_dir() -> PathBuf {
    let dir = profile_dir().join("c_tests_build");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// C language standard for one program.
#[derive(Clone, Copy)]
enum Std {
    C99,
    C11,
}

impl Std {
    fn flag(self) -> &'static str {
        match self {
            Std::C99 => "-std=c99",
            Std::C11 => "-std=c11",
        }
    }
}

/// Output of a finished program.
struct RunOutput {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

fn split_flags(var: &str) -> Vec<String> {
    env::var(var).unwrap_or_default().split_whitespace().map(str::to_owned).collect()
}

/// Compiles `source` into `<build_dir>/<exe_name>`; panics with the
/// compiler's output on failure.
fn compile(source: &Path, exe_name: &str, std: Std) -> PathBuf {
    assert!(source.is_file(), "C source {} does not exist", source.display());
    let cc = env::var_os("CC").filter(|c| !c.is_empty()).unwrap_or_else(|| OsString::from("cc"));
    let lib = lib_dir();
    let exe = build_dir().join(exe_name);
    let mut cmd = Command::new(&cc);
    cmd.arg(std.flag())
        .args(["-Wall", "-Wextra", "-Werror", "-g"])
        .arg(format!("-I{}", include_dir().display()))
        .arg(format!("-I{}", repo_root().join("c_tests").display()))
        .args(split_flags("C_TESTS_CFLAGS"))
        .arg(source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg("-ltensorflowlite_c")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lm", "-pthread"]);
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run C compiler {:?}: {e}", cc));
    assert!(
        out.status.success(),
        "compiling {} failed ({}):\n$ {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        source.display(),
        out.status,
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `exe args...` from the repository root with the test environment,
/// killing it after the time limit.
fn run(exe: &Path, args: &[&str]) -> RunOutput {
    run_env(exe, args, &[])
}

/// [`run`] with extra environment variables.
fn run_env(exe: &Path, args: &[&str], envs: &[(&str, &str)]) -> RunOutput {
    let lib = lib_dir();
    let mut runner = split_flags("C_TESTS_RUNNER");
    let mut cmd = if runner.is_empty() {
        Command::new(exe)
    } else {
        let mut c = Command::new(runner.remove(0));
        c.args(runner).arg(exe);
        c
    };
    let ld_path = match env::var_os("LD_LIBRARY_PATH") {
        Some(old) if !old.is_empty() => {
            let mut p = OsString::from(lib.as_os_str());
            p.push(":");
            p.push(old);
            p
        }
        _ => OsString::from(lib.as_os_str()),
    };
    cmd.args(args)
        .current_dir(repo_root())
        .env("TFLITE_CORPUS_DIR", corpus_dir())
        .env("LD_LIBRARY_PATH", ld_path)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));

    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });

    let limit = Duration::from_secs(env::var("C_TESTS_TIMEOUT_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(300));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > limit => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().expect("wait after kill");
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {} failed: {e}", exe.display()),
        }
    };
    RunOutput {
        status: status.code(),
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
        timed_out,
    }
}

/// Compiles `source` and runs it with `args`; panics unless it exits 0.
fn build_and_run(source: &Path, exe_name: &str, std: Std, args: &[&str]) {
    // Resolve every input first so a missing library/corpus/include dir is
    // reported as such, not as a compile error.
    let lib = lib_dir();
    let _ = corpus_dir();
    let _ = include_dir();
    let exe = compile(source, exe_name, std);
    let out = run(&exe, args);
    let ok = !out.timed_out && out.status == Some(0);
    if ok {
        // Visible with `cargo test -- --nocapture`.
        print!("{}", out.stdout);
        return;
    }
    panic!(
        "{} {} (library: {}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        source.display(),
        if out.timed_out {
            "timed out".to_owned()
        } else {
            match out.status {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_owned(),
            }
        },
        lib.join(LIB_FILE).display(),
        out.stdout,
        out.stderr
    );
}

/// One program from `c_tests/`.
fn run_c_test(name: &str, std: Std) {
    let source = repo_root().join("c_tests").join(format!("{name}.c"));
    build_and_run(&source, name, std, &[]);
}

/// One program from `examples_c/`, run with `args` (paths are taken as given;
/// the program runs from the repository root).
fn c_example(name: &str, args: &[&str]) {
    let source = repo_root().join("examples_c").join(format!("{name}.c"));
    assert!(source.is_file(), "example program {} is missing", source.display());
    build_and_run(&source, &format!("example_{name}"), Std::C99, args);
}

#[test]
fn c_test() {
    run_c_test("c_test", Std::C99);
}

#[test]
fn c_api_test() {
    run_c_test("c_api_test", Std::C99);
}

#[test]
fn c_api_experimental_test() {
    run_c_test("c_api_experimental_test", Std::C99);
}

#[test]
fn c_api_signature_runner_test() {
    run_c_test("c_api_signature_runner_test", Std::C99);
}

#[test]
fn c_api_opaque_test() {
    run_c_test("c_api_opaque_test", Std::C99);
}

#[test]
fn delegate_test() {
    run_c_test("delegate_test", Std::C99);
}

#[test]
fn delegate_opaque_test() {
    run_c_test("delegate_opaque_test", Std::C99);
}

/// Eight interpreters on one model, invoked at once from their own threads.
#[test]
fn concurrency_test() {
    run_c_test("concurrency_test", Std::C99);
}

/// `_Static_assert` needs C11; the headers themselves are checked as C99 by
/// every other program here.
#[test]
fn layout_test() {
    run_c_test("layout_test", Std::C11);
}

#[test]
fn example_minimal() {
    let model = repo_root().join("examples_c").join("demo_model.tflite");
    assert!(
        model.is_file(),
        "examples_c/demo_model.tflite is missing: the minimal example needs it ({})",
        model.display()
    );
    let model = model.to_str().expect("UTF-8 repository path").to_owned();
    c_example("minimal", &[&model]);
}

/// A sin delegate done right: one delegate node for sin(sin(x)) runs both
/// SIN nodes; the program compares with the CPU kernels.
#[test]
fn example_sin_delegate() {
    for model in ["sin_sin.tflite", "demo_model.tflite"] {
        let path = repo_root().join("examples_c").join(model);
        assert!(path.is_file(), "examples_c/{model} is missing ({})", path.display());
        c_example("sin_delegate", &[path.to_str().expect("UTF-8 repository path")]);
    }
}

/// A delegate implementing DEPTHWISE_CONV_2D v1 only leaves the v2 node of
/// the corpus's depthwise_dilated.tflite on the CPU.
#[test]
fn example_version_aware_delegate() {
    let model = corpus_dir().join("models").join("depthwise_dilated.tflite");
    assert!(model.is_file(), "corpus model {} is missing", model.display());
    c_example("version_aware_delegate", &[model.to_str().expect("UTF-8 corpus path")]);
}

/// The GPU delegate's C API exists only in our library (TFLite ships it separately).
/// Each test compiles its own copy: tests run in parallel, and executing a file another
/// test is rewriting fails with ETXTBSY.
fn gpu_example_or_skip(test: &str) -> Option<PathBuf> {
    if env::var_os("TFLITE_C_LIB_DIR").is_some_and(|d| !d.is_empty()) {
        println!("SKIPPED {test}: TFLITE_C_LIB_DIR names another library; TFLite's C library has no GPU delegate");
        return None;
    }
    let _ = lib_dir();
    let source = repo_root().join("examples_c").join("gpu_delegate.c");
    Some(compile(&source, test, Std::C99))
}

/// examples_c/gpu_delegate on a corpus model: CPU and GPU agree. Exit status 3 means
/// no OpenCL platform: a loud skip, or a failure where CI requires OpenCL.
#[test]
fn example_gpu_delegate() {
    let Some(exe) = gpu_example_or_skip("example_gpu_delegate") else { return };
    let model = corpus_dir().join("models/face_detection_short_range.tflite");
    let out = run(&exe, &[model.to_str().unwrap()]);
    if out.status == Some(3) && env::var("TFLITE_REQUIRE_OPENCL").as_deref() != Ok("1") {
        println!("SKIPPED example_gpu_delegate: no OpenCL platform:\n{}", out.stderr);
        return;
    }
    assert_eq!(out.status, Some(0), "gpu_delegate failed:\n{}\n{}", out.stdout, out.stderr);
    print!("{}", out.stdout);
}

/// Without any OpenCL platform (the ICD loader finds no vendor), Create returns NULL
/// and says why; nothing crashes.
#[test]
fn gpu_delegate_create_without_opencl() {
    let Some(exe) = gpu_example_or_skip("gpu_delegate_create_without_opencl") else { return };
    let model = corpus_dir().join("models/face_detection_short_range.tflite");
    let out = run_env(
        &exe,
        &[model.to_str().unwrap()],
        &[("OCL_ICD_VENDORS", "/nonexistent"), ("OPENCL_VENDOR_PATH", "/nonexistent")],
    );
    assert_eq!(out.status, Some(3), "expected Create to return NULL:\n{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("TfLiteGpuDelegateV2Create") && out.stderr.contains("OpenCL"),
        "no message saying why: {}",
        out.stderr
    );
    println!("{}", out.stderr.trim());
}
