//! copy: the practical ceiling. f32 one per thread against f32x4 grid-stride.

use kernels::copy::BLOCK;

use super::gather::{Gather, Variant};
use crate::buffers::f32_elements;
use crate::device::{DeviceInfo, Gpu};
use crate::error::Result;
use crate::harness::{Experiment, Params, Prepared};
use crate::launch::LaunchCfg;

pub struct Copy;

/// Blocks per SM for the grid-stride loop: several waves, so each thread does only a
/// few iterations (a grid of one resident wave ran at 93% of cuMemcpyDtoD against 99%
/// for this on the H100; docs/perf-notes.md).
pub const BLOCKS_PER_SM: u32 = 256;

impl Experiment for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn about(&self) -> &'static str {
        "out[i] = in[i]: the practical bandwidth ceiling, next to the driver's cuMemcpyDtoD"
    }
    fn variants(&self) -> Vec<String> {
        vec!["f32".into(), "f32x4".into()]
    }
    fn kernels(&self) -> Vec<&'static str> {
        vec!["copy_f32", "copy_f32x4"]
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        p.size.checked_mul(2)
    }
    fn launches(&self, p: &Params, info: &DeviceInfo) -> Result<Vec<LaunchCfg>> {
        let n = f32_elements(p.size)?;
        Ok(vec![
            LaunchCfg::one_per_element(n, BLOCK)?,
            LaunchCfg::grid_stride(n / 4, BLOCK, info.sm_count, BLOCKS_PER_SM),
        ])
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let n = f32_elements(p.size)?;
        let cfgs = self.launches(p, &gpu.info)?;
        let same = |i: usize, _: usize| i;
        let variants = vec![
            Variant {
                name: "f32".into(),
                kernel: "copy_f32",
                param: None,
                cfg: cfgs[0],
                source: same,
            },
            Variant {
                name: "f32x4".into(),
                kernel: "copy_f32x4",
                param: None,
                cfg: cfgs[1],
                source: same,
            },
        ];
        Ok(Box::new(Gather::new(gpu, n, n, p.seed, variants)?))
    }
}
