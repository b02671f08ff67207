//! The L2 as the memory of a working set that fits in it (schema 8): its copy ceiling
//! and its loaded latency, measured as the DRAM's are, at a size the L2 holds.

use serde::{Deserialize, Serialize};

use super::SweepPoint;

/// The L2 serving a copy whose input and output it holds: `coalesce calibrate` runs
/// cuMemcpyDtoD and the `inflight` copies at `bytes_per_array` per array (a quarter
/// of the L2, so input and output take half of it), launch after launch as `run` times
/// them, so each launch finds what the one before read and wrote still in the L2.
/// Each median time less the profile's `launch_ns` is the copy's own; the ceiling is
/// the memcpy's rate over it, and the latency's line is fitted to the copies as the
/// DRAM's is ([`super::fit::loaded_latency`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct L2Resident {
    pub bytes_per_array: u64,
    /// Read + written bytes per second of cuMemcpyDtoD, its launch's fixed cost left
    /// out, GB/s: the ceiling of a copy the L2 holds.
    pub copy_gb_per_s: f64,
    /// L0 and Lq of L(rho) = L0 + Lq x rho / (1 - rho), rho over `copy_gb_per_s`.
    pub loaded_latency_ns: f64,
    pub queueing_latency_ns: f64,
    /// The inflight copies at this size (x: read bytes in flight per SM; GB/s without
    /// the launch's fixed cost), for the record.
    pub inflight_sweep: Vec<SweepPoint>,
}

impl L2Resident {
    /// Values no measurement gives.
    pub fn check(&self) -> std::result::Result<(), String> {
        super::all_positive(
            "l2_resident.",
            [
                ("copy_gb_per_s", Some(self.copy_gb_per_s)),
                ("loaded_latency_ns", Some(self.loaded_latency_ns)),
            ],
        )?;
        let q = self.queueing_latency_ns;
        if !(q.is_finite() && q >= 0.0) || self.bytes_per_array == 0 {
            return Err(format!(
                "l2_resident: queueing_latency_ns is {q} (not zero or positive) or bytes_per_array is 0"
            ));
        }
        Ok(())
    }
}

/// Bytes per array of the L2-resident copies on a GPU of `l2_bytes`: a quarter of
/// the L2, in whole KiB of floats, so both arrays stay in it with room to spare.
pub fn resident_bytes_per_array(l2_bytes: u64) -> u64 {
    (l2_bytes / 4) / 1024 * 1024
}

/// GB/s of a launch that moved `bytes` in `median_ms`, of which `launch_ns` is the
/// launch's fixed cost: the rate of its work alone. None where the launch took no
/// longer than its fixed cost (nothing left to measure).
pub fn rate_without_launch(bytes: u64, median_ms: f64, launch_ns: f64) -> Option<f64> {
    let work_ns = median_ms * 1e6 - launch_ns;
    (work_ns > 0.0 && work_ns.is_finite()).then(|| bytes as f64 / work_ns)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Plausible H200-like numbers, for tests of the arithmetic only.
    pub(crate) fn sample() -> L2Resident {
        L2Resident {
            bytes_per_array: 15 << 20,
            copy_gb_per_s: 8000.0,
            loaded_latency_ns: 400.0,
            queueing_latency_ns: 20.0,
            inflight_sweep: Vec::new(),
        }
    }

    #[test]
    fn a_quarter_of_the_l2_per_array() {
        assert_eq!(resident_bytes_per_array(60 << 20), 15 << 20);
        assert_eq!(resident_bytes_per_array(50 << 20), 12_800 << 10);
    }

    #[test]
    fn the_launchs_fixed_cost_is_taken_out_of_the_time() {
        // 32 MiB moved in 8 us, 4 us of it the launch: 8.4 TB/s.
        let r = rate_without_launch(32 << 20, 0.008, 4000.0).unwrap();
        assert!((r - (32 << 20) as f64 / 4000.0).abs() < 1e-9);
        assert_eq!(rate_without_launch(1 << 20, 0.004, 4000.0), None);
    }

    #[test]
    fn check_refuses_what_no_measurement_gives() {
        assert!(sample().check().is_ok());
        let zero = L2Resident {
            copy_gb_per_s: 0.0,
            ..sample()
        };
        assert!(zero.check().unwrap_err().contains("copy_gb_per_s"));
        let negative = L2Resident {
            queueing_latency_ns: -1.0,
            ..sample()
        };
        assert!(negative.check().is_err());
    }
}
