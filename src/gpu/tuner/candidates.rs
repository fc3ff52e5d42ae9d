//! Work-group (OpenCL "local size") candidates.
//!
//! Two families live here:
//!
//! 1. **Exact re-implementations of TFLite's generators** (`work_group_picking.cc`,
//!    `workgroup_selection.cc`, TFLite 2.19). Order *and duplicates* are kept, because
//!    TFLite's EXHAUSTIVE tuner enqueues its list as is and returns an index into it:
//!    - FAST, generic ops: [`get_work_group`] (`GetWorkGroup`);
//!    - FAST, conv ops: [`get_work_group_conv`] (`GetWorkGroupConv`) with the z cap of
//!      [`conv_max_z_size`] (16; Adreno 4xx+: 64; Adreno 3xx: 16; then clamped to the
//!      device's z limit);
//!    - EXHAUSTIVE (both op classes): [`generate_work_group_sizes_aligned_to_grid`]
//!      (`GenerateWorkGroupSizesAlignedToGrid`): every triple of *exact divisors* of the
//!      grid ([`get_divisors`], order `i, n/i, …`, not sorted) within the per-axis device
//!      limits and with `32 <= x*y*z <= kernel max`; when that is empty,
//!      [`add_corner_cases`] (`grid/k` for k in 1..=4 per axis, then `{1..4}^3`, each only
//!      if it divides the grid) — which yields e.g. 65 copies of `(1,1,1)` for grid
//!      `(1,1,1)`;
//!    - helpers used by specific TFLite kernels: [`get_divisors_for_range`] (the
//!      NO_ALIGNMENT sizes), the XY128 pickers, `XMultipleOf`/`XYMultipleOf`,
//!      [`get_first_suitable_work_group`];
//!    - dispatch on the tuning type: [`get_possible_work_groups`] /
//!      [`get_possible_work_groups_conv`]; the unreachable-in-practice `default:` branch
//!      (`{8,4,1}`) is reproduced by [`get_possible_work_groups_raw`] for tuning-type
//!      values outside TFLite's enum.
//!
//!    TFLite computes with C++ `int`; these functions use `usize` with saturating
//!    arithmetic, and where TFLite would divide by zero (a zero grid axis or a zero kernel
//!    limit) they return a zero-sized axis instead of crashing. Nothing here panics.
//!
//! 2. **Our candidate list** ([`our_candidates`], the `--dedup` list of `wg-candidates`):
//!    the baseline(s) first (TFLite's FAST pick for the op class, so the tuner can always
//!    fall back to exactly what TFLite would run without tuning), then TFLite's
//!    EXHAUSTIVE list with duplicates removed, every entry validated locally (no zero
//!    axis, per-axis device limits, kernel and device totals — drivers are not trusted:
//!    PoCL accepts a local size of 0), near-divisor sizes (TFLite's
//!    `GetDivisorsForRange(n, 5)` idea, little padding waste) when the exact list is
//!    short (odd/prime grids), and an optional cap that keeps a shape-stratified sample
//!    (buckets by log2 of the total and of x; within a bucket: occupancy, preferred
//!    multiple, padding waste). The tuner's levels use no cap: on the fake profiler a
//!    24-entry cap before measuring cost more regret than single-shot tuning.

use std::collections::{BTreeSet, HashSet};

/// A local work size `[x, y, z]`.
pub type WorkGroup = [usize; 3];

/// TFLite's error text when a kernel has no work-group candidate (`GPUOperation::Tune`).
pub const NO_CANDIDATE_ERROR: &str = "Can not found work_group size to launch kernel";

/// TFLite's `default:` branch of `GetPossibleWorkGroups*`.
pub const DEFAULT_WORK_GROUP: WorkGroup = [8, 4, 1];

/// Minimal total work-group size in TFLite's EXHAUSTIVE list.
pub const MIN_EXHAUSTIVE_TOTAL: usize = 32;

/// The `range` TFLite passes to `GetDivisorsForRange` for NO_ALIGNMENT sizes.
pub const NO_ALIGNMENT_RANGE: usize = 5;

/// `KernelInfo` of TFLite's `CLKernel`: `CL_KERNEL_PRIVATE_MEM_SIZE` and
/// `CL_KERNEL_WORK_GROUP_SIZE` of the compiled kernel on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KernelInfo {
    pub private_memory_size: usize,
    pub max_work_group_size: usize,
}

impl KernelInfo {
    pub fn new(max_work_group_size: usize) -> Self {
        KernelInfo { private_memory_size: 0, max_work_group_size }
    }
}

/// The GPU families whose quirks change the tuner's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GpuVendor {
    /// Qualcomm Adreno with its model number (e.g. 640), 0 when unknown.
    Adreno {
        model: u32,
    },
    /// Arm Mali; `t6xx` is the Midgard T6xx family whose driver hangs with profiling
    /// queues (TFLite forces FAST tuning there).
    Mali {
        t6xx: bool,
    },
    Apple,
    /// Everything else, including CPU OpenCL (PoCL).
    #[default]
    Other,
}

impl GpuVendor {
    /// Classifies a device from `CL_DEVICE_VENDOR` and `CL_DEVICE_NAME`, the way TFLite's
    /// `GpuInfo` does it from the device strings ("Adreno (TM) 640", "Mali-T628", ...).
    pub fn detect(vendor: &str, device_name: &str) -> GpuVendor {
        let name = device_name.to_ascii_lowercase();
        let vendor = vendor.to_ascii_lowercase();
        if let Some(pos) = name.find("adreno") {
            let digits: String = name[pos + "adreno".len()..]
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(|c| c.is_ascii_digit())
                .collect();
            let model = digits.parse::<u32>().unwrap_or(0);
            return GpuVendor::Adreno { model };
        }
        if name.contains("mali") {
            return GpuVendor::Mali { t6xx: name.contains("mali-t6") };
        }
        if name.contains("apple") || vendor.contains("apple") {
            return GpuVendor::Apple;
        }
        GpuVendor::Other
    }
}

/// The device limits TFLite's generators read (`GpuInfo` / `DeviceInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `CL_DEVICE_MAX_WORK_ITEM_SIZES[0..3]`.
    pub max_work_group_size_x: usize,
    pub max_work_group_size_y: usize,
    pub max_work_group_size_z: usize,
    /// `CL_DEVICE_MAX_WORK_GROUP_SIZE` when known. Newer TFLite clamps each per-axis limit
    /// to it (a driver bug reports per-axis limits above the total); `None` = no clamp,
    /// which is what older TFLite releases and `wg-candidates --device-max` do.
    pub max_work_group_total_size: Option<usize>,
    pub vendor: GpuVendor,
}

impl DeviceInfo {
    pub fn new(max_xyz: WorkGroup) -> Self {
        DeviceInfo {
            max_work_group_size_x: max_xyz[0],
            max_work_group_size_y: max_xyz[1],
            max_work_group_size_z: max_xyz[2],
            max_work_group_total_size: None,
            vendor: GpuVendor::Other,
        }
    }

