// DEPTHWISE_CONV_2D: output channel c reads input channel c / multiplier.
// Weights: [kh][kw][out_c4] (TFLite's [1, kh, kw, out_c], out_c padded with zeros to a
// multiple of 4). A work item computes 4 output channels; lanes past the last channel
// read a valid (clamped) input channel and are not stored.

__kernel void depthwise_conv2d(OUT_ARGS, __global const float* restrict w,
                               __global const float* restrict bias, int src_off, int in_h,
                               int in_w, int in_c, int kh, int kw, int sh, int sw, int dh,
                               int dw, int pad_t, int pad_l, int multiplier) {
  OUT_COORDS4
  const int last = reg_c - 1;
  const int i0 = c / multiplier;
  const int i1 = min(c + 1, last) / multiplier;
  const int i2 = min(c + 2, last) / multiplier;
  const int i3 = min(c + 3, last) / multiplier;
  float4 acc = vload4(0, bias + c);
  for (int ky = 0; ky < kh; ++ky) {
    const int iy = y * sh - pad_t + ky * dh;
    if (iy < 0 || iy >= in_h) continue;
    for (int kx = 0; kx < kw; ++kx) {
      const int ix = x * sw - pad_l + kx * dw;
      if (ix < 0 || ix >= in_w) continue;
      __global const float* ip = mem + src_off + ((b * in_h + iy) * in_w + ix) * in_c;
      const float4 iv = (float4)(ip[i0], ip[i1], ip[i2], ip[i3]);
      acc += iv * vload4(0, w + (ky * kw + kx) * wst + c);
    }
  }
  STORE4(acc);
}
