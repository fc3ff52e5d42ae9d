//! tflite-bench: load a model, run it N times, print init time, latency (median, min),
//! arena / persistent bytes beside the planner's lower bound, and (with --profile) a
//! per-op profile. In the spirit of TFLite's benchmark_model.
//!
//! usage: tflite-bench MODEL.tflite [--runs N] [--warmup N] [--threads N] [--profile]
//!                     [--use_gpu [--gpu_inference_for_sustained_speed | --gpu_inference_balanced]
//!                      [--delegate_serialize_dir DIR --delegate_serialize_token TOKEN] [--reinit]]
//!        tflite-bench --compare [--threads N] [--kernels builtin|xnnpack|ref] MODEL...
//!
//! `--compare` runs each model with ours and with real TFLite (LiteRT, through
//! `../shared/tools/litert/ref.py bench`, run by `$TFLITE_REF_PYTHON`, default
//! `../shared/.litert/bin/python`) in the same run and prints one table row per model:
//! median and min latency of both, the ratio, our arena bytes and LiteRT's (from
//! `memory::litert_reference`, shared/design/MEMORY.md; "n/a" where there is none,
//! `(emulated)` where LiteRT cannot load the model and the figure is plan.py's).
//!
//! `--use_gpu` applies the OpenCL GPU delegate (TFLite benchmark_model's flag names):
//! FAST_SINGLE_ANSWER by default (nothing tuned), `--gpu_inference_for_sustained_speed`
//! tunes every kernel, `--gpu_inference_balanced` within a time budget; with
//! `--delegate_serialize_dir/--delegate_serialize_token` tunings persist in a cache file.
//! It prints how many nodes were delegated, launches after fusion, the device buffer,
//! and the tuning report (kernels tuned / from the cache, tuning and init time).
//! `--reinit` builds the interpreter a second time with a fresh delegate, to show what
//! the cache saves.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use std::ffi::CString;
use tensorflowlite_c::gpu::delegate::options::TfLiteGpuExperimentalFlags;
use tensorflowlite_c::gpu::delegate::{GpuDelegate, TfLiteGpuDelegateOptionsV2};
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::memory::litert_reference::{Source, litert_arena};
use tensorflowlite_c::model::Model;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

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
                a.gpu.get_or_insert_with(GpuArgs::default).serialize_dir = Some(it.next().ok_or("--delegate_serialize_dir needs a value")?)
            }
            "--delegate_serialize_token" => {
                a.gpu.get_or_insert_with(GpuArgs::default).token = Some(it.next().ok_or("--delegate_serialize_token needs a value")?)
            }
            "--reinit" => a.reinit = true,
            "--compare" => compare = true,
            "--kernels" => a.kernels = it.next().ok_or("--kernels needs a value")?,
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

/// Our median and min latency (ms) and arena bytes for one model.
fn measure(path: &str, threads: i32, runs: usize) -> Result<(f64, f64, usize), String> {
    let model = Model::from_file(std::path::Path::new(path)).map_err(|e| e.message)?;
    let resolver = builtin_op_resolver();
    let config = InterpreterConfig { num_threads: threads, reporter: Arc::new(|_: &str| {}), ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &resolver, config).map_err(|e| e.message)?;
    interp.allocate_tensors().map_err(|e| e.message)?;
    fill_inputs(&mut interp);
    interp.invoke().map_err(|e| e.message)?;
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
    Ok((ms(times[times.len() / 2]), ms(times[0]), interp.primary().memory_stats().arena_bytes))
}