    pub fn with_vendor(mut self, vendor: GpuVendor) -> Self {
        self.vendor = vendor;
        self
    }

    pub fn with_total(mut self, total: usize) -> Self {
        self.max_work_group_total_size = Some(total);
        self
    }

    pub fn is_adreno(&self) -> bool {
        matches!(self.vendor, GpuVendor::Adreno { .. })
    }

    pub fn is_adreno3xx(&self) -> bool {
        matches!(self.vendor, GpuVendor::Adreno { model } if (300..400).contains(&model))
    }

    pub fn is_mali(&self) -> bool {
        matches!(self.vendor, GpuVendor::Mali { .. })
    }

    pub fn is_mali_t6xx(&self) -> bool {
        matches!(self.vendor, GpuVendor::Mali { t6xx: true })
    }

    fn clamp_total(&self, v: usize) -> usize {
        match self.max_work_group_total_size {
            Some(t) => v.min(t),
            None => v,
        }
    }

    /// `GetMaxWorkGroupSizeForX`.
    pub fn max_for_x(&self) -> usize {
        self.clamp_total(self.max_work_group_size_x)
    }
    /// `GetMaxWorkGroupSizeForY`.
    pub fn max_for_y(&self) -> usize {
        self.clamp_total(self.max_work_group_size_y)
    }
    /// `GetMaxWorkGroupSizeForZ`.
    pub fn max_for_z(&self) -> usize {
        self.clamp_total(self.max_work_group_size_z)
    }
    pub fn max_xyz(&self) -> WorkGroup {
        [self.max_for_x(), self.max_for_y(), self.max_for_z()]
    }
}

/// TFLite's `TuningType` (`common/task/tuning_type.h`): exactly two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuningType {
    Exhaustive = 0,
    Fast = 1,
}

impl TuningType {
    pub fn from_raw(v: i32) -> Option<TuningType> {
        match v {
            0 => Some(TuningType::Exhaustive),
            1 => Some(TuningType::Fast),
            _ => None,
        }
    }
}

/// `WorkGroupSizeAlignment`: PRECISE = sizes dividing the grid; NO_ALIGNMENT = sizes
/// whose multiple lands in `[n, n + 5]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alignment {
    Precise,
    NoAlignment,
}

// ---------------------------------------------------------------------------------------
// Small integer helpers (TFLite `util.h`), zero-safe.

/// `DivideRoundUp`; 0 when `d == 0` (TFLite would divide by zero).
pub fn divide_round_up(n: usize, d: usize) -> usize {
    if d == 0 {
        return 0;
    }
    n / d + usize::from(!n.is_multiple_of(d))
}

/// `n % d == 0`, false for `d == 0` (TFLite: undefined behaviour).
fn divides(d: usize, n: usize) -> bool {
    d != 0 && n.is_multiple_of(d)
}

/// `static_cast<int>(std::sqrt(n))` for non-negative integers: the floor square root.
pub fn isqrt(n: usize) -> usize {
    let mut r = (n as f64).sqrt() as usize;
    while r > 0 && r.checked_mul(r).is_none_or(|sq| sq > n) {
        r -= 1;
    }
    while (r + 1).checked_mul(r + 1).is_some_and(|sq| sq <= n) {
        r += 1;
    }
    r
}

fn product(wg: WorkGroup) -> usize {
    wg[0].saturating_mul(wg[1]).saturating_mul(wg[2])
}

/// `GetDivisors`: for `i` in `1..=sqrt(n)` dividing `n`, push `i` then `n / i` (if
/// different). Not sorted. `n == 0` gives an empty list.
pub fn get_divisors(n: usize) -> Vec<usize> {
    let max_divisor = isqrt(n);
    let mut out = Vec::with_capacity(max_divisor / 3 + 1);
    for i in 1..=max_divisor {
        let d = n / i;
        if i * d == n {
            out.push(i);
            if d != i {
                out.push(d);
            }
        }
    }
    out
}

/// `GetDivisorsForRange`: every size `s` such that some `k * s` lies in
/// `[n, n + range]`, in ascending order (TFLite collects them in a `std::set`).
pub fn get_divisors_for_range(n: usize, range: usize) -> Vec<usize> {
    let last = n.saturating_add(range);
    let max_divisor = isqrt(last);
    let mut set = BTreeSet::new();
    for i in 1..=max_divisor {
        let rem = n % i;
        let first = n.saturating_add((i - rem) % i);
        if first <= last {
            set.insert(i);
        }
        let mut j = first;
        while j <= last {
            let d = j / i;
            if d != i {
                set.insert(d);
            }
            match j.checked_add(i) {
                Some(next) => j = next,
                None => break,
            }
        }
    }
    set.into_iter().collect()
}

/// `GetPossibleSizes`.
pub fn get_possible_sizes(n: usize, alignment: Alignment) -> Vec<usize> {
    match alignment {
        Alignment::Precise => get_divisors(n),
        Alignment::NoAlignment => get_divisors_for_range(n, NO_ALIGNMENT_RANGE),
    }
}

/// `GenerateWorkGroupSizes`: x-major, then y, then z, in the order of the per-axis size
/// lists; keeps triples within the per-axis maxima and with
/// `min_total <= x*y*z <= max_total`.
pub fn generate_work_group_sizes(
    grid: WorkGroup,
    min_total: usize,
    max_total: usize,
    max_sizes: WorkGroup,
    alignment: [Alignment; 3],
) -> Vec<WorkGroup> {
    let sx = get_possible_sizes(grid[0], alignment[0]);
    let sy = get_possible_sizes(grid[1], alignment[1]);
    let sz = get_possible_sizes(grid[2], alignment[2]);
    let mut out = Vec::with_capacity(64);
    for &x in &sx {
        if x > max_sizes[0] {
            continue;
        }
        for &y in &sy {
            if y > max_sizes[1] {
                continue;
            }
            for &z in &sz {
                if z > max_sizes[2] {
                    continue;
                }
                let total = product([x, y, z]);
                if total < min_total || total > max_total {
                    continue;
                }
                out.push([x, y, z]);
            }
        }
    }
    out
}

/// `AddCornerCases`: first `ceil(grid / k)` for `k` in `1..=4` per axis (x-major), then
/// `{1..4}^3`; each kept only within the limits and, for PRECISE axes, dividing the grid.
/// Duplicates are kept, exactly as TFLite does.
pub fn add_corner_cases(
    grid: WorkGroup,
    max_total: usize,
    max_sizes: WorkGroup,
    alignment: [Alignment; 3],
    out: &mut Vec<WorkGroup>,
) {
    let precise_ok =
        |axis: usize, v: usize| -> bool { alignment[axis] != Alignment::Precise || divides(v, grid[axis]) };
    for x in 1..=4 {
        for y in 1..=4 {
            for z in 1..=4 {
                let wg = [divide_round_up(grid[0], x), divide_round_up(grid[1], y), divide_round_up(grid[2], z)];
                if wg[0] > max_sizes[0] || wg[1] > max_sizes[1] || wg[2] > max_sizes[2] || product(wg) > max_total {
                    continue;
                }
                if !(precise_ok(0, wg[0]) && precise_ok(1, wg[1]) && precise_ok(2, wg[2])) {
                    continue;
                }
                out.push(wg);
            }
        }
    }
    for x in 1..=4 {
        for y in 1..=4 {
            for z in 1..=4 {
                let wg = [x, y, z];
                if x > max_sizes[0] || y > max_sizes[1] || z > max_sizes[2] || product(wg) > max_total {
                    continue;
                }
                if !(precise_ok(0, x) && precise_ok(1, y) && precise_ok(2, z)) {
                    continue;
                }
                out.push(wg);
            }
        }
    }
}

