//! Portable int8 depthwise kernel: the oracle of the SIMD ones (the same blocks, integer
//! sums that wrap, [`ChannelRequant::scalar`](crate::microkernels::qs8_requant::ChannelRequant::scalar)
//! per channel).

use super::{DwKernels, DwRequant, Layout};
use crate::microkernels::Isa;
use crate::microkernels::qs8_requant::LANES;

pub const KERNELS: DwKernels =
    DwKernels { isa: Isa::Scalar, layout: Layout::Wide16, fixed: [(9, rows), (25, rows)], any: rows, slide3x3: None };

/// # Safety
/// See [`super::DwKernel`] ([`Layout::Wide16`]).
unsafe fn rows(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    let rq = &rq.exact;
    let pixels = out.len() / channels;
    let block_len = slots.len() * LANES;
    for (blk, c0) in (0..channels).step_by(LANES).enumerate() {
        let n = (channels - c0).min(LANES);
        let w = &weights[blk * block_len..(blk + 1) * block_len];
        for p in 0..pixels {
            let mut acc = [0i32; LANES];
            for (&slot, wt) in slots.iter().zip(w.chunks_exact(LANES)) {
                // SAFETY: the caller guarantees `channels` readable values at
                // `slot + p * step`, which nothing writes during the call, and
                // `c0 + n <= channels`.
                let x = unsafe { core::slice::from_raw_parts(slot.add(p * step + c0), n) };
                for ((a, &xv), &wv) in acc.iter_mut().zip(x).zip(wt) {
                    *a = a.wrapping_add((xv as i32).wrapping_mul(wv));
                }
            }
            let o = &mut out[p * channels + c0..p * channels + c0 + n];
            for (j, (ov, &a)) in o.iter_mut().zip(&acc).enumerate() {
                *ov = rq.scalar(c0 + j, a) as i8;
            }
        }
    }
}
