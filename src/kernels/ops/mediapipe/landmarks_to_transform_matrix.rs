//! MediaPipe's custom op `Landmarks2TransformMatrix`, version 2
//! (`mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc`, namespace `v2`;
//! the only version MediaPipe's op resolvers register).
//!
//! Input: landmarks, a 3-D float32 tensor read as consecutive `(x, y, z)` triples (landmark
//! `i` is elements `3i..3i+3` whatever the last dimension is, as MediaPipe reads it).
//! Output: a `[1, 4, 4]` float32 matrix mapping a crop of `output_width x output_height`
//! back to the landmarks' space. The crop is the box around the landmarks listed in
//! `subset_idxs`, rotated so that the line from landmark `left_rotation_idx` to
//! `right_rotation_idx` lies at `target_rotation_radians`, scaled by `scale_x`/`scale_y`.
//!
//! Options (a FlexBuffers map): `subset_idxs` (int vector, read as pairs; an odd last entry
//! pairs with itself), `left_rotation_idx`, `right_rotation_idx`, `target_rotation_radians`,
//! `output_height`, `output_width`, `scale_x`, `scale_y`; a missing key reads as 0. They
//! are checked as MediaPipe checks them (indices >= 0, output size and scales > 0), and
//! further: the subset must not be empty and every index must name a landmark of the
//! input (MediaPipe reads past the tensor otherwise).
//!
//! The arithmetic follows MediaPipe's in f32, operation by operation (its 3x3 and 4x4
//! products sum from 0 in index order), with its two double-precision constants
//! (`-1.0 * (output_width / 2.0)`) rounded to f32 as its constructors do.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::flexbuffer::FlexMap;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "Landmarks2TransformMatrix";

/// The registration of MediaPipe's custom op `Landmarks2TransformMatrix` (version 2).
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Landmarks2TransformMatrix>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// The op's options (MediaPipe's `LandmarksToTransformMatrixV2Attributes`).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub subset_idxs: Vec<[i32; 2]>,
    pub left_rotation_idx: i32,
    pub right_rotation_idx: i32,
    pub target_rotation_radians: f32,
    pub output_height: i32,
    pub output_width: i32,
    pub scale_x: f32,
    pub scale_y: f32,
}

impl Options {
    /// Reads the options from the custom options' FlexBuffers map.
    pub fn parse(custom: &[u8]) -> Result<Options> {
        let m = FlexMap::root(custom)?;
        let flat = m.i32_vec_or_empty("subset_idxs")?;
        let mut subset_idxs: Vec<[i32; 2]> = flat.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
        if let [.., last] = flat[..]
            && !flat.len().is_multiple_of(2)
        {
            subset_idxs.push([last, last]);
        }
        Ok(Options {
            subset_idxs,
            left_rotation_idx: m.i32_or_zero("left_rotation_idx")?,
            right_rotation_idx: m.i32_or_zero("right_rotation_idx")?,
            target_rotation_radians: m.f32_or_zero("target_rotation_radians")?,
            output_height: m.i32_or_zero("output_height")?,
            output_width: m.i32_or_zero("output_width")?,
            scale_x: m.f32_or_zero("scale_x")?,
            scale_y: m.f32_or_zero("scale_y")?,
        })
    }

    /// MediaPipe's checks, plus: a non-empty subset, and every landmark index below
    /// `landmarks` (the number of whole triples in the input).
    pub fn validate(&self, landmarks: usize) -> Result<()> {
        let o = self;
        crate::ensure!(o.output_height > 0, "Incorrect output_height: {}", o.output_height);
        crate::ensure!(o.output_width > 0, "Incorrect output_width: {}", o.output_width);
        // MediaPipe's `scale <= 0` test (a NaN scale passes it).
        if o.scale_x <= 0.0 {
            crate::bail!("Incorrect scale_x: {}", o.scale_x);
        }
        if o.scale_y <= 0.0 {
            crate::bail!("Incorrect scale_y: {}", o.scale_y);
        }
        crate::ensure!(!o.subset_idxs.is_empty(), "subset_idxs is empty");
        let check = |what: &str, i: i32| -> Result<()> {
            crate::ensure!(
                usize::try_from(i).is_ok_and(|i| i < landmarks),
                "Incorrect {what}: {i} (the input holds {landmarks} landmarks)"
            );
            Ok(())
        };
        check("left_rotation_idx", o.left_rotation_idx)?;
        check("right_rotation_idx", o.right_rotation_idx)?;
        for (k, &v) in o.subset_idxs.iter().flatten().enumerate() {
            check(&format!("subset value at index {k}"), v)?;
        }
        Ok(())
    }
}

