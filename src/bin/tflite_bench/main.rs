//! tflite-bench: load a model, run it N times, print init time, latency (median, min),
//! arena / persistent bytes beside the planner's lower bound, the packed-weight bytes
//! kept beside the arena, and (with --profile) a per-op profile. In the spirit of
//! TFLite's benchmark_model.
//!
//! Flags: see `args.rs` (`tflite-bench --help`). TFLite benchmark_model's flags work with
//! their meaning (`--graph`, `--num_threads`, `--num_runs`, `--warmup_runs`, `--min_secs`,
//! `--use_gpu`, `--use_xnnpack`, `--enable_op_profiling`, `--input_layer`,
//! `--input_layer_shape`, `--gpu_precision_loss_allowed`), and the summary lines its users
//! grep for are printed (`Inference timings in us: Init: ..., First inference: ...,
//! Warmup (avg): ..., Inference (avg): ...`, the memory footprint) beside ours.
//! `--profile_trace FILE` writes the timed Invokes as a Chrome trace (`trace.rs`);
//! `--memory_plan_svg FILE` draws the arena plan (`memory::plan_svg`).
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
//! TFLite: ref.py's `load_alloc_ms`, the same steps), the median of three fresh processes
//! per side (the model file is read once before either side runs, so both load it from
//! the page cache); our packed-weight bytes (weights
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

mod args;
mod list_ops;
#[allow(dead_code, reason = "the table's model list is for tests/arena_vs_litert.rs, which includes this file too")]
mod litert_reference;
mod trace;

use args::{Args, GpuArgs, USAGE, parse_args};
use litert_reference::{Source, litert_arena};
use std::ffi::{CStr, CString};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tensorflowlite_c::gpu::delegate::options::TfLiteGpuExperimentalFlags;
use tensorflowlite_c::gpu::delegate::{GpuDelegate, TfLiteGpuDelegateOptionsV2};
use tensorflowlite_c::gpu::tuner::{TuneProgress, set_progress_sink};
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::memory::plan_svg::{drawn_tensors, plan_svg};
use tensorflowlite_c::microkernels::packed::live_packed_bytes;
use tensorflowlite_c::model::Model;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

