"""MediaPipe's custom ops (mediapipe/util/tflite/operations/*.cc,
mediapipe/tasks/cc/vision/custom_ops/fused_batch_norm.cc). TFLite cannot run them, so each
case's golden comes from a numpy oracle below, written from MediaPipe's source.

The oracles are plain functions, importable on their own (graph.py / make_op_cases.py are
only needed by `cases()`):

    landmarks_to_transform_matrix(landmarks, options)            -> array [1, 4, 4]
    transform_tensor_bilinear(tensor, matrix, options, out_shape=None) -> array
    transform_landmarks(landmarks, matrix, options)               -> array (landmarks' shape)
    max_pooling_with_argmax_2d(x, options)                        -> [output, indices]
    max_unpooling_2d(x, indices, options)                         -> array
    resampler(source, warp, options)                              -> array
    fused_batch_norm_v3(x, scale, offset, mean, variance, options) -> [y, batch_mean,
                                  batch_var, saved_mean, saved_var, reserve_space]

Inputs are numpy arrays (float32), `options` a dict of the op's custom options (the
FlexBuffers map's keys for the first three; the TfLitePoolParams field names for the
pooling pair; ignored where the op has none). Single-output oracles return one array,
multi-output ones a list. Float arithmetic follows MediaPipe's: float32 where it computes
in float, float64 where a double literal promotes the expression.
"""
import numpy as np

F32 = np.float32


# ---------------------------------------------------------------------------------------
# Landmarks2TransformMatrix (version 2)
# ---------------------------------------------------------------------------------------

def _subset_pairs(flat):
    flat = [int(v) for v in flat]
    pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)]
    if len(flat) % 2:
        pairs.append((flat[-1], flat[-1]))
    return pairs


def _mat3_vec(m, v):
    out = []
    for r in range(3):
        s = F32(0)
        for k in range(3):
            s = F32(s + F32(m[r][k] * v[k]))
        out.append(s)
    return out


def _mat4_mul(a, b):
    out = [[F32(0)] * 4 for _ in range(4)]
    for r in range(4):
        for c in range(4):
            s = F32(0)
            for k in range(4):
                s = F32(s + F32(a[r][k] * b[k][c]))
            out[r][c] = s
    return out


def _eye4():
    return [[F32(1) if r == c else F32(0) for c in range(4)] for r in range(4)]


def landmarks_to_transform_matrix(landmarks, options):
    """landmarks: float32, read as flat (x, y, z) triples. options: subset_idxs (list),
    left_rotation_idx, right_rotation_idx, target_rotation_radians, output_height,
    output_width, scale_x, scale_y. Returns the [1, 4, 4] float32 matrix."""
    lm = np.asarray(landmarks, F32).reshape(-1)
    o = options

    def xyz(i):
        return [F32(lm[3 * i]), F32(lm[3 * i + 1]), F32(lm[3 * i + 2])]

    left, right = xyz(o["left_rotation_idx"]), xyz(o["right_rotation_idx"])
    rot = F32(F32(o.get("target_rotation_radians", 0.0)) -
              np.arctan2(F32(right[1] - left[1]), F32(right[0] - left[0]), dtype=F32))

    def rot3(r):
        c, s = np.cos(r, dtype=F32), np.sin(r, dtype=F32)
        return [[c, F32(-s), F32(0)], [s, c, F32(0)], [F32(0), F32(0), F32(1)]]

    t_rot, t_inv = rot3(rot), rot3(F32(-rot))
    pts = []
    for a, b in _subset_pairs(o["subset_idxs"]):
        for i in (a, b):
            p = xyz(i)
            pts.append(_mat3_vec(t_rot, [p[0], p[1], F32(1)]))
    mx, mn = list(pts[0]), list(pts[0])
    for p in pts[1:]:
        if mx[0] < p[0]:
            mx[0] = p[0]
        if mx[1] < p[1]:
            mx[1] = p[1]
        if mn[0] > p[0]:
            mn[0] = p[0]
        if mn[1] > p[1]:
            mn[1] = p[1]
    crop_w, crop_h = F32(mx[0] - mn[0]), F32(mx[1] - mn[1])
    c = list(mn)
    c[0] = F32(F32(c[0] + mx[0]) / F32(2))
    c[1] = F32(F32(c[1] + mx[1]) / F32(2))
    c = _mat3_vec(t_inv, c)

    t = _eye4()
    shift = _eye4()
    shift[0][3], shift[1][3] = c[0], c[1]
    t = _mat4_mul(t, shift)
    r = F32(-rot)
    rm = _eye4()
    rm[0][0], rm[0][1] = np.cos(r, dtype=F32), F32(-np.sin(r, dtype=F32))
    rm[1][0], rm[1][1] = np.sin(r, dtype=F32), np.cos(r, dtype=F32)
    t = _mat4_mul(t, rm)
    sc = _eye4()
    sc[0][0] = F32(F32(F32(o["scale_x"]) * crop_w) / F32(o["output_width"]))
    sc[1][1] = F32(F32(F32(o["scale_y"]) * crop_h) / F32(o["output_height"]))
    t = _mat4_mul(t, sc)
    s2 = _eye4()
    s2[0][3] = F32(-1.0 * (o["output_width"] / 2.0))
    s2[1][3] = F32(-1.0 * (o["output_height"] / 2.0))
    t = _mat4_mul(t, s2)
    return np.array(t, F32).reshape(1, 4, 4)