/// `GenerateWorkGroupSizesAlignedToGrid` (PRECISE on every axis, minimal total 32, corner
/// cases when nothing else fits). This is TFLite's EXHAUSTIVE list, duplicates included.
pub fn generate_work_group_sizes_aligned_to_grid(
    grid: WorkGroup,
    max_work_group_size: WorkGroup,
    max_invocations: usize,
) -> Vec<WorkGroup> {
    let alignment = [Alignment::Precise; 3];
    let mut out =
        generate_work_group_sizes(grid, MIN_EXHAUSTIVE_TOTAL, max_invocations, max_work_group_size, alignment);
    if out.is_empty() {
        add_corner_cases(grid, max_invocations, max_work_group_size, alignment, &mut out);
    }
    out
}

/// `GetBiggestDividerWithPriority`: 8, 4 or 2 if they divide `number` (and are
/// `<= max_divider`), else the biggest divider `<= max_divider`, else 1.
pub fn get_biggest_divider_with_priority(number: usize, max_divider: usize) -> usize {
    for p in [8, 4, 2] {
        if number.is_multiple_of(p) && p <= max_divider {
            return p;
        }
    }
    get_biggest_divider(number, max_divider)
}

/// `GetBiggestDivider`: the biggest `i <= max_divider` dividing `number`, else 1.
pub fn get_biggest_divider(number: usize, max_divider: usize) -> usize {
    (1..=max_divider).rev().find(|&i| number.is_multiple_of(i)).unwrap_or(1)
}

/// `GetWorkGroup` (FAST, generic ops).
pub fn get_work_group(grid: WorkGroup, max_size: usize) -> WorkGroup {
    let wg_z = get_biggest_divider_with_priority(grid[2], 8);
    let wg_xy_size = max_size / wg_z;
    let wg_x = divide_round_up(grid[0], 2).min(wg_xy_size);
    let wg_y = wg_xy_size.checked_div(wg_x).unwrap_or(0).min(grid[1]);
    [wg_x, wg_y, wg_z]
}

/// `GetWorkGroupConv` (FAST, conv ops).
pub fn get_work_group_conv(grid: WorkGroup, max_size: usize, max_z_size: usize) -> WorkGroup {
    let wg_z = get_biggest_divider(grid[2], max_z_size);
    let wg_xy_size = 256usize.min(max_size) / wg_z;
    let wg_x = grid[0].min(wg_xy_size);
    let mut wg_y = wg_xy_size.checked_div(wg_x).unwrap_or(0).min(grid[1]);
    if wg_y == grid[1] && grid[1].is_multiple_of(2) {
        wg_y = grid[1] / 2;
    }
    [wg_x, wg_y, wg_z]
}

/// The z cap `GetPossibleWorkGroupsConv` passes to [`get_work_group_conv`]: 16, Adreno
/// 4xx+ 64, Adreno 3xx 16, then `min` with the device's z limit.
pub fn conv_max_z_size(device: &DeviceInfo) -> usize {
    conv_max_z_size_with(None, device)
}

/// [`conv_max_z_size`] with the vendor choice replaced by `cap` when given
/// (`wg-candidates --max-z`); the device clamp still applies.
pub fn conv_max_z_size_with(cap: Option<usize>, device: &DeviceInfo) -> usize {
    let vendor_cap = if device.is_adreno() { if device.is_adreno3xx() { 16 } else { 64 } } else { 16 };
    cap.unwrap_or(vendor_cap).min(device.max_for_z())
}

/// `GetWorkGroupsAlignedToGrid`.
pub fn work_groups_aligned_to_grid(device: &DeviceInfo, kernel: &KernelInfo, grid: WorkGroup) -> Vec<WorkGroup> {
    generate_work_group_sizes_aligned_to_grid(grid, device.max_xyz(), kernel.max_work_group_size)
}

/// `GetPossibleWorkGroups` (default GPU operations).
pub fn get_possible_work_groups(
    tuning: TuningType,
    device: &DeviceInfo,
    kernel: &KernelInfo,
    grid: WorkGroup,
) -> Vec<WorkGroup> {
    match tuning {
        TuningType::Fast => vec![get_work_group(grid, kernel.max_work_group_size)],
        TuningType::Exhaustive => work_groups_aligned_to_grid(device, kernel, grid),
    }
}

/// `GetPossibleWorkGroupsConv` (ConvGeneric, ConvBuffer1x1, ConvolutionTransposed...).
pub fn get_possible_work_groups_conv(
    tuning: TuningType,
    device: &DeviceInfo,
    kernel: &KernelInfo,
    grid: WorkGroup,
) -> Vec<WorkGroup> {
    match tuning {
        TuningType::Fast => vec![get_work_group_conv(grid, kernel.max_work_group_size, conv_max_z_size(device))],
        TuningType::Exhaustive => work_groups_aligned_to_grid(device, kernel, grid),
    }
}

/// [`get_possible_work_groups`] / [`get_possible_work_groups_conv`] for a raw tuning-type
/// value: outside TFLite's enum the C++ `default:` branch yields `{8, 4, 1}`.
pub fn get_possible_work_groups_raw(
    tuning: i32,
    conv: bool,
    device: &DeviceInfo,
    kernel: &KernelInfo,
    grid: WorkGroup,
) -> Vec<WorkGroup> {
    match TuningType::from_raw(tuning) {
        Some(t) if conv => get_possible_work_groups_conv(t, device, kernel, grid),
        Some(t) => get_possible_work_groups(t, device, kernel, grid),
        None => vec![DEFAULT_WORK_GROUP],
    }
}

// ---------------------------------------------------------------------------------------
// Helpers used by specific TFLite kernels.

const XY_128: [[usize; 2]; 8] = [[128, 1], [64, 2], [32, 4], [16, 8], [8, 16], [4, 32], [2, 64], [1, 128]];

/// `GetPenalty(int, int)`: padding needed to cover `grid` with groups of `group`.
pub fn get_penalty(grid: usize, group: usize) -> usize {
    if group == 0 {
        return 0;
    }
    let rem = grid % group;
    if rem == 0 { 0 } else { group - rem }
}

