//! Sparse constant tensors: the schema's `SparsityParameters`, checked against the
//! tensor's dense shape, and their expansion to dense data (the meaning TFLite's
//! `FormatConverter::SparseToDense` gives them).
//!
//! A sparse tensor of rank `n` whose dimensions `block_map[k]` are split into blocks is
//! walked as `n + k` levels: level `l` iterates "expanded" dimension `traversal_order[l]`,
//! where expanded dimensions `0..n` are the original dimensions (divided by their block
//! size where blocked) and `n + b` is the inside of block `b`. A DENSE level visits every
//! coordinate `0..dense_size` of each position of the level above; a SPARSE_CSR level
//! visits, for the `p`th position above, the coordinates `array_indices[s]` for `s` in
//! `array_segments[p]..array_segments[p + 1]`. The positions of the last level, in walk
//! order, are the stored values.
//!
//! TFLite's converter assumes more than it checks (its walk reads whatever the indices
//! say); here every index is checked once, at model load, so expanding cannot write or
//! read out of bounds.

use super::fb;
use crate::error::{Error, Result};

/// One level's storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimMetadata {
    /// Every coordinate `0..size` is stored.
    Dense(i32),
    /// Compressed: the coordinates of each parent position's children.
    Csr { segments: Vec<i32>, indices: Vec<i32> },
}

/// A tensor's sparsity parameters, as read from the model (or the C tensor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sparsity {
    pub traversal_order: Vec<i32>,
    pub block_map: Vec<i32>,
    pub dim_metadata: Vec<DimMetadata>,
}

/// A checked sparsity for one dense shape: what [`Expander::expand`] walks.
#[derive(Clone, Debug)]
pub struct Expander {
    levels: Vec<Level>,
    /// How far one step of each level moves in the dense row-major data.
    strides: Vec<usize>,
    dense_len: usize,
    num_values: usize,
}

#[derive(Clone, Debug)]
enum Level {
    Dense(usize),
    Csr { segments: Vec<usize>, indices: Vec<usize> },
}

fn index_vector(
    what: &str,
    kind: fb::SparseIndexVector,
    dm: &fb::DimensionMetadata<'_>,
    segments: bool,
) -> Result<Vec<i32>> {
    let missing = || Error::new(format!("{what} is missing"));
    let v = match kind {
        fb::SparseIndexVector::Int32Vector => {
            let v = if segments { dm.array_segments_as_int_32vector() } else { dm.array_indices_as_int_32vector() };
            v.and_then(|v| v.values()).ok_or_else(missing)?.iter().collect()
        }
        fb::SparseIndexVector::Uint16Vector => {
            let v = if segments { dm.array_segments_as_uint_16vector() } else { dm.array_indices_as_uint_16vector() };
            v.and_then(|v| v.values()).ok_or_else(missing)?.iter().map(i32::from).collect()
        }
        fb::SparseIndexVector::Uint8Vector => {
            let v = if segments { dm.array_segments_as_uint_8vector() } else { dm.array_indices_as_uint_8vector() };
            v.and_then(|v| v.values()).ok_or_else(missing)?.iter().map(|&v| i32::from(v)).collect()
        }
        other => return Err(Error::new(format!("{what} has index vector type {}", other.0))),
    };
    Ok(v)
}

impl Sparsity {
    /// Reads the flatbuffer's parameters (as TFLite's `ParseSparsity`: traversal order and
    /// dimension metadata are required, a CSR dimension needs both index vectors).
    pub fn from_flatbuffer(sp: &fb::SparsityParameters<'_>) -> Result<Sparsity> {
        let (Some(order), Some(meta)) = (sp.traversal_order(), sp.dim_metadata()) else {
            return Err(Error::new("sparsity has no traversal_order or no dim_metadata"));
        };
        let mut dim_metadata = Vec::with_capacity(meta.len());
        for (i, dm) in meta.iter().enumerate() {
            dim_metadata.push(match dm.format() {
                fb::DimensionType::DENSE => DimMetadata::Dense(dm.dense_size()),
                fb::DimensionType::SPARSE_CSR => DimMetadata::Csr {
                    segments: index_vector(
                        &format!("dimension {i}'s array_segments"),
                        dm.array_segments_type(),
                        &dm,
                        true,
                    )?,
                    indices: index_vector(
                        &format!("dimension {i}'s array_indices"),
                        dm.array_indices_type(),
                        &dm,
                        false,
                    )?,
                },
                f => return Err(Error::new(format!("dimension {i} has unknown format {}", f.0))),
            });
        }
        Ok(Sparsity {
            traversal_order: order.iter().collect(),
            block_map: sp.block_map().map(|b| b.iter().collect()).unwrap_or_default(),
            dim_metadata,
        })
    }

