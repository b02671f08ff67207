//! saxpy: y = a x + y. Scalar, float4 coalesced, float4 strided.
//! Useful bytes: 12 per element (x and y read, y written).

use cust::memory::DeviceBuffer;
use kernels::gpu::math::fma;
use kernels::saxpy::BLOCK;

use crate::buffers::{download, f32_elements, fill_uniform};
use crate::device::{DeviceInfo, Gpu};
use crate::error::Result;
use crate::harness::{Case, Experiment, Params, Prepared, Work};
use crate::launch::{Arg, LaunchCfg};
use crate::validate::{Tolerance, Validation, close};

pub struct Saxpy;

/// The scalar a.
pub const A: f32 = 1.5;
pub const TOL: Tolerance = Tolerance { rel: 1e-6, abs: 1e-6 };
/// Blocks per SM for the grid-stride loop: several waves, so each thread does only a
/// few iterations (a grid of one resident wave ran at 93% of cuMemcpyDtoD against 99%
/// for this on the H100; docs/perf-notes.md).
pub const BLOCKS_PER_SM: u32 = 256;

pub const VARIANTS: [(&str, &str); 3] = [
    ("f32", "saxpy_f32"),
    ("f32x4", "saxpy_f32x4"),
    ("f32x4-strided", "saxpy_f32x4_strided"),
];

impl Experiment for Saxpy {
    fn name(&self) -> &'static str {
        "saxpy"
    }
    fn about(&self) -> &'static str {
        "y = a*x + y: float4 loads help a coalesced walk and do not rescue a strided one"
    }
    fn variants(&self) -> Vec<String> {
        VARIANTS.iter().map(|v| v.0.to_string()).collect()
    }
    fn kernels(&self) -> Vec<&'static str> {
        VARIANTS.iter().map(|v| v.1).collect()
    }
    /// 2^26 elements: the strided walk then views them as 4096 x 4096 float4s.
    fn default_size(&self, _: &DeviceInfo) -> u64 {
        (1 << 26) * 4
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        p.size.checked_mul(2)
    }
    fn launches(&self, p: &Params, info: &DeviceInfo) -> Result<Vec<LaunchCfg>> {
        let n = f32_elements(p.size)?;
        Ok(vec![
            LaunchCfg::one_per_element(n, BLOCK)?,
            LaunchCfg::grid_stride(n / 4, BLOCK, info.sm_count, BLOCKS_PER_SM),
            LaunchCfg::grid_stride(n / 4, BLOCK, info.sm_count, BLOCKS_PER_SM),
        ])
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let n = f32_elements(p.size)?;
        let cfgs = self.launches(p, &gpu.info)?;
        let cases = VARIANTS
            .iter()
            .map(|&(v, k)| Case {
                variant: v.into(),
                kernel: k,
                work: Work::Bytes(12 * n as u64),
            })
            .collect();
        Ok(Box::new(Buffers {
            n,
            x: gpu.alloc(n)?,
            y: gpu.alloc(n)?,
            seed: p.seed,
            case_seed: p.seed,
            cfgs,
            cases,
        }))
    }
}

struct Buffers {
    n: usize,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    seed: u64,
    case_seed: u64,
    cfgs: Vec<LaunchCfg>,
    cases: Vec<Case>,
}

impl Prepared for Buffers {
    fn cases(&self) -> &[Case] {
        &self.cases
    }
    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()> {
        // y is updated in place: fresh x and y; an unwritten y keeps its input value,
        // which differs from a x + y.
        self.case_seed = self.seed.wrapping_add(2 * case as u64);
        fill_uniform(gpu, &self.x, self.case_seed)?;
        fill_uniform(gpu, &self.y, self.case_seed + 1)
    }
    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>) {
        let args = vec![
            self.n.into(),
            A.into(),
            self.x.as_device_ptr().into(),
            self.y.as_device_ptr().into(),
        ];
        (self.cfgs[case], args)
    }
    fn validate(&self, gpu: &Gpu, _case: usize) -> Result<Validation> {
        let got = download(gpu, &self.y)?;
        let s = self.case_seed;
        let u = |s: u64, i: usize| kernels::fill::uniform(s, i as u64);
        Ok(close(&got, |i| fma(A, u(s, i), u(s + 1, i)), TOL))
    }
}