# ---------------------------------------------------------------------------------------
# TransformTensorBilinear (version 2)
# ---------------------------------------------------------------------------------------

def transform_tensor_bilinear(tensor, matrix, options, out_shape=None):
    """tensor: [n, h, w, c] float32; matrix: 16 float32 (first 8 read). The output shape is
    the model's output tensor's (`out_shape`; by default [1, output_height, output_width,
    c] from the options). Batch 0 samples input batch 0; further output batches are 0."""
    x = np.asarray(tensor, F32)
    m = np.asarray(matrix, F32).reshape(-1)
    if out_shape is None:
        out_shape = (1, options["output_height"], options["output_width"], x.shape[3])
    _, oh, ow, oc = out_shape
    ih, iw = x.shape[1], x.shape[2]
    assert oc <= x.shape[3]
    xt, yt = m[0:4].copy(), m[4:8].copy()
    xt[3] = F32(np.float64(xt[3]) + (np.float64(xt[0]) * 0.5 + np.float64(xt[1]) * 0.5 - 0.5))
    yt[3] = F32(np.float64(yt[3]) + (np.float64(yt[0]) * 0.5 + np.float64(yt[1]) * 0.5 - 0.5))
    oy, ox = np.meshgrid(np.arange(oh, dtype=F32), np.arange(ow, dtype=F32), indexing="ij")
    zero, one = F32(0), F32(1)
    tx = ((xt[0] * ox + xt[1] * oy) + xt[2] * zero) + xt[3] * one
    ty = ((yt[0] * ox + yt[1] * oy) + yt[2] * zero) + yt[3] * one
    out = np.zeros(out_shape, F32)
    nan = np.isnan(tx) | np.isnan(ty)
    with np.errstate(invalid="ignore"):
        inside = ~nan & ~((tx < 0) | (tx > F32(iw - 1)) | (ty < 0) | (ty > F32(ih - 1)))
    src = x[0, :, :, :oc]

    def read(h, w):
        ok = inside & (h >= 0) & (w >= 0) & (h < ih) & (w < iw)
        v = np.zeros((oh, ow, oc), F32)
        v[ok] = src[h[ok], w[ok]]
        return v

    fx = np.floor(np.where(inside, tx, 0)).astype(F32)
    fy = np.floor(np.where(inside, ty, 0)).astype(F32)
    x0, y0 = fx.astype(np.int64), fy.astype(np.int64)
    q11, q21 = read(y0, x0), read(y0, x0 + 1)
    q12, q22 = read(y0 + 1, x0), read(y0 + 1, x0 + 1)
    rc = (np.where(inside, tx, 0) - fx).astype(F32)[..., None]
    lc = (np.where(inside, ty, 0) - fy).astype(F32)[..., None]
    d = np.float64
    upper = ((1.0 - rc.astype(d)) * q11.astype(d) + (rc * q21).astype(d)).astype(F32)
    lower = ((1.0 - rc.astype(d)) * q12.astype(d) + (rc * q22).astype(d)).astype(F32)
    res = ((lc * lower).astype(d) + (1.0 - lc.astype(d)) * upper.astype(d)).astype(F32)
    res[~inside] = 0
    res[nan] = np.nan
    out[0] = res
    return out


# ---------------------------------------------------------------------------------------
# TransformLandmarks (version 2)
# ---------------------------------------------------------------------------------------

def transform_landmarks(landmarks, matrix, options=None):
    """landmarks: [n, count, d] float32 with d = 2 or 3; matrix: 16 float32 (first 8
    read). (x, y) -> first two matrix rows applied to (x, y, 0, 1); z copied. Only the first
    landmark set is transformed; further ones are 0."""
    lm = np.asarray(landmarks, F32)
    m = np.asarray(matrix, F32).reshape(-1)
    out = np.zeros_like(lm)
    x, y = lm[0, :, 0], lm[0, :, 1]
    zero, one = F32(0), F32(1)
    out[0, :, 0] = ((m[0] * x + m[1] * y) + m[2] * zero) + m[3] * one
    out[0, :, 1] = ((m[4] * x + m[5] * y) + m[6] * zero) + m[7] * one
    if lm.shape[2] == 3:
        out[0, :, 2] = lm[0, :, 2]
    return out


# ---------------------------------------------------------------------------------------
# MaxPoolingWithArgmax2D, MaxUnpooling2D (options: a TfLitePoolParams struct)
# ---------------------------------------------------------------------------------------

