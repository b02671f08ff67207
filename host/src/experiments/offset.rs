//! offset: out[i] = in[i + o] for o = 0..32 elements. Misalignment adds one sector per warp.

use kernels::offset::{BLOCK, OFFSETS};

use super::gather::{Gather, Variant};
use crate::buffers::f32_elements;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::harness::{Experiment, Params, Prepared};
use crate::launch::LaunchCfg;

pub struct Offset;

/// The input holds n + the largest offset elements.
const PAD: usize = OFFSETS[OFFSETS.len() - 1];

impl Experiment for Offset {
    fn name(&self) -> &'static str {
        "offset"
    }
    fn about(&self) -> &'static str {
        "out[i] = in[i+o]: a misaligned warp touches one extra sector, which costs little"
    }
    fn variants(&self) -> Vec<String> {
        OFFSETS.iter().map(|o| o.to_string()).collect()
    }
    fn kernels(&self) -> Vec<&'static str> {
        vec!["offset_read"]
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        let size = p.size;
        size.checked_mul(2)?.checked_add(4 * PAD as u64)
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let n = f32_elements(p.size)?;
        let src_len = n.checked_add(PAD).ok_or_else(|| Error::TooLarge {
            what: format!("{n} elements"),
            why: "overflows usize".into(),
        })?;
        let variants = OFFSETS
            .iter()
            .map(|&o| {
                Ok(Variant {
                    name: o.to_string(),
                    kernel: "offset_read",
                    param: Some(o),
                    cfg: LaunchCfg::one_per_element(n, BLOCK)?,
                    source: |i, o| i + o,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(Gather::new(gpu, n, src_len, p.seed, variants)?))
    }
}
