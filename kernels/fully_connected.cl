// FULLY_CONNECTED: every output row (all dims but the last) is a dot product of one
// input row with each unit's weights. Weights are re-laid out as [in_features][units4]
// (units padded with zeros to a multiple of 4); a work item computes 4 units.

__kernel void fully_connected(OUT_ARGS, __global const float* restrict w,
                              __global const float* restrict bias, int src_off,
                              int in_features) {
  OUT_COORDS4
  const int row = (b * reg_h + y) * reg_w + x;
  __global const float* ip = mem + src_off + row * in_features;
  float4 acc = vload4(0, bias + c);
  for (int i = 0; i < in_features; ++i) acc += ip[i] * vload4(0, w + i * wst + c);
  STORE4(acc);
}