PADDING = {"SAME": 1, "VALID": 2}


def pool_params_bytes(options):
    """The TfLitePoolParams struct MediaPipe reads as the custom options (little-endian:
    padding, stride_width, stride_height, filter_width, filter_height, activation, then the
    computed padding, 4 ints, zero)."""
    o = options
    pad = PADDING.get(o["padding"], o["padding"]) if isinstance(o["padding"], str) else o["padding"]
    vals = [pad, o["stride_width"], o["stride_height"], o["filter_width"], o["filter_height"],
            o.get("activation", 0), 0, 0, 0, 0]
    return np.asarray(vals, "<i4").tobytes()


def _compute_padding(stride, in_size, filter_size, out_size):
    p = (out_size - 1) * stride + filter_size - in_size
    p = int(p / 2)  # C++ integer division truncates toward zero
    return max(p, 0)


def _activation_range(act):
    return {1: (0.0, np.finfo(F32).max), 2: (-1.0, 1.0), 3: (0.0, 6.0)}.get(
        act, (np.finfo(F32).min, np.finfo(F32).max))


def max_pooling_with_argmax_2d(x, options):
    """x: [b, h, w, c] float32; options: padding ("SAME"/"VALID" or 1/2), stride_width,
    stride_height, filter_width, filter_height, activation (TfLiteFusedActivation code).
    Returns [output, indices]: indices = window_y * filter_width + window_x + 0.1."""
    x = np.asarray(x, F32)
    o = options
    pad = PADDING.get(o["padding"], o["padding"]) if isinstance(o["padding"], str) else o["padding"]
    b, h, w, c = x.shape
    fw, fh, sw, sh = o["filter_width"], o["filter_height"], o["stride_width"], o["stride_height"]

    def out_size(size, f, s):
        return (size + s - 1) // s if pad == 1 else (int((size - f + s) / s) if pad == 2 else 0)

    oh, ow = out_size(h, fh, sh), out_size(w, fw, sw)
    ph, pw = _compute_padding(sh, h, fh, oh), _compute_padding(sw, w, fw, ow)
    lo, hi = _activation_range(o.get("activation", 0))
    out = np.zeros((b, oh, ow, c), F32)
    idx = np.zeros((b, oh, ow, c), F32)
    for oy in range(oh):
        y0 = oy * sh - ph
        for ox in range(ow):
            x0 = ox * sw - pw
            best = np.full((b, c), np.finfo(F32).min, F32)
            at = np.zeros((b, c), np.int64)
            for fy in range(max(0, -y0), min(fh, h - y0)):
                for fx in range(max(0, -x0), min(fw, w - x0)):
                    v = x[:, y0 + fy, x0 + fx, :]
                    better = v > best
                    best = np.where(better, v, best)
                    at = np.where(better, fy * fw + fx, at)
            out[:, oy, ox, :] = np.minimum(np.maximum(best, F32(lo)), F32(hi))
            idx[:, oy, ox, :] = at.astype(F32) + F32(0.1)
    return [out, idx]


def max_unpooling_2d(x, indices, options):
    """x, indices: [b, h, w, c] float32 (indices as MaxPoolingWithArgmax2D writes them);
    options as for max_pooling_with_argmax_2d (the activation is not used). Returns the
    [b, h * filter_height, w * filter_width, c] output: zero, each input value written at
    the window position its truncated index names (later ones overwrite; outside: skipped)."""
    x = np.asarray(x, F32)
    ind = np.asarray(indices, F32)
    o = options
    b, h, w, c = x.shape
    fw, fh, sw, sh = o["filter_width"], o["filter_height"], o["stride_width"], o["stride_height"]
    oh, ow = h * fh, w * fw
    ph, pw = _compute_padding(sh, oh, fh, h), _compute_padding(sw, ow, fw, w)
    out = np.zeros((b, oh, ow, c), F32)
    for n in range(b):
        for y in range(h):
            for xx in range(w):
                for ch in range(c):
                    f = float(ind[n, y, xx, ch])
                    if not (-2147483649.0 < f < 2147483648.0):
                        continue
                    i = int(f)  # truncation toward zero
                    q = abs(i) // fw * (1 if i >= 0 else -1)
                    r = i - q * fw
                    oy, ox = y * sh - ph + q, xx * sw - pw + r
                    if 0 <= oy < oh and 0 <= ox < ow:
                        out[n, oy, ox, ch] = x[n, y, xx, ch]
    return out


# ---------------------------------------------------------------------------------------
# Resampler
# ---------------------------------------------------------------------------------------

