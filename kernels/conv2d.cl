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

// 1x1, stride 1, no padding: a matrix product per pixel. A work item computes 4 output
// channels of XBLOCK_1X1 (4) neighbouring pixels along x, sharing each weight load; pixels
// past the row's end re-read the first pixel of the block and are not stored.
#define XBLOCK_1X1 4
__kernel void conv2d_1x1(OUT_ARGS, __global const float* restrict w,
                         __global const float* restrict bias, int src_off, int in_c) {
  const int c = get_global_id(0) * CBLOCK;
  const int x0 = get_global_id(1) * XBLOCK_1X1;
  const int z = get_global_id(2);
  if (c >= reg_c || x0 >= reg_w || z >= reg_b * reg_h) return;
  const int y = z % reg_h;
  const int b = z / reg_h;
  const int wst = (reg_c + CBLOCK - 1) / CBLOCK * CBLOCK;
  const int nx = min(XBLOCK_1X1, reg_w - x0);
  __global const float* ip0 = mem + src_off + ((b * reg_h + y) * reg_w + x0) * in_c;
  __global const float* ip1 = ip0 + (nx > 1 ? in_c : 0);
  __global const float* ip2 = ip0 + (nx > 2 ? 2 * in_c : 0);
  __global const float* ip3 = ip0 + (nx > 3 ? 3 * in_c : 0);
  const float4 b4 = vload4(0, bias + c);
  float4 a0 = b4, a1 = b4, a2 = b4, a3 = b4;
  __global const float* wp = w + c;
  for (int ci = 0; ci < in_c; ++ci) {
    const float4 wv = vload4(0, wp + ci * wst);
    a0 += ip0[ci] * wv;
    a1 += ip1[ci] * wv;
    a2 += ip2[ci] * wv;
    a3 += ip3[ci] * wv;
  }
  const int nc = reg_c - c;
  const int ob = b + org_b, oy = y + org_y, ox = x0 + org_x, oc = c + org_c;
  out_store4(mem, ep, out_off, out_h, out_w, out_c, ob, oy, ox, oc, nc, a0);
  if (nx > 1) out_store4(mem, ep, out_off, out_h, out_w, out_c, ob, oy, ox + 1, oc, nc, a1);
  if (nx > 2) out_store4(mem, ep, out_off, out_h, out_w, out_c, ob, oy, ox + 2, oc, nc, a2);
  if (nx > 3) out_store4(mem, ep, out_off, out_h, out_w, out_c, ob, oy, ox + 3, oc, nc, a3);
}
