//! `--profile_trace`: the timed Invokes as a Chrome trace-event JSON file (open it in
//! Perfetto, ui.perfetto.dev, or chrome://tracing): one slice per Invoke and, inside it,
//! one slice per node, on the thread that ran the Invoke (the thread pool's helpers work
//! inside their node's slice).

use std::fmt::Write;
use std::time::{Duration, Instant};

/// Slices collected so far, as JSON objects.
pub struct Trace {
    origin: Instant,
    events: Vec<String>,
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Trace {
    pub fn new() -> Trace {
        Trace { origin: Instant::now(), events: Vec::new() }
    }

    /// Records Invoke number `run` (started at `start`, lasting `total`) and its nodes:
    /// `(node index, op name, start, duration)`.
    pub fn add_invoke(
        &mut self,
        run: usize,
        start: Instant,
        total: Duration,
        nodes: &[(usize, &str, Instant, Duration)],
    ) {
        let ts = |t: Instant| micros(t.saturating_duration_since(self.origin));
        self.events.push(format!(
            "{{\"name\":\"Invoke\",\"cat\":\"invoke\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"run\":{run}}}}}",
            ts(start),
            micros(total)
        ));
        for &(node, name, at, dur) in nodes {
            self.events.push(format!(
                "{{\"name\":{},\"cat\":\"op\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"node\":{node},\"run\":{run}}}}}",
                json_string(name),
                ts(at),
                micros(dur)
            ));
        }
    }

    /// The whole file.
    pub fn to_json(&self, model: &str, threads: i32) -> String {
        let mut out = String::from("{\"traceEvents\":[\n");
        out.push_str(&format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{{\"name\":{}}}}},\n",
            json_string(&format!("tflite-bench {model} ({threads} thread(s))"))
        ));
        out.push_str("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"invoke\"}}");
        for e in &self.events {
            out.push_str(",\n");
            out.push_str(e);
        }
        out.push_str("\n],\"displayTimeUnit\":\"ms\"}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped() {
        assert_eq!(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
