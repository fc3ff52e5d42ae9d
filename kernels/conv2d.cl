// CONV_2D. Weights are re-laid out on upload as [kh][kw][in_c][out_c4] (out_c padded
// with zeros to a multiple of 4), so a work item's 4 output channels read one float4.

__kernel void conv2d(OUT_ARGS, __global const float* restrict w,
                     __global const float* restrict bias, int src_off, int in_h, int in_w,
                     int in_c, int kh, int kw, int sh, int sw, int dh, int dw, int pad_t,
                     int pad_l) {
  OUT_COORDS4
  float4 acc = vload4(0, bias + c);
  for (int ky = 0; ky < kh; ++ky) {
    const int iy = y * sh - pad_t + ky * dh;
    if (iy < 0 || iy >= in_h) continue;
    for (int kx = 0; kx < kw; ++kx) {
      const int ix = x * sw - pad_l + kx * dw;
      if (ix < 0 || ix >= in_w) continue;
      __global const float* ip = mem + src_off + ((b * in_h + iy) * in_w + ix) * in_c;
      __global const float* wp = w + (ky * kw + kx) * in_c * wst + c;
      for (int ci = 0; ci < in_c; ++ci) acc += ip[ci] * vload4(0, wp + ci * wst);
    }
  }
  STORE4(acc);
}

// 1x1, stride 1, no padding: a matrix product per pixel.
__kernel void conv2d_1x1(OUT_ARGS, __global const float* restrict w,
                         __global const float* restrict bias, int src_off, int in_c) {
  OUT_COORDS4
  float4 acc = vload4(0, bias + c);
  __global const float* ip = mem + src_off + ((b * reg_h + y) * reg_w + x) * in_c;
  __global const float* wp = w + c;
  for (int ci = 0; ci < in_c; ++ci) acc += ip[ci] * vload4(0, wp + ci * wst);
  STORE4(acc);
}
