//! How to run each experiment's kernels on the emulator: one entry per experiment,
//! mirroring its GPU launch (same kernels, sizing, grid, block and buffers, taken from
//! `experiments::*` wherever they are defined) and judging every output against a CPU
//! reference. `coalesce explain` and the emulator tests read [`REGISTRY`]; a test
//! checks that it covers every experiment in `experiments::ALL`.

use std::fmt;

use kernels::gpu::math::fma;
use kernels::particles::{Particle, step};
use kernels::{complex, copy, matmul, offset, particles, saxpy, stride, transpose};
use serde::Serialize;

use super::emulate::{Buffer, Check, Plan, global, global_mut};
use crate::buffers::f32_elements;
use crate::check::{AWKWARD_2D, AWKWARD_3D};
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::experiments as exps;
use crate::harness::Params;
use crate::launch::LaunchCfg;
use crate::validate::{self, Validation};

/// A problem size, as an experiment measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// n elements per array.
    Elements { n: usize },
    /// A rows x cols matrix.
    Matrix { rows: usize, cols: usize },
    /// C (m x n) = A (m x k) B (k x n).
    Product { m: usize, n: usize, k: usize },
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Shape::Elements { n } => write!(f, "n = {n}"),
            Shape::Matrix { rows, cols } => write!(f, "{rows} x {cols}"),
            Shape::Product { m, n, k } => write!(f, "m = {m}, n = {n}, k = {k}"),
        }
    }
}

/// The GPU `coalesce explain` sizes problems and grid-stride grids for when the user
/// gives no size: an H100 80GB HBM3 (132 SMs, 50 MiB L2), the project's reference.
/// Only grid sizes and default sizes depend on it, never a warp's addresses.
pub fn reference_gpu() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H100 80GB HBM3 (assumed by coalesce explain)".into(),
        driver_version: 0,
        ..DeviceInfo::h100()
    }
}

/// One experiment's kernels on the emulator.
pub trait Emulation: Sync {
    /// The experiment's name, as in `experiments::ALL`.
    fn experiment(&self) -> &'static str;
    /// Its variants, as the experiment lists them.
    fn variants(&self) -> Vec<String>;
    /// The problem the GPU experiment runs for `p` (its `--size` and `--shape`).
    fn shape(&self, p: &Params) -> Result<Shape>;
    /// Small awkward problems (not multiples of 4, 32 or a block; non-square) for
    /// validation on the emulator.
    fn awkward(&self) -> Vec<Shape>;
    /// The launch of `variant` at `shape`, with grid-stride grids sized for `sms` SMs
    /// (0 gives them a single block, so their loops run many iterations).
    fn plan(&self, variant: &str, shape: Shape, sms: u32) -> Result<Plan>;
}

/// Every experiment's emulation, in suite order.
pub static REGISTRY: &[&dyn Emulation] = &[
    &CopyEmu,
    &StrideEmu,
    &OffsetEmu,
    &TransposeEmu,
    &ParticlesEmu,
    &SaxpyEmu,
    &ComplexEmu,
    &MatmulEmu,
];

/// The emulation of experiment `name`.
pub fn find(name: &str) -> Option<&'static dyn Emulation> {
    REGISTRY.iter().copied().find(|e| e.experiment() == name)
}

fn unknown_variant(experiment: &str, variant: &str, known: Vec<String>) -> Error {
    Error::UnknownVariant {
        experiment: experiment.to_string(),
        variant: variant.to_string(),
        known: known.join(", "),
    }
}

fn wrong_shape(expected: &str, got: Shape) -> Error {
    Error::Emulation {
        kernel: "(plan)".into(),
        why: format!("expected {expected}, got {got}"),
    }
}

fn elements(shape: Shape) -> Result<usize> {
    match shape {
        Shape::Elements { n } if n > 0 => Ok(n),
        other => Err(wrong_shape("a positive element count", other)),
    }
}

fn too_large(what: String) -> Error {
    Error::TooLarge {
        what,
        why: "overflows usize".into(),
    }
}

/// Element counts that are not multiples of 4, 32 or a block (the GPU check's list,
/// without its 2^20 + 7: a million OS threads is the GPU's job).
const AWKWARD_N: [usize; 6] = [1, 31, 33, 255, 1029, 4095];

fn awkward_elements() -> Vec<Shape> {
    AWKWARD_N.into_iter().map(|n| Shape::Elements { n }).collect()
}

fn elements_of(p: &Params) -> Result<Shape> {
    Ok(Shape::Elements {
        n: f32_elements(p.size)?,
    })
}