/// `GetPenalty(int2, int2)`.
pub fn get_penalty_2d(grid: [usize; 2], group: [usize; 2]) -> usize {
    let px = get_penalty(grid[0], group[0]);
    let py = get_penalty(grid[1], group[1]);
    px.saturating_mul(grid[1]).saturating_add(py.saturating_mul(grid[0])).saturating_add(px.saturating_mul(py))
}

/// `GetMaxSizeWithMinPenalty(int, int)`.
pub fn get_max_size_with_min_penalty(size: usize, max_size: usize) -> usize {
    let mut best = 128;
    let min_penalty = get_penalty(size, best);
    let mut i = 2usize;
    while i.saturating_mul(128) <= max_size {
        if get_penalty(size, i * 128) == min_penalty {
            best = i * 128;
        }
        i += 1;
    }
    best
}

/// `GetMaxSizeWithMinPenalty(int2, int)`.
pub fn get_max_size_with_min_penalty_2d(size: [usize; 2], max_size: usize) -> [usize; 2] {
    let min_penalty = XY_128.iter().map(|&g| get_penalty_2d(size, g)).min().unwrap_or(0);
    for g in XY_128 {
        let mut y = 1usize;
        while y.saturating_mul(g[1]) <= max_size {
            let ny = y * g[1];
            let mut x = 1usize;
            while x.saturating_mul(g[0]) <= max_size {
                let nx = x * g[0];
                if nx.saturating_mul(ny) > max_size {
                    break;
                }
                if get_penalty_2d(size, [nx, ny]) == min_penalty {
                    return [nx, ny];
                }
                x += 1;
            }
            y += 1;
        }
    }
    [0, 0]
}

/// `GetWorkGroupXY128ConvLinear`.
pub fn get_work_group_xy128_conv_linear(grid: WorkGroup) -> WorkGroup {
    let z = get_biggest_divider_with_priority(grid[2], 4);
    if grid[0] <= 128 {
        return [128, 1, z];
    }
    [get_max_size_with_min_penalty(grid[0], 512 / z), 1, z]
}

/// `GetWorkGroupXY128Conv`.
pub fn get_work_group_xy128_conv(grid: WorkGroup) -> WorkGroup {
    let z = get_biggest_divider_with_priority(grid[2], 4);
    if grid[0] <= 16 && grid[1] <= 8 {
        return [16, 8, z];
    }
    let xy = get_max_size_with_min_penalty_2d([grid[0], grid[1]], 512 / z);
    [xy[0], xy[1], z]
}

/// `GetWorkGroupXY128Simple`.
pub fn get_work_group_xy128_simple(_grid: WorkGroup) -> WorkGroup {
    [16, 8, 1]
}

/// `XY128RequiresMoreWorkGroupsThenXY128Linear`.
pub fn xy128_requires_more_work_groups_than_xy128_linear(width: usize, height: usize) -> bool {
    let planar = divide_round_up(width.saturating_mul(height), 128);
    !XY_128.iter().any(|g| divide_round_up(width, g[0]).saturating_mul(divide_round_up(height, g[1])) == planar)
}

/// `GenerateWorkGroupSizesXYMultipleOf` (`GetPossibleWorkGroupsXYMultipleOf`): powers of
/// two x, y with `x*y` a multiple of `multiplier`, z from the grid's possible sizes.
pub fn work_groups_xy_multiple_of(
    multiplier: usize,
    device: &DeviceInfo,
    kernel: &KernelInfo,
    grid: WorkGroup,
    z_alignment: Alignment,
) -> Vec<WorkGroup> {
    let mut out = Vec::new();
    if multiplier == 0 {
        return out;
    }
    let kmax = kernel.max_work_group_size;
    let zs = get_possible_sizes(grid[2], z_alignment);
    let mut x = 1usize;
    while x <= kmax {
        let mut y = 1usize;
        while y <= kmax {
            let xy = x.saturating_mul(y);
            if xy.is_multiple_of(multiplier) && xy <= kmax {
                for &z in &zs {
                    if xy.saturating_mul(z) > kmax {
                        continue;
                    }
                    if x <= device.max_for_x() && y <= device.max_for_y() && z <= device.max_for_z() {
                        out.push([x, y, z]);
                    }
                }
            }
            match y.checked_mul(2) {
                Some(v) => y = v,
                None => break,
            }
        }
        match x.checked_mul(2) {
            Some(v) => x = v,
            None => break,
        }
    }
    out
}

/// `GenerateWorkGroupSizesXMultipleOf` (`GetPossibleWorkGroupsXMultipleOf`): x a multiple
/// of `multiplier` up to the grid, y from the grid's exact divisors, z from its sizes.
pub fn work_groups_x_multiple_of(
    multiplier: usize,
    device: &DeviceInfo,
    kernel: &KernelInfo,
    grid: WorkGroup,
    z_alignment: Alignment,
) -> Vec<WorkGroup> {
    let mut out = Vec::new();
    if multiplier == 0 {
        return out;
    }
    let kmax = kernel.max_work_group_size;
    let zs = get_possible_sizes(grid[2], z_alignment);
    let ys = get_possible_sizes(grid[1], Alignment::Precise);
    let limit = grid[0].saturating_add(multiplier);
    let mut x = multiplier;
    while x <= kmax && x < limit {
        for &y in &ys {
            for &z in &zs {
                if x <= device.max_for_x()
                    && y <= device.max_for_y()
                    && z <= device.max_for_z()
                    && product([x, y, z]) <= kmax
                {
                    out.push([x, y, z]);
                }
            }
        }
        match x.checked_add(multiplier) {
            Some(v) => x = v,
            None => break,
        }
    }
    out
}

/// `GetFirstSuitableWorkGroup`: the first entry whose total fits, else `(1,1,1)`.
pub fn get_first_suitable_work_group(list: &[WorkGroup], max_wg_size: usize) -> WorkGroup {
    list.iter().copied().find(|&wg| product(wg) <= max_wg_size).unwrap_or([1, 1, 1])
}

// ---------------------------------------------------------------------------------------
// Our list.

/// Which TFLite FAST generator gives the baseline of an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// Default GPU operations (`GetPossibleWorkGroups`, FAST = [`get_work_group`]).
    Generic,
    /// Convolutions (`GetPossibleWorkGroupsConv`, FAST = [`get_work_group_conv`]).
    Conv,
}

/// TFLite's FAST pick for an op class (the tuner's baseline).
pub fn fast_pick(op: OpClass, device: &DeviceInfo, kernel: &KernelInfo, grid: WorkGroup) -> WorkGroup {
    match op {
        OpClass::Generic => get_work_group(grid, kernel.max_work_group_size),
        OpClass::Conv => get_work_group_conv(grid, kernel.max_work_group_size, conv_max_z_size(device)),
    }
}

