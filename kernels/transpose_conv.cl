// TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias, as a gather: output pixel
// (y, x) sums the input pixels whose stride grid lands on it. Weights:
// [kh][kw][in_c][out_c4] (out_c padded with zeros to a multiple of 4); a work item
// computes 4 output channels.

__kernel void transpose_conv(OUT_ARGS, __global const float* restrict w,
                             __global const float* restrict bias, int src_off, int in_h,
                             int in_w, int in_c, int kh, int kw, int sh, int sw, int pad_t,
                             int pad_l) {
  OUT_COORDS4
  float4 acc = vload4(0, bias + c);
  for (int ky = 0; ky < kh; ++ky) {
    const int ty = y + pad_t - ky;
    if (ty < 0 || ty % sh != 0) continue;
    const int iy = ty / sh;
    if (iy >= in_h) continue;
    for (int kx = 0; kx < kw; ++kx) {
      const int tx = x + pad_l - kx;
      if (tx < 0 || tx % sw != 0) continue;
      const int ix = tx / sw;
      if (ix >= in_w) continue;
      __global const float* ip = mem + src_off + ((b * in_h + iy) * in_w + ix) * in_c;
      __global const float* wp = w + (ky * kw + kx) * in_c * wst + c;
      for (int ci = 0; ci < in_c; ++ci) acc += ip[ci] * vload4(0, wp + ci * wst);
    }
  }
  STORE4(acc);
}
