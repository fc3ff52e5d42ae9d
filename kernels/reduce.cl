// MEAN over any subset of the four (canonical NHWC) axes. The region is the keep-dims
// output shape; `mask` has bit 0 = batch, 1 = height, 2 = width, 3 = channels.

__kernel void mean(OUT_ARGS, int src_off, int in_b, int in_h, int in_w, int in_c, int mask) {
  OUT_COORDS
  const int nb = (mask & 1) ? in_b : 1, nh = (mask & 2) ? in_h : 1;
  const int nw = (mask & 4) ? in_w : 1, nc = (mask & 8) ? in_c : 1;
  float acc = 0.0f;
  for (int i = 0; i < nb; ++i)
    for (int j = 0; j < nh; ++j)
      for (int k = 0; k < nw; ++k)
        for (int l = 0; l < nc; ++l) {
          const int bb = (mask & 1) ? i : b, yy = (mask & 2) ? j : y;
          const int xx = (mask & 4) ? k : x, cc = (mask & 8) ? l : c;
          acc += mem[src_off + ((bb * in_h + yy) * in_w + xx) * in_c + cc];
        }
  STORE(acc / (float)(nb * nh * nw * nc));
}
