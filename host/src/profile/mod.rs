//! A GPU's calibration profile: the few numbers, measured by `coalesce calibrate`
//! with microbenchmarks of our own, that turn `explain`'s address streams into a
//! predicted time. Every parameter is per GPU, never per kernel. docs/model.md gives
//! the formulas; [`crate::explain::bandwidth`] applies them. [`schema`] reads and checks
//! a file; [`sweeps`] holds the raw measurements a profile keeps.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub mod compute;
pub mod fit;
pub mod l2;
pub mod power;
pub mod refit;
pub mod schema;
pub mod sweeps;

pub use compute::ComputeRates;
pub use l2::L2Resident;
pub use power::{PowerRates, PowerRun};
pub use refit::{refit, upgrade};
pub use schema::{PROFILE_SCHEMA, SCHEMA_3_FIELDS};
pub use sweeps::{
    PAGE_BYTES, PitchPoint, RequestKind, SpreadPoint, Stream, SweepPoint, pages_filled, spread,
};

/// Ok, or the first of `named` that is measured but no measurement gives (zero,
/// negative or not finite), said as `{section}{name} is {v}, not a positive number`.
pub(crate) fn all_positive<'a>(
    section: &str,
    named: impl IntoIterator<Item = (&'a str, Option<f64>)>,
) -> std::result::Result<(), String> {
    match named
        .into_iter()
        .find(|(_, v)| v.is_some_and(|v| !(v.is_finite() && v > 0.0)))
    {
        Some((name, Some(v))) => Err(format!("{section}{name} is {v}, not a positive number")),
        _ => Ok(()),
    }
}

/// What bounds the blocks one SM holds besides its threads (schema 3): device
/// attributes, read from the driver by `coalesce calibrate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SmLimits {
    /// Compute capability [major, minor] (attributes COMPUTE_CAPABILITY_MAJOR/MINOR):
    /// `explain` asks ptxas for a kernel's registers on sm_<major><minor>.
    pub compute_capability: [u32; 2],
    /// 32-bit registers per SM (attribute MAX_REGISTERS_PER_MULTIPROCESSOR).
    pub registers_per_sm: u32,
    /// A warp's registers are allocated in multiples of this many: the candidate (64,
    /// 128, 256 or 512) with which the residency formula agrees with the driver's
    /// cuOccupancyMaxActiveBlocksPerMultiprocessor for the most of our kernels.
    pub register_allocation_unit: u32,
    /// Shared-memory bytes per SM (attribute MAX_SHARED_MEMORY_PER_MULTIPROCESSOR).
    pub shared_bytes_per_sm: u32,
    /// Shared bytes the driver reserves for each block (attribute
    /// RESERVED_SHARED_MEMORY_PER_BLOCK).
    pub reserved_shared_bytes_per_block: u32,
    /// Blocks one SM holds at most (attribute MAX_BLOCKS_PER_MULTIPROCESSOR).
    pub max_blocks_per_sm: u32,
}