/// `dst[i] = src[source(i)]` for i < n: copy, stride, offset and complex.
fn gather(
    kernel: &'static str,
    (n, src_len): (usize, usize),
    cfg: LaunchCfg,
    call: impl Fn(usize, usize) + Sync + 'static,
    source: impl Fn(usize) -> usize + Sync + 'static,
) -> Plan {
    Plan::new(
        kernel,
        cfg,
        vec![Buffer::input("src", src_len), Buffer::output("dst", n)],
        Box::new(move |b| call(b[0], b[1])),
        move |init| {
            let src = &init[0];
            vec![src.clone(), (0..n).map(|i| src[source(i)]).collect()]
        },
        Check::Exact,
    )
}

pub struct CopyEmu;

impl Emulation for CopyEmu {
    fn experiment(&self) -> &'static str {
        "copy"
    }
    fn variants(&self) -> Vec<String> {
        vec!["f32".into(), "f32x4".into()]
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        elements_of(p)
    }
    fn awkward(&self) -> Vec<Shape> {
        awkward_elements()
    }
    fn plan(&self, variant: &str, shape: Shape, sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        Ok(match variant {
            "f32" => gather(
                "copy_f32",
                (n, n),
                LaunchCfg::one_per_element(n, copy::BLOCK)?,
                move |s, d| unsafe { copy::copy_f32(n, global(s), global_mut(d)) },
                |i| i,
            ),
            "f32x4" => gather(
                "copy_f32x4",
                (n, n),
                LaunchCfg::grid_stride(n / 4, copy::BLOCK, sms, exps::copy::BLOCKS_PER_SM),
                move |s, d| unsafe { copy::copy_f32x4(n, global(s), global_mut(d)) },
                |i| i,
            ),
            other => return Err(unknown_variant("copy", other, self.variants())),
        })
    }
}

/// A sweep variant's parameter (stride or offset), checked against the sweep.
fn sweep_param(experiment: &str, variant: &str, sweep: &[usize]) -> Result<usize> {
    variant
        .parse::<usize>()
        .ok()
        .filter(|p| sweep.contains(p))
        .ok_or_else(|| unknown_variant(experiment, variant, sweep.iter().map(|p| p.to_string()).collect()))
}

pub struct StrideEmu;

impl Emulation for StrideEmu {
    fn experiment(&self) -> &'static str {
        "stride"
    }
    fn variants(&self) -> Vec<String> {
        stride::STRIDES.iter().map(|s| s.to_string()).collect()
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        elements_of(p)
    }
    fn awkward(&self) -> Vec<Shape> {
        awkward_elements()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        let s = sweep_param("stride", variant, &stride::STRIDES)?;
        // As on the GPU: one input sized for the largest stride, shared by all.
        let src_len = exps::stride::input_len(n).ok_or_else(|| too_large(format!("{n} elements")))?;
        Ok(gather(
            "stride_read",
            (n, src_len),
            LaunchCfg::one_per_element(n, stride::BLOCK)?,
            move |a, b| unsafe { stride::stride_read(n, s, global(a), global_mut(b)) },
            move |i| i * s,
        ))
    }
}

pub struct OffsetEmu;

impl Emulation for OffsetEmu {
    fn experiment(&self) -> &'static str {
        "offset"
    }
    fn variants(&self) -> Vec<String> {
        offset::OFFSETS.iter().map(|o| o.to_string()).collect()
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        elements_of(p)
    }
    fn awkward(&self) -> Vec<Shape> {
        awkward_elements()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        let o = sweep_param("offset", variant, &offset::OFFSETS)?;
        let pad = offset::OFFSETS.iter().max().copied().unwrap_or(0);
        let src_len = n
            .checked_add(pad)
            .ok_or_else(|| too_large(format!("{n} elements")))?;
        Ok(gather(
            "offset_read",
            (n, src_len),
            LaunchCfg::one_per_element(n, offset::BLOCK)?,
            move |a, b| unsafe { offset::offset_read(n, o, global(a), global_mut(b)) },
            move |i| i + o,
        ))
    }
}

pub struct TransposeEmu;