    /// Checks the parameters against the dense `shape` and plans the expansion. Every
    /// error names what is wrong.
    pub fn plan(&self, shape: &[i32]) -> Result<Expander> {
        let rank = shape.len();
        let nb = self.block_map.len();
        let total = rank + nb;
        let dims: Vec<usize> = shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| Error::new(format!("negative dimension in shape {shape:?}"))))
            .collect::<Result<_>>()?;
        let dense_len = dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::new(format!("shape {shape:?} overflows")))?;
        if self.traversal_order.len() != total {
            return Err(Error::new(format!(
                "traversal_order has {} entries, a rank-{rank} tensor with {nb} blocked dimensions needs {total}",
                self.traversal_order.len()
            )));
        }
        if self.dim_metadata.len() != total {
            return Err(Error::new(format!(
                "dim_metadata has {} entries, the traversal order has {total}",
                self.dim_metadata.len()
            )));
        }
        let mut level_of = vec![usize::MAX; total];
        for (l, &d) in self.traversal_order.iter().enumerate() {
            let d = usize::try_from(d).ok().filter(|&d| d < total && level_of[d] == usize::MAX).ok_or_else(|| {
                Error::new(format!("traversal_order {:?} is not a permutation of 0..{total}", self.traversal_order))
            })?;
            level_of[d] = l;
        }
        // The original dimensions are walked first, then the insides of the blocks.
        if let Some(l) = (0..rank).find(|&l| self.traversal_order[l] as usize >= rank) {
            return Err(Error::new(format!(
                "traversal_order {:?} walks block dimension {} at level {l}, before the tensor's own dimensions",
                self.traversal_order, self.traversal_order[l]
            )));
        }
        // Each original dimension is blocked at most once, in increasing order.
        let mut block_of = vec![None; rank];
        for (b, &d) in self.block_map.iter().enumerate() {
            let ok = usize::try_from(d).ok().filter(|&d| d < rank && (b == 0 || d as i32 > self.block_map[b - 1]));
            let Some(d) = ok else {
                return Err(Error::new(format!(
                    "block_map {:?} is not increasing dimensions of a rank-{rank} tensor",
                    self.block_map
                )));
            };
            block_of[d] = Some(b);
        }
        let mut block_size = vec![0usize; nb];
        for (b, bs) in block_size.iter_mut().enumerate() {
            let l = level_of[rank + b];
            let size = match &self.dim_metadata[l] {
                DimMetadata::Dense(s) if *s > 0 => *s as usize,
                _ => {
                    return Err(Error::new(format!(
                        "block dimension {b} (level {l}) must be DENSE with a positive size"
                    )));
                }
            };
            // TFLite reads each block's size from the level numbered by the traversal order
            // at position rank + b; refuse orders for which that is another size.
            let alt = self.traversal_order[rank + b] as usize;
            if self.dim_metadata[alt] != DimMetadata::Dense(size as i32) {
                return Err(Error::new(format!(
                    "traversal_order {:?} orders the block dimensions ambiguously",
                    self.traversal_order
                )));
            }
            let d = self.block_map[b] as usize;
            if !dims[d].is_multiple_of(size) {
                return Err(Error::new(format!(
                    "dimension {d} of shape {shape:?} is not a multiple of its block size {size}"
                )));
            }
            *bs = size;
        }
        let mut row_stride = vec![1usize; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            row_stride[d] = row_stride[d + 1] * dims[d + 1];
        }
        let mut levels = Vec::with_capacity(total);
        let mut strides = Vec::with_capacity(total);
        // Positions of the level above (one root position).
        let mut positions = 1usize;
        for l in 0..total {
            let e = self.traversal_order[l] as usize;
            let (extent, stride) = if e < rank {
                match block_of[e] {
                    Some(b) => (dims[e] / block_size[b], row_stride[e] * block_size[b]),
                    None => (dims[e], row_stride[e]),
                }
            } else {
                (block_size[e - rank], row_stride[self.block_map[e - rank] as usize])
            };
            match &self.dim_metadata[l] {
                DimMetadata::Dense(s) => {
                    if usize::try_from(*s).ok() != Some(extent) {
                        return Err(Error::new(format!(
                            "level {l} is DENSE of size {s}, but its dimension has {extent} entries"
                        )));
                    }
                    positions = positions
                        .checked_mul(extent)
                        .ok_or_else(|| Error::new(format!("level {l}: the number of positions overflows")))?;
                    levels.push(Level::Dense(extent));
                }
                DimMetadata::Csr { segments, indices } => {
                    if segments.len() != positions.saturating_add(1) {
                        return Err(Error::new(format!(
                            "level {l}: array_segments has {} entries, the level above has {positions} positions \
                             (needs {})",
                            segments.len(),
                            positions.saturating_add(1)
                        )));
                    }
                    if segments[0] != 0 {
                        return Err(Error::new(format!("level {l}: array_segments does not start at 0")));
                    }
                    if segments.windows(2).any(|w| w[1] < w[0]) {
                        return Err(Error::new(format!("level {l}: array_segments is not non-decreasing")));
                    }
                    let last = segments[segments.len() - 1];
                    if usize::try_from(last).ok() != Some(indices.len()) {
                        return Err(Error::new(format!(
                            "level {l}: array_segments ends at {last}, but array_indices has {} entries",
                            indices.len()
                        )));
                    }
                    if let Some(&bad) =
                        indices.iter().find(|&&i| usize::try_from(i).is_ok_and(|i| i >= extent) || i < 0)
                    {
                        return Err(Error::new(format!(
                            "level {l}: array_indices holds {bad}, outside its dimension of {extent}"
                        )));
                    }
                    positions = indices.len();
                    levels.push(Level::Csr {
                        segments: segments.iter().map(|&s| s as usize).collect(),
                        indices: indices.iter().map(|&i| i as usize).collect(),
                    });
                }
            }
            strides.push(stride);
        }
        Ok(Expander { levels, strides, dense_len, num_values: positions })
    }
}

