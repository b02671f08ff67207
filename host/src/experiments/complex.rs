//! complex: read the real parts of n complex values, interleaved against split.
//! Useful bytes: 4 read + 4 written per value.

use cust::memory::DeviceBuffer;
use kernels::complex::BLOCK;

use crate::buffers::{download, f32_elements, fill_uniform, poison};
use crate::device::{DeviceInfo, Gpu};
use crate::error::{Error, Result};
use crate::harness::{Case, Experiment, Params, Prepared, Work};
use crate::launch::{Arg, LaunchCfg};
use crate::validate::{Validation, exact};

pub struct Complex;

impl Experiment for Complex {
    fn name(&self) -> &'static str {
        "complex"
    }
    fn about(&self) -> &'static str {
        "real parts of complex values: interleaved [re, im] wastes half of every sector; split arrays do not"
    }
    fn variants(&self) -> Vec<String> {
        vec!["interleaved".into(), "split".into()]
    }
    fn kernels(&self) -> Vec<&'static str> {
        vec!["complex_real_interleaved", "complex_real_split"]
    }
    /// 2^26 values: `size` is the bytes of the real parts (4 per value).
    fn default_size(&self, _: &DeviceInfo) -> u64 {
        (1 << 26) * 4
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        // Interleaved pairs (2 floats), split real parts, output.
        p.size.checked_mul(4)
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let n = f32_elements(p.size)?;
        let pairs = n.checked_mul(2).ok_or_else(|| Error::TooLarge {
            what: format!("{n} values"),
            why: "overflows usize".into(),
        })?;
        let work = Work::Bytes(8 * n as u64);
        Ok(Box::new(Buffers {
            n,
            interleaved: gpu.alloc(pairs)?,
            re: gpu.alloc(n)?,
            out: gpu.alloc(n)?,
            seed: p.seed,
            case_seed: p.seed,
            cfg: LaunchCfg::one_per_element(n, BLOCK)?,
            cases: vec![
                Case {
                    variant: "interleaved".into(),
                    kernel: "complex_real_interleaved",
                    work,
                },
                Case {
                    variant: "split".into(),
                    kernel: "complex_real_split",
                    work,
                },
            ],
        }))
    }
}

struct Buffers {
    n: usize,
    interleaved: DeviceBuffer<f32>,
    re: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    seed: u64,
    case_seed: u64,
    cfg: LaunchCfg,
    cases: Vec<Case>,
}

impl Prepared for Buffers {
    fn cases(&self) -> &[Case] {
        &self.cases
    }
    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()> {
        self.case_seed = self.seed.wrapping_add(case as u64);
        let input = if case == 0 { &self.interleaved } else { &self.re };
        fill_uniform(gpu, input, self.case_seed)?;
        poison(gpu, &mut self.out)
    }
    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>) {
        let input = if case == 0 { &self.interleaved } else { &self.re };
        (
            self.cfg,
            vec![
                self.n.into(),
                input.as_device_ptr().into(),
                self.out.as_device_ptr().into(),
            ],
        )
    }
    fn validate(&self, gpu: &Gpu, case: usize) -> Result<Validation> {
        let got = download(gpu, &self.out)?;
        let (s, stride) = (self.case_seed, if case == 0 { 2 } else { 1 });
        Ok(exact(&got, |i| kernels::fill::uniform(s, (stride * i) as u64)))
    }
}