/// Options of [`our_candidates`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CandidateOptions {
    /// Keep at most this many candidates (baselines included); `None` = no cap. A cap
    /// trades tuning quality for time (see `select` tests); screening by measurement is
    /// the better pruning, so our levels use none.
    pub max_candidates: Option<usize>,
    /// When fewer than this many candidates exist after deduplication, add near-divisor
    /// sizes (NO_ALIGNMENT sizes, total >= 32) with padding waste <= `max_waste`.
    /// 0 disables the fill.
    pub near_divisor_fill: usize,
    /// Maximal padding waste (`padded volume / grid volume - 1`) of a near-divisor size.
    pub max_waste: f64,
    /// `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` (1 = unknown); only used for ranking.
    pub preferred_multiple: usize,
    /// `CL_DEVICE_MAX_COMPUTE_UNITS` (0 = unknown); only used for ranking.
    pub compute_units: usize,
}

impl Default for CandidateOptions {
    fn default() -> Self {
        CandidateOptions {
            max_candidates: None,
            near_divisor_fill: 8,
            max_waste: 0.125,
            preferred_multiple: 1,
            compute_units: 0,
        }
    }
}

/// Local validation of a work group against the device and the kernel (never trust the
/// driver: PoCL accepts 0-sized local sizes).
pub fn is_valid(wg: WorkGroup, device: &DeviceInfo, kernel: &KernelInfo) -> bool {
    let total = product(wg);
    wg.iter().all(|&v| v > 0)
        && wg[0] <= device.max_for_x()
        && wg[1] <= device.max_for_y()
        && wg[2] <= device.max_for_z()
        && total <= kernel.max_work_group_size
        && device.max_work_group_total_size.is_none_or(|t| total <= t)
}

/// Number of work groups a uniform dispatch of `grid` with local size `wg` launches
/// (`ceil(grid / wg)` per axis, multiplied).
pub fn work_groups_count(grid: WorkGroup, wg: WorkGroup) -> WorkGroup {
    [divide_round_up(grid[0], wg[0]), divide_round_up(grid[1], wg[1]), divide_round_up(grid[2], wg[2])]
}

/// Padding waste of covering `grid` with groups of `wg`: `padded / grid - 1` (0 for exact
/// divisors; infinite for a zero axis).
pub fn padding_waste(grid: WorkGroup, wg: WorkGroup) -> f64 {
    if grid.contains(&0) || wg.contains(&0) {
        return f64::INFINITY;
    }
    let vol = grid[0] as f64 * grid[1] as f64 * grid[2] as f64;
    let c = work_groups_count(grid, wg);
    let padded = (c[0] as f64 * wg[0] as f64) * (c[1] as f64 * wg[1] as f64) * (c[2] as f64 * wg[2] as f64);
    padded / vol - 1.0
}

/// Hard preferences used by the cap (lower is better): under-occupancy (when the compute
/// unit count is known), not a preferred multiple (when known), padding waste (per mille).
fn rank_key(grid: WorkGroup, wg: WorkGroup, opts: &CandidateOptions) -> (u8, u8, u64) {
    let c = work_groups_count(grid, wg);
    let groups = product(c);
    let under = u8::from(opts.compute_units > 0 && groups < opts.compute_units);
    let total = product(wg);
    let not_mult = u8::from(opts.preferred_multiple > 1 && !total.is_multiple_of(opts.preferred_multiple));
    let waste = (padding_waste(grid, wg).min(1e9) * 1000.0) as u64;
    (under, not_mult, waste)
}

