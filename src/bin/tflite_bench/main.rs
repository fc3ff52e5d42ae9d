//! tflite-bench: load a model, run it N times, print init time, latency (median, min),
//! arena / persistent bytes beside the planner's lower bound, the packed-weight bytes
//! kept beside the arena, and (with --profile) a per-op profile. In the spirit of
//! TFLite's benchmark_model.
//!
//! usage: tflite-bench MODEL.tflite [--runs N] [--warmup N] [--threads N] [--profile]
//!                     [--use_gpu [--gpu_inference_for_sustained_speed | --gpu_inference_balanced]
//!                      [--delegate_serialize_dir DIR --delegate_serialize_token TOKEN] [--reinit]]
//!        tflite-bench --compare [--runs N] [--threads N] [--kernels builtin|xnnpack|ref] MODEL...
//!
//! `--compare` runs each model with ours and with real TFLite (LiteRT, through
//! `../shared/tools/litert/ref.py bench`, run by `$TFLITE_REF_PYTHON`, default
//! `../shared/.litert/bin/python`), both on `--threads` threads, one right after the
//! other (which goes first alternates from model to model, so a drift in the machine's
//! load does not always favour the same side). `--kernels` picks TFLite's kernel family:
//! `builtin` (its optimized kernels without XNNPACK, the default), `xnnpack` (LiteRT's
//! default resolver, which applies the XNNPACK delegate) or `ref` (reference kernels).
//! One table row per model: median and min Invoke latency of both and the ratio of the
//! medians; init time of both (ours: model load + interpreter + AllocateTensors;
//! TFLite: ref.py's `load_alloc_ms`, the same steps); our packed-weight bytes (weights
//! repacked for the kernels, alive after init and a first Invoke); our arena bytes and
//! LiteRT's (from `litert_reference.rs`, shared/design/MEMORY.md, measured with its
//! builtin kernels; "n/a" where there is none, `(emulated)` where LiteRT cannot load
//! the model and the figure is plan.py's).
//!
//! `--use_gpu` applies the OpenCL GPU delegate (TFLite benchmark_model's flag names):
//! FAST_SINGLE_ANSWER by default (nothing tuned), `--gpu_inference_for_sustained_speed`
//! tunes every kernel, `--gpu_inference_balanced` within a time budget; with
//! `--delegate_serialize_dir/--delegate_serialize_token` tunings persist in a cache file.
//! It prints how many nodes were delegated, launches after fusion, the device buffer,
//! and the tuning report (kernels tuned / from the cache, tuning and init time).
//! `--reinit` builds the interpreter a second time with a fresh delegate, to show what
//! the cache saves.

#[allow(dead_code, reason = "the table's model list is for tests/arena_vs_litert.rs, which includes this file too")]
mod litert_reference;

use litert_reference::{Source, litert_arena};
use std::ffi::CString;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tensorflowlite_c::gpu::delegate::options::TfLiteGpuExperimentalFlags;
use tensorflowlite_c::gpu::delegate::{GpuDelegate, TfLiteGpuDelegateOptionsV2};
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::microkernels::packed::live_packed_bytes;
use tensorflowlite_c::model::Model;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

/// TFLite's kernel families as ref.py names them.
const KERNEL_FAMILIES: [&str; 3] = ["builtin", "xnnpack", "ref"];

struct Args {
    model: String,
    compare: Vec<String>,
    kernels: String,
    runs: usize,
    warmup: usize,
    threads: i32,
    profile: bool,
    gpu: Option<GpuArgs>,
    reinit: bool,
}

#[derive(Clone, Default)]
struct GpuArgs {
    preference: i32,
    serialize_dir: Option<String>,
    token: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        model: String::new(),
        compare: Vec::new(),
        kernels: "builtin".into(),
        runs: 50,
        warmup: 3,
        threads: 1,
        profile: false,
        gpu: None,
        reinit: false,
    };
    let mut compare = false;
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            it.next().and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a number"))
        };
        match arg.as_str() {
            "--runs" => a.runs = num("--runs")?.max(1),
            "--warmup" => a.warmup = num("--warmup")?,
            "--threads" => a.threads = num("--threads")? as i32,
            "--profile" => a.profile = true,
            "--use_gpu" => a.gpu = Some(a.gpu.take().unwrap_or_default()),
            "--gpu_inference_for_sustained_speed" => a.gpu.get_or_insert_with(GpuArgs::default).preference = 1,
            "--gpu_inference_balanced" => a.gpu.get_or_insert_with(GpuArgs::default).preference = 2,
            "--delegate_serialize_dir" => {
                a.gpu.get_or_insert_with(GpuArgs::default).serialize_dir =
                    Some(it.next().ok_or("--delegate_serialize_dir needs a value")?)
            }
            "--delegate_serialize_token" => {
                a.gpu.get_or_insert_with(GpuArgs::default).token =
                    Some(it.next().ok_or("--delegate_serialize_token needs a value")?)
            }
            "--reinit" => a.reinit = true,
            "--compare" => compare = true,
            "--kernels" => {
                a.kernels = it.next().ok_or("--kernels needs a value")?;
                if !KERNEL_FAMILIES.contains(&a.kernels.as_str()) {
                    return Err(format!("--kernels must be one of {}", KERNEL_FAMILIES.join(", ")));
                }
            }
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown flag {s}")),
            s if compare => a.compare.push(s.to_string()),
            s => a.model = s.to_string(),
        }
    }
    if compare {
        if a.compare.is_empty() {
            return Err("--compare needs at least one model".into());
        }
        return Ok(a);
    }
    if a.model.is_empty() {
        return Err("no model given".into());
    }
    Ok(a)
}