type Mat3 = [[f32; 3]; 3];
type Mat4 = [[f32; 4]; 4];

fn mat3_vec(m: &Mat3, v: [f32; 3]) -> [f32; 3] {
    let mut out = [0.0f32; 3];
    for (r, o) in out.iter_mut().enumerate() {
        let mut sum = 0.0f32;
        for (k, &x) in v.iter().enumerate() {
            sum += m[r][k] * x;
        }
        *o = sum;
    }
    out
}

fn mat4_mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut out = [[0.0f32; 4]; 4];
    for (r, row) in out.iter_mut().enumerate() {
        for (c, o) in row.iter_mut().enumerate() {
            let mut sum = 0.0f32;
            for (k, &x) in a[r].iter().enumerate() {
                sum += x * b[k][c];
            }
            *o = sum;
        }
    }
    out
}

fn rotation3(r: f32) -> Mat3 {
    [[r.cos(), -r.sin(), 0.0], [r.sin(), r.cos(), 0.0], [0.0, 0.0, 1.0]]
}

fn xyz(landmarks: &[f32], i: i32) -> [f32; 3] {
    let i = i as usize * 3;
    [landmarks[i], landmarks[i + 1], landmarks[i + 2]]
}

/// The transform matrix (row-major 4x4) for `landmarks` (`(x, y, z)` triples); the options
/// must have passed [`Options::validate`] for `landmarks.len() / 3`.
pub fn landmarks_to_transform_matrix(landmarks: &[f32], o: &Options) -> Result<[f32; 16]> {
    o.validate(landmarks.len() / 3)?;
    let (left, right) = (xyz(landmarks, o.left_rotation_idx), xyz(landmarks, o.right_rotation_idx));
    let rotation = o.target_rotation_radians - (right[1] - left[1]).atan2(right[0] - left[0]);

    // The subset's box in the rotated frame, and its centre back in the landmarks' frame.
    let t_rotation = rotation3(rotation);
    let t_rotation_inverse = rotation3(-rotation);
    let rotated: Vec<[f32; 3]> = o
        .subset_idxs
        .iter()
        .flatten()
        .map(|&i| {
            let p = xyz(landmarks, i);
            mat3_vec(&t_rotation, [p[0], p[1], 1.0])
        })
        .collect();
    let (mut max, mut min) = (rotated[0], rotated[0]);
    for p in &rotated[1..] {
        if max[0] < p[0] {
            max[0] = p[0];
        }
        if max[1] < p[1] {
            max[1] = p[1];
        }
        if min[0] > p[0] {
            min[0] = p[0];
        }
        if min[1] > p[1] {
            min[1] = p[1];
        }
    }
    let crop_width = max[0] - min[0];
    let crop_height = max[1] - min[1];
    let mut centre = min;
    centre[0] += max[0];
    centre[1] += max[1];
    centre[0] /= 2.0;
    centre[1] /= 2.0;
    let centre = mat3_vec(&t_rotation_inverse, centre);

    let eye = |m: &mut Mat4| {
        for (i, row) in m.iter_mut().enumerate() {
            row[i] = 1.0;
        }
    };
    let mut t = [[0.0f32; 4]; 4];
    eye(&mut t);
    let mut shift = t;
    shift[0][3] = centre[0];
    shift[1][3] = centre[1];
    t = mat4_mul(&t, &shift);
    let r = -rotation;
    let mut rot = [[0.0f32; 4]; 4];
    eye(&mut rot);
    rot[0][0] = r.cos();
    rot[0][1] = -r.sin();
    rot[1][0] = r.sin();
    rot[1][1] = r.cos();
    t = mat4_mul(&t, &rot);
    let mut scale = [[0.0f32; 4]; 4];
    eye(&mut scale);
    scale[0][0] = o.scale_x * crop_width / o.output_width as f32;
    scale[1][1] = o.scale_y * crop_height / o.output_height as f32;
    t = mat4_mul(&t, &scale);
    let mut shift2 = [[0.0f32; 4]; 4];
    eye(&mut shift2);
    shift2[0][3] = -(f64::from(o.output_width) / 2.0) as f32;
    shift2[1][3] = -(f64::from(o.output_height) / 2.0) as f32;
    t = mat4_mul(&t, &shift2);

    let mut out = [0.0f32; 16];
    for (k, v) in t.iter().flatten().enumerate() {
        out[k] = *v;
    }
    Ok(out)
}

