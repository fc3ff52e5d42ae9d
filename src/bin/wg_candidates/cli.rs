//! `wg-candidates`: prints work-group candidates for a grid and limits, one `x,y,z` per
//! line in generation order. The binary's `main` only forwards its arguments to [`run`],
//! so the tests here are tests of the command.
//!
//! ```text
//! wg-candidates --grid X,Y,Z --device-max X,Y,Z --kernel-max N
//!               --mode fast|fast-conv|exhaustive [--max-z N] [--dedup]
//!               [--baseline fast|fast-conv] [--max-candidates N]
//! ```
//! - `fast`: TFLite's `GetWorkGroup(grid, kernel_max)`.
//! - `fast-conv`: TFLite's `GetWorkGroupConv(grid, kernel_max, min(max_z, device z))`;
//!   `--max-z` replaces the vendor z cap (16 by default, Adreno 4xx+ 64).
//! - `exhaustive`: TFLite's `GenerateWorkGroupSizesAlignedToGrid` list exactly as TFLite
//!   makes it, duplicates included. With `--dedup`: our list instead — the baseline
//!   first (`--baseline`, default `fast`), TFLite's list deduplicated and validated,
//!   near-divisor sizes for short lists, at most `--max-candidates` entries if given.
//!   `--dedup` leaves the single-candidate modes unchanged.
//!
//! Numbers are decimal integers in `1..=2147483647` (TFLite computes with `int`). Bad
//! arguments: a message and the usage on stderr, exit status 2.

use tensorflowlite_c::gpu::tuner::candidates::{
    CandidateOptions, DeviceInfo, KernelInfo, WorkGroup, conv_max_z_size_with,
    generate_work_group_sizes_aligned_to_grid, get_work_group, get_work_group_conv, our_candidates,
};

pub const USAGE: &str = "usage: wg-candidates --grid X,Y,Z --device-max X,Y,Z --kernel-max N \
--mode fast|fast-conv|exhaustive [--max-z N] [--dedup] [--baseline fast|fast-conv] [--max-candidates N]

Prints TFLite's work-group candidates (one x,y,z per line, generation order):
  fast        GetWorkGroup (generic ops)
  fast-conv   GetWorkGroupConv (conv ops); --max-z N sets the z cap (default 16) before
              the device's z limit
  exhaustive  GenerateWorkGroupSizesAlignedToGrid, duplicates included; with --dedup our
              deduplicated list, baseline first (--baseline, default fast), optionally
              capped with --max-candidates N
Numbers are integers in 1..=2147483647.";

/// What the command does for a set of arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CliOutcome {
    /// Print to stdout, exit 0.
    Output(String),
    /// `--help`: print the usage to stdout, exit 0.
    Help,
    /// Bad arguments: print the message and the usage to stderr, exit 2.
    Usage(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Fast,
    FastConv,
    Exhaustive,
}

/// The parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub grid: WorkGroup,
    pub device_max: WorkGroup,
    pub kernel_max: usize,
    mode: Mode,
    pub max_z: Option<usize>,
    pub dedup: bool,
    conv_baseline: bool,
    pub max_candidates: Option<usize>,
}

const MAX_INT: usize = i32::MAX as usize;

fn parse_num(flag: &str, s: &str) -> Result<usize, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{flag}: {s:?} is not a positive integer"));
    }
    match s.parse::<usize>() {
        Ok(v) if (1..=MAX_INT).contains(&v) => Ok(v),
        _ => Err(format!("{flag}: {s:?} is out of range 1..={MAX_INT}")),
    }
}

fn parse_triple(flag: &str, s: &str) -> Result<WorkGroup, String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        return Err(format!("{flag}: expected X,Y,Z, got {s:?}"));
    }
    Ok([parse_num(flag, parts[0])?, parse_num(flag, parts[1])?, parse_num(flag, parts[2])?])
}