fn fill_inputs(interp: &mut Interpreter) {
    let inputs = interp.primary().inputs().to_vec();
    for idx in inputs {
        if let Some(t) = interp.primary_mut().tensor_ptr(idx) {
            // SAFETY: `t` points into the primary subgraph's tensor table; after
            // AllocateTensors its data holds `bytes` writable bytes (or is NULL).
            unsafe {
                let p = (*t).data_ptr() as *mut u8;
                if !p.is_null() {
                    for i in 0..(*t).bytes {
                        *p.add(i) = (i % 7) as u8;
                    }
                }
            }
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One side's figures for one model.
struct Figures {
    median_ms: f64,
    min_ms: f64,
    init_ms: f64,
}

/// Our figures for one model, with our arena and packed-weight bytes.
struct Ours {
    time: Figures,
    arena_bytes: usize,
    packed_bytes: usize,
}

/// Our latency, init time and memory for one model, on `threads` threads.
fn measure(path: &str, threads: i32, runs: usize) -> Result<Ours, String> {
    let packed_before = live_packed_bytes();
    let t0 = Instant::now();
    let model = Model::from_file(std::path::Path::new(path)).map_err(|e| e.message)?;
    let resolver = builtin_op_resolver();
    let config =
        InterpreterConfig { num_threads: threads, reporter: Arc::new(|_: &str| {}), ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &resolver, config).map_err(|e| e.message)?;
    interp.allocate_tensors().map_err(|e| e.message)?;
    let init = t0.elapsed();
    fill_inputs(&mut interp);
    // Also the warm-up: some kernels pack their weights at the first Invoke.
    interp.invoke().map_err(|e| e.message)?;
    let packed_bytes = live_packed_bytes().saturating_sub(packed_before);
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            let r = interp.invoke();
            (s.elapsed(), r)
        })
        .map(|(d, r)| r.map(|()| d))
        .collect::<Result<_, _>>()
        .map_err(|e| e.message)?;
    times.sort();
    Ok(Ours {
        time: Figures { median_ms: ms(times[times.len() / 2]), min_ms: ms(times[0]), init_ms: ms(init) },
        arena_bytes: interp.primary().memory_stats().arena_bytes,
        packed_bytes,
    })
}

/// Real TFLite's latency and init time, from ref.py's JSON line.
fn measure_tflite(path: &str, threads: i32, kernels: &str) -> Result<Figures, String> {
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let python = std::env::var("TFLITE_REF_PYTHON")
        .unwrap_or_else(|_| shared.join(".litert/bin/python").to_string_lossy().into_owned());
    let out = std::process::Command::new(&python)
        .arg(shared.join("tools/litert/ref.py"))
        .args(["bench", path, "--threads", &threads.to_string(), "--kernels", kernels, "--seconds", "1"])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("ref.py failed: {}", err.lines().last().unwrap_or("")));
    }
    // The JSON is the last line: the XNNPACK delegate may log before it.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).ok_or("no JSON in ref.py output")?;
    let field = |name: &str| -> Result<f64, String> {
        let key = format!("\"{name}\": ");
        let start = line.find(&key).ok_or(format!("no {name} in ref.py output"))? + key.len();
        line[start..].split([',', '}']).next().and_then(|v| v.trim().parse().ok()).ok_or(format!("bad {name}"))
    };
    Ok(Figures { median_ms: field("median_ms")?, min_ms: field("min_ms")?, init_ms: field("load_alloc_ms")? })
}

/// LiteRT's arena bytes for the model at `path`, as the table cell shows them.
fn litert_arena_cell(name: &str) -> String {
    match litert_arena(name) {
        Some(a) if a.source == Source::Emulated => format!("{} (emulated)", a.bytes),
        Some(a) => a.bytes.to_string(),
        None => "n/a".into(),
    }
}