impl Expander {
    /// How many values the sparse tensor stores.
    pub fn num_values(&self) -> usize {
        self.num_values
    }

    /// How many elements the dense tensor has.
    pub fn dense_len(&self) -> usize {
        self.dense_len
    }

    /// Writes the dense tensor: `zero` everywhere, then each stored value at its place.
    pub fn expand<T: Copy>(&self, values: &[T], out: &mut [T], zero: T) -> Result<()> {
        if values.len() != self.num_values || out.len() != self.dense_len {
            return Err(Error::new(format!(
                "sparse data of {} values into {} elements, the sparsity needs {} and {}",
                values.len(),
                out.len(),
                self.num_values,
                self.dense_len
            )));
        }
        out.fill(zero);
        let depth = self.levels.len();
        if depth == 0 {
            // A scalar: one value, no levels.
            if let (Some(o), Some(&v)) = (out.first_mut(), values.first()) {
                *o = v;
            }
            return Ok(());
        }
        // Depth-first walk: `cur[l]..end[l]` are the positions left at level l, `base[l]`
        // the first of them (a dense level's coordinate is its offset from it), `off[l]`
        // the dense offset of the levels above.
        let range = |l: usize, parent: usize| -> (usize, usize) {
            match &self.levels[l] {
                Level::Dense(n) => (parent * n, parent * n + n),
                Level::Csr { segments, .. } => (segments[parent], segments[parent + 1]),
            }
        };
        let mut cur = vec![0usize; depth];
        let mut end = vec![0usize; depth];
        let mut base = vec![0usize; depth];
        let mut off = vec![0usize; depth + 1];
        (cur[0], end[0]) = range(0, 0);
        base[0] = cur[0];
        let mut l = 0usize;
        loop {
            if cur[l] < end[l] {
                let pos = cur[l];
                let coord = match &self.levels[l] {
                    Level::Dense(_) => pos - base[l],
                    Level::Csr { indices, .. } => indices[pos],
                };
                off[l + 1] = off[l] + coord * self.strides[l];
                if l + 1 == depth {
                    let (Some(o), Some(&v)) = (out.get_mut(off[depth]), values.get(pos)) else {
                        return Err(Error::new("sparse index outside the dense tensor"));
                    };
                    *o = v;
                    cur[l] += 1;
                } else {
                    l += 1;
                    (cur[l], end[l]) = range(l, pos);
                    base[l] = cur[l];
                }
            } else if l == 0 {
                return Ok(());
            } else {
                l -= 1;
                cur[l] += 1;
            }
        }
    }

