//! The compute rates of a profile (schema 6): what a compute-bound kernel meets on the
//! GPU, measured by `coalesce calibrate`'s own microbenchmarks (kernels/src/calibrate/pipes.rs,
//! host/src/calibrate/compute.rs), each from one declared count of work per launch.

use serde::{Deserialize, Serialize};

/// An SM's compute rates and latencies, and the L2's read rate. Each a median launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComputeRates {
    /// Warp-wide FFMA instructions per ns per SM: `fma_throughput` (8 independent FMA
    /// chains a thread, 128 FFMA a round, full residency), FFMAs / time / SMs.
    pub fma_per_ns_per_sm: f64,
    /// Warp instructions per ns per SM when no one pipe is full: `issue_mix` (2 FFMA to
    /// 1 LOP3, independent chains, full residency), FFMAs and LOP3s / time / SMs.
    pub issue_per_ns_per_sm: f64,
    /// Warp-wide `mma.sync.m16n8k8` TF32 instructions per ns per SM:
    /// `mma_tf32_throughput` (4 independent accumulators a warp, full residency),
    /// MMAs / time / SMs. None below sm_80, which has no TF32 MMA.
    pub mma_tf32_per_ns_per_sm: Option<f64>,
    /// FLOPs per ns per SM of `wgmma.mma_async.m64n256k8` TF32 with both operands
    /// from shared memory: `wgmma_tf32_throughput` (one warpgroup a block, as many
    /// blocks as fit), 2 x 64 x 256 x 8 FLOPs per wgmma / time / SMs. None but on
    /// sm_90 GPUs.
    pub wgmma_tf32_flops_per_ns_per_sm: Option<f64>,
    /// FLOPs per ns per SM of `wgmma.mma_async.m64n256k16` with 16-bit operands (f32
    /// accumulators), both from shared memory: `wgmma_bf16_throughput` (as the TF32
    /// one), 2 x 64 x 256 x 16 FLOPs per wgmma / time / SMs. Measured in BF16 and taken
    /// for FP16 too: Hopper's dense FP16 and BF16 tensor rates are the same by NVIDIA's
    /// specification. None but on sm_90 GPUs, and in profiles calibrated before it was
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wgmma_16bit_flops_per_ns_per_sm: Option<f64>,
    /// The same of `wgmma.mma_async.m64n128k16`, the shape of the products whose tiles
    /// are 128 wide: `wgmma_bf16_n128_throughput` (as the N = 256 one, with half of B's
    /// tile), 2 x 64 x 128 x 16 FLOPs per wgmma / time / SMs. Per FLOP it reads 1.2 x
    /// the shared bytes (A's 64 x 16 tile a wgmma, for half the FLOPs). None but on
    /// sm_90 GPUs, and in profiles calibrated before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wgmma_16bit_n128_flops_per_ns_per_sm: Option<f64>,
    /// Bytes per second, GB/s, the L2 serves GPU-wide to loads that miss L1: `l2_read`
    /// (float4 loads from a buffer of about a quarter of the L2, read again each round
    /// from another offset so no SM re-reads what its L1 holds), bytes / time.
    pub l2_read_gb_per_s: f64,
    /// ns per FFMA of one dependent chain: `fma_latency` (one warp), time / FFMAs.
    pub fma_latency_ns: f64,
    /// ns per load of one dependent chain of shared loads: `shared_chase` (one warp,
    /// each load's address the value the one before returned), time / loads.
    pub shared_latency_ns: f64,
    /// Warp loads of one 128-byte line each that the L1 takes per ns per SM, all hits:
    /// `line_requests` (16 a round, full residency), requests / time / SMs. A request
    /// of many lines takes `load_lines_per_ns_per_sm`'s time per line.
    pub l1_requests_per_ns_per_sm: f64,
    /// Bytes per second, GB/s, the L2 serves GPU-wide to the copy engine (TMA):
    /// `l2_bulk_read` (one thread a block keeping 32 KiB of 1D boxes in flight, from a
    /// buffer of about a quarter of the L2), bytes / time. None but on sm_90 GPUs, and
    /// in profiles from before schema 7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bulk_read_gb_per_s: Option<f64>,
    /// The same for lines several SMs read at about the same time, as a product's
    /// blocks read the tiles they share: `l2_bulk_read` with each chunk read by
    /// `BULK_SHARERS` blocks at once, bytes / time. Each SM's port to the L2 sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bulk_shared_gb_per_s: Option<f64>,
}