def resampler(source, warp, options=None):
    """source: [b, h, w, c] float32; warp: [b, h, w, 2] float32 (x, y) points. Returns the
    source-shaped output, bilinear samples with out-of-range neighbours 0, all float32."""
    src = np.asarray(source, F32)
    wp = np.asarray(warp, F32).reshape(src.shape[0], src.shape[1], src.shape[2], 2)
    b, h, w, c = src.shape
    out = np.zeros_like(src)
    one = F32(1)
    for n in range(b):
        for yy in range(h):
            for xx in range(w):
                x, y = wp[n, yy, xx, 0], wp[n, yy, xx, 1]
                if not (x > F32(-1) and y > F32(-1) and x < F32(w) and y < F32(h)):
                    continue
                fx, fy = int(np.floor(x)), int(np.floor(y))
                cx, cy = fx + 1, fy + 1
                dx, dy = F32(F32(cx) - x), F32(F32(cy) - y)

                def v(px, py):
                    if 0 <= px < w and 0 <= py < h:
                        return src[n, py, px, :]
                    return np.zeros(c, F32)

                a = dx * dy * v(fx, fy)
                bb = (one - dx) * (one - dy) * v(cx, cy)
                cc = dx * (one - dy) * v(fx, cy)
                d = (one - dx) * dy * v(cx, fy)
                out[n, yy, xx, :] = ((a + bb) + cc) + d
    return out


# ---------------------------------------------------------------------------------------
# FusedBatchNormV3
# ---------------------------------------------------------------------------------------

def fused_batch_norm_v3(x, scale, offset, mean, variance, options=None):
    """Training-mode batch norm as MediaPipe's kernel runs it (epsilon and the exponential
    average factor are its constants, 0.001). Returns [y, running_mean, running_var,
    batch_mean, batch_var, reserve_space (zeros [1])]."""
    x = np.asarray(x, F32)
    c = x.shape[3]
    rows = x.reshape(-1, c)
    n = rows.shape[0]
    inv = F32(F32(1) / F32(n))
    bm = (rows.astype(np.float64).sum(0).astype(F32) * inv).astype(F32)
    centred = (rows - bm).astype(F32)
    bv = ((centred * centred).astype(np.float64).sum(0).astype(F32) * inv).astype(F32)
    factor = (F32(1) / np.sqrt(bv + F32(0.001))).astype(F32) * np.asarray(scale, F32)[:c]
    y = (centred * factor + np.asarray(offset, F32)[:c]).astype(F32).reshape(x.shape)
    adjust = F32(F32(n) / F32(n - 1 if n > 1 else 1))
    keep, fac = F32(1) - F32(0.001), F32(0.001)
    rm = (keep * np.asarray(mean, F32)[:c] + fac * bm).astype(F32)
    rv = (keep * np.asarray(variance, F32)[:c] + F32(fac * adjust) * bv).astype(F32)
    return [y, rm, rv, bm, bv, np.zeros(1, F32)]


# ---------------------------------------------------------------------------------------
# Model building (needs graph.py and make_op_cases.py)
# ---------------------------------------------------------------------------------------

def flex_map(d):
    """A FlexBuffers map as MediaPipe's converter writes it: int lists as typed vectors."""
    from flatbuffers import flexbuffers
    b = flexbuffers.Builder()
    with b.Map():
        for k in sorted(d):
            v = d[k]
            b.Key(k)
            if isinstance(v, (list, tuple)):
                b.TypedVectorFromElements([int(e) for e in v])
            elif isinstance(v, float):
                b.Float(v)
            else:
                b.Int(int(v))
    return bytes(b.Finish())


# The face landmarker's lips, left-eye and right-eye crops (face_landmark_with_attention).
LIPS = [61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0, 267, 269, 270, 409, 78, 95, 88,
        178, 87, 14, 317, 402, 318, 324, 308, 191, 80, 81, 82, 13, 312, 311, 310, 415, 76, 77, 90, 180, 85, 16,
        315, 404, 320, 307, 306, 184, 74, 73, 72, 11, 302, 303, 304, 408, 62, 96, 89, 179, 86, 15, 316, 403, 319,
        325, 292, 183, 42, 41, 38, 12, 268, 271, 272, 407]
LEFT_EYE = [33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173, 130, 25, 110, 24, 23, 22, 26,
            112, 243, 247, 30, 29, 27, 28, 56, 190, 226, 31, 228, 229, 230, 231, 232, 233, 244, 113, 225, 224, 223,
            222, 221, 189, 35, 124, 46, 53, 52, 65, 143, 111, 117, 118, 119, 120, 121, 128, 245, 156, 70, 63, 105,
            66, 107, 55, 193]


def face_mesh(rng, n=468, size=48.0, tilt=0.0):
    """Landmarks spread like a face mesh in a size x size crop, tilted by `tilt` radians."""
    p = rng.uniform(0.2 * size, 0.8 * size, (n, 3)).astype(F32)
    p[:, 2] = rng.uniform(-3, 3, n)
    c = size / 2
    ct, st = np.cos(tilt), np.sin(tilt)
    x, y = p[:, 0] - c, p[:, 1] - c
    p[:, 0], p[:, 1] = ct * x - st * y + c, st * x + ct * y + c
    return p.reshape(1, n, 3).astype(F32)


