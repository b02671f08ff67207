//! The stride sweep: `stride_read` at strides 1..64 on the `stride` experiment's
//! buffers, the DRAM read granularity's measurements ([`super::read_granularity`]).

use kernels::entry;

use super::{Effort, GRANULARITY_STRIDES, SEED, Sweep, problem_for};
use crate::device::Gpu;
use crate::error::Result;
use crate::experiments::stride;
use crate::launch::AsGlobal;
use crate::prepared::Prepared;
use crate::profile::SweepPoint;
use crate::timing::time_launches;
use crate::units::{format_bytes, gb_per_s};

/// The index of the `stride_read` variant of stride `s`, if declared: the kernel the
/// sweep launches at any stride up to the experiment's largest.
fn stride_variant(s: usize) -> Option<usize> {
    stride::EXPERIMENT
        .variants
        .iter()
        .position(|v| v.kernel == entry::stride_read.info() && v.param == s)
}

/// `stride_read` at every stride swept on the stride experiment's buffers (the
/// input covers stride 64), each the median of the effort's reps; the strides the fit
/// uses are first validated through their declared variants.
pub(super) fn stride_sweep(gpu: &Gpu, effort: Effort, progress: &mut impl FnMut(&str)) -> Result<Sweep> {
    let exp = &stride::EXPERIMENT;
    let problem = problem_for(gpu, exp, effort)?;
    let bytes = 4 * problem.dim(crate::experiment::Dim::Len) as u64;
    progress(&format!("stride: {} per array", format_bytes(bytes)));
    let mut p = Prepared::new(gpu, exp, problem, SEED)?;
    let stride_read = gpu.load(&entry::stride_read)?;
    let mut failures = Vec::new();
    for s in GRANULARITY_STRIDES {
        // Declared (a unit test says so); the check also fills the input for the sweep.
        let Some(i) = stride_variant(s) else { continue };
        let v = p.check(gpu, i, stride_read.function())?;
        if !v.ok {
            failures.push(format!("stride/{}: {}", exp.variants[i].name, v.detail));
        }
    }
    let base = stride_variant(1).unwrap_or(0);
    let (cfg, _) = p.launch_spec(base)?;
    // The declaration's buffers: the input covers the largest stride.
    let n = problem.dim(crate::experiment::Dim::Len);
    let (src, dst) = (p.buffer(0).global_as::<f32>(), p.buffer(1).global_mut_as::<f32>());
    let work = p.work().bytes();
    let mut points = Vec::new();
    for s in effort.strides() {
        progress(&format!("stride {s}"));
        let t = time_launches(gpu, effort.reps(), || stride_read.launch(cfg, (n, s, src, dst)))?;
        points.push(SweepPoint {
            x: s as f64,
            gb_per_s: gb_per_s(work, t.median_ms),
        });
    }
    Ok(Sweep {
        points,
        bytes,
        failures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Arg;

    #[test]
    fn the_stride_sweep_launches_a_declared_kernel_within_its_input() {
        let max = stride::EXPERIMENT.variants.iter().map(|v| v.param).max().unwrap();
        for quick in [false, true] {
            let strides = Effort { quick }.strides();
            assert!(strides.iter().all(|&s| (1..=max).contains(&s)), "{strides:?}");
            for s in GRANULARITY_STRIDES {
                assert!(strides.contains(&s));
                assert!(stride_variant(s).is_some(), "stride {s} is not declared");
            }
        }
        let base = &stride::EXPERIMENT.variants[stride_variant(1).unwrap()];
        // The sweep passes (n, s, src, dst) as the declaration does.
        assert_eq!(base.kernel, entry::stride_read.info());
        assert_eq!(
            base.args,
            [
                Arg::Dim(crate::experiment::Dim::Len),
                Arg::Param,
                Arg::Buffer(0),
                Arg::Buffer(1)
            ]
        );
        assert_eq!(Effort { quick: false }.strides().len(), 64);
    }
}
