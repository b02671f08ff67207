//! The one resolver from `--size` and `--shape` to a problem, for `run` and `explain`.

use super::{Experiment, Problem};
use crate::device::DeviceInfo;
use crate::error::{Error, Result};

impl Experiment {
    /// The problem `--size` and `--shape` ask of this experiment, as `run` and
    /// `explain` both read them: `shape` where it has this experiment's rank (every
    /// dimension above zero), else `size` bytes per array, else the experiment's
    /// default size on `gpu`; and whether the user chose it (`run` may shrink a
    /// default to fit the GPU's memory).
    pub fn requested_problem(
        &self,
        size: Option<u64>,
        shape: Option<&[usize]>,
        gpu: &DeviceInfo,
    ) -> Result<(Problem, bool)> {
        let shape = shape.filter(|s| s.len() == self.shape_rank());
        if shape.is_some_and(|dims| dims.contains(&0)) {
            return Err(Error::Zero {
                what: "every --shape dimension",
            });
        }
        let bytes = size.unwrap_or_else(|| self.default_size.bytes(gpu));
        let problem = self.kind.problem(bytes, self.elem(), shape)?;
        Ok((problem, size.is_some() || shape.is_some()))
    }
}