def l2tm_options(subset, left, right, out_h=16, out_w=16, sx=1.5, sy=1.5, target=0.0):
    return {"subset_idxs": subset, "left_rotation_idx": left, "right_rotation_idx": right,
            "target_rotation_radians": target, "output_height": out_h, "output_width": out_w,
            "scale_x": sx, "scale_y": sy}


def l2tm_case(name, opts, landmarks, note=""):
    from graph import Graph
    from make_op_cases import Case
    g = Graph()
    x = g.input("landmarks", "FLOAT32", list(landmarks.shape))
    y = g.tensor("matrix", "FLOAT32", [1, 4, 4])
    g.custom_op("Landmarks2TransformMatrix", [x], [y], custom_options=flex_map(opts), version=2)
    g.outputs([y])
    return Case(name, g.finish(), [landmarks], note=note, ops=["Landmarks2TransformMatrix:2"],
                oracle=lambda lm: [landmarks_to_transform_matrix(lm, opts)],
                oracle_name="landmarks_to_transform_matrix (families/mediapipe.py)", float_tolerance=1e-5)


def ttb_case(name, tensor, matrix, out_hw, out_c=None, note=""):
    from graph import Graph
    from make_op_cases import Case
    oc = tensor.shape[3] if out_c is None else out_c
    out_shape = [1, out_hw[0], out_hw[1], oc]
    opts = {"output_height": out_hw[0], "output_width": out_hw[1]}
    g = Graph()
    x = g.input("tensor", "FLOAT32", list(tensor.shape))
    m = g.input("matrix", "FLOAT32", [1, 4, 4])
    y = g.tensor("sampled", "FLOAT32", out_shape)
    g.custom_op("TransformTensorBilinear", [x, m], [y], custom_options=flex_map(opts), version=2)
    g.outputs([y])
    return Case(name, g.finish(), [tensor, np.asarray(matrix, F32).reshape(1, 4, 4)], note=note,
                ops=["TransformTensorBilinear:2"],
                oracle=lambda t, mm: [transform_tensor_bilinear(t, mm, opts, out_shape)],
                oracle_name="transform_tensor_bilinear (families/mediapipe.py)", float_tolerance=1e-5)


def tl_case(name, landmarks, matrix, note=""):
    from graph import Graph
    from make_op_cases import Case
    g = Graph()
    x = g.input("landmarks", "FLOAT32", list(landmarks.shape))
    m = g.input("matrix", "FLOAT32", [1, 4, 4])
    y = g.tensor("transformed", "FLOAT32", list(landmarks.shape))
    g.custom_op("TransformLandmarks", [x, m], [y], version=2)
    g.outputs([y])
    return Case(name, g.finish(), [landmarks, np.asarray(matrix, F32).reshape(1, 4, 4)], note=note,
                ops=["TransformLandmarks:2"], oracle=lambda lm, mm: [transform_landmarks(lm, mm, {})],
                oracle_name="transform_landmarks (families/mediapipe.py)", float_tolerance=1e-5)


def affine(scale_x, scale_y, angle, tx, ty):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[scale_x * c, -scale_y * s, 0, tx], [scale_x * s, scale_y * c, 0, ty], [0, 0, 1, 0],
                     [0, 0, 0, 1]], F32)


def crop_pipeline_case(name, rng, opts, note=""):
    """Landmarks2TransformMatrix feeding TransformTensorBilinear and TransformLandmarks, as in
    the face landmarker: a 16x16 crop of 48x48x32 features, and crop landmarks mapped back."""
    from graph import Graph
    from make_op_cases import Case
    g = Graph()
    lm = g.input("landmarks", "FLOAT32", [1, 468, 3])
    feat = g.input("features", "FLOAT32", [1, 48, 48, 32])
    crop_lm = g.input("crop_landmarks", "FLOAT32", [1, 80, 2])
    m = g.tensor("matrix", "FLOAT32", [1, 4, 4])
    crop = g.tensor("crop", "FLOAT32", [1, 16, 16, 32])
    back = g.tensor("back", "FLOAT32", [1, 80, 2])
    g.custom_op("Landmarks2TransformMatrix", [lm], [m], custom_options=flex_map(opts), version=2)
    g.custom_op("TransformTensorBilinear", [feat, m], [crop],
                custom_options=flex_map({"output_height": 16, "output_width": 16}), version=2)
    g.custom_op("TransformLandmarks", [crop_lm, m], [back], version=2)
    g.outputs([m, crop, back])

    def oracle(landmarks, features, crop_landmarks):
        mm = landmarks_to_transform_matrix(landmarks, opts)
        return [mm, transform_tensor_bilinear(features, mm, {}, (1, 16, 16, 32)),
                transform_landmarks(crop_landmarks, mm, {})]

    ins = [face_mesh(rng, tilt=0.3), rng.standard_normal((1, 48, 48, 32)).astype(F32),
           rng.uniform(0, 16, (1, 80, 2)).astype(F32)]
    return Case(name, g.finish(), ins, note=note,
                ops=["Landmarks2TransformMatrix:2", "TransformTensorBilinear:2", "TransformLandmarks:2"],
                oracle=oracle, oracle_name="families/mediapipe.py oracles, chained", float_tolerance=1e-5)


