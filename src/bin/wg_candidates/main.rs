//! `wg-candidates`: prints TFLite's work-group candidates for a grid and device/kernel
//! limits, one `x,y,z` per line in generation order (see `cli.rs`, which has the logic
//! and its tests; the library's `gpu::tuner::candidates` has the generators).
//!
//! ```text
//! wg-candidates --grid X,Y,Z --device-max X,Y,Z --kernel-max N
//!               --mode fast|fast-conv|exhaustive [--max-z N] [--dedup]
//!               [--baseline fast|fast-conv] [--max-candidates N]
//! ```
//! Bad arguments: the reason and the usage on stderr, exit status 2.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use cli::{CliOutcome, USAGE, run};

fn main() -> ExitCode {
    let args: Vec<String> = match std::env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(a) => a,
        Err(bad) => {
            eprintln!("wg-candidates: argument {bad:?} is not valid UTF-8\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        CliOutcome::Output(text) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth a panic.
            if out.write_all(text.as_bytes()).and_then(|()| out.flush()).is_err() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        CliOutcome::Help => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        CliOutcome::Usage(msg) => {
            eprintln!("wg-candidates: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
