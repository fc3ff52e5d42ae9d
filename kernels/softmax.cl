// SOFTMAX over the last axis: one work item per row (the region has one channel; the
// row length is `channels`).

__kernel void softmax(OUT_ARGS, int src_off, int channels, float beta) {
  OUT_COORDS
  __global const float* ip = mem + src_off + ((b * reg_h + y) * reg_w + x) * channels;
  float m = -FLT_MAX;
  for (int i = 0; i < channels; ++i) m = fmax(m, ip[i]);
  float sum = 0.0f;
  for (int i = 0; i < channels; ++i) sum += exp((ip[i] - m) * beta);
  // The source row may be the output row (in-place): read every value before writing.
  const float inv = 1.0f / sum;
  for (int i = channels - 1; i >= 0; --i) {
    const float e = exp((ip[i] - m) * beta) * inv;
    out_store(mem, ep, out_off, out_h, out_w, out_c, b + org_b, y + org_y, x + org_x, i, e);
  }
}