impl ComputeRates {
    /// Each rate by name, None where not measured on this GPU.
    pub fn named(&self) -> [(&'static str, Option<f64>); 12] {
        [
            ("fma_per_ns_per_sm", Some(self.fma_per_ns_per_sm)),
            ("issue_per_ns_per_sm", Some(self.issue_per_ns_per_sm)),
            ("mma_tf32_per_ns_per_sm", self.mma_tf32_per_ns_per_sm),
            (
                "wgmma_tf32_flops_per_ns_per_sm",
                self.wgmma_tf32_flops_per_ns_per_sm,
            ),
            (
                "wgmma_16bit_flops_per_ns_per_sm",
                self.wgmma_16bit_flops_per_ns_per_sm,
            ),
            (
                "wgmma_16bit_n128_flops_per_ns_per_sm",
                self.wgmma_16bit_n128_flops_per_ns_per_sm,
            ),
            ("l2_read_gb_per_s", Some(self.l2_read_gb_per_s)),
            ("fma_latency_ns", Some(self.fma_latency_ns)),
            ("shared_latency_ns", Some(self.shared_latency_ns)),
            ("l1_requests_per_ns_per_sm", Some(self.l1_requests_per_ns_per_sm)),
            ("l2_bulk_read_gb_per_s", self.l2_bulk_read_gb_per_s),
            ("l2_bulk_shared_gb_per_s", self.l2_bulk_shared_gb_per_s),
        ]
    }

    /// The first rate that no measurement gives (zero, negative or not finite).
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        super::all_positive("compute.", self.named())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Plausible H100 rates, for tests of the arithmetic only.
    pub(crate) fn sample() -> ComputeRates {
        ComputeRates {
            fma_per_ns_per_sm: 7.0,
            issue_per_ns_per_sm: 6.5,
            mma_tf32_per_ns_per_sm: Some(1.2),
            wgmma_tf32_flops_per_ns_per_sm: Some(3500.0),
            wgmma_16bit_flops_per_ns_per_sm: Some(7000.0),
            wgmma_16bit_n128_flops_per_ns_per_sm: Some(6000.0),
            l2_read_gb_per_s: 5000.0,
            fma_latency_ns: 2.3,
            shared_latency_ns: 17.0,
            l1_requests_per_ns_per_sm: 1.6,
            l2_bulk_read_gb_per_s: Some(6000.0),
            l2_bulk_shared_gb_per_s: Some(12000.0),
        }
    }

    #[test]
    fn every_rate_must_be_positive_and_absent_ones_are_allowed() {
        assert_eq!(sample().check(), Ok(()));
        let older = ComputeRates {
            mma_tf32_per_ns_per_sm: None,
            wgmma_tf32_flops_per_ns_per_sm: None,
            wgmma_16bit_flops_per_ns_per_sm: None,
            wgmma_16bit_n128_flops_per_ns_per_sm: None,
            l2_bulk_read_gb_per_s: None,
            l2_bulk_shared_gb_per_s: None,
            ..sample()
        };
        assert_eq!(older.check(), Ok(()));
        let zero = ComputeRates {
            fma_latency_ns: 0.0,
            ..sample()
        };
        assert_eq!(
            zero.check().unwrap_err(),
            "compute.fma_latency_ns is 0, not a positive number"
        );
        let nan = ComputeRates {
            wgmma_tf32_flops_per_ns_per_sm: Some(f64::NAN),
            ..sample()
        };
        assert!(
            nan.check()
                .unwrap_err()
                .contains("wgmma_tf32_flops_per_ns_per_sm is NaN")
        );
    }
}
