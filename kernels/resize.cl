// RESIZE_BILINEAR with TFLite's align_corners / half_pixel_centers rules.

inline void interp(int v, float scale, int half_pixel, int in_size, float* t, int* lo,
                   int* hi) {
  const float s = half_pixel ? ((float)v + 0.5f) * scale - 0.5f : (float)v * scale;
  const float f = floor(s);
  *lo = max((int)f, 0);
  *hi = min((int)ceil(s), in_size - 1);
  *t = s - (float)(*lo);
}

__kernel void resize_bilinear(OUT_ARGS, int src_off, int in_h, int in_w, float scale_y,
                              float scale_x, int half_pixel) {
  OUT_COORDS
  float ty, tx;
  int y0, y1, x0, x1;
  interp(y, scale_y, half_pixel, in_h, &ty, &y0, &y1);
  interp(x, scale_x, half_pixel, in_w, &tx, &x0, &x1);
  __global const float* ip = mem + src_off + b * in_h * in_w * reg_c + c;
  const float v00 = ip[(y0 * in_w + x0) * reg_c], v01 = ip[(y0 * in_w + x1) * reg_c];
  const float v10 = ip[(y1 * in_w + x0) * reg_c], v11 = ip[(y1 * in_w + x1) * reg_c];
  STORE(v00 * (1.0f - ty) * (1.0f - tx) + v10 * ty * (1.0f - tx) + v01 * (1.0f - ty) * tx +
        v11 * ty * tx);
}
