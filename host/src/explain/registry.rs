//! How to run each experiment's kernels on the emulator: one entry per experiment,
//! mirroring its GPU launch (same kernels, grid, block and buffers) and giving a CPU
//! reference for every output. `coalesce explain` and the emulator tests read
//! [`REGISTRY`]; a test checks it covers every experiment in `experiments::ALL`.

use std::fmt;

use kernels::{copy, offset, stride};
use serde::Serialize;

use super::emulate::{Buffer, Plan, global, global_mut};
use crate::buffers::f32_elements;
use crate::error::{Error, Result};
use crate::launch::LaunchCfg;

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

/// SMs of the GPU the grid-stride launches are sized for when explaining (an H100's;
/// only the grid size depends on it, not any warp's addresses).
pub const EXPLAIN_SMS: u32 = 132;

/// One experiment's kernels on the emulator.
pub trait Emulation: Sync {
    /// The experiment's name, as in `experiments::ALL`.
    fn experiment(&self) -> &'static str;
    /// Its variants, as the experiment lists them.
    fn variants(&self) -> Vec<String>;
    /// The problem the GPU experiment runs at `bytes` per array.
    fn shape(&self, bytes: u64) -> Result<Shape>;
    /// Small awkward problems (not multiples of 4, 32 or a block) for validation.
    fn awkward(&self) -> Vec<Shape>;
    /// The launch of `variant` at `shape`, with grid-stride grids sized for `sms` SMs.
    fn plan(&self, variant: &str, shape: Shape, sms: u32) -> Result<Plan>;
}

/// Every experiment's emulation, in suite order.
pub static REGISTRY: &[&dyn Emulation] = &[&CopyEmu, &StrideEmu, &OffsetEmu];

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

fn elements(shape: Shape) -> Result<usize> {
    match shape {
        Shape::Elements { n } if n > 0 => Ok(n),
        other => Err(Error::Emulation {
            kernel: "(plan)".into(),
            why: format!("expected a positive element count, got {other}"),
        }),
    }
}

const AWKWARD_N: [usize; 5] = [1, 31, 33, 255, 1029];

/// `dst[i] = src[source(i)]` for i < n: copy, stride and offset.
fn gather(
    kernel: &'static str,
    n: usize,
    src_len: usize,
    cfg: LaunchCfg,
    call: impl Fn(usize, usize) + Sync + 'static,
    source: impl Fn(usize) -> usize + Sync + 'static,
) -> Plan {
    Plan::new(
        kernel,
        cfg,
        vec![Buffer::input("src", src_len), Buffer::output("dst", n)],
        Box::new(move |b| call(b[0], b[1])),
        Box::new(move |init| {
            let src = &init[0];
            vec![src.clone(), (0..n).map(|i| src[source(i)]).collect()]
        }),
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
    fn shape(&self, bytes: u64) -> Result<Shape> {
        Ok(Shape::Elements {
            n: f32_elements(bytes)?,
        })
    }
    fn awkward(&self) -> Vec<Shape> {
        // 10007: several grid-stride iterations with a one-SM grid, and a tail.
        AWKWARD_N
            .into_iter()
            .chain([10_007])
            .map(|n| Shape::Elements { n })
            .collect()
    }
    fn plan(&self, variant: &str, shape: Shape, sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        Ok(match variant {
            "f32" => gather(
                "copy_f32",
                n,
                n,
                LaunchCfg::one_per_element(n, copy::BLOCK)?,
                move |s, d| unsafe { copy::copy_f32(n, global(s), global_mut(d)) },
                |i| i,
            ),
            "f32x4" => gather(
                "copy_f32x4",
                n,
                n,
                LaunchCfg::grid_stride(n / 4, copy::BLOCK, sms, crate::experiments::copy::BLOCKS_PER_SM),
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
    fn shape(&self, bytes: u64) -> Result<Shape> {
        CopyEmu.shape(bytes)
    }
    fn awkward(&self) -> Vec<Shape> {
        AWKWARD_N.into_iter().map(|n| Shape::Elements { n }).collect()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        let s = sweep_param("stride", variant, &stride::STRIDES)?;
        // As on the GPU: one input sized for the largest stride, shared by all.
        let src_len = crate::experiments::stride::input_len(n).ok_or_else(|| Error::TooLarge {
            what: format!("{n} elements"),
            why: "the stride-64 input overflows usize".into(),
        })?;
        Ok(gather(
            "stride_read",
            n,
            src_len,
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
    fn shape(&self, bytes: u64) -> Result<Shape> {
        CopyEmu.shape(bytes)
    }
    fn awkward(&self) -> Vec<Shape> {
        AWKWARD_N.into_iter().map(|n| Shape::Elements { n }).collect()
    }
    fn plan(&self, variant: &str, shape: Shape, _sms: u32) -> Result<Plan> {
        let n = elements(shape)?;
        let o = sweep_param("offset", variant, &offset::OFFSETS)?;
        let pad = offset::OFFSETS.iter().max().copied().unwrap_or(0);
        Ok(gather(
            "offset_read",
            n,
            n + pad,
            LaunchCfg::one_per_element(n, offset::BLOCK)?,
            move |a, b| unsafe { offset::offset_read(n, o, global(a), global_mut(b)) },
            move |i| i + o,
        ))
    }
}