def pool_case(name, x, opts, note=""):
    from graph import Graph
    from make_op_cases import Case
    out, idx = max_pooling_with_argmax_2d(x, opts)
    g = Graph()
    xi = g.input("x", "FLOAT32", list(x.shape))
    y = g.tensor("pooled", "FLOAT32", list(out.shape))
    ii = g.tensor("argmax", "FLOAT32", list(idx.shape))
    g.custom_op("MaxPoolingWithArgmax2D", [xi], [y, ii], custom_options=pool_params_bytes(opts))
    g.outputs([y, ii])
    return Case(name, g.finish(), [x], note=note, ops=["MaxPoolingWithArgmax2D:1"],
                oracle=lambda a: max_pooling_with_argmax_2d(a, opts),
                oracle_name="max_pooling_with_argmax_2d (families/mediapipe.py)", float_tolerance=1e-6)


def unpool_case(name, x, indices, opts, note=""):
    from graph import Graph
    from make_op_cases import Case
    b, h, w, c = x.shape
    g = Graph()
    xi = g.input("x", "FLOAT32", list(x.shape))
    ii = g.input("indices", "FLOAT32", list(indices.shape))
    y = g.tensor("unpooled", "FLOAT32", [b, h * opts["filter_height"], w * opts["filter_width"], c])
    g.custom_op("MaxUnpooling2D", [xi, ii], [y], custom_options=pool_params_bytes(opts))
    g.outputs([y])
    return Case(name, g.finish(), [x, indices], note=note, ops=["MaxUnpooling2D:1"],
                oracle=lambda a, i: [max_unpooling_2d(a, i, opts)],
                oracle_name="max_unpooling_2d (families/mediapipe.py)", float_tolerance=1e-6)


def pool_unpool_case(name, x, opts, note=""):
    """The hair segmentation pattern: pool with argmax, then unpool with those indices."""
    from graph import Graph
    from make_op_cases import Case
    out, idx = max_pooling_with_argmax_2d(x, opts)
    g = Graph()
    xi = g.input("x", "FLOAT32", list(x.shape))
    y = g.tensor("pooled", "FLOAT32", list(out.shape))
    ii = g.tensor("argmax", "FLOAT32", list(idx.shape))
    b, h, w, c = out.shape
    u = g.tensor("unpooled", "FLOAT32", [b, h * opts["filter_height"], w * opts["filter_width"], c])
    g.custom_op("MaxPoolingWithArgmax2D", [xi], [y, ii], custom_options=pool_params_bytes(opts))
    g.custom_op("MaxUnpooling2D", [y, ii], [u], custom_options=pool_params_bytes(opts))
    g.outputs([u])

    def oracle(a):
        p, i = max_pooling_with_argmax_2d(a, opts)
        return [max_unpooling_2d(p, i, opts)]

    return Case(name, g.finish(), [x], note=note, ops=["MaxPoolingWithArgmax2D:1", "MaxUnpooling2D:1"],
                oracle=oracle, oracle_name="families/mediapipe.py pooling oracles, chained", float_tolerance=1e-6)


def resampler_case(name, src, warp, note=""):
    from graph import Graph
    from make_op_cases import Case
    g = Graph()
    s = g.input("source", "FLOAT32", list(src.shape))
    w = g.input("warp", "FLOAT32", list(warp.shape))
    y = g.tensor("resampled", "FLOAT32", list(src.shape))
    g.custom_op("Resampler", [s, w], [y])
    g.outputs([y])
    return Case(name, g.finish(), [src, warp], note=note, ops=["Resampler:1"],
                oracle=lambda a, ww: [resampler(a, ww, {})],
                oracle_name="resampler (families/mediapipe.py)", float_tolerance=1e-5)


def batch_norm_case(name, x, rng, note=""):
    from graph import Graph
    from make_op_cases import Case
    c = x.shape[3]
    params = [rng.uniform(0.5, 2, c).astype(F32), rng.uniform(-1, 1, c).astype(F32),
              rng.uniform(-1, 1, c).astype(F32), rng.uniform(0.5, 2, c).astype(F32)]
    g = Graph()
    xi = g.input("x", "FLOAT32", list(x.shape))
    ps = [g.const(n, "FLOAT32", [c], v) for n, v in zip(["scale", "offset", "mean", "variance"], params)]
    outs = [g.tensor("y", "FLOAT32", list(x.shape))] + [g.tensor(n, "FLOAT32", [c]) for n in
                                                         ["running_mean", "running_var", "batch_mean", "batch_var"]]
    outs.append(g.tensor("reserve_space", "FLOAT32", [1]))
    g.custom_op("FusedBatchNormV3", [xi] + ps, outs)
    g.outputs(outs)
    return Case(name, g.finish(), [x], note=note, ops=["FusedBatchNormV3:1"],
                oracle=lambda a: fused_batch_norm_v3(a, *params, {}),
                oracle_name="fused_batch_norm_v3 (families/mediapipe.py)", float_tolerance=1e-5)


