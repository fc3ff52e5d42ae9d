//! Bad input: mutated and truncated versions of corpus models go through
//! create → allocate → invoke via the C API. Each must be rejected with a message or run;
//! a crash, panic across the ABI, hang or abort fails the test (the process dies).
//! Invoke is skipped only when the (validated) inputs exceed 64 MiB, to bound run time.

mod common;
use common::*;
use std::ffi::c_void;
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut m = base.to_vec();
    match rng.below(5) {
        0 => m.truncate(rng.below(base.len())),
        1 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(m.len());
                m[i] ^= 1 << rng.below(8);
            }
        }
        2 => {
            let i = rng.below(m.len().saturating_sub(4));
            let vals: [u32; 8] = [0, 1, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, 0x100, 0xFFFF, 3];
            m[i..i + 4].copy_from_slice(&vals[rng.below(8)].to_le_bytes());
        }
        3 => {
            let i = rng.below(m.len());
            m[i] = rng.next() as u8;
        }
        _ => {
            // A small, aligned-ish value written where int32 fields (indices, dims) live.
            let i = rng.below(m.len() / 4) * 4;
            if i + 4 <= m.len() {
                let v = (rng.below(64) as i32 - 8) as u32;
                m[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    m
}

/// Returns (rejected, ran).
fn exercise(bytes: &[u8]) -> (bool, bool) {
    let mut messages = 0usize;
    let user = &mut messages as *mut usize as *mut c_void;
    // SAFETY: C API calls with valid arguments; `bytes` outlives the model and interpreter.
    unsafe {
        let model = TfLiteModelCreateWithErrorReporter(bytes.as_ptr().cast(), bytes.len(), Some(counting_reporter), user);
        if model.is_null() {
            assert!(messages > 0, "model rejected without a message");
            return (true, false);
        }
        let opts = TfLiteInterpreterOptionsCreate();
        TfLiteInterpreterOptionsSetErrorReporter(opts, Some(counting_reporter), user);
        let interp = TfLiteInterpreterCreate(model, opts);
        TfLiteInterpreterOptionsDelete(opts);
        let mut outcome = (true, false);
        if !interp.is_null() {
            if TfLiteInterpreterAllocateTensors(interp) == OK {
                let n = TfLiteInterpreterGetInputTensorCount(interp);
                let total: usize = (0..n).map(|i| TfLiteTensorByteSize(TfLiteInterpreterGetInputTensor(interp, i))).sum();
                if total <= 64 << 20 {
                    outcome = (TfLiteInterpreterInvoke(interp) != OK, true);
                } else {
                    outcome = (false, false);
                }
            }
            TfLiteInterpreterDelete(interp);
        }
        if outcome.0 {
            assert!(messages > 0, "a failure was reported without a message");
        }
        TfLiteModelDelete(model);
        outcome
    }
}

#[test]
fn ten_thousand_mutated_models_never_crash() {
    let corpus = corpus();
    let mut bases = Vec::new();
    for dir in ["capi", "models"] {
        for e in std::fs::read_dir(corpus.join(dir)).expect("corpus dir").flatten() {
            let p = e.path();
            let len = p.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
            if len < 200_000 {
                bases.push(std::fs::read(&p).expect("read model"));
            }
        }
    }
    assert!(bases.len() >= 5, "expected several small corpus models");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut rejected, mut ran) = (0, 0);
    let cases = 10_000;
    for k in 0..cases {
        let base = &bases[k % bases.len()];
        let m = mutate(&mut rng, base);
        let start = Instant::now();
        let (rej, r) = exercise(&m);
        assert!(start.elapsed() < Duration::from_secs(20), "case {k} took {:?}", start.elapsed());
        rejected += rej as usize;
        ran += r as usize;
    }
    println!("{cases} mutated models: {rejected} rejected with a message, {ran} ran to completion");
    assert!(rejected > 0);
}

#[test]
fn every_truncation_of_a_model_is_rejected_or_runs() {
    let data = std::fs::read(corpus().join("capi/add.bin")).expect("add.bin");
    for len in 0..data.len() {
        exercise(&data[..len]);
    }
}