    /// The dense tensor as a new vector.
    pub fn to_dense<T: Copy>(&self, values: &[T], zero: T) -> Result<Vec<T>> {
        let mut out = vec![zero; self.dense_len];
        self.expand(values, &mut out, zero)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(segments: &[i32], indices: &[i32]) -> DimMetadata {
        DimMetadata::Csr { segments: segments.to_vec(), indices: indices.to_vec() }
    }

    fn sp(order: &[i32], block_map: &[i32], dims: Vec<DimMetadata>) -> Sparsity {
        Sparsity { traversal_order: order.to_vec(), block_map: block_map.to_vec(), dim_metadata: dims }
    }

    #[test]
    fn csr_matrix() {
        // [[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, 0, 4]]: rows dense, columns compressed.
        let s = sp(&[0, 1], &[], vec![DimMetadata::Dense(3), csr(&[0, 2, 2, 4], &[1, 3, 0, 3])]);
        let e = s.plan(&[3, 4]).unwrap();
        assert_eq!(e.num_values(), 4);
        let d = e.to_dense(&[1.0f32, 2.0, 3.0, 4.0], 0.0).unwrap();
        assert_eq!(d, [0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 4.0]);
    }

    #[test]
    fn column_major_traversal() {
        // Columns first: column 0 holds rows {1}, column 1 holds rows {0, 1}.
        let s = sp(&[1, 0], &[], vec![DimMetadata::Dense(2), csr(&[0, 1, 3], &[1, 0, 1])]);
        let d = s.plan(&[2, 2]).unwrap().to_dense(&[5i8, 6, 7], 0).unwrap();
        assert_eq!(d, [0, 6, 5, 7]);
    }

    #[test]
    fn blocked_1x2() {
        // 2x4 matrix in 1x2 blocks: row 0 has block 1, row 1 has blocks 0 and 1.
        let s = sp(&[0, 1, 2], &[1], vec![DimMetadata::Dense(2), csr(&[0, 1, 3], &[1, 0, 1]), DimMetadata::Dense(2)]);
        let e = s.plan(&[2, 4]).unwrap();
        assert_eq!(e.num_values(), 6);
        let d = e.to_dense(&[1, 2, 3, 4, 5, 6], 0).unwrap();
        assert_eq!(d, [0, 0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn blocked_2x2_both_dims() {
        // 4x4 in 2x2 blocks, block rows dense, block columns compressed; block (0,1) and (1,0).
        let s = sp(
            &[0, 1, 2, 3],
            &[0, 1],
            vec![DimMetadata::Dense(2), csr(&[0, 1, 2], &[1, 0]), DimMetadata::Dense(2), DimMetadata::Dense(2)],
        );
        let d = s.plan(&[4, 4]).unwrap().to_dense(&[1, 2, 3, 4, 5, 6, 7, 8], 0).unwrap();
        assert_eq!(d, [0, 0, 1, 2, 0, 0, 3, 4, 5, 6, 0, 0, 7, 8, 0, 0]);
    }

    #[test]
    fn all_dense_and_scalar() {
        let s = sp(&[0, 1], &[], vec![DimMetadata::Dense(2), DimMetadata::Dense(2)]);
        assert_eq!(s.plan(&[2, 2]).unwrap().to_dense(&[1, 2, 3, 4], 0).unwrap(), [1, 2, 3, 4]);
        let s = sp(&[], &[], vec![]);
        assert_eq!(s.plan(&[]).unwrap().to_dense(&[9], 0).unwrap(), [9]);
    }

    #[test]
    fn empty_rows_and_empty_tensor() {
        let s = sp(&[0, 1], &[], vec![DimMetadata::Dense(2), csr(&[0, 0, 0], &[])]);
        let e = s.plan(&[2, 3]).unwrap();
        assert_eq!(e.num_values(), 0);
        assert_eq!(e.to_dense::<i32>(&[], 0).unwrap(), [0; 6]);
        let s = sp(&[0, 1], &[], vec![DimMetadata::Dense(0), csr(&[0], &[])]);
        assert_eq!(s.plan(&[0, 3]).unwrap().dense_len(), 0);
    }

    #[test]
    fn malformed() {
        let bad = |s: Sparsity, shape: &[i32], what: &str| {
            let e = s.plan(shape).unwrap_err().to_string();
            assert!(e.contains(what), "{e} lacks {what}");
        };
        let d = DimMetadata::Dense;
        bad(sp(&[0, 0], &[], vec![d(2), d(2)]), &[2, 2], "permutation");
        bad(sp(&[0, 2], &[], vec![d(2), d(2)]), &[2, 2], "permutation");
        bad(sp(&[0], &[], vec![d(2)]), &[2, 2], "traversal_order has 1");
        bad(sp(&[0, 1], &[], vec![d(2)]), &[2, 2], "dim_metadata has 1");
        bad(sp(&[0, 1], &[], vec![d(2), d(3)]), &[2, 2], "DENSE of size 3");
        bad(sp(&[0, 1], &[], vec![d(2), csr(&[0, 1], &[0])]), &[2, 2], "array_segments has 2");
        bad(sp(&[0, 1], &[], vec![d(2), csr(&[1, 1, 1], &[0])]), &[2, 2], "start at 0");
        bad(sp(&[0, 1], &[], vec![d(2), csr(&[0, 2, 1], &[0, 1])]), &[2, 2], "non-decreasing");
        bad(sp(&[0, 1], &[], vec![d(2), csr(&[0, 1, 2], &[0])]), &[2, 2], "ends at 2");
        bad(sp(&[0, 1], &[], vec![d(2), csr(&[0, 1, 2], &[0, 2])]), &[2, 2], "holds 2");
        bad(sp(&[0, 1], &[], vec![d(2), csr(&[0, 1, 2], &[0, -1])]), &[2, 2], "holds -1");
        bad(sp(&[0, 1, 2], &[2], vec![d(2), d(2), d(1)]), &[2, 2], "block_map");
        bad(sp(&[0, 1, 2], &[1], vec![d(2), d(1), d(3)]), &[2, 4], "multiple of its block size 3");
        bad(sp(&[0, 1, 2], &[1], vec![d(2), d(2), d(0)]), &[2, 4], "positive size");
        bad(sp(&[0, 2, 1], &[1], vec![d(2), d(2), d(2)]), &[2, 4], "before the tensor's own");
        bad(sp(&[0, 1, 2], &[1], vec![d(2), d(2), csr(&[0; 5], &[])]), &[2, 4], "must be DENSE");
        let s = sp(&[0, 1], &[], vec![d(2), csr(&[0, 1, 2], &[0, 1])]);
        assert!(s.plan(&[2, 2]).unwrap().to_dense(&[1, 2, 3], 0).is_err());
    }
}
