// Shared by every kernel of the OpenCL delegate (prepended to the program).
//
// Tensors are float32, NHWC, dense, and live at float offsets inside one device
// buffer `mem` (the partition's arena, planned like the CPU arena). Every kernel writes
// one output region through `out_store`, which first runs the op's *epilogue*: the
// elementwise ops fused into it (activations, residual ADDs, PReLU, ...), described by a
// small int program `ep` = { n, step0[8], step1[8], ... } with
// step = { opcode, operand offset, stride b, stride y, stride x, stride c, p0, p1 }.
// Binary steps read their second operand from `mem` with broadcast strides (0 on
// broadcast dimensions), so one compiled program serves every fusion pattern.

#define EP_STEP 8

#define EP_RELU 1
#define EP_RELU6 2
#define EP_RELU_N1_TO_1 3
#define EP_TANH 4
#define EP_LOGISTIC 5
#define EP_HARD_SWISH 6
#define EP_FIRST_BINARY 16
#define EP_ADD 16
#define EP_SUB 17
#define EP_RSUB 18
#define EP_MUL 19
#define EP_PRELU 20
#define EP_MAX 21
#define EP_MIN 22
#define EP_DIV 23
#define EP_RDIV 24
#define EP_SQUARED_DIFF 25

inline float ep_apply(float v, __global const float* mem, __global const int* ep,
                      int b, int y, int x, int c) {
  const int n = ep[0];
  for (int i = 0; i < n; ++i) {
    __global const int* s = ep + 1 + i * EP_STEP;
    const int op = s[0];
    float o = 0.0f;
    if (op >= EP_FIRST_BINARY) {
      o = mem[s[1] + b * s[2] + y * s[3] + x * s[4] + c * s[5]];
    }
    switch (op) {
      case EP_RELU: v = fmax(v, 0.0f); break;
      case EP_RELU6: v = clamp(v, 0.0f, 6.0f); break;
      case EP_RELU_N1_TO_1: v = clamp(v, -1.0f, 1.0f); break;
      case EP_TANH: v = tanh(v); break;
      case EP_LOGISTIC: v = 1.0f / (1.0f + exp(-v)); break;
      case EP_HARD_SWISH: v = v * clamp(v + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f); break;
      case EP_ADD: v = v + o; break;
      case EP_SUB: v = v - o; break;
      case EP_RSUB: v = o - v; break;
      case EP_MUL: v = v * o; break;
      case EP_PRELU: v = v >= 0.0f ? v : v * o; break;
      case EP_MAX: v = fmax(v, o); break;
      case EP_MIN: v = fmin(v, o); break;
      case EP_DIV: v = v / o; break;
      case EP_RDIV: v = o / v; break;
      case EP_SQUARED_DIFF: v = (v - o) * (v - o); break;
      default: break;
    }
  }
  return v;
}

inline void out_store(__global float* mem, __global const int* ep, int out_off, int out_h,
                      int out_w, int out_c, int b, int y, int x, int c, float v) {
  mem[out_off + ((b * out_h + y) * out_w + x) * out_c + c] = ep_apply(v, mem, ep, b, y, x, c);
}

// The first 14 arguments of every kernel: the arena, the epilogue, the output tensor
// (offset and H, W, C for addressing), the region this launch computes (its size is the
// launch grid) and the region's origin inside the output tensor (concatenation writes
// each input into a slice).
#define OUT_ARGS                                                                        \
  __global float* mem, __global const int* ep, int out_off, int out_h, int out_w,       \
      int out_c, int reg_b, int reg_h, int reg_w, int reg_c, int org_b, int org_y,      \
      int org_x, int org_c

// Work item -> region coordinates: x of the grid = channel, y = width, z = batch*height.
// The launch grid is rounded up to a multiple of the work group, hence the bounds check.
#define OUT_COORDS                                                                      \
  const int c = get_global_id(0);                                                       \
  const int x = get_global_id(1);                                                       \
  const int z = get_global_id(2);                                                       \
  if (c >= reg_c || x >= reg_w || z >= reg_b * reg_h) return;                           \
  const int y = z % reg_h;                                                              \
  const int b = z / reg_h;

#define STORE(v)                                                                        \
  out_store(mem, ep, out_off, out_h, out_w, out_c, b + org_b, y + org_y, x + org_x,     \
            c + org_c, (v))

// Blocked variant for the heavy kernels: each work item computes CBLOCK (4) neighbouring
// output channels, c .. c + nc - 1 (nc < 4 only on the last block of a channel count not
// divisible by 4). Their weights and biases are uploaded with the output-channel
// dimension padded with zeros to a multiple of 4 (`wst` floats), so a block always loads
// a whole float4; only the stores are guarded.
#define CBLOCK 4
#define OUT_COORDS4                                                                     \
  const int c = get_global_id(0) * CBLOCK;                                              \
  const int x = get_global_id(1);                                                       \
  const int z = get_global_id(2);                                                       \
  if (c >= reg_c || x >= reg_w || z >= reg_b * reg_h) return;                           \
  const int y = z % reg_h;                                                              \
  const int b = z / reg_h;                                                              \
  const int wst = (reg_c + CBLOCK - 1) / CBLOCK * CBLOCK;

// Runs the epilogue and stores each in-range channel of the block.
inline void out_store4(__global float* mem, __global const int* ep, int out_off, int out_h,
                       int out_w, int out_c, int b, int y, int x, int c, int nc, float4 v) {
  out_store(mem, ep, out_off, out_h, out_w, out_c, b, y, x, c, v.s0);
  if (nc > 1) out_store(mem, ep, out_off, out_h, out_w, out_c, b, y, x, c + 1, v.s1);
  if (nc > 2) out_store(mem, ep, out_off, out_h, out_w, out_c, b, y, x, c + 2, v.s2);
  if (nc > 3) out_store(mem, ep, out_off, out_h, out_w, out_c, b, y, x, c + 3, v.s3);
}

#define STORE4(v)                                                                       \
  out_store4(mem, ep, out_off, out_h, out_w, out_c, b + org_b, y + org_y, x + org_x,    \
             c + org_c, reg_c - c, (v))