impl Emulation for TransposeEmu {
    fn experiment(&self) -> &'static str {
        "transpose"
    }
    fn variants(&self) -> Vec<String> {
        exps::transpose::VARIANTS
            .iter()
            .map(|v| v.0.to_string())
            .collect()
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        let (rows, cols) = exps::transpose::dims(p)?;
        Ok(Shape::Matrix { rows, cols })
    }
    fn awkward(&self) -> Vec<Shape> {
        AWKWARD_2D
            .iter()
            .map(|&[rows, cols]| Shape::Matrix { rows, cols })
            .collect()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let Shape::Matrix { rows, cols } = shape else {
            return Err(wrong_shape("a matrix", shape));
        };
        let &(_, kernel, over_output) = exps::transpose::VARIANTS
            .iter()
            .find(|v| v.0 == variant)
            .ok_or_else(|| unknown_variant("transpose", variant, self.variants()))?;
        let f: unsafe fn(usize, usize, _, _) = match kernel {
            "transpose_naive_write" => transpose::transpose_naive_write,
            "transpose_naive_read" => transpose::transpose_naive_read,
            "transpose_tiled" => transpose::transpose_tiled,
            _ => transpose::transpose_tiled_padded,
        };
        let cfg = if over_output {
            exps::transpose::grid(cols, rows)?
        } else {
            exps::transpose::grid(rows, cols)?
        };
        let len = rows
            .checked_mul(cols)
            .ok_or_else(|| too_large(format!("{rows} x {cols}")))?;
        Ok(gather(
            kernel,
            (len, len),
            cfg,
            move |s, d| unsafe { f(rows, cols, global(s), global_mut(d)) },
            // out[c][r] = in[r][c]
            move |i| (i % rows) * cols + i / rows,
        ))
    }
}

pub struct ParticlesEmu;

impl Emulation for ParticlesEmu {
    fn experiment(&self) -> &'static str {
        "particles"
    }
    fn variants(&self) -> Vec<String> {
        vec!["aos".into(), "soa".into()]
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        elements_of(p)
    }
    fn awkward(&self) -> Vec<Shape> {
        awkward_elements()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        const FIELDS: usize = exps::particles::FIELDS;
        let n = elements(shape)?;
        let dt = exps::particles::DT;
        let cfg = LaunchCfg::one_per_element(n, particles::BLOCK)?;
        let check = Check::Close(exps::particles::TOL);
        Ok(match variant {
            "aos" => {
                let len = n
                    .checked_mul(FIELDS)
                    .ok_or_else(|| too_large(format!("{n} particles")))?;
                Plan::new(
                    "particles_aos",
                    cfg,
                    vec![Buffer::in_out("particles", len)],
                    Box::new(move |b| unsafe {
                        particles::particles_aos(n, dt, global_mut::<Particle>(b[0]))
                    }),
                    move |init| {
                        let p = &init[0];
                        let moved = (0..p.len())
                            .map(|i| match i % FIELDS {
                                f if f < 3 => step(p[i], p[i + 3], dt),
                                _ => p[i],
                            })
                            .collect();
                        vec![moved]
                    },
                    check,
                )
            }
            "soa" => {
                let names = ["x", "y", "z", "vx", "vy", "vz"];
                let buffers = names
                    .iter()
                    .enumerate()
                    .map(|(f, &name)| {
                        if f < 3 {
                            Buffer::in_out(name, n)
                        } else {
                            Buffer::input(name, n)
                        }
                    })
                    .collect();
                Plan::new(
                    "particles_soa",
                    cfg,
                    buffers,
                    Box::new(move |b| unsafe {
                        particles::particles_soa(
                            n,
                            dt,
                            global_mut(b[0]),
                            global_mut(b[1]),
                            global_mut(b[2]),
                            global(b[3]),
                            global(b[4]),
                            global(b[5]),
                        )
                    }),
                    move |init| {
                        (0..FIELDS)
                            .map(|f| match f {
                                0..3 => (0..n).map(|i| step(init[f][i], init[f + 3][i], dt)).collect(),
                                _ => init[f].clone(),
                            })
                            .collect()
                    },
                    check,
                )
            }
            other => return Err(unknown_variant("particles", other, self.variants())),
        })
    }
}

pub struct SaxpyEmu;