/// Parses the arguments (without the program name). `Ok(None)` means `--help`.
pub fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let (mut grid, mut device_max, mut kernel_max, mut mode) = (None, None, None, None);
    let (mut max_z, mut max_candidates, mut baseline) = (None, None, None);
    let mut dedup = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let flag = flag.as_str();
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        if flag == "--dedup" {
            if dedup {
                return Err("--dedup given twice".into());
            }
            dedup = true;
            continue;
        }
        let known = ["--grid", "--device-max", "--kernel-max", "--mode", "--max-z", "--baseline", "--max-candidates"];
        if !known.contains(&flag) {
            return Err(format!("unknown argument {flag:?}"));
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?.as_str();
        let twice = || format!("{flag} given twice");
        match flag {
            "--grid" => {
                if grid.replace(parse_triple(flag, value)?).is_some() {
                    return Err(twice());
                }
            }
            "--device-max" => {
                if device_max.replace(parse_triple(flag, value)?).is_some() {
                    return Err(twice());
                }
            }
            "--kernel-max" => {
                if kernel_max.replace(parse_num(flag, value)?).is_some() {
                    return Err(twice());
                }
            }
            "--max-z" => {
                if max_z.replace(parse_num(flag, value)?).is_some() {
                    return Err(twice());
                }
            }
            "--max-candidates" => {
                if max_candidates.replace(parse_num(flag, value)?).is_some() {
                    return Err(twice());
                }
            }
            "--mode" => {
                let m = match value {
                    "fast" => Mode::Fast,
                    "fast-conv" => Mode::FastConv,
                    "exhaustive" => Mode::Exhaustive,
                    other => {
                        return Err(format!("--mode: {other:?} is not fast, fast-conv or exhaustive"));
                    }
                };
                if mode.replace(m).is_some() {
                    return Err(twice());
                }
            }
            _ => {
                let b = match value {
                    "fast" => false,
                    "fast-conv" => true,
                    other => return Err(format!("--baseline: {other:?} is not fast or fast-conv")),
                };
                if baseline.replace(b).is_some() {
                    return Err(twice());
                }
            }
        }
    }
    let grid = grid.ok_or("--grid is required")?;
    let device_max = device_max.ok_or("--device-max is required")?;
    let kernel_max = kernel_max.ok_or("--kernel-max is required")?;
    let mode = mode.ok_or("--mode is required")?;
    let conv_baseline = baseline.unwrap_or(false);
    if baseline.is_some() && !(mode == Mode::Exhaustive && dedup) {
        return Err("--baseline only applies to --mode exhaustive --dedup".into());
    }
    if max_candidates.is_some() && !(mode == Mode::Exhaustive && dedup) {
        return Err("--max-candidates only applies to --mode exhaustive --dedup".into());
    }
    if max_z.is_some() && !(mode == Mode::FastConv || (mode == Mode::Exhaustive && dedup && conv_baseline)) {
        return Err("--max-z only applies to fast-conv (or a fast-conv baseline)".into());
    }
    Ok(Some(Args { grid, device_max, kernel_max, mode, max_z, dedup, conv_baseline, max_candidates }))
}

/// The candidates for parsed arguments, in output order.
pub fn candidates_for(a: &Args) -> Vec<WorkGroup> {
    let device = DeviceInfo::new(a.device_max);
    let kernel = KernelInfo::new(a.kernel_max);
    let conv = |a: &Args| get_work_group_conv(a.grid, a.kernel_max, conv_max_z_size_with(a.max_z, &device));
    match a.mode {
        Mode::Fast => vec![get_work_group(a.grid, a.kernel_max)],
        Mode::FastConv => vec![conv(a)],
        Mode::Exhaustive if !a.dedup => generate_work_group_sizes_aligned_to_grid(a.grid, a.device_max, a.kernel_max),
        Mode::Exhaustive => {
            let baseline = if a.conv_baseline { conv(a) } else { get_work_group(a.grid, a.kernel_max) };
            let opts = CandidateOptions { max_candidates: a.max_candidates, ..CandidateOptions::default() };
            our_candidates(a.grid, &device, &kernel, &[baseline], &opts)
        }
    }
}

/// Formats candidates one `x,y,z` per line.
pub fn format_candidates(list: &[WorkGroup]) -> String {
    let mut s = String::with_capacity(list.len() * 8);
    for wg in list {
        s.push_str(&format!("{},{},{}\n", wg[0], wg[1], wg[2]));
    }
    s
}