def cases():
    from graph import rng_for
    # Landmarks2TransformMatrix
    r = rng_for("mediapipe_l2tm_lips")
    yield l2tm_case("mediapipe_l2tm_lips", l2tm_options(LIPS, 61, 291), face_mesh(r),
                    note="the face landmarker's lips crop options")
    r = rng_for("mediapipe_l2tm_left_eye_tilted")
    yield l2tm_case("mediapipe_l2tm_left_eye_tilted", l2tm_options(LEFT_EYE, 33, 133), face_mesh(r, tilt=0.6),
                    note="an odd-length subset (its last index pairs with itself), a tilted face")
    r = rng_for("mediapipe_l2tm_target_rotation")
    yield l2tm_case("mediapipe_l2tm_target_rotation",
                    l2tm_options([0, 5, 9, 17, 3], 2, 7, out_h=24, out_w=12, sx=2.0, sy=0.75, target=0.5),
                    face_mesh(r, n=20, tilt=-2.5),
                    note="a non-zero target rotation, a non-square output, different scales, upside-down")
    r = rng_for("mediapipe_l2tm_reversed_eye_line")
    yield l2tm_case("mediapipe_l2tm_reversed_eye_line", l2tm_options([1, 2, 3, 4], 4, 1, out_h=8, out_w=8),
                    face_mesh(r, n=6), note="the right landmark left of the left one (rotation near pi)")

    # TransformTensorBilinear
    r = rng_for("mediapipe_ttb_face_crop")
    feat = r.standard_normal((1, 48, 48, 32)).astype(F32)
    m = landmarks_to_transform_matrix(face_mesh(r, tilt=0.2), l2tm_options(LIPS, 61, 291))
    yield ttb_case("mediapipe_ttb_face_crop", feat, m, (16, 16),
                   note="the face landmarker's lips crop: 48x48x32 features to 16x16")
    r = rng_for("mediapipe_ttb_partly_outside")
    yield ttb_case("mediapipe_ttb_partly_outside", r.standard_normal((1, 10, 12, 3)).astype(F32),
                   affine(1.3, 1.1, 0.4, 2.0, -4.0), (9, 11),
                   note="a rotated, scaled crop partly outside the image: those samples are 0")
    r = rng_for("mediapipe_ttb_identity_edges")
    yield ttb_case("mediapipe_ttb_identity_edges", r.standard_normal((1, 5, 6, 2)).astype(F32),
                   np.eye(4, dtype=F32), (7, 8),
                   note="identity: samples on the last row/column (a zero neighbour with weight 0), "
                        "then outside")
    r = rng_for("mediapipe_ttb_upscale")
    yield ttb_case("mediapipe_ttb_upscale", r.standard_normal((1, 4, 4, 5)).astype(F32),
                   affine(0.3, 0.45, -0.2, 0.6, 0.9), (12, 10),
                   note="magnification with fractional offsets")
    r = rng_for("mediapipe_ttb_fewer_channels")
    yield ttb_case("mediapipe_ttb_fewer_channels", r.standard_normal((2, 6, 6, 4)).astype(F32),
                   affine(0.8, 0.8, 0.1, 1.0, 0.5), (5, 5), out_c=3,
                   note="output channel c reads input channel c (3 of 4); input batch 0 only")
    yield ttb_case("mediapipe_ttb_all_outside", rng_for("mediapipe_ttb_all_outside").standard_normal((1, 3, 3, 2)).astype(F32),
                   affine(1, 1, 0, 100.0, -50.0), (2, 2), note="every sample outside: all 0")

    # TransformLandmarks
    r = rng_for("mediapipe_tl_2d")
    yield tl_case("mediapipe_tl_2d", r.uniform(0, 16, (1, 80, 2)).astype(F32),
                  landmarks_to_transform_matrix(face_mesh(r), l2tm_options(LIPS, 61, 291)),
                  note="the face landmarker's lips: 80 crop landmarks back to the face")
    r = rng_for("mediapipe_tl_3d")
    yield tl_case("mediapipe_tl_3d", r.uniform(-5, 20, (1, 71, 3)).astype(F32), affine(1.2, 0.7, 2.0, 3.0, -1.0),
                  note="(x, y, z) landmarks: z is copied")
    r = rng_for("mediapipe_tl_matrix_unused_entries")
    mm = affine(1.0, 1.0, 0.4, 2.0, 2.0)
    mm[0, 2], mm[1, 2], mm[2:, :] = 5.0, -7.0, 9.0
    yield tl_case("mediapipe_tl_matrix_unused_entries", r.uniform(0, 16, (1, 5, 2)).astype(F32), mm,
                  note="the third column meets z = 0 and rows 3-4 are never read")

    # The face landmarker's chain.
    yield crop_pipeline_case("mediapipe_face_crop_chain", rng_for("mediapipe_face_crop_chain"),
                             l2tm_options(LIPS, 61, 291),
                             note="Landmarks2TransformMatrix -> TransformTensorBilinear, TransformLandmarks")

    # MaxPoolingWithArgmax2D / MaxUnpooling2D
    pool2 = {"padding": "SAME", "stride_width": 2, "stride_height": 2, "filter_width": 2, "filter_height": 2}
    r = rng_for("mediapipe_maxpool_argmax_same")
    yield pool_case("mediapipe_maxpool_argmax_same", r.standard_normal((1, 8, 8, 4)).astype(F32), pool2,
                    note="hair segmentation's 2x2 stride-2 SAME pooling")
    r = rng_for("mediapipe_maxpool_argmax_odd_same_relu6")
    yield pool_case("mediapipe_maxpool_argmax_odd_same_relu6", (4 * r.standard_normal((2, 7, 9, 3))).astype(F32),
                    {"padding": "SAME", "stride_width": 2, "stride_height": 2, "filter_width": 3,
                     "filter_height": 3, "activation": 3},
                    note="odd sizes: padded windows (indices count from the padded corner); RELU6 clamps")
    r = rng_for("mediapipe_maxpool_argmax_valid_ties")
    yield pool_case("mediapipe_maxpool_argmax_valid_ties", r.integers(-2, 3, (1, 6, 7, 2)).astype(F32),
                    {"padding": "VALID", "stride_width": 1, "stride_height": 2, "filter_width": 3,
                     "filter_height": 2},
                    note="overlapping VALID windows, many ties (the first maximum wins)")
    r = rng_for("mediapipe_maxunpool")
    x = r.standard_normal((1, 4, 4, 3)).astype(F32)
    idx = (r.integers(0, 4, (1, 4, 4, 3)) + 0.1).astype(F32)
    yield unpool_case("mediapipe_maxunpool", x, idx, pool2, note="2x2 stride 2 unpooling")
    r = rng_for("mediapipe_maxunpool_out_of_range")
    x = r.standard_normal((1, 3, 3, 2)).astype(F32)
    idx = np.array([0.1, 3.9, -1.0, 5.0, 2.5, 100.0, 1.0, 0.0, 3.0, -3.5, 1.1, 2.1, 7.0, 3.1, 0.2, 1.9, -0.5, 2.0],
                   F32).reshape(1, 3, 3, 2)
    yield unpool_case("mediapipe_maxunpool_out_of_range", x, idx, pool2,
                      note="indices past the window or negative: truncated, out-of-output ones skipped")
    r = rng_for("mediapipe_maxpool_unpool_chain")
    yield pool_unpool_case("mediapipe_maxpool_unpool_chain", r.standard_normal((1, 16, 16, 8)).astype(F32), pool2,
                           note="pool with argmax then unpool: each window's maximum back in place")

    # Resampler
    r = rng_for("mediapipe_resampler")
    src = r.standard_normal((2, 6, 7, 3)).astype(F32)
    gy, gx = np.meshgrid(np.arange(6, dtype=F32), np.arange(7, dtype=F32), indexing="ij")
    warp = np.stack([gx + r.uniform(-1.5, 1.5, gx.shape), gy + r.uniform(-1.5, 1.5, gy.shape)], -1)
    warp = np.broadcast_to(warp, (2, 6, 7, 2)).astype(F32).copy()
    warp[1] = warp[1, :, ::-1]
    warp[0, 0, 0], warp[0, 0, 1], warp[0, 1, 0] = (-0.99, 2.0), (-1.0, 2.0), (6.999, 5.999)
    warp[0, 1, 1], warp[0, 1, 2] = (7.0, 1.0), (3.0, 6.0)
    yield resampler_case("mediapipe_resampler", src, warp,
                         note="jittered points, some past the edges (neighbours read 0) or outside (-1, w)")

    # FusedBatchNormV3
    r = rng_for("mediapipe_fused_batch_norm")
    yield batch_norm_case("mediapipe_fused_batch_norm", (3 * r.standard_normal((2, 5, 6, 8)) + 1).astype(F32), r,
                          note="batch statistics, running averages with factor 0.001")
    r = rng_for("mediapipe_fused_batch_norm_single_row")
    yield batch_norm_case("mediapipe_fused_batch_norm_single_row", r.standard_normal((1, 1, 1, 4)).astype(F32), r,
                          note="one value per channel: zero variance, Bessel's n/(n-1) taken as n/1")
