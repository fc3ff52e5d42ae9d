// Copies: the standalone form of elementwise ops (the first operand read with broadcast
// strides, the op itself in the epilogue), concatenation slices, and RESHAPE.

__kernel void copy_broadcast(OUT_ARGS, int src_off, int sb, int sy, int sx, int sc) {
  OUT_COORDS
  STORE(mem[src_off + b * sb + y * sy + x * sx + c * sc]);
}

// Same linear index in and out (RESHAPE): the region is the whole output tensor.
__kernel void copy_linear(OUT_ARGS, int src_off) {
  OUT_COORDS
  STORE(mem[src_off + ((b * reg_h + y) * reg_w + x) * reg_c + c]);
}