/// Real TFLite's median and min latency (ms), from ref.py's JSON line.
fn measure_tflite(path: &str, threads: i32, kernels: &str) -> Result<(f64, f64), String> {
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
    let line = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Result<f64, String> {
        let key = format!("\"{name}\": ");
        let start = line.find(&key).ok_or(format!("no {name} in ref.py output"))? + key.len();
        line[start..].split([',', '}']).next().and_then(|v| v.trim().parse().ok()).ok_or(format!("bad {name}"))
    };
    Ok((field("median_ms")?, field("min_ms")?))
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
    println!(
        "| model | ours median ms | ours min ms | TFLite ({}) median ms | TFLite min ms | ours/TFLite | our arena bytes | LiteRT arena bytes |",
        a.kernels
    );
    println!("|---|---|---|---|---|---|---|---|");
    for path in &a.compare {
        let name = std::path::Path::new(path).file_stem().map_or(path.clone(), |s| s.to_string_lossy().into_owned());
        let lite = litert_arena_cell(&name);
        let ours = measure(path, a.threads, a.runs);
        let theirs = measure_tflite(path, a.threads, &a.kernels);
        match (ours, theirs) {
            (Ok((om, omin, arena)), Ok((tm, tmin))) => {
                println!("| {name} | {om:.3} | {omin:.3} | {tm:.3} | {tmin:.3} | {:.2} | {arena} | {lite} |", om / tm)
            }
            (Err(e), Ok((tm, tmin))) => {
                println!("| {name} | unsupported: {} | | {tm:.3} | {tmin:.3} | | | {lite} |", e.trim())
            }
            (Ok((om, omin, arena)), Err(e)) => println!("| {name} | {om:.3} | {omin:.3} | {e} | | | {arena} | {lite} |"),
            (Err(e), Err(t)) => println!("| {name} | unsupported: {} | | {t} | | | | {lite} |", e.trim()),
        }
    }
}

/// The GPU delegate the flags ask for.
fn gpu_delegate(g: &GpuArgs) -> Result<Box<GpuDelegate>, String> {
    let mut o = TfLiteGpuDelegateOptionsV2::default();
    o.inference_preference = g.preference;
    let dir = g.serialize_dir.as_deref().map(CString::new).transpose().map_err(|e| e.to_string())?;
    let token = g.token.as_deref().map(CString::new).transpose().map_err(|e| e.to_string())?;
    if let (Some(d), Some(t)) = (&dir, &token) {
        o.experimental_flags |= TfLiteGpuExperimentalFlags::TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_SERIALIZATION as i64;
        o.serialization_dir = d.as_ptr();
        o.model_token = t.as_ptr();
    }
    // The strings are copied by `create`.
    tensorflowlite_c::gpu::delegate::create(&o)
}

/// Builds the interpreter (with the GPU delegate when asked) and allocates its tensors.
fn init(a: &Args) -> Result<(Interpreter, Option<Box<GpuDelegate>>, Duration), String> {
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
    Ok((interp, delegate, t0.elapsed()))
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
        t.kernels, t.tuned, t.from_cache, t.untuned, t.unmeasured, t.launches, t.tuning_ns as f64 / 1e6
    );
    println!("gpu_tuning_cache: {}", r.cache);
    println!("gpu_init_ms: {:.1} (interpreter init incl. delegate: {:.1})", r.init_ns as f64 / 1e6, ms(init));
}

fn run(a: &Args) -> Result<(), String> {
    let (interp, delegate, init) = init(a)?;
    if let Some(d) = &delegate {
        print_gpu(d, init);
    }
    if a.reinit {
        drop(interp);
        drop(delegate);
        let (i2, d2, init2) = self::init(a)?;
        println!("-- second initialisation");
        if let Some(d) = &d2 {
            print_gpu(d, init2);
        }
        println!("init_ms first/second: {:.1} / {:.1}", ms(init), ms(init2));
        return finish_run(a, i2, d2, init2);
    }
    finish_run(a, interp, delegate, init)
}

fn finish_run(a: &Args, mut interp: Interpreter, delegate: Option<Box<GpuDelegate>>, init: Duration) -> Result<(), String> {
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
            eprintln!("       tflite-bench --compare [--threads N] [--kernels builtin|xnnpack|ref] MODEL...");
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
