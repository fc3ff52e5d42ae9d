// FULLY_CONNECTED: every output row (all dims but the last) is a dot product of one
// input row with each unit's weights. Weights are re-laid out as [in_features][units].

__kernel void fully_connected(OUT_ARGS, __global const float* w, __global const float* bias,
                              int src_off, int in_features) {
  OUT_COORDS
  const int row = (b * reg_h + y) * reg_w + x;
  __global const float* ip = mem + src_off + row * in_features;
  float acc = bias[c];
  for (int i = 0; i < in_features; ++i) acc += ip[i] * w[i * reg_c + c];
  STORE(acc);
}
