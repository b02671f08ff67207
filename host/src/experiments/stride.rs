//! stride: out[i] = in[i * s] for s = 1..64. Same useful bytes for every s; only
//! the spread of each warp's loads changes.

use kernels::stride::{BLOCK, STRIDES};

use super::gather::{Gather, Variant};
use crate::buffers::f32_elements;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::harness::{Experiment, Params, Prepared};
use crate::launch::LaunchCfg;

pub struct Stride;

/// Input elements for `n` outputs read at the largest stride: (n - 1) * 64 + 1.
pub fn input_len(n: usize) -> Option<usize> {
    let max = *STRIDES.iter().max()?;
    (n.checked_sub(1)?).checked_mul(max)?.checked_add(1)
}

impl Experiment for Stride {
    fn name(&self) -> &'static str {
        "stride"
    }
    fn about(&self) -> &'static str {
        "out[i] = in[i*s]: bandwidth falls as each warp request touches more 32-byte sectors"
    }
    fn variants(&self) -> Vec<String> {
        STRIDES.iter().map(|s| s.to_string()).collect()
    }
    fn kernels(&self) -> Vec<&'static str> {
        vec!["stride_read"]
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        let size = p.size;
        let n = usize::try_from(size / 4).ok()?;
        let input = input_len(n.max(1))? as u64;
        input.checked_mul(4)?.checked_add(size)
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let n = f32_elements(p.size)?;
        let src_len = input_len(n).ok_or_else(|| Error::TooLarge {
            what: format!("{n} elements"),
            why: "the stride-64 input overflows usize".into(),
        })?;
        let variants = STRIDES
            .iter()
            .map(|&s| {
                Ok(Variant {
                    name: s.to_string(),
                    kernel: "stride_read",
                    param: Some(s),
                    cfg: LaunchCfg::one_per_element(n, BLOCK)?,
                    source: |i, s| i * s,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(Gather::new(gpu, n, src_len, p.seed, variants)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_covers_the_largest_stride() {
        assert_eq!(input_len(1), Some(1));
        assert_eq!(input_len(100), Some(99 * 64 + 1));
        assert_eq!(input_len(0), None);
        assert_eq!(input_len(usize::MAX), None);
    }

    #[test]
    fn footprint_counts_input_and_output() {
        assert_eq!(
            Stride.device_bytes(&Params::sized(4 * 100, 0)),
            Some(4 * (99 * 64 + 1) + 400)
        );
        assert_eq!(Stride.device_bytes(&Params::sized(u64::MAX, 0)), None);
    }
}