/// One GPU's parameters. Each field says what it is and how it was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub schema: u32,
    pub coalesce_version: String,
    /// The device name as the driver reports it (`NVIDIA H100 80GB HBM3`): a profile
    /// applies to that GPU only.
    pub device: String,
    /// When it was measured (`YYYY-MM-DD HH:MM UTC`).
    pub measured: String,
    /// Multiprocessors (device attribute).
    pub sm_count: u32,
    /// L2 bytes (device attribute): `explain` sizes default problems from it, as
    /// `coalesce run` does on that GPU.
    pub l2_bytes: u64,
    /// Threads one SM holds at once (device attribute MAX_THREADS_PER_MULTIPROCESSOR):
    /// the most that can have loads in flight.
    pub max_threads_per_sm: u32,
    /// The DRAM's clock in kHz and its bus width in bits (device attributes; 0 in files
    /// written before they were recorded): `explain` launches a kernel that sizes its
    /// launch from the GPU's bandwidth (`transpose/tma-dense-fit`) as `coalesce run` does
    /// on that GPU.
    #[serde(default)]
    pub memory_clock_khz: u64,
    #[serde(default)]
    pub bus_width_bits: u64,
    /// Read + written bytes per second of cuMemcpyDtoD at 8 x L2, GB/s: the ceiling.
    pub copy_gb_per_s: f64,
    /// Bytes DRAM reads for a 32-byte sector that no neighbour shares: the stride
    /// sweep's widest strides, (time x copy bandwidth - bytes written) / elements read.
    pub dram_read_granularity: u32,
    /// One dependent load that misses L2, on an idle GPU, ns: a single thread chasing
    /// pointers through a random cycle 8 x L2 long. For information: the model uses
    /// the loaded latency below.
    pub idle_latency_ns: f64,
    /// The loaded latency's base L0, ns. A load waits L(rho) = L0 + Lq x rho / (1 - rho)
    /// at DRAM utilisation rho (read + written rate / copy ceiling): L0 and Lq
    /// (`queueing_latency_ns`) are the least-squares line through the inflight sweep's
    /// latency-bound copies, each giving rho and, by Little's law (bytes in flight =
    /// rate x latency), its latency ([`fit::loaded_latency`]). L0 is an
    /// intercept, not the idle latency: it includes what a thread slot spends besides
    /// waiting for its load (its stores, its block's exit and the next block's launch).
    pub loaded_latency_ns: f64,
    /// Lq, ns: the queueing delay per unit of rho / (1 - rho). 0 when the sweep has fewer
    /// than two latency-bound copies (a constant latency, and a hard knee at the ceiling).
    /// Absent from schema-1 files: 0, their one constant latency, until
    /// [`upgrade`] fits the line to their inflight sweep.
    #[serde(default)]
    pub queueing_latency_ns: f64,
    /// Residency limits besides threads (schema 3; `None` before: residency counts
    /// threads only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm: Option<SmLimits>,
    /// 128-byte lines per ns per SM that the L1 looks up for global loads: `lines_load`
    /// (every warp request 32 lines, all L1 hits), lines / time / SMs. Schema 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_lines_per_ns_per_sm: Option<f64>,
    /// Lines per ns per SM that the L1 and L2 take for global stores of one partial
    /// sector each: `lines_store` (32 lines per request, each warp its own lines,
    /// L2-resident), lines / time / SMs.
    /// Schema 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_lines_per_ns_per_sm: Option<f64>,
    /// Shared-memory wavefronts per ns per SM: `bank_conflicts` (32-way conflicts, 32
    /// wavefronts per request), wavefronts / time / SMs. Schema 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_wavefronts_per_ns_per_sm: Option<f64>,
    /// The pitch sweep (schema 4; `None` before): `pitch_read`, `pitch_write` and
    /// `pitch_update` (kernels/src/calibrate/pitch.rs), 32 lanes one pitch apart, at pitches
    /// from 64 B to 1 MiB and at spans of up to 32 x 256 MiB: the rates at which the
    /// GPU serves warp requests whose lanes each read or write a segment of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pitch_sweep: Option<Vec<PitchPoint>>,
    /// The spread sweep (schema 5; `None` before): `spread_writes` and `spread_reads`
    /// (kernels/src/calibrate/spread.rs), a coalesced copy whose waves write, or read, 128-byte
    /// chunks spread over 4 MiB to 256 MiB: the rate of a stream so spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_sweep: Option<Vec<SpreadPoint>>,
    /// The compute rates (schema 6; `None` before): FMAs, issue, tensor-core MMAs, L2
    /// reads and two latencies, each measured by a microbenchmark of our own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputeRates>,
    /// The board's power limit and the energy of each kind of work (schema 7; `None`
    /// before, and where NVML could not be asked): what clock a product can keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerRates>,
    /// What a launch costs beyond its work, ns (schema 8; `None` before): the median
    /// time between the events around a launch of one thread that loads a word and
    /// stores it back (`chase` with no hops), launch after launch as `run` times them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_ns: Option<f64>,
    /// What a launch adds to a kernel that outlasts the next launch's setup, ns
    /// (schema 8; `None` in a profile written before it was measured, or where no
    /// line fitted): back-to-back launches of W ns of work are
    /// `gap + max(W, launch_ns - gap)` apart ([`crate::calibrate::launch`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_gap_ns: Option<f64>,
    /// The L2 as the memory of a working set that fits in it (schema 8; `None`
    /// before): its copy ceiling and loaded latency ([`L2Resident`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_resident: Option<L2Resident>,
    /// The measurements behind the fits, for the record.
    pub stride_sweep: Vec<SweepPoint>,
    pub inflight_sweep: Vec<SweepPoint>,
}

