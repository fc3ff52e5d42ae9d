//! Command-line flags: ours, and TFLite `benchmark_model`'s with their meaning, in either
//! `--flag=value` or `--flag value` form (booleans: `--flag`, `--flag=true|false`).

/// TFLite's kernel families as ref.py names them.
pub const KERNEL_FAMILIES: [&str; 3] = ["builtin", "xnnpack", "ref"];

pub const USAGE: &str = "\
usage: tflite-bench MODEL.tflite [--runs N] [--warmup N] [--threads N] [--min_secs S] [--profile]
         [--input_layer a,b --input_layer_shape 1,224,224,3:1,10]
         [--profile_trace FILE.json] [--memory_plan_svg FILE.svg]
         [--use_gpu [--gpu_inference_for_sustained_speed | --gpu_inference_balanced]
          [--gpu_precision_loss_allowed] [--delegate_serialize_dir DIR --delegate_serialize_token TOKEN]
          [--reinit]]
       tflite-bench --compare [--runs N] [--threads N] [--kernels builtin|xnnpack|ref] MODEL...
       tflite-bench --list-ops [MODEL...]   (every op and version we run, or a model's ops checked)
benchmark_model's names work too: --graph=M --num_threads=N --num_runs=N --warmup_runs=N
  --min_secs=S --use_gpu=true --use_xnnpack=true|false --enable_op_profiling=true
  --input_layer=.. --input_layer_shape=.. --gpu_precision_loss_allowed=true";

pub struct Args {
    pub model: String,
    pub compare: Vec<String>,
    pub kernels: String,
    pub runs: usize,
    pub warmup: usize,
    /// Run at least this long (besides at least `runs` times), as benchmark_model.
    pub min_secs: f64,
    pub threads: i32,
    pub profile: bool,
    pub gpu: Option<GpuArgs>,
    pub reinit: bool,
    /// `--use_xnnpack`'s value, when given (our CPU kernels play XNNPACK's part).
    pub use_xnnpack: Option<bool>,
    /// Inputs to resize before allocation: (name, shape).
    pub input_shapes: Vec<(String, Vec<i32>)>,
    pub profile_trace: Option<String>,
    pub memory_plan_svg: Option<String>,
    /// `--list-ops`: print the op table (models, if any, are in `compare`).
    pub list_ops: bool,
}

#[derive(Clone, Default)]
pub struct GpuArgs {
    pub preference: i32,
    pub precision_loss_allowed: bool,
    pub serialize_dir: Option<String>,
    pub token: Option<String>,
}

/// A boolean flag's value: absent (`--flag`) is true.
fn boolean(name: &str, value: Option<String>) -> Result<bool, String> {
    match value.as_deref() {
        None | Some("true") | Some("1") => Ok(true),
        Some("false") | Some("0") => Ok(false),
        Some(v) => Err(format!("{name} takes true or false, not {v:?}")),
    }
}

fn number<T: std::str::FromStr>(name: &str, value: Option<String>) -> Result<T, String> {
    value.as_deref().and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a number"))
}

/// `1,224,224,3:1,10` as shapes.
fn shapes(value: &str) -> Result<Vec<Vec<i32>>, String> {
    value
        .split(':')
        .map(|s| {
            s.split(',')
                .map(|d| d.trim().parse::<i32>().ok().filter(|&d| d >= 0))
                .collect::<Option<Vec<i32>>>()
                .ok_or_else(|| format!("bad input shape {s:?} (want e.g. 1,224,224,3)"))
        })
        .collect()
}

fn gpu(a: &mut Args) -> &mut GpuArgs {
    a.gpu.get_or_insert_with(GpuArgs::default)
}

pub fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut it = argv.into_iter().peekable();
    let mut a = Args {
        model: String::new(),
        compare: Vec::new(),
        kernels: "builtin".into(),
        runs: 50,
        warmup: 3,
        min_secs: 0.0,
        threads: 1,
        profile: false,
        gpu: None,
        reinit: false,
        use_xnnpack: None,
        input_shapes: Vec::new(),
        profile_trace: None,
        memory_plan_svg: None,
        list_ops: false,
    };
    let mut compare = false;
    let (mut layers, mut layer_shapes) = (None::<String>, None::<String>);
    while let Some(arg) = it.next() {
        if !arg.starts_with('-') {
            if compare {
                a.compare.push(arg);
            } else {
                a.model = arg;
            }
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        // A flag that takes a value: `--flag=v` or `--flag v`.
        let mut value = |inline: Option<String>| inline.or_else(|| it.next());
        match name.as_str() {
            "--graph" => a.model = value(inline).ok_or("--graph needs a file")?,
            "--runs" | "--num_runs" => a.runs = number::<usize>(&name, value(inline))?.max(1),
            "--warmup" | "--warmup_runs" => a.warmup = number(&name, value(inline))?,
            "--threads" | "--num_threads" => a.threads = number::<i32>(&name, value(inline))?.max(1),
            "--min_secs" => a.min_secs = number::<f64>(&name, value(inline))?.max(0.0),
            "--profile" | "--enable_op_profiling" => a.profile = boolean(&name, inline)?,
            "--use_gpu" => {
                if boolean(&name, inline)? {
                    gpu(&mut a);
                } else {
                    a.gpu = None;
                }
            }
            "--use_xnnpack" => a.use_xnnpack = Some(boolean(&name, inline)?),
            "--gpu_inference_for_sustained_speed" => gpu(&mut a).preference = 1,
            "--gpu_inference_balanced" => gpu(&mut a).preference = 2,
            "--gpu_precision_loss_allowed" => {
                let on = boolean(&name, inline)?;
                if a.gpu.is_some() || on {
                    gpu(&mut a).precision_loss_allowed = on;
                }
            }
            "--delegate_serialize_dir" => {
                gpu(&mut a).serialize_dir = Some(value(inline).ok_or("--delegate_serialize_dir needs a value")?)
            }
            "--delegate_serialize_token" => {
                gpu(&mut a).token = Some(value(inline).ok_or("--delegate_serialize_token needs a value")?)
            }
            "--input_layer" => layers = Some(value(inline).ok_or("--input_layer needs names")?),
            "--input_layer_shape" => layer_shapes = Some(value(inline).ok_or("--input_layer_shape needs shapes")?),
            "--profile_trace" => a.profile_trace = Some(value(inline).ok_or("--profile_trace needs a file")?),
            "--memory_plan_svg" => a.memory_plan_svg = Some(value(inline).ok_or("--memory_plan_svg needs a file")?),
            "--reinit" => a.reinit = boolean(&name, inline)?,
            "--compare" => compare = true,
            "--list-ops" | "--list_ops" => {
                a.list_ops = true;
                compare = true;
            }
            "--kernels" => {
                a.kernels = value(inline).ok_or("--kernels needs a value")?;
                if !KERNEL_FAMILIES.contains(&a.kernels.as_str()) {
                    return Err(format!("--kernels must be one of {}", KERNEL_FAMILIES.join(", ")));
                }
            }
            "-h" | "--help" => return Err(String::new()),
            s => return Err(format!("unknown flag {s}")),
        }
    }
    match (layers, layer_shapes) {
        (Some(l), Some(s)) => {
            let names: Vec<String> = l.split(',').map(|n| n.trim().to_string()).collect();
            let shapes = shapes(&s)?;
            if names.len() != shapes.len() {
                return Err(format!(
                    "--input_layer names {} inputs, --input_layer_shape {}",
                    names.len(),
                    shapes.len()
                ));
            }
            a.input_shapes = names.into_iter().zip(shapes).collect();
        }
        (None, None) => {}
        _ => return Err("--input_layer and --input_layer_shape go together".into()),
    }
    if a.list_ops {
        return Ok(a);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Args, String> {
        parse_args(s.split_whitespace().map(String::from))
    }

    #[test]
    fn benchmark_model_flags_mean_what_they_mean_there() {
        let a = parse(
            "--graph=m.tflite --num_threads=2 --num_runs=7 --warmup_runs=2 --min_secs=0.5 \
             --enable_op_profiling=true --use_xnnpack=false --input_layer=a,b --input_layer_shape=1,4:2,3,3",
        )
        .unwrap();
        assert_eq!((a.model.as_str(), a.threads, a.runs, a.warmup), ("m.tflite", 2, 7, 2));
        assert_eq!((a.min_secs, a.profile, a.use_xnnpack), (0.5, true, Some(false)));
        assert_eq!(a.input_shapes, vec![("a".to_string(), vec![1, 4]), ("b".to_string(), vec![2, 3, 3])]);
        assert!(a.gpu.is_none());
        let g = parse("m.tflite --use_gpu=true --gpu_precision_loss_allowed=true").unwrap().gpu.unwrap();
        assert!(g.precision_loss_allowed);
        assert!(parse("m.tflite --use_gpu=false").unwrap().gpu.is_none());
    }

    #[test]
    fn our_flags_still_work() {
        let a =
            parse("m.tflite --runs 9 --threads 2 --profile --profile_trace t.json --memory_plan_svg p.svg").unwrap();
        assert_eq!((a.runs, a.threads, a.profile), (9, 2, true));
        assert_eq!((a.profile_trace.as_deref(), a.memory_plan_svg.as_deref()), (Some("t.json"), Some("p.svg")));
    }

    #[test]
    fn bad_flags_are_errors() {
        assert!(parse("m.tflite --num_runs=x").is_err());
        assert!(parse("m.tflite --use_gpu=maybe").is_err());
        assert!(parse("m.tflite --input_layer=a").is_err());
        assert!(parse("m.tflite --input_layer=a --input_layer_shape=1,2:3").is_err());
        assert!(parse("m.tflite --bogus").is_err());
        assert!(parse("--num_threads=2").is_err());
    }
}