/// `Landmarks2TransformMatrix`; its state is the parsed options.
struct Landmarks2TransformMatrix;

impl BuiltinKernel for Landmarks2TransformMatrix {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Options;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Options> {
        check_arity(ctx, OP, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let output = ctx.output(0).map_err(in_op(OP))?;
        if input.shape.len() != 3 {
            return Err(op_error(OP, format!("the landmarks must be 3-D, got shape {:?}", input.shape)));
        }
        if input.dtype != TfLiteType::kTfLiteFloat32 || output.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(op_error(OP, "input and output must be float32"));
        }
        let options = Options::parse(ctx.custom_initial_data()).map_err(in_op(OP))?;
        options.validate(input.num_elements() / 3).map_err(in_op(OP))?;
        ctx.resize_output(0, &[1, 4, 4]).map_err(in_op(OP))?;
        Ok(options)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), options: &mut Options) -> Result<()> {
        let landmarks = ctx.input(0).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let m = landmarks_to_transform_matrix(landmarks, options).map_err(in_op(OP))?;
        ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?.copy_from_slice(&m);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    fn opts(subset: &[i32]) -> Options {
        let mut subset_idxs: Vec<[i32; 2]> = subset.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
        if subset.len() % 2 == 1 {
            let l = subset[subset.len() - 1];
            subset_idxs.push([l, l]);
        }
        Options {
            subset_idxs,
            left_rotation_idx: 0,
            right_rotation_idx: 1,
            target_rotation_radians: 0.0,
            output_height: 4,
            output_width: 8,
            scale_x: 1.0,
            scale_y: 1.0,
        }
    }

    #[test]
    fn axis_aligned_box() {
        // Landmarks (0,0), (4,0), (4,2): no rotation; box 4 x 2 centred at (2, 1).
        let lm = [0.0, 0.0, 9.0, 4.0, 0.0, 9.0, 4.0, 2.0, 9.0];
        let m = landmarks_to_transform_matrix(&lm, &opts(&[0, 1, 2])).unwrap();
        // x' = 0.5 * (x - 4) + 2, y' = 0.5 * (y - 2) + 1.
        let want = [0.5, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        for (k, (a, b)) in m.iter().zip(want).enumerate() {
            let b = match k {
                3 => -4.0 * 0.5 + 2.0,
                7 => -2.0 * 0.5 + 1.0,
                _ => b,
            };
            assert!((a - b).abs() < 1e-6, "element {k}: {a} vs {b}");
        }
    }

    #[test]
    fn rotated_box_maps_crop_corners_to_the_box() {
        // Landmarks 0 -> 1 point straight down: the crop is rotated by 90 degrees.
        let lm = [0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 2.0, 4.0, 0.0];
        let mut o = opts(&[0, 1, 2]);
        o.output_width = 4;
        let m = landmarks_to_transform_matrix(&lm, &o).unwrap();
        let apply = |x: f32, y: f32| (m[0] * x + m[1] * y + m[3], m[4] * x + m[5] * y + m[7]);
        // The crop's centre maps to the box centre (1, 2).
        let (cx, cy) = apply(2.0, 2.0);
        assert!((cx - 1.0).abs() < 1e-5 && (cy - 2.0).abs() < 1e-5, "{cx} {cy}");
        // Crop x runs along the landmarks' +y.
        let (x1, y1) = apply(3.0, 2.0);
        assert!((x1 - cx).abs() < 1e-5 && (y1 - cy - 1.0).abs() < 1e-5, "{x1} {y1}");
    }

    #[test]
    fn invalid_options_are_errors() {
        let lm = [0.0f32; 9];
        for f in [
            |o: &mut Options| o.output_height = 0,
            |o: &mut Options| o.output_width = -1,
            |o: &mut Options| o.scale_x = 0.0,
            |o: &mut Options| o.scale_y = -1.0,
            |o: &mut Options| o.left_rotation_idx = -1,
            |o: &mut Options| o.right_rotation_idx = 3,
            |o: &mut Options| o.subset_idxs = vec![[0, 3]],
            |o: &mut Options| o.subset_idxs.clear(),
        ] {
            let mut o = opts(&[0, 1]);
            f(&mut o);
            assert!(landmarks_to_transform_matrix(&lm, &o).is_err(), "{o:?}");
        }
    }

    #[test]
    fn glue_without_options_fails_cleanly() {
        // No custom options: not a FlexBuffers map.
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 3, 3], &[0.0f32; 9], None, false);
        let o = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[o], None), TfLiteStatus::kTfLiteError);
    }
}