/// Fills every input as the LiteRT reference script does, so that both sides of a
/// comparison run on the same kind of data: floats uniform in `[-1, 1)`, 8- and 16-bit
/// integers over their whole range, wider integers in `0..10`, anything else zeros.
/// (Byte patterns would make float inputs tiny or subnormal, which no real input is and
/// which some CPUs compute with slow microcode.)
fn fill_inputs(interp: &mut Interpreter) {
    use tensorflowlite_c::abi::types::TfLiteType as T;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // xorshift64*: a fixed sequence, good enough for benchmark inputs.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let inputs = interp.primary().inputs().to_vec();
    for idx in inputs {
        let Some(t) = interp.primary_mut().tensor_ptr(idx) else { continue };
        // SAFETY: `t` points into the primary subgraph's tensor table; after
        // AllocateTensors its data holds `bytes` writable bytes (or is NULL), aligned for
        // its element type.
        unsafe {
            let (p, bytes, dtype) = ((*t).data_ptr() as *mut u8, (*t).bytes, (*t).data_type());
            if p.is_null() {
                continue;
            }
            let data = core::slice::from_raw_parts_mut(p, bytes);
            match dtype {
                Some(T::kTfLiteFloat32) => {
                    for v in data.chunks_exact_mut(4) {
                        let x = (next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                        v.copy_from_slice(&x.to_ne_bytes());
                    }
                }
                Some(T::kTfLiteInt8 | T::kTfLiteUInt8 | T::kTfLiteInt16 | T::kTfLiteUInt16) => {
                    data.iter_mut().for_each(|b| *b = next() as u8);
                }
                Some(T::kTfLiteInt32) => {
                    for v in data.chunks_exact_mut(4) {
                        v.copy_from_slice(&((next() % 10) as i32).to_ne_bytes());
                    }
                }
                Some(T::kTfLiteInt64) => {
                    for v in data.chunks_exact_mut(8) {
                        v.copy_from_slice(&((next() % 10) as i64).to_ne_bytes());
                    }
                }
                _ => data.fill(0),
            }
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One side's Invoke latency for one model.
struct Figures {
    median_ms: f64,
    min_ms: f64,
}

/// Our figures for one model, with our arena and packed-weight bytes.
struct Ours {
    time: Figures,
    arena_bytes: usize,
    packed_bytes: usize,
}

/// How long `--compare` invokes each side before timing it.
const WARM_UP: Duration = Duration::from_millis(300);

/// Our latency and memory for one model, on `threads` threads.
fn measure(path: &str, threads: i32, runs: usize) -> Result<Ours, String> {
    let packed_before = live_packed_bytes();
    let model = Model::from_file(std::path::Path::new(path)).map_err(|e| e.message)?;
    let resolver = builtin_op_resolver();
    let config =
        InterpreterConfig { num_threads: threads, reporter: Arc::new(|_: &str| {}), ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &resolver, config).map_err(|e| e.message)?;
    interp.allocate_tensors().map_err(|e| e.message)?;
    fill_inputs(&mut interp);
    // Some kernels pack their weights at the first Invoke.
    interp.invoke().map_err(|e| e.message)?;
    let packed_bytes = live_packed_bytes().saturating_sub(packed_before);
    // The same warm-up as the LiteRT side's (`ref.py bench` invokes for 0.3 s first): the
    // first few hundred milliseconds of a fresh interpreter run slower on both sides
    // (memory first touched, an idle vCPU brought back by the host).
    let warm_until = Instant::now() + WARM_UP;
    while Instant::now() < warm_until {
        interp.invoke().map_err(|e| e.message)?;
    }
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
        time: Figures { median_ms: ms(times[times.len() / 2]), min_ms: ms(times[0]) },
        arena_bytes: interp.primary().memory_stats().arena_bytes,
        packed_bytes,
    })
}

/// Init time measurements per side in `--compare`, each in a fresh process; the table
/// shows their median.
const INIT_RUNS: usize = 3;

/// Our init time (ms) in a fresh process: this program run on the model once.
fn our_init_ms(path: &str, threads: i32) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let out = std::process::Command::new(&exe)
        .args([path, "--threads", &threads.to_string(), "--runs", "1", "--warmup", "1"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("init_ms: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("no init_ms from {}: {}", exe.display(), String::from_utf8_lossy(&out.stderr).trim()))
}

/// The median of `values` (not empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Real TFLite's latency and init time (ms), from ref.py's JSON line (`seconds` of timed
/// runs).
fn measure_tflite(path: &str, threads: i32, kernels: &str, seconds: &str) -> Result<(Figures, f64), String> {
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let python = std::env::var("TFLITE_REF_PYTHON")
        .unwrap_or_else(|_| shared.join(".litert/bin/python").to_string_lossy().into_owned());
    let out = std::process::Command::new(&python)
        .arg(shared.join("tools/litert/ref.py"))
        .args(["bench", path, "--threads", &threads.to_string(), "--kernels", kernels, "--seconds", seconds])
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
    Ok((Figures { median_ms: field("median_ms")?, min_ms: field("min_ms")? }, field("load_alloc_ms")?))
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
        "TFLite: {} kernels (ref.py --kernels {}), {threads} thread(s), runs for 1 s; ours: builtin kernels, {threads} thread(s), {} runs; each side warms up for 0.3 s first; each model file read once first, so both sides load it from the page cache; init: median of {INIT_RUNS} fresh processes per side",
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
        // Read the file once so that both sides load it from the page cache: whichever side went first
        // would otherwise pay for the disk (25-35 ms for mobilenet_v2_f32's 14 MB) in its init time.
        let _ = std::fs::read(path);
        let (ours, theirs) = if i % 2 == 0 {
            let o = measure(path, threads, a.runs);
            (o, measure_tflite(path, threads, &a.kernels, "1"))
        } else {
            let t = measure_tflite(path, threads, &a.kernels, "1");
            (measure(path, threads, a.runs), t)
        };
        // Init in fresh processes on both sides, alternating: how long a program starting
        // up waits, measured alike (a load inside a process that has just freed the same
        // amount of memory gets it back cheaper than one that has not).
        let (ours_init, theirs_init) = match (&ours, &theirs) {
            (Ok(_), Ok(t)) => {
                let mut o = Vec::with_capacity(INIT_RUNS);
                let mut t = vec![Ok(t.1)];
                for _ in 0..INIT_RUNS {
                    o.push(our_init_ms(path, threads));
                    if t.len() < INIT_RUNS {
                        t.push(measure_tflite(path, threads, &a.kernels, "0.05").map(|(_, init)| init));
                    }
                }
                let cell = |runs: Vec<Result<f64, String>>| match runs.into_iter().collect::<Result<Vec<f64>, String>>()
                {
                    Ok(v) => format!("{:.1}", median(v)),
                    Err(e) => e,
                };
                (cell(o), cell(t))
            }
            _ => (String::new(), String::new()),
        };
        let (om, omin, packed, arena) = match &ours {
            Ok(o) => (
                format!("{:.3}", o.time.median_ms),
                format!("{:.3}", o.time.min_ms),
                o.packed_bytes.to_string(),
                o.arena_bytes.to_string(),
            ),
            Err(e) => (format!("unsupported: {}", e.trim()), String::new(), String::new(), String::new()),
        };
        let (tm, tmin) = match &theirs {
            Ok((t, _)) => (format!("{:.3}", t.median_ms), format!("{:.3}", t.min_ms)),
            Err(e) => (e.clone(), String::new()),
        };
        let ratio = match (&ours, &theirs) {
            (Ok(o), Ok((t, _))) if t.median_ms > 0.0 => format!("{:.2}", o.time.median_ms / t.median_ms),
            _ => String::new(),
        };
        println!(
            "| {name} | {om} | {omin} | {tm} | {tmin} | {ratio} | {ours_init} | {theirs_init} | {packed} | {arena} | {lite} |"
        );
    }
}

/// The GPU delegate the flags ask for.
fn gpu_delegate(g: &GpuArgs) -> Result<Box<GpuDelegate>, String> {
    let mut o = TfLiteGpuDelegateOptionsV2 {
        inference_preference: g.preference,
        is_precision_loss_allowed: i32::from(g.precision_loss_allowed),
        ..Default::default()
    };
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
    for (name, shape) in &a.input_shapes {
        let inputs = interp.primary().inputs().to_vec();
        let index = inputs
            .into_iter()
            .find(|&i| tensor_name(&mut interp, i) == *name)
            .ok_or_else(|| format!("--input_layer: the model has no input named {name:?}"))?;
        interp
            .resize_input_tensor(index, shape)
            .map_err(|e| format!("--input_layer_shape for {name}: {}", e.message))?;
    }
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

/// The GPU tuner's progress on one terminal line (stderr).
fn show_tuning_progress(p: &TuneProgress) {
    let left = p.budget_left_ns.map_or(String::new(), |ns| format!(", budget left {:.1} s", ns as f64 / 1e9));
    eprint!("\rtuning work groups: kernel {}/{}, {:.1} s{left}   ", p.done, p.total, p.elapsed_ns as f64 / 1e9);
    if p.done == p.total {
        eprintln!();
    }
}

fn run(a: &Args) -> Result<(), String> {
    if a.gpu.is_some() && std::io::stderr().is_terminal() {
        set_progress_sink(Some(show_tuning_progress));
    }
    let rss_start = resident_mb();
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
        return finish_run(a, second, rss_start);
    }
    finish_run(a, first, rss_start)
}

/// Tensor `index`'s name in the primary subgraph ("" without one).
fn tensor_name(interp: &mut Interpreter, index: i32) -> String {
    let Some(t) = interp.primary_mut().tensor_ptr(index) else { return String::new() };
    // SAFETY: `t` points into the primary subgraph's tensor table; a tensor's name is NULL
    // or a NUL-terminated string owned by the subgraph or the model.
    unsafe {
        let name = (*t).name;
        if name.is_null() { String::new() } else { CStr::from_ptr(name).to_string_lossy().into_owned() }
    }
}

/// The process's resident memory now, in MB (Linux; 0 elsewhere).
fn resident_mb() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()))
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

/// The process's peak resident memory, in MB.
fn peak_resident_mb() -> f64 {
    // SAFETY: getrusage fills the zeroed struct.
    let kib = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_maxrss as f64
    };
    kib / 1024.0
}

