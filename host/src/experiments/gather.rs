//! What copy, stride and offset share: `out[i] = in[source(i)]` for i < n, one
//! input and one output buffer, validated exactly against the generated input.

use cust::memory::DeviceBuffer;

use crate::buffers::{download, fill_uniform, poison};
use crate::device::Gpu;
use crate::error::Result;
use crate::harness::{Case, Prepared, Work};
use crate::launch::{Arg, LaunchCfg};
use crate::validate::{Validation, exact};

/// One variant: its kernel, launch, the extra parameter it takes (stride, offset)
/// and where output element i comes from.
pub struct Variant {
    pub name: String,
    pub kernel: &'static str,
    pub param: Option<usize>,
    pub cfg: LaunchCfg,
    pub source: fn(i: usize, param: usize) -> usize,
}

/// The buffers and variants of one gather experiment at one size.
pub struct Gather {
    n: usize,
    src: DeviceBuffer<f32>,
    dst: DeviceBuffer<f32>,
    seed: u64,
    case_seed: u64,
    cases: Vec<Case>,
    variants: Vec<Variant>,
}

impl Gather {
    /// Allocates `src_len` inputs and `n` outputs. Useful bytes: n read + n written.
    pub fn new(gpu: &Gpu, n: usize, src_len: usize, seed: u64, variants: Vec<Variant>) -> Result<Self> {
        let cases = variants
            .iter()
            .map(|v| Case {
                variant: v.name.clone(),
                kernel: v.kernel,
                work: Work::Bytes(2 * 4 * n as u64),
            })
            .collect();
        Ok(Gather {
            n,
            src: gpu.alloc(src_len)?,
            dst: gpu.alloc(n)?,
            seed,
            case_seed: seed,
            cases,
            variants,
        })
    }

    fn args(&self, v: &Variant) -> Vec<Arg> {
        let mut a = vec![Arg::from(self.n)];
        a.extend(v.param.map(Arg::from));
        a.push(self.src.as_device_ptr().into());
        a.push(self.dst.as_device_ptr().into());
        a
    }
}

impl Prepared for Gather {
    fn cases(&self) -> &[Case] {
        &self.cases
    }

    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()> {
        self.case_seed = self.seed.wrapping_add(case as u64);
        fill_uniform(gpu, &self.src, self.case_seed)?;
        poison(gpu, &mut self.dst)
    }

    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>) {
        let v = &self.variants[case];
        (v.cfg, self.args(v))
    }

    fn validate(&self, gpu: &Gpu, case: usize) -> Result<Validation> {
        let got = download(gpu, &self.dst)?;
        let v = &self.variants[case];
        let (seed, param, source) = (self.case_seed, v.param.unwrap_or(0), v.source);
        Ok(exact(&got, |i| {
            kernels::fill::uniform(seed, source(i, param) as u64)
        }))
    }
}