/// The whole command.
pub fn run(args: &[String]) -> CliOutcome {
    match parse_args(args) {
        Ok(None) => CliOutcome::Help,
        Ok(Some(a)) => CliOutcome::Output(format_candidates(&candidates_for(&a))),
        Err(m) => CliOutcome::Usage(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_str(cmd: &str) -> CliOutcome {
        let args: Vec<String> = cmd.split_whitespace().map(String::from).collect();
        run(&args)
    }

    fn out(cmd: &str) -> Vec<String> {
        match run_str(cmd) {
            CliOutcome::Output(s) => s.lines().map(String::from).collect(),
            other => panic!("{cmd}: {other:?}"),
        }
    }

    fn usage(cmd: &str) {
        assert!(matches!(run_str(cmd), CliOutcome::Usage(_)), "{cmd} accepted");
    }

    /// Every case of GPU.md part 4 §9, through the binary's code path.
    #[test]
    fn gpu_md_cases() {
        let l = out("--grid 64,64,16 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive");
        assert_eq!(l.len(), 190);
        assert_eq!(&l[..6], &["1,64,1", "1,64,16", "1,64,2", "1,64,8", "1,64,4", "1,2,16"]);
        assert_eq!(out("--grid 64,64,16 --device-max 4096,4096,4096 --kernel-max 4096 --mode fast"), ["32,16,8"]);
        assert_eq!(out("--grid 64,64,16 --device-max 4096,4096,4096 --kernel-max 4096 --mode fast-conv"), ["16,1,16"]);

        assert_eq!(out("--grid 64,64,32 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive").len(), 224);
        assert_eq!(out("--grid 64,64,32 --device-max 4096,4096,4096 --kernel-max 4096 --mode fast"), ["32,16,8"]);
        assert_eq!(out("--grid 256,256,1 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive").len(), 56);
        assert_eq!(out("--grid 256,256,1 --device-max 4096,4096,4096 --kernel-max 4096 --mode fast-conv"), ["256,1,1"]);
        assert_eq!(out("--grid 128,128,1 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive").len(), 46);
        assert_eq!(out("--grid 128,128,1 --device-max 4096,4096,4096 --kernel-max 4096 --mode fast-conv"), ["128,2,1"]);

        let l = out("--grid 1,1,1 --device-max 1024,1024,64 --kernel-max 1024 --mode exhaustive");
        assert_eq!(l, vec!["1,1,1"; 65]);
        assert_eq!(out("--grid 1,1,1 --device-max 1024,1024,64 --kernel-max 1024 --mode fast"), ["1,1,1"]);
        assert_eq!(
            out("--grid 1,1,1 --device-max 1024,1024,64 --kernel-max 1024 --mode exhaustive --dedup"),
            ["1,1,1"]
        );

        assert_eq!(
            out("--grid 3,5,7 --device-max 1024,1024,64 --kernel-max 1024 --mode exhaustive"),
            ["1,5,7", "3,5,7"]
        );
        assert_eq!(out("--grid 3,5,7 --device-max 1024,1024,64 --kernel-max 1024 --mode fast"), ["2,5,7"]);
    }

    #[test]
    fn max_z_and_dedup() {
        // Default z cap 16; --max-z 64 (Adreno 4xx+); the device z limit still applies.
        assert_eq!(out("--grid 32,32,64 --device-max 1024,1024,1024 --kernel-max 1024 --mode fast-conv"), ["16,1,16"]);
        assert_eq!(
            out("--grid 32,32,64 --device-max 1024,1024,1024 --kernel-max 1024 --mode fast-conv --max-z 64"),
            ["4,1,64"]
        );
        assert_eq!(
            out("--grid 32,32,64 --device-max 1024,1024,32 --kernel-max 1024 --mode fast-conv --max-z 64"),
            ["8,1,32"]
        );
        // --dedup: FAST first, no duplicates, every TFLite entry present.
        let t = out("--grid 64,64,16 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive");
        let d = out("--grid 64,64,16 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive --dedup");
        assert_eq!(d[0], "32,16,8");
        assert_eq!(d.len(), 190);
        let set: std::collections::HashSet<_> = d.iter().collect();
        assert_eq!(set.len(), d.len());
        assert!(t.iter().all(|x| set.contains(x)));
        let d = out(
            "--grid 64,64,16 --device-max 4096,4096,4096 --kernel-max 4096 --mode exhaustive --dedup --baseline fast-conv --max-candidates 10",
        );
        assert_eq!(d.len(), 10);
        assert_eq!(d[0], "16,1,16");
        let d = out("--grid 3,5,7 --device-max 1024,1024,64 --kernel-max 1024 --mode exhaustive --dedup");
        assert_eq!(&d[..3], &["2,5,7", "1,5,7", "3,5,7"]);
        // --dedup leaves single-candidate modes unchanged.
        assert_eq!(out("--grid 3,5,7 --device-max 1024,1024,64 --kernel-max 1024 --mode fast --dedup"), ["2,5,7"]);
    }

    #[test]
    fn bad_arguments() {
        let ok = "--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast";
        assert!(matches!(run_str(ok), CliOutcome::Output(_)));
        usage("");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64");
        usage("--grid 4,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        usage("--grid 4,4,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        usage("--grid 4,0,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        usage("--grid 4,-1,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        usage("--grid 4,x,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        usage("--grid 4,,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 0 --mode fast");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 2147483648 --mode fast");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 99999999999999999999999 --mode fast");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode slow");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast --max-z 8");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast-conv --max-z 0");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast --mode fast");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast --bogus");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode exhaustive --baseline fast-conv");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode exhaustive --max-candidates 3");
        usage("--grid 4,4,4 --device-max 64,64,64 --kernel-max 64 --mode exhaustive --dedup --dedup");
        usage("--grid ４,4,4 --device-max 64,64,64 --kernel-max 64 --mode fast");
        assert_eq!(run_str("--help"), CliOutcome::Help);
        assert_eq!(run_str("--mode fast -h"), CliOutcome::Help);
    }

    #[test]
    fn extreme_values_do_not_panic() {
        let big = "2147483647";
        for mode in ["fast", "fast-conv", "exhaustive", "exhaustive --dedup"] {
            let cmd =
                format!("--grid {big},{big},{big} --device-max {big},{big},{big} --kernel-max {big} --mode {mode}");
            assert!(matches!(run_str(&cmd), CliOutcome::Output(_)), "{cmd}");
            let cmd = format!("--grid {big},1,1 --device-max 1,1,1 --kernel-max 1 --mode {mode}");
            assert!(matches!(run_str(&cmd), CliOutcome::Output(_)), "{cmd}");
        }
    }
}
