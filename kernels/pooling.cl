// AVERAGE_POOL_2D (divides by the number of in-bounds taps, as TFLite) and MAX_POOL_2D.

__kernel void pool2d(OUT_ARGS, int src_off, int in_h, int in_w, int kh, int kw, int sh,
                     int sw, int pad_t, int pad_l, int is_max) {
  OUT_COORDS
  float acc = is_max ? -FLT_MAX : 0.0f;
  int count = 0;
  for (int ky = 0; ky < kh; ++ky) {
    const int iy = y * sh - pad_t + ky;
    if (iy < 0 || iy >= in_h) continue;
    for (int kx = 0; kx < kw; ++kx) {
      const int ix = x * sw - pad_l + kx;
      if (ix < 0 || ix >= in_w) continue;
      const float v = mem[src_off + ((b * in_h + iy) * in_w + ix) * reg_c + c];
      acc = is_max ? fmax(acc, v) : acc + v;
      ++count;
    }
  }
  if (!is_max) acc = count > 0 ? acc / (float)count : 0.0f;
  STORE(acc);
}