impl Emulation for SaxpyEmu {
    fn experiment(&self) -> &'static str {
        "saxpy"
    }
    fn variants(&self) -> Vec<String> {
        exps::saxpy::VARIANTS.iter().map(|v| v.0.to_string()).collect()
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        elements_of(p)
    }
    fn awkward(&self) -> Vec<Shape> {
        awkward_elements()
    }
    fn plan(&self, variant: &str, shape: Shape, sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        let a = exps::saxpy::A;
        let stride = LaunchCfg::grid_stride(n / 4, saxpy::BLOCK, sms, exps::saxpy::BLOCKS_PER_SM);
        let (kernel, cfg, f): (_, _, unsafe fn(usize, f32, _, _)) = match variant {
            "f32" => (
                "saxpy_f32",
                LaunchCfg::one_per_element(n, saxpy::BLOCK)?,
                saxpy::saxpy_f32,
            ),
            "f32x4" => ("saxpy_f32x4", stride, saxpy::saxpy_f32x4),
            "f32x4-strided" => ("saxpy_f32x4_strided", stride, saxpy::saxpy_f32x4_strided),
            other => return Err(unknown_variant("saxpy", other, self.variants())),
        };
        Ok(Plan::new(
            kernel,
            cfg,
            vec![Buffer::input("x", n), Buffer::in_out("y", n)],
            Box::new(move |b| unsafe { f(n, a, global(b[0]), global_mut(b[1])) }),
            move |init| {
                let (x, y) = (&init[0], &init[1]);
                vec![x.clone(), (0..n).map(|i| fma(a, x[i], y[i])).collect()]
            },
            Check::Close(exps::saxpy::TOL),
        ))
    }
}

pub struct ComplexEmu;

impl Emulation for ComplexEmu {
    fn experiment(&self) -> &'static str {
        "complex"
    }
    fn variants(&self) -> Vec<String> {
        vec!["interleaved".into(), "split".into()]
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        elements_of(p)
    }
    fn awkward(&self) -> Vec<Shape> {
        awkward_elements()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        let cfg = LaunchCfg::one_per_element(n, complex::BLOCK)?;
        Ok(match variant {
            "interleaved" => {
                let pairs = n.checked_mul(2).ok_or_else(|| too_large(format!("{n} values")))?;
                gather(
                    "complex_real_interleaved",
                    (n, pairs),
                    cfg,
                    move |s, d| unsafe { complex::complex_real_interleaved(n, global(s), global_mut(d)) },
                    |i| 2 * i,
                )
            }
            "split" => gather(
                "complex_real_split",
                (n, n),
                cfg,
                move |s, d| unsafe { complex::complex_real_split(n, global(s), global_mut(d)) },
                |i| i,
            ),
            other => return Err(unknown_variant("complex", other, self.variants())),
        })
    }
}

pub struct MatmulEmu;

impl Emulation for MatmulEmu {
    fn experiment(&self) -> &'static str {
        "matmul"
    }
    fn variants(&self) -> Vec<String> {
        exps::matmul::VARIANTS.iter().map(|v| v.0.to_string()).collect()
    }
    fn shape(&self, p: &Params) -> Result<Shape> {
        let (m, n, k) = exps::matmul::dims(p)?;
        Ok(Shape::Product { m, n, k })
    }
    fn awkward(&self) -> Vec<Shape> {
        AWKWARD_3D
            .iter()
            .map(|&[m, n, k]| Shape::Product { m, n, k })
            .collect()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let Shape::Product { m, n, k } = shape else {
            return Err(wrong_shape("a product m x n x k", shape));
        };
        let index = exps::matmul::VARIANTS
            .iter()
            .position(|v| v.0 == variant)
            .ok_or_else(|| unknown_variant("matmul", variant, self.variants()))?;
        let kernel = exps::matmul::VARIANTS[index].1;
        let f: unsafe fn(usize, usize, usize, _, _, _) = match index {
            0 => matmul::matmul_naive,
            1 => matmul::matmul_accidental,
            _ => matmul::matmul_remapped,
        };
        let cfg = exps::matmul::launch_cfgs(m, n)?[index];
        let size = |a: usize, b: usize| {
            a.checked_mul(b)
                .ok_or_else(|| too_large(format!("{m} x {n} x {k}")))
        };
        let buffers = vec![
            Buffer::input("a", size(m, k)?),
            Buffer::input("b", size(k, n)?),
            Buffer::output("c", size(m, n)?),
        ];
        Ok(Plan::verified(
            kernel,
            cfg,
            buffers,
            Box::new(move |b| unsafe { f(m, n, k, global(b[0]), global(b[1]), global_mut(b[2])) }),
            // The GPU experiment's own check: an f64 reference and an error bound
            // scaled with k, on every entry; A and B must be untouched.
            Box::new(move |init: &[Vec<f32>], fin: &[Vec<f32>]| {
                let everything: Vec<usize> = (0..m * n).collect();
                let product = exps::matmul::check_product(
                    &fin[2],
                    (m, n, k),
                    |i| init[0][i],
                    |i| init[1][i],
                    &everything,
                );
                validate::all([
                    validate::exact(&fin[0], |i| init[0][i]),
                    validate::exact(&fin[1], |i| init[1][i]),
                    Validation {
                        detail: format!("c: {}", product.detail),
                        ..product
                    },
                ])
            }),
        ))
    }
}