/// The profiles that ship with coalesce (host/profiles), measured on the GPUs named in
/// them by `coalesce calibrate`, their fits refitted by `coalesce refit` when a fit
/// changes.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "NVIDIA H100 80GB HBM3",
        include_str!("../../profiles/nvidia-h100-80gb-hbm3.json"),
    ),
    ("NVIDIA H200", include_str!("../../profiles/nvidia-h200.json")),
];

impl Profile {
    /// Reads a profile file as `coalesce` uses it: an older schema upgraded
    /// ([`upgrade`]).
    pub fn load(path: &Path) -> Result<Profile> {
        Profile::load_as_written(path).map(upgrade)
    }

    /// Reads a profile file as it is written, an older schema not upgraded (what
    /// `coalesce refit` fits again and reports the change of).
    pub fn load_as_written(path: &Path) -> Result<Profile> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// The latency a load waits at DRAM utilisation `rho` (0 <= rho < 1), ns:
    /// L0 + Lq x rho / (1 - rho).
    pub fn latency_at(&self, rho: f64) -> f64 {
        self.loaded_latency_ns + self.queueing_latency_ns * rho / (1.0 - rho)
    }

    /// The shipped profile for `device`: its exact name, else the one shipped name
    /// that contains it, ignoring case (`H100`, `nvidia h200`). None when no name
    /// matches; an error when several do.
    pub fn shipped(device: &str) -> Option<Result<Profile>> {
        let parse =
            |(name, text): &(&str, &str)| Profile::parse(text, &format!("the shipped profile of {name}"));
        if let Some(exact) = SHIPPED.iter().find(|(name, _)| *name == device) {
            return Some(parse(exact));
        }
        let want = device.trim().to_lowercase();
        if want.is_empty() {
            return None;
        }
        let matches: Vec<&(&str, &str)> = SHIPPED
            .iter()
            .filter(|(name, _)| name.to_lowercase().contains(&want))
            .collect();
        match matches.as_slice() {
            [] => None,
            [one] => Some(parse(one)),
            several => Some(Err(Error::BadProfile {
                path: device.to_string(),
                why: format!(
                    "names several shipped profiles ({}); give the whole name",
                    several.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            })),
        }
    }

    /// Refuses a profile for another GPU than the one it is applied to.
    pub fn for_device(self, device: &str, origin: &str) -> Result<Profile> {
        if self.device == device {
            Ok(self)
        } else {
            Err(Error::BadProfile {
                path: origin.to_string(),
                why: format!("measured on {}, not on {device}", self.device),
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A profile with plausible H100 numbers, for tests of the arithmetic only.
    pub(crate) fn sample() -> Profile {
        Profile {
            schema: PROFILE_SCHEMA,
            coalesce_version: "test".into(),
            device: "Test GPU".into(),
            measured: "2026-11-23 00:00 UTC".into(),
            sm_count: 132,
            l2_bytes: 50 << 20,
            max_threads_per_sm: 2048,
            memory_clock_khz: 2_619_000,
            bus_width_bits: 5120,
            copy_gb_per_s: 3000.0,
            dram_read_granularity: 64,
            idle_latency_ns: 700.0,
            loaded_latency_ns: 900.0,
            queueing_latency_ns: 0.0,
            sm: Some(SmLimits {
                compute_capability: [9, 0],
                registers_per_sm: 65536,
                register_allocation_unit: 256,
                shared_bytes_per_sm: 233472,
                reserved_shared_bytes_per_block: 1024,
                max_blocks_per_sm: 32,
            }),
            load_lines_per_ns_per_sm: Some(2.0),
            store_lines_per_ns_per_sm: Some(0.5),
            shared_wavefronts_per_ns_per_sm: Some(2.0),
            pitch_sweep: Some(vec![PitchPoint {
                pitch_bytes: 64,
                span_bytes: 1 << 30,
                wave_pages: 9,
                segment_bytes_per_lane: 64.0,
                sector_bytes_per_lane: 32.0,
                read_gb_per_s: 900.0,
                write_gb_per_s: 650.0,
                update_gb_per_s: 700.0,
                iterations: 1,
            }]),
            spread_sweep: Some(vec![SpreadPoint {
                stream: Stream::Writes,
                apart: 32,
                read_spread: 1.0,
                write_spread: 22.0,
                gb_per_s: 2800.0,
            }]),
            compute: Some(compute::tests::sample()),
            power: Some(power::tests::sample()),
            launch_ns: None,
            launch_gap_ns: None,
            l2_resident: None,
            stride_sweep: Vec::new(),
            inflight_sweep: Vec::new(),
        }
    }

    /// [`sample`] as a schema-5 file would give it: no compute rates.
    pub(crate) fn schema_5() -> Profile {
        Profile {
            schema: 5,
            compute: None,
            power: None,
            ..sample()
        }
    }

    /// [`sample`] as a schema-4 file would give it: its points without iterations.
    pub(crate) fn schema_4() -> Profile {
        Profile {
            schema: 4,
            spread_sweep: None,
            compute: None,
            power: None,
            ..sample()
        }
    }

    /// [`sample`] as a schema-3 file would give it: no pitch sweep.
    pub(crate) fn schema_3() -> Profile {
        Profile {
            schema: 3,
            pitch_sweep: None,
            spread_sweep: None,
            compute: None,
            power: None,
            ..sample()
        }
    }

    /// [`sample`] as a schema-2 file would give it: no residency limits, no rates.
    pub(crate) fn schema_2() -> Profile {
        Profile {
            schema: 2,
            pitch_sweep: None,
            spread_sweep: None,
            compute: None,
            power: None,
            sm: None,
            load_lines_per_ns_per_sm: None,
            store_lines_per_ns_per_sm: None,
            shared_wavefronts_per_ns_per_sm: None,
            ..sample()
        }
    }

    #[test]
    fn a_profile_of_another_gpu_is_refused() {
        let e = sample()
            .for_device("NVIDIA H200", "p.json")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p.json: measured on Test GPU, not on NVIDIA H200");
        assert!(sample().for_device("Test GPU", "p.json").is_ok());
    }

    #[test]
    fn shipped_profiles_are_found_by_their_name_or_part_of_it() {
        let device = |what: &str| Profile::shipped(what).map(|p| p.unwrap().device);
        assert_eq!(device("NVIDIA H200").as_deref(), Some("NVIDIA H200"));
        assert_eq!(device("h200").as_deref(), Some("NVIDIA H200"));
        assert_eq!(device("H100").as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(
            device("NVIDIA H100 80GB HBM3").as_deref(),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert!(Profile::shipped("NVIDIA B300").is_none());
        assert!(Profile::shipped(" ").is_none());
        let e = Profile::shipped("nvidia").unwrap().unwrap_err().to_string();
        assert!(e.contains("names several shipped profiles"), "{e}");
    }
}
