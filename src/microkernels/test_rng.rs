//! A deterministic pseudo-random sequence for the microkernel tests.

/// A 64-bit linear congruential generator (Knuth's MMIX constants).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    /// A value in [-1, 1] on a grid of 1/1000.
    pub fn f32(&mut self) -> f32 {
        (self.next() % 2001) as f32 / 1000.0 - 1.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }
}