fn compare(a: &Args) {
    let threads = a.threads.max(1);
    println!(
        "TFLite: {} kernels (ref.py --kernels {}), {threads} thread(s), runs for 1 s; ours: builtin kernels, {threads} thread(s), {} runs",
        a.kernels, a.kernels, a.runs
    );
    println!(
        "| model | ours median ms | ours min ms | TFLite ({}) median ms | TFLite min ms | ours/TFLite | ours init ms | TFLite init ms | our packed bytes | our arena bytes | LiteRT arena bytes (builtin) |",
        a.kernels
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, path) in a.compare.iter().enumerate() {
        let name = std::path::Path::new(path).file_stem().map_or(path.clone(), |s| s.to_string_lossy().into_owned());
        let lite = litert_arena_cell(&name);
        let (ours, theirs) = if i % 2 == 0 {
            let o = measure(path, threads, a.runs);
            (o, measure_tflite(path, threads, &a.kernels))
        } else {
            let t = measure_tflite(path, threads, &a.kernels);
            (measure(path, threads, a.runs), t)
        };
        let (om, omin, oinit, packed, arena) = match &ours {
            Ok(o) => (
                format!("{:.3}", o.time.median_ms),
                format!("{:.3}", o.time.min_ms),
                format!("{:.1}", o.time.init_ms),
                o.packed_bytes.to_string(),
                o.arena_bytes.to_string(),
            ),
            Err(e) => {
                (format!("unsupported: {}", e.trim()), String::new(), String::new(), String::new(), String::new())
            }
        };
        let (tm, tmin, tinit) = match &theirs {
            Ok(t) => (format!("{:.3}", t.median_ms), format!("{:.3}", t.min_ms), format!("{:.1}", t.init_ms)),
            Err(e) => (e.clone(), String::new(), String::new()),
        };
        let ratio = match (&ours, &theirs) {
            (Ok(o), Ok(t)) if t.median_ms > 0.0 => format!("{:.2}", o.time.median_ms / t.median_ms),
            _ => String::new(),
        };
        println!(
            "| {name} | {om} | {omin} | {tm} | {tmin} | {ratio} | {oinit} | {tinit} | {packed} | {arena} | {lite} |"
        );
    }
}

/// The GPU delegate the flags ask for.
fn gpu_delegate(g: &GpuArgs) -> Result<Box<GpuDelegate>, String> {
    let mut o = TfLiteGpuDelegateOptionsV2 { inference_preference: g.preference, ..Default::default() };
    let dir = g.serialize_dir.as_deref().map(CString::new).transpose().map_err(|e| e.to_string())?;
    let token = g.token.as_deref().map(CString::new).transpose().map_err(|e| e.to_string())?;
    if let (Some(d), Some(t)) = (&dir, &token) {
        o.experimental_flags |= TfLiteGpuExperimentalFlags::TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_SERIALIZATION as i64;
        o.serialization_dir = d.as_ptr();
        o.model_token = t.as_ptr();
    }
    // The strings are copied by `create`.
    tensorflowlite_c::gpu::delegate::create(&o).map_err(|e| e.message)
}

/// An interpreter ready to run, with what [`init`] measured. The fields drop in order:
/// the interpreter before the delegate it uses.
struct Ready {
    interp: Interpreter,
    delegate: Option<Box<GpuDelegate>>,
    init: Duration,
    /// [`live_packed_bytes`] before the interpreter was created.
    packed_before: usize,
}

/// Builds the interpreter (with the GPU delegate when asked) and allocates its tensors.
fn init(a: &Args) -> Result<Ready, String> {
    let packed_before = live_packed_bytes();
    let t0 = Instant::now();
    let model = Model::from_file(std::path::Path::new(&a.model)).map_err(|e| e.message)?;
    let resolver = builtin_op_resolver();
    let config = InterpreterConfig { num_threads: a.threads, ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &resolver, config).map_err(|e| e.message)?;
    let mut delegate = match &a.gpu {
        Some(g) => Some(gpu_delegate(g).map_err(|e| format!("GPU delegate: {e}"))?),
        None => None,
    };
    if let Some(d) = delegate.as_mut() {
        // SAFETY: the delegate is returned with the interpreter and dropped after it.
        unsafe { interp.modify_graph_with_delegate(&mut d.base) }.map_err(|e| e.message)?;
    }
    interp.allocate_tensors().map_err(|e| e.message)?;
    Ok(Ready { interp, delegate, init: t0.elapsed(), packed_before })
}