/// Picks `keep` of `rest` (index, work group) spread over the shapes: buckets by
/// (log2 of the total size, log2 of x), each bucket ordered by [`rank_key`] then list
/// order, taken round-robin (smallest bucket key first). A cap must not decide *which*
/// size is fast — no analytic score predicts that (an "ideal 128 items" score lost the
/// optimum in a third of our synthetic landscapes) — only keep a sample of every shape
/// for the measurements to decide.
fn stratified_pick(
    grid: WorkGroup,
    rest: &[(usize, WorkGroup)],
    keep: usize,
    opts: &CandidateOptions,
) -> Vec<(usize, WorkGroup)> {
    let log2 = |v: usize| usize::BITS - v.max(1).leading_zeros();
    let mut buckets: std::collections::BTreeMap<(u32, u32), Vec<(usize, WorkGroup)>> =
        std::collections::BTreeMap::new();
    for &(i, wg) in rest {
        buckets.entry((log2(product(wg)), log2(wg[0]))).or_default().push((i, wg));
    }
    for b in buckets.values_mut() {
        b.sort_by_key(|&(i, wg)| (rank_key(grid, wg, opts), i));
        b.reverse(); // pop() from the best end
    }
    let mut picked = Vec::with_capacity(keep);
    while picked.len() < keep {
        let mut any = false;
        for b in buckets.values_mut() {
            if picked.len() >= keep {
                break;
            }
            if let Some(x) = b.pop() {
                picked.push(x);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    picked
}

/// Our candidate list: `baselines` first (invalid ones dropped, duplicates removed), then
/// TFLite's EXHAUSTIVE list deduplicated and validated, then (short lists only)
/// near-divisor sizes with little padding, and finally the optional cap, which keeps the
/// baselines and a shape-stratified sample of the others (`stratified_pick`) in
/// generation order. Deterministic.
pub fn our_candidates(
    grid: WorkGroup,
    device: &DeviceInfo,
    kernel: &KernelInfo,
    baselines: &[WorkGroup],
    opts: &CandidateOptions,
) -> Vec<WorkGroup> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut push = |wg: WorkGroup, out: &mut Vec<WorkGroup>| {
        if is_valid(wg, device, kernel) && seen.insert(wg) {
            out.push(wg);
        }
    };
    for &b in baselines {
        push(b, &mut out);
    }
    let n_base = out.len();
    for wg in work_groups_aligned_to_grid(device, kernel, grid) {
        push(wg, &mut out);
    }
    if out.len() < opts.near_divisor_fill {
        let mut near: Vec<(usize, WorkGroup)> = generate_work_group_sizes(
            grid,
            MIN_EXHAUSTIVE_TOTAL,
            kernel.max_work_group_size,
            device.max_xyz(),
            [Alignment::NoAlignment; 3],
        )
        .into_iter()
        .filter(|&wg| padding_waste(grid, wg) <= opts.max_waste)
        .enumerate()
        .collect();
        near.sort_by(|a, b| padding_waste(grid, a.1).total_cmp(&padding_waste(grid, b.1)).then(a.0.cmp(&b.0)));
        for (_, wg) in near {
            push(wg, &mut out);
        }
    }
    if let Some(cap) = opts.max_candidates {
        let cap = cap.max(n_base);
        if out.len() > cap {
            let rest: Vec<(usize, WorkGroup)> = out[n_base..].iter().copied().enumerate().collect();
            let mut rest = stratified_pick(grid, &rest, cap - n_base, opts);
            rest.sort_by_key(|&(i, _)| i);
            out.truncate(n_base);
            out.extend(rest.into_iter().map(|(_, wg)| wg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(x: usize, y: usize, z: usize) -> DeviceInfo {
        DeviceInfo::new([x, y, z])
    }

    fn exhaustive(grid: WorkGroup, d: WorkGroup, k: usize) -> Vec<WorkGroup> {
        generate_work_group_sizes_aligned_to_grid(grid, d, k)
    }

    #[test]
    fn divisors_order_is_i_then_n_over_i() {
        assert_eq!(get_divisors(64), vec![1, 64, 2, 32, 4, 16, 8]);
        assert_eq!(get_divisors(16), vec![1, 16, 2, 8, 4]);
        assert_eq!(get_divisors(12), vec![1, 12, 2, 6, 3, 4]);
        assert_eq!(get_divisors(1), vec![1]);
        assert_eq!(get_divisors(7), vec![1, 7]);
        assert_eq!(get_divisors(36), vec![1, 36, 2, 18, 3, 12, 4, 9, 6]);
        assert_eq!(get_divisors(0), Vec::<usize>::new());
    }

    #[test]
    fn divisors_for_range() {
        // Sizes s with some k*s in [3, 8].
        assert_eq!(get_divisors_for_range(3, 5), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        // [64, 69]: 64=2^6, 65=5*13, 66=2*3*11, 67, 68=4*17, 69=3*23; i <= 8.
        assert_eq!(
            get_divisors_for_range(64, 5),
            vec![1, 2, 3, 4, 5, 6, 8, 11, 13, 16, 17, 22, 23, 32, 33, 34, 64, 65, 66, 67, 68, 69]
        );
        assert_eq!(get_divisors_for_range(1, 0), vec![1]);
        assert_eq!(get_divisors_for_range(0, 0), Vec::<usize>::new());
        assert_eq!(get_possible_sizes(12, Alignment::Precise), vec![1, 12, 2, 6, 3, 4]);
    }

    #[test]
    fn isqrt_is_floor() {
        for n in 0..10_000usize {
            let r = isqrt(n);
            assert!(r * r <= n && (r + 1) * (r + 1) > n, "{n}");
        }
        assert_eq!(isqrt(usize::MAX), (1usize << 32) - 1);
    }

    #[test]
    fn biggest_dividers() {
        assert_eq!(get_biggest_divider_with_priority(16, 8), 8);
        assert_eq!(get_biggest_divider_with_priority(12, 8), 4);
        assert_eq!(get_biggest_divider_with_priority(6, 8), 2);
        assert_eq!(get_biggest_divider_with_priority(7, 8), 7);
        assert_eq!(get_biggest_divider_with_priority(9, 8), 3);
        assert_eq!(get_biggest_divider_with_priority(16, 4), 4);
        assert_eq!(get_biggest_divider_with_priority(0, 8), 8);
        assert_eq!(get_biggest_divider(48, 16), 16);
        assert_eq!(get_biggest_divider(48, 64), 48);
        assert_eq!(get_biggest_divider(7, 0), 1);
        assert_eq!(get_biggest_divider(17, 16), 1);
    }

    // GPU.md part 4 §9 literal expectations.
    #[test]
    fn gpu_md_64x64x16() {
        let l = exhaustive([64, 64, 16], [4096; 3], 4096);
        assert_eq!(l.len(), 190);
        assert_eq!(&l[..6], &[[1, 64, 1], [1, 64, 16], [1, 64, 2], [1, 64, 8], [1, 64, 4], [1, 2, 16]]);
        assert_eq!(get_work_group([64, 64, 16], 4096), [32, 16, 8]);
        assert_eq!(get_work_group_conv([64, 64, 16], 4096, 16), [16, 1, 16]);
        let d = dev(4096, 4096, 4096);
        assert_eq!(conv_max_z_size(&d), 16);
        assert_eq!(
            get_possible_work_groups_conv(TuningType::Fast, &d, &KernelInfo::new(4096), [64, 64, 16]),
            vec![[16, 1, 16]]
        );
    }

    #[test]
    fn gpu_md_other_grids() {
        assert_eq!(exhaustive([64, 64, 32], [4096; 3], 4096).len(), 224);
        assert_eq!(get_work_group([64, 64, 32], 4096), [32, 16, 8]);
        assert_eq!(exhaustive([256, 256, 1], [4096; 3], 4096).len(), 56);
        assert_eq!(get_work_group_conv([256, 256, 1], 4096, 16), [256, 1, 1]);
        assert_eq!(exhaustive([128, 128, 1], [4096; 3], 4096).len(), 46);
        assert_eq!(get_work_group_conv([128, 128, 1], 4096, 16), [128, 2, 1]);
    }

    #[test]
    fn gpu_md_grid_1x1x1() {
        let l = exhaustive([1, 1, 1], [1024, 1024, 64], 1024);
        assert_eq!(l, vec![[1, 1, 1]; 65]);
        assert_eq!(get_work_group([1, 1, 1], 1024), [1, 1, 1]);
        assert_eq!(get_work_group_conv([1, 1, 1], 1024, 16), [1, 1, 1]);
        assert_eq!(get_work_group_xy128_conv([1, 1, 1]), [16, 8, 1]);
        assert_eq!(get_work_group_xy128_conv_linear([1, 1, 1]), [128, 1, 1]);
        assert_eq!(get_work_group_xy128_simple([1, 1, 1]), [16, 8, 1]);
    }

    #[test]
    fn gpu_md_grid_3x5x7() {
        assert_eq!(exhaustive([3, 5, 7], [1024, 1024, 64], 1024), vec![[1, 5, 7], [3, 5, 7]]);
        assert_eq!(get_work_group([3, 5, 7], 1024), [2, 5, 7]);
    }

    // Derived from the rules by hand.
    #[test]
    fn exhaustive_small_lists_literal() {
        // grid 8x4x1: divisors x [1,8,2,4], y [1,4,2], z [1]; totals >= 32: 8*4.
        assert_eq!(exhaustive([8, 4, 1], [1024; 3], 1024), vec![[8, 4, 1]]);
        // grid 16x4x2: x [1,16,2,8,4], y [1,4,2], z [1,2]
        assert_eq!(
            exhaustive([16, 4, 2], [1024; 3], 1024),
            vec![
                [16, 1, 2],
                [16, 4, 1],
                [16, 4, 2],
                [16, 2, 1],
                [16, 2, 2],
                [8, 4, 1],
                [8, 4, 2],
                [8, 2, 2],
                [4, 4, 2],
            ]
        );
        // kernel max 32 on the same grid keeps totals in [32, 32].
        assert_eq!(
            exhaustive([16, 4, 2], [1024; 3], 32),
            vec![[16, 1, 2], [16, 2, 1], [8, 4, 1], [8, 2, 2], [4, 4, 2]]
        );
        // per-axis device limit x <= 4.
        assert_eq!(exhaustive([16, 4, 2], [4, 1024, 1024], 1024), vec![[4, 4, 2]]);
    }

    #[test]
    fn corner_cases_literal() {
        // grid 2x1x1: no total >= 32, corner cases. First loop: ceil(2/x) for x 1..4 =
        // 2,1,1,1 (y, z all 1) -> 16 entries each for x=1 (2,1,1) and 48 of (1,1,1); second
        // loop: x in {1,2} divide 2 -> (1,1,1), (2,1,1).
        let l = exhaustive([2, 1, 1], [1024; 3], 1024);
        let mut want = vec![[2, 1, 1]; 16];
        want.extend(vec![[1, 1, 1]; 48]);
        want.push([1, 1, 1]);
        want.push([2, 1, 1]);
        assert_eq!(l, want);
        // grid 6x1x1, device x max 2: first loop: ceil(6/1)=6 > 2 no; ceil(6/2)=3 >2 no;
        // ceil(6/3)=2 ok (16x), ceil(6/4)=2 ok (16x); second loop: x=1,2 (3 > max).
        let l = exhaustive([6, 1, 1], [2, 1024, 1024], 1024);
        let mut want = vec![[2, 1, 1]; 32];
        want.push([1, 1, 1]);
        want.push([2, 1, 1]);
        assert_eq!(l, want);
        // grid 5x5x1: total 25 < 32 so the main list is empty; ceil(5/k) = 5,3,2,2 -> only
        // k=1 divides on x and y, z gives 1 for every k: (5,5,1) x4, then (1,1,1).
        let l = exhaustive([5, 5, 1], [1024; 3], 1024);
        let mut want = vec![[5, 5, 1]; 4];
        want.push([1, 1, 1]);
        assert_eq!(l, want);
    }

    #[test]
    fn fast_generic_literal() {
        assert_eq!(get_work_group([100, 3, 6], 256), [50, 2, 2]);
        assert_eq!(get_work_group([7, 9, 12], 128), [4, 8, 4]);
        assert_eq!(get_work_group([1000, 1000, 1], 1024), [500, 2, 1]);
        assert_eq!(get_work_group([5, 5, 5], 64), [3, 4, 5]);
        // Degenerate inputs never panic.
        assert_eq!(get_work_group([0, 4, 4], 64), [0, 0, 4]);
        assert_eq!(get_work_group([4, 4, 4], 0), [0, 0, 4]);
    }

    #[test]
    fn fast_conv_literal() {
        // z: biggest divider of 24 <= 16 = 12; xy = 256/12 = 21; x = 21; y = min(1, 10) = 1.
        assert_eq!(get_work_group_conv([40, 10, 24], 1024, 16), [21, 1, 12]);
        // z=64 on Adreno 6xx for grid.z 64: xy = 4, x = 4, y = 1.
        assert_eq!(get_work_group_conv([32, 32, 64], 1024, 64), [4, 1, 64]);
        // y halved when equal to an even grid.y: xy = 256, x = 8, y = min(32, 4)=4 -> 2.
        assert_eq!(get_work_group_conv([8, 4, 1], 1024, 16), [8, 2, 1]);
        // odd grid.y not halved.
        assert_eq!(get_work_group_conv([8, 3, 1], 1024, 16), [8, 3, 1]);
        // kernel max below 256.
        assert_eq!(get_work_group_conv([64, 64, 1], 128, 16), [64, 2, 1]);
        assert_eq!(get_work_group_conv([4, 4, 4], 0, 16), [0, 0, 4]);
    }

    #[test]
    fn vendor_quirks() {
        let adreno640 = dev(1024, 1024, 1024).with_vendor(GpuVendor::detect("QUALCOMM", "QUALCOMM Adreno(TM) 640"));
        assert_eq!(adreno640.vendor, GpuVendor::Adreno { model: 640 });
        assert!(adreno640.is_adreno() && !adreno640.is_adreno3xx());
        assert_eq!(conv_max_z_size(&adreno640), 64);
        let adreno330 = dev(1024, 1024, 1024).with_vendor(GpuVendor::detect("QUALCOMM", "Adreno (TM) 330"));
        assert!(adreno330.is_adreno3xx());
        assert_eq!(conv_max_z_size(&adreno330), 16);
        let adreno_small_z = dev(1024, 1024, 32).with_vendor(GpuVendor::Adreno { model: 650 });
        assert_eq!(conv_max_z_size(&adreno_small_z), 32);
        let mali = GpuVendor::detect("ARM", "Mali-T628");
        assert_eq!(mali, GpuVendor::Mali { t6xx: true });
        assert_eq!(GpuVendor::detect("ARM", "Mali-G78"), GpuVendor::Mali { t6xx: false });
        assert_eq!(
            GpuVendor::detect("GenuineIntel", "pthread-skylake-avx512-Intel(R) Xeon(R) Processor @ 2.50GHz"),
            GpuVendor::Other
        );
        assert_eq!(conv_max_z_size_with(Some(64), &dev(1024, 1024, 1024)), 64);
        assert_eq!(conv_max_z_size_with(Some(64), &dev(1024, 1024, 8)), 8);
        // Adreno 6xx conv FAST on a grid with z 64.
        assert_eq!(
            get_possible_work_groups_conv(TuningType::Fast, &adreno640, &KernelInfo::new(1024), [32, 32, 64]),
            vec![[4, 1, 64]]
        );
        // Total clamp (newer TFLite GetMaxWorkGroupSizeFor*).
        let clamped = dev(4096, 4096, 4096).with_total(256);
        assert_eq!(clamped.max_xyz(), [256, 256, 256]);
    }

    #[test]
    fn default_branch_and_dispatch() {
        let d = dev(1024, 1024, 64);
        let k = KernelInfo { private_memory_size: 0, max_work_group_size: 1024 };
        assert_eq!(get_possible_work_groups_raw(7, false, &d, &k, [64, 64, 16]), vec![[8, 4, 1]]);
        assert_eq!(get_possible_work_groups_raw(-1, true, &d, &k, [64, 64, 16]), vec![[8, 4, 1]]);
        assert_eq!(
            get_possible_work_groups_raw(1, false, &d, &k, [64, 64, 16]),
            vec![get_work_group([64, 64, 16], 1024)]
        );
        assert_eq!(get_possible_work_groups(TuningType::Exhaustive, &d, &k, [3, 5, 7]), vec![[1, 5, 7], [3, 5, 7]]);
    }

    #[test]
    fn xy128_helpers() {
        assert_eq!(get_max_size_with_min_penalty(300, 512), 384);
        assert_eq!(get_max_size_with_min_penalty(512, 512), 512);
        assert_eq!(get_work_group_xy128_conv_linear([512, 1, 8]), [128, 1, 4]);
        assert_eq!(get_work_group_xy128_conv_linear([200, 1, 3]), [128, 1, 3]);
        assert_eq!(get_work_group_xy128_conv([64, 64, 4]), [64, 2, 4]);
        assert!(!xy128_requires_more_work_groups_than_xy128_linear(64, 64));
        assert!(!xy128_requires_more_work_groups_than_xy128_linear(3, 3));
        assert!(xy128_requires_more_work_groups_than_xy128_linear(100, 100));
        assert_eq!(get_first_suitable_work_group(&[[32, 32, 1], [8, 8, 1]], 256), [8, 8, 1]);
        assert_eq!(get_first_suitable_work_group(&[[32, 32, 1]], 256), [1, 1, 1]);
    }

    #[test]
    fn multiple_of_helpers() {
        let d = dev(1024, 1024, 64);
        let k = KernelInfo::new(64);
        let l = work_groups_x_multiple_of(32, &d, &k, [40, 2, 1], Alignment::Precise);
        assert_eq!(l, vec![[32, 1, 1], [32, 2, 1], [64, 1, 1]]);
        let l = work_groups_xy_multiple_of(32, &d, &k, [64, 64, 2], Alignment::Precise);
        assert!(l.iter().all(|wg| (wg[0] * wg[1]) % 32 == 0 && wg[0] * wg[1] * wg[2] <= 64));
        assert_eq!(&l[..3], &[[1, 32, 1], [1, 32, 2], [1, 64, 1]]);
        assert!(work_groups_x_multiple_of(0, &d, &k, [4, 4, 4], Alignment::Precise).is_empty());
        assert!(work_groups_xy_multiple_of(0, &d, &k, [4, 4, 4], Alignment::Precise).is_empty());
    }

    /// Tiny xorshift for property tests.
    fn rng(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn properties_of_exhaustive_and_ours() {
        let mut s = 0x9E3779B97F4A7C15u64;
        for _ in 0..2000 {
            let pick = |s: &mut u64, m: u64| (rng(s) % m) as usize + 1;
            let grid = [pick(&mut s, 300), pick(&mut s, 300), pick(&mut s, 70)];
            let dmax = [pick(&mut s, 1024), pick(&mut s, 1024), pick(&mut s, 128)];
            let kmax = pick(&mut s, 1024);
            let d = DeviceInfo::new(dmax);
            let k = KernelInfo::new(kmax);
            let ex = work_groups_aligned_to_grid(&d, &k, grid);
            for wg in &ex {
                assert!(is_valid(*wg, &d, &k), "{grid:?} {dmax:?} {kmax} {wg:?}");
                for a in 0..3 {
                    assert_eq!(grid[a] % wg[a], 0);
                }
            }
            assert!(!ex.is_empty() || dmax.contains(&0));
            let fast = get_work_group(grid, kmax);
            assert!(product(fast) <= kmax);
            if kmax >= 8 {
                assert!(fast.iter().all(|&v| v > 0), "{grid:?} {kmax} {fast:?}");
            }
            let zcap = conv_max_z_size(&d);
            let conv = get_work_group_conv(grid, kmax, zcap);
            assert!(product(conv) <= kmax.min(256));
            if kmax.min(256) >= zcap {
                assert!(conv.iter().all(|&v| v > 0), "{grid:?} {kmax} {conv:?}");
            }
            let ours = our_candidates(grid, &d, &k, &[fast], &CandidateOptions::default());
            let set: HashSet<_> = ours.iter().copied().collect();
            assert_eq!(set.len(), ours.len(), "duplicates");
            assert!(ours.iter().all(|&wg| is_valid(wg, &d, &k)));
            if is_valid(fast, &d, &k) {
                assert_eq!(ours[0], fast);
            }
            for wg in &ex {
                assert!(set.contains(wg));
            }
            assert_eq!(ours, our_candidates(grid, &d, &k, &[fast], &CandidateOptions::default()));
            let capped = our_candidates(
                grid,
                &d,
                &k,
                &[fast],
                &CandidateOptions { max_candidates: Some(12), ..Default::default() },
            );
            assert!(capped.len() <= 12);
            assert!(capped.iter().all(|wg| set.contains(wg)));
        }
    }

    #[test]
    fn ours_literal() {
        let d = dev(1024, 1024, 64);
        let k = KernelInfo::new(1024);
        // 65 x (1,1,1) collapse to one entry, FAST first.
        let f = get_work_group([1, 1, 1], 1024);
        let o = CandidateOptions { near_divisor_fill: 0, ..Default::default() };
        assert_eq!(our_candidates([1, 1, 1], &d, &k, &[f], &o), vec![[1, 1, 1]]);
        // (3,5,7): FAST (2,5,7) then the two exact ones.
        let f = get_work_group([3, 5, 7], 1024);
        assert_eq!(our_candidates([3, 5, 7], &d, &k, &[f], &o), vec![[2, 5, 7], [1, 5, 7], [3, 5, 7]]);
        // Invalid baseline (x above the device limit) is dropped.
        let small = dev(4, 1024, 64);
        assert_eq!(our_candidates([16, 4, 2], &small, &k, &[[8, 4, 1]], &o), vec![[4, 4, 2]]);
        // Near-divisor fill for a prime grid: 13x13x1 exact: (13,13,1) only.
        let f = get_work_group([13, 13, 1], 1024);
        assert_eq!(f, [7, 13, 1]);
        let l = our_candidates([13, 13, 1], &d, &k, &[f], &CandidateOptions::default());
        assert_eq!(&l[..2], &[[7, 13, 1], [13, 13, 1]]);
        assert!(l.len() > 2);
        assert!(l[2..].iter().all(|&wg| padding_waste([13, 13, 1], wg) <= 0.125));
        // Cap keeps the baseline and ranks the rest.
        let f = get_work_group([64, 64, 16], 4096);
        let big = dev(4096, 4096, 4096);
        let kk = KernelInfo::new(4096);
        let l = our_candidates(
            [64, 64, 16],
            &big,
            &kk,
            &[f],
            &CandidateOptions { max_candidates: Some(8), ..Default::default() },
        );
        assert_eq!(l.len(), 8);
        assert_eq!(l[0], [32, 16, 8]);
        // Seven different shape buckets (log2 total, log2 x), in generation order.
        let buckets: HashSet<(u32, u32)> = l[1..].iter().map(|wg| (product(*wg).ilog2(), wg[0].ilog2())).collect();
        assert_eq!(buckets.len(), 7);
        assert_eq!(&l[1..3], &[[1, 64, 1], [1, 2, 16]]);
        // The FAST pick (32,16,8) is itself an exact candidate: 190 distinct entries.
        let full = our_candidates([64, 64, 16], &big, &kk, &[f], &CandidateOptions::default());
        assert_eq!(full.len(), 190);
        assert_eq!(full[0], [32, 16, 8]);
    }

    #[test]
    fn waste_and_validity() {
        assert_eq!(padding_waste([64, 64, 1], [8, 8, 1]), 0.0);
        assert!((padding_waste([3, 1, 1], [2, 1, 1]) - 1.0 / 3.0).abs() < 1e-12);
        assert!(padding_waste([0, 1, 1], [1, 1, 1]).is_infinite());
        let d = dev(64, 64, 64).with_total(128);
        let k = KernelInfo::new(256);
        assert!(!is_valid([0, 1, 1], &d, &k));
        assert!(!is_valid([16, 16, 1], &d, &k));
        assert!(is_valid([16, 8, 1], &d, &k));
        assert!(!is_valid([65, 1, 1], &d, &k));
    }
}
