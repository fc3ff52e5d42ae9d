// DEPTHWISE_CONV_2D: output channel c reads input channel c / multiplier.
// Weights: [kh][kw][out_c] (TFLite's [1, kh, kw, out_c] as is).

__kernel void depthwise_conv2d(OUT_ARGS, __global const float* w, __global const float* bias,
                               int src_off, int in_h, int in_w, int in_c, int kh, int kw,
                               int sh, int sw, int dh, int dw, int pad_t, int pad_l,
                               int multiplier) {
  OUT_COORDS
  const int ic = c / multiplier;
  float acc = bias[c];
  for (int ky = 0; ky < kh; ++ky) {
    const int iy = y * sh - pad_t + ky * dh;
    if (iy < 0 || iy >= in_h) continue;
    for (int kx = 0; kx < kw; ++kx) {
      const int ix = x * sw - pad_l + kx * dw;
      if (ix < 0 || ix >= in_w) continue;
      acc += mem[src_off + ((b * in_h + iy) * in_w + ix) * in_c + ic] *
             w[(ky * kw + kx) * reg_c + c];
    }
  }
  STORE(acc);
}