fn print_gpu(d: &GpuDelegate, init: Duration) {
    let r = d.report();
    let t = r.tune;
    println!("gpu_device: {}", r.device);
    println!("gpu_nodes_delegated: {} of {} ({} partition(s))", r.nodes_delegated, r.nodes_total, r.partitions);
    println!("gpu_launches: {} ({} before fusion)", r.launches, r.launches_unfused);
    println!("gpu_buffer_bytes: {} (unshared: {})", r.arena_bytes, r.unshared_bytes);
    println!("gpu_program_build_ms: {:.1}", r.program_build_ns as f64 / 1e6);
    println!(
        "gpu_tuning: {} kernels: {} tuned, {} from cache, {} untuned (budget), {} not measured; {} timed launches; tuning_ms {:.1}",
        t.kernels,
        t.tuned,
        t.from_cache,
        t.untuned,
        t.unmeasured,
        t.launches,
        t.tuning_ns as f64 / 1e6
    );
    println!("gpu_tuning_cache: {}", r.cache);
    println!("gpu_init_ms: {:.1} (interpreter init incl. delegate: {:.1})", r.init_ns as f64 / 1e6, ms(init));
}

fn run(a: &Args) -> Result<(), String> {
    let first = init(a)?;
    if let Some(d) = &first.delegate {
        print_gpu(d, first.init);
    }
    if a.reinit {
        let init1 = first.init;
        drop(first);
        let second = init(a)?;
        println!("-- second initialisation");
        if let Some(d) = &second.delegate {
            print_gpu(d, second.init);
        }
        println!("init_ms first/second: {:.1} / {:.1}", ms(init1), ms(second.init));
        return finish_run(a, second);
    }
    finish_run(a, first)
}

fn finish_run(a: &Args, ready: Ready) -> Result<(), String> {
    let Ready { mut interp, delegate, init, packed_before } = ready;
    fill_inputs(&mut interp);
    for _ in 0..a.warmup {
        interp.invoke().map_err(|e| e.message)?;
    }
    interp.primary_mut().enable_profiling(a.profile);
    let mut times = Vec::with_capacity(a.runs);
    let nodes = interp.primary().execution_plan().len();
    let mut per_node = vec![Duration::ZERO; nodes];
    for _ in 0..a.runs {
        let s = Instant::now();
        interp.invoke().map_err(|e| e.message)?;
        times.push(s.elapsed());
        if let Some(p) = interp.primary().profile() {
            for (acc, d) in per_node.iter_mut().zip(p) {
                *acc += *d;
            }
        }
    }
    times.sort();
    let stats = interp.primary().memory_stats();
    println!("model: {}", a.model);
    println!("threads: {}  runs: {}  warmup: {}", a.threads, a.runs, a.warmup);
    println!("init_ms: {:.3}", ms(init));
    println!("latency_median_ms: {:.3}", ms(times[times.len() / 2]));
    println!("latency_min_ms: {:.3}", ms(times[0]));
    println!("arena_bytes: {}", stats.arena_bytes);
    let stem = std::path::Path::new(&a.model).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    println!("litert_arena_bytes: {}", litert_arena_cell(&stem));
    println!("persistent_bytes: {}", stats.persistent_bytes);
    println!("arena_lower_bound_bytes: {}", stats.lower_bound_bytes);
    println!("fused_activations: {}", interp.primary().fused_activations());
    if a.threads > 1 {
        println!("single_threaded_now: {}", interp.primary().runs_single_threaded());
    }
    // After the runs: some kernels pack their weights at the first Invoke.
    println!("packed_bytes: {}", live_packed_bytes().saturating_sub(packed_before));
    if a.profile {
        println!("per-op profile (average over {} runs):", a.runs);
        let sg = interp.primary();
        for (step, &ni) in sg.execution_plan().iter().enumerate() {
            let name = sg.node_entry(ni as usize).map_or("?", |n| n.op_name.as_str());
            println!("  node {ni:4} {name:24} {:10.4} ms", ms(per_node[step]) / a.runs as f64);
        }
    }
    drop(interp);
    drop(delegate);
    Ok(())
}

fn main() -> ExitCode {
    match parse_args() {
        Err(e) => {
            if !e.is_empty() {
                eprintln!("tflite-bench: {e}");
            }
            eprintln!("usage: tflite-bench MODEL.tflite [--runs N] [--warmup N] [--threads N] [--profile]");
            eprintln!("         [--use_gpu [--gpu_inference_for_sustained_speed | --gpu_inference_balanced]");
            eprintln!("          [--delegate_serialize_dir DIR --delegate_serialize_token TOKEN] [--reinit]]");
            eprintln!(
                "       tflite-bench --compare [--runs N] [--threads N] [--kernels builtin|xnnpack|ref] MODEL..."
            );
            ExitCode::from(2)
        }
        Ok(a) if !a.compare.is_empty() => {
            compare(&a);
            ExitCode::SUCCESS
        }
        Ok(a) => match run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tflite-bench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
