// PAD / PADV2 (constant padding): out-of-range taps read `value`.

__kernel void pad(OUT_ARGS, int src_off, int in_b, int in_h, int in_w, int in_c, int pb,
                  int py, int px, int pc, float value) {
  OUT_COORDS
  const int ib = b - pb, iy = y - py, ix = x - px, ic = c - pc;
  float v = value;
  if (ib >= 0 && ib < in_b && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w && ic >= 0 &&
      ic < in_c) {
    v = mem[src_off + ((ib * in_h + iy) * in_w + ix) * in_c + ic];
  }
  STORE(v);
}