/// benchmark_model's statistics line for `times` (microseconds).
fn stats_line(times: &[Duration]) -> String {
    let us: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    let n = us.len().max(1) as f64;
    let avg = us.iter().sum::<f64>() / n;
    let std = (us.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n).sqrt();
    let (min, max) = us.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    format!(
        "count={} first={:.0} curr={:.0} min={:.0} max={:.0} avg={:.0} std={:.0}",
        us.len(),
        us.first().copied().unwrap_or(0.0),
        us.last().copied().unwrap_or(0.0),
        if us.is_empty() { 0.0 } else { min },
        max,
        avg,
        std
    )
}

fn finish_run(a: &Args, ready: Ready, rss_start: f64) -> Result<(), String> {
    let Ready { mut interp, delegate, init, packed_before } = ready;
    let rss_init = resident_mb();
    fill_inputs(&mut interp);
    let mut warmups = Vec::with_capacity(a.warmup.max(1));
    // benchmark_model's "first inference" is the first warm-up run; there is always one.
    for _ in 0..a.warmup.max(1) {
        let s = Instant::now();
        interp.invoke().map_err(|e| e.message)?;
        warmups.push(s.elapsed());
    }
    let tracing = a.profile_trace.is_some();
    interp.primary_mut().enable_profiling(a.profile || tracing);
    let mut times = Vec::with_capacity(a.runs);
    let plan_order: Vec<i32> = interp.primary().execution_plan().to_vec();
    let names: Vec<String> = plan_order
        .iter()
        .map(|&ni| interp.primary().node_entry(ni as usize).map_or("?".to_string(), |n| n.op_name.clone()))
        .collect();
    let mut per_node = vec![Duration::ZERO; plan_order.len()];
    let mut trace = trace::Trace::new();
    let started = Instant::now();
    while times.len() < a.runs || started.elapsed().as_secs_f64() < a.min_secs {
        let s = Instant::now();
        interp.invoke().map_err(|e| e.message)?;
        let took = s.elapsed();
        times.push(took);
        if let Some(p) = interp.primary().profile() {
            for (acc, d) in per_node.iter_mut().zip(p) {
                *acc += *d;
            }
        }
        if tracing && let Some(spans) = interp.primary().profile_spans() {
            let nodes: Vec<(usize, &str, Instant, Duration)> = spans
                .iter()
                .zip(plan_order.iter().zip(&names))
                .map(|(&(at, d), (&ni, name))| (ni as usize, name.as_str(), at, d))
                .collect();
            trace.add_invoke(times.len() - 1, s, took, &nodes);
        }
    }
    let runs = times.len();
    let mut sorted = times.clone();
    sorted.sort();
    let stats = interp.primary().memory_stats();
    println!("model: {}", a.model);
    println!("threads: {}  runs: {runs}  warmup: {}", a.threads, warmups.len());
    if let Some(x) = a.use_xnnpack {
        println!("use_xnnpack: {x} (no XNNPACK here: our CPU kernels, with their own SIMD tables, run either way)");
    }
    println!("init_ms: {:.3}", ms(init));
    println!("latency_median_ms: {:.3}", ms(sorted[runs / 2]));
    println!("latency_min_ms: {:.3}", ms(sorted[0]));
    println!("arena_bytes: {}", stats.arena_bytes);
    let stem = std::path::Path::new(&a.model).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    println!("litert_arena_bytes: {}", litert_arena_cell(&stem));
    println!("persistent_bytes: {}", stats.persistent_bytes);
    println!("arena_lower_bound_bytes: {}", stats.lower_bound_bytes);
    println!("fused_activations: {}", interp.primary().fused_activations());
    println!("fused_conv_depthwise: {}", interp.primary().fused_conv_depthwise());
    println!("fused_conv_add: {}", interp.primary().fused_conv_add());
    if a.threads > 1 {
        println!("single_threaded_now: {}", interp.primary().runs_single_threaded());
    }
    // After the runs: some kernels pack their weights at the first Invoke.
    println!("packed_bytes: {}", live_packed_bytes().saturating_sub(packed_before));
    if a.profile {
        println!("per-op profile (average over {runs} runs):");
        for (step, (&ni, name)) in plan_order.iter().zip(&names).enumerate() {
            println!("  node {ni:4} {name:24} {:10.4} ms", ms(per_node[step]) / runs as f64);
        }
    }
    // benchmark_model's summary, for scripts that read it.
    println!("{} (warm-up)", stats_line(&warmups));
    println!("{}", stats_line(&times));
    let avg_us = |v: &[Duration]| v.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / v.len().max(1) as f64;
    println!(
        "Inference timings in us: Init: {:.0}, First inference: {:.0}, Warmup (avg): {:.0}, Inference (avg): {:.0}",
        init.as_secs_f64() * 1e6,
        warmups[0].as_secs_f64() * 1e6,
        avg_us(&warmups),
        avg_us(&times)
    );
    println!(
        "Memory footprint delta from the start of the tool (MB): init={:.3} overall={:.3}",
        rss_init - rss_start,
        resident_mb() - rss_start
    );
    println!("Overall peak memory footprint (MB) (peak resident set): {:.3}", peak_resident_mb());
    if let Some(path) = &a.profile_trace {
        std::fs::write(path, trace.to_json(&a.model, a.threads)).map_err(|e| format!("--profile_trace {path}: {e}"))?;
        println!("profile_trace: {path} ({runs} invokes, {} nodes each)", plan_order.len());
    }
    if let Some(path) = &a.memory_plan_svg {
        let plan = interp.primary().memory_plan().ok_or("--memory_plan_svg: no memory plan")?;
        let tensor_names: Vec<String> =
            (0..plan.tensor_kind.len()).map(|t| tensor_name(&mut interp, t as i32)).collect();
        let plan = interp.primary().memory_plan().ok_or("--memory_plan_svg: no memory plan")?;
        let svg = plan_svg(plan, &|t| tensor_names.get(t).cloned().unwrap_or_default());
        std::fs::write(path, svg).map_err(|e| format!("--memory_plan_svg {path}: {e}"))?;
        println!("memory_plan_svg: {path} ({} arena tensors)", drawn_tensors(plan));
    }
    drop(interp);
    drop(delegate);
    Ok(())
}

fn main() -> ExitCode {
    match parse_args(std::env::args().skip(1)) {
        Err(e) => {
            if !e.is_empty() {
                eprintln!("tflite-bench: {e}");
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
        Ok(a) if a.list_ops => {
            if a.compare.is_empty() {
                print!("{}", list_ops::list_registered());
                return ExitCode::SUCCESS;
            }
            let mut all_ok = true;
            for m in &a.compare {
                match list_ops::check_model(m) {
                    Ok((text, ok)) => {
                        print!("{text}");
                        all_ok &= ok;
                    }
                    Err(e) => {
                        eprintln!("tflite-bench: {e}");
                        all_ok = false;
                    }
                }
            }
            if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
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
