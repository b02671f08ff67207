//! A GPU's calibration profile: the few numbers, measured by `coalesce calibrate`
//! with microbenchmarks of our own, that turn `explain`'s address streams into a
//! predicted time. Every parameter is per GPU, never per kernel. docs/model.md gives
//! the formulas; [`crate::explain::predict`] applies them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The profile format's version; a newer file is refused in one line. Schema 2 added
/// `queueing_latency_ns` (a latency that rises with load) and made `loaded_latency_ns`
/// its base; a schema-1 file is read by refitting both from its raw inflight sweep
/// ([`Profile::refit`]), and becomes schema 2. Schema 3 added the SM's residency
/// limits (`sm`) and the L1, L2 and shared-memory rates; a schema-2 file is read as it
/// is, and the bounds those fields set report themselves as not calibrated. Schema 4
/// added the pitch sweep (`pitch_sweep`), the rates of scattered requests; a schema-3
/// file is read as it is, and its scattered requests report themselves as not
/// calibrated. Schema 5 measures each pitch-sweep point at several grid-stride
/// iterations a thread (`PitchPoint::iterations`; a schema-4 file's points are one
/// iteration each, a thread per float4, as its kernels ran) and adds the spread sweep
/// (`spread_sweep`), the DRAM's rate for a stream whose wave spreads over many pages;
/// a schema-4 file is read as it is, and a kernel's spread is not counted.
pub const PROFILE_SCHEMA: u32 = 5;

/// The fields schema 3 added: required in a schema-3 file, absent before.
pub const SCHEMA_3_FIELDS: [&str; 4] = [
    "sm",
    "load_lines_per_ns_per_sm",
    "store_lines_per_ns_per_sm",
    "shared_wavefronts_per_ns_per_sm",
];

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
    /// rate x latency), its latency ([`crate::calibrate::loaded_latency`]). L0 is an
    /// intercept, not the idle latency: it includes what a thread slot spends besides
    /// waiting for its load (its stores, its block's exit and the next block's launch).
    pub loaded_latency_ns: f64,
    /// Lq, ns: the queueing delay per unit of rho / (1 - rho). 0 when the sweep has fewer
    /// than two latency-bound copies (a constant latency, and a hard knee at the ceiling).
    /// Absent from schema-1 files, which are refitted when read.
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
    /// `pitch_update` (kernels/src/pitch.rs), 32 lanes one pitch apart, at pitches
    /// from 64 B to 1 MiB and at spans of up to 32 x 256 MiB: the rates at which the
    /// GPU serves warp requests whose lanes each read or write a segment of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pitch_sweep: Option<Vec<PitchPoint>>,
    /// The spread sweep (schema 5; `None` before): `spread_writes` and `spread_reads`
    /// (kernels/src/spread.rs), a coalesced copy whose waves write, or read, 512-byte
    /// chunks spread over 4 MiB to 256 MiB: the rate of a stream so spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_sweep: Option<Vec<SpreadPoint>>,
    /// The measurements behind the fits, for the record.
    pub stride_sweep: Vec<SweepPoint>,
    pub inflight_sweep: Vec<SweepPoint>,
}

/// One microbenchmark measurement of a sweep the fits read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// What varies: the stride in elements, or the bytes each thread keeps in flight.
    pub x: f64,
    /// Read + written bytes per second, GB/s.
    pub gb_per_s: f64,
}

/// Bytes of the pages [`PitchPoint`] counts: CUDA maps device memory in 2 MiB pages.
pub const PAGE_BYTES: u64 = 2 << 20;

/// The three shapes of a scattered warp request, each timed by one kernel of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// A load (`pitch_read`: 16 bytes a lane, then a coalesced 4-byte store a thread).
    Gather,
    /// A store (`pitch_write`: 16 bytes a lane, half a sector).
    Scatter,
    /// A store to the bytes the same lanes just loaded (`pitch_update`), counted with
    /// its load: the store finds its sectors in L2.
    Update,
}

/// One point of the pitch sweep (kernels/src/pitch.rs, measured by
/// `calibrate::pitch`): each kernel walks 256 MiB in float4s one pitch apart down the
/// columns of a span of rows x pitch bytes, at every SM's full residency. The DRAM
/// bytes a lane moves are counted as `explain` counts a kernel's (over the first wave,
/// each 64-byte segment read and 32-byte sector written once), so
/// [`PitchPoint::dram_gb_per_s`] times those of a kernel's scattered requests alike.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PitchPoint {
    /// Bytes between two lanes' float4s.
    pub pitch_bytes: u64,
    /// Bytes the walk spans: rows x pitch.
    pub span_bytes: u64,
    /// 2 MiB pages the first wave's requests touch (every SM full of 256-thread blocks):
    /// all of the span's once a wave reaches every row, fewer at small pitches.
    pub wave_pages: u64,
    /// DRAM bytes per lane of the first wave's 16-byte reads: its distinct 64-byte
    /// segments x 64 / lanes (64 where each lane has a segment to itself, 16 where
    /// four columns of a wave share each).
    pub segment_bytes_per_lane: f64,
    /// The same for its 16-byte writes, in 32-byte sectors (32 down to 16).
    pub sector_bytes_per_lane: f64,
    /// `pitch_read`: read + written bytes per second (16 read and 4 written per
    /// thread), GB/s.
    pub read_gb_per_s: f64,
    /// `pitch_write`: written bytes per second (16 per thread), GB/s.
    pub write_gb_per_s: f64,
    /// `pitch_update`: read + written bytes per second (16 and 16 per thread), GB/s.
    pub update_gb_per_s: f64,
    /// Float4s each thread walks, a grid apart (the grid-stride loop's iterations): 1,
    /// a thread per float4; k, a grid of 1 / k as many threads. Schema 5; absent means
    /// 1, as every point of a schema-4 file ran.
    #[serde(default = "one_iteration", skip_serializing_if = "is_one")]
    pub iterations: u32,
}

fn one_iteration() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl SpreadPoint {
    /// The spread of the stream this point spreads (`read_spread` or `write_spread`).
    pub fn spread(&self) -> f64 {
        match self.stream {
            Stream::Reads => self.read_spread,
            Stream::Writes => self.write_spread,
        }
    }
}

/// How far a stream spreads: the 2 MiB pages it touches over `filled`, the pages its
/// distinct bytes would fill if they lay together (at least one): 1 for a contiguous
/// stream from a page's start, n where every page holds 1/n of what it could.
pub fn spread(pages: u64, filled: u64) -> f64 {
    pages as f64 / filled.max(1) as f64
}

/// The pages `bytes` fill from a page's start.
pub fn pages_filled(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_BYTES)
}

/// The stream of a spread-sweep point that its waves spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stream {
    /// `spread_reads`: a wave's loads spread, its stores in order.
    Reads,
    /// `spread_writes`: a wave's stores spread, its loads in order.
    Writes,
}

/// One point of the spread sweep (kernels/src/spread.rs, measured by
/// `calibrate::spread`): a copy of 256 MiB whose waves read, or write, 512-byte chunks
/// placed `apart` chunks apart, at every SM's full residency. The spreads are counted
/// as `explain` counts a kernel's ([`spread`] over the first wave), so
/// `explain::sweep::spread_factor` reads a kernel's on the same scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpreadPoint {
    /// Which stream the chunks' placement spreads.
    pub stream: Stream,
    /// Chunks between two consecutive ones of the other stream (1: a copy in order).
    pub apart: u64,
    /// The first wave's loads' and stores' [`spread`].
    pub read_spread: f64,
    pub write_spread: f64,
    /// Read + written bytes per second, GB/s.
    pub gb_per_s: f64,
}

impl PitchPoint {
    /// The rate at which the DRAM moved the DRAM bytes of `shape`'s requests at this
    /// point, GB/s: a thread's DRAM bytes over its time. `pitch_read`'s coalesced
    /// 4-byte sums take their time at the copy ceiling `copy_gb_per_s`, the rest is
    /// the gather's. Above the ceiling where L2 reuse across waves (which the window
    /// does not see) saves DRAM bytes.
    pub fn dram_gb_per_s(&self, shape: Shape, copy_gb_per_s: f64) -> f64 {
        // ns per thread (GB/s are bytes per ns) and the DRAM bytes in that time.
        let (ns, bytes) = match shape {
            Shape::Gather => (
                20.0 / self.read_gb_per_s - 4.0 / copy_gb_per_s,
                self.segment_bytes_per_lane,
            ),
            Shape::Scatter => (16.0 / self.write_gb_per_s, self.sector_bytes_per_lane),
            Shape::Update => (
                32.0 / self.update_gb_per_s,
                self.segment_bytes_per_lane + self.sector_bytes_per_lane,
            ),
        };
        bytes / ns
    }

    /// 2 MiB pages one warp request's 32 lanes span (32 x pitch bytes), rounded up.
    pub fn pages_per_request(&self) -> u64 {
        (32 * self.pitch_bytes).div_ceil(PAGE_BYTES)
    }
}

/// The profiles that ship with coalesce, measured on the GPUs named in them by
/// `coalesce calibrate` (host/profiles, as `calibrate` wrote them, both schema 5).
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "NVIDIA H100 80GB HBM3",
        include_str!("../profiles/nvidia-h100-80gb-hbm3.json"),
    ),
    ("NVIDIA H200", include_str!("../profiles/nvidia-h200.json")),
];

impl Profile {
    /// Parses a profile, refusing what is not one, a newer schema, or a missing field.
    pub fn parse(text: &str, origin: &str) -> Result<Profile> {
        let bad = |why: String| Error::BadProfile {
            path: origin.to_string(),
            why,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not a coalesce profile (not JSON: {e})")))?;
        let schema = value.get("schema").and_then(|s| s.as_u64()).ok_or_else(|| {
            bad("not a coalesce profile (no schema; write one with `coalesce calibrate`)".into())
        })?;
        if schema > u64::from(PROFILE_SCHEMA) {
            return Err(bad(format!(
                "written by a newer coalesce (profile schema {schema}; this one reads up to {PROFILE_SCHEMA})"
            )));
        }
        if schema >= 2 && value.get("queueing_latency_ns").is_none() {
            return Err(bad(
                "not a coalesce profile: missing field `queueing_latency_ns`".into()
            ));
        }
        if schema >= 3
            && let Some(field) = SCHEMA_3_FIELDS
                .iter()
                .find(|f| value.get(**f).is_none_or(|v| v.is_null()))
        {
            return Err(bad(format!("not a coalesce profile: missing field `{field}`")));
        }
        if schema < 3
            && let Some(field) = SCHEMA_3_FIELDS.iter().find(|f| value.get(**f).is_some())
        {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `{field}`"
            )));
        }
        let has_sweep = value.get("pitch_sweep").is_some_and(|v| !v.is_null());
        if schema >= 4 && !has_sweep {
            return Err(bad("not a coalesce profile: missing field `pitch_sweep`".into()));
        }
        if schema < 4 && has_sweep {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `pitch_sweep`"
            )));
        }
        let has_spread = value.get("spread_sweep").is_some_and(|v| !v.is_null());
        if schema >= 5 && !has_spread {
            return Err(bad("not a coalesce profile: missing field `spread_sweep`".into()));
        }
        if schema < 5 && has_spread {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `spread_sweep`"
            )));
        }
        let points = value.get("pitch_sweep").and_then(|v| v.as_array());
        let iterated = |p: &serde_json::Value| p.get("iterations").is_some();
        if schema < 5 && points.is_some_and(|ps| ps.iter().any(iterated)) {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `iterations` in pitch_sweep"
            )));
        }
        let mut profile: Profile =
            serde_json::from_value(value).map_err(|e| bad(format!("not a coalesce profile: {e}")))?;
        if schema < 2 {
            // Schema 1 kept one constant latency; its raw sweep gives the new fit (a
            // file without a usable sweep keeps its latency, with no queueing).
            profile.queueing_latency_ns = 0.0;
            profile.refit();
            profile.schema = 2;
        }
        profile.check().map_err(bad)?;
        Ok(profile)
    }

    /// Reads a profile file.
    pub fn load(path: &Path) -> Result<Profile> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// Fits every fitted parameter again from the raw sweeps the profile keeps, with
    /// this coalesce's fits: the DRAM read granularity from `stride_sweep`, the loaded
    /// latency and its queueing from `inflight_sweep`. A parameter whose sweep gives no
    /// fit (an empty sweep) keeps its value. The measured values are not touched.
    pub fn refit(&mut self) {
        use crate::calibrate::fit::{loaded_latency, read_granularity};
        if let Some(g) = read_granularity(&self.stride_sweep, self.copy_gb_per_s) {
            self.dram_read_granularity = g.bytes;
        }
        if let Some(l) = loaded_latency(&self.inflight_sweep, self.sm_count, self.copy_gb_per_s) {
            self.loaded_latency_ns = l.base_ns;
            self.queueing_latency_ns = l.queue_ns;
        }
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

    /// Values no measurement gives (zero or negative rates, granularities that are
    /// not a whole number of sectors).
    fn check(&self) -> std::result::Result<(), String> {
        let positive = [
            ("copy_gb_per_s", self.copy_gb_per_s),
            ("idle_latency_ns", self.idle_latency_ns),
            ("loaded_latency_ns", self.loaded_latency_ns),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("{name} is {v}, not a positive number"));
        }
        let q = self.queueing_latency_ns;
        if !(q.is_finite() && q >= 0.0) {
            return Err(format!(
                "queueing_latency_ns is {q}, not zero or a positive number"
            ));
        }
        let rates = [
            ("load_lines_per_ns_per_sm", self.load_lines_per_ns_per_sm),
            ("store_lines_per_ns_per_sm", self.store_lines_per_ns_per_sm),
            (
                "shared_wavefronts_per_ns_per_sm",
                self.shared_wavefronts_per_ns_per_sm,
            ),
        ];
        if let Some((name, Some(v))) = rates
            .iter()
            .find(|(_, v)| v.is_some_and(|v| !(v.is_finite() && v > 0.0)))
        {
            return Err(format!("{name} is {v}, not a positive number"));
        }
        if let Some(sm) = &self.sm {
            let counts = [
                sm.registers_per_sm,
                sm.register_allocation_unit,
                sm.shared_bytes_per_sm,
                sm.max_blocks_per_sm,
            ];
            if counts.contains(&0) || sm.compute_capability[0] == 0 {
                return Err(
                    "sm: compute_capability, registers_per_sm, register_allocation_unit, shared_bytes_per_sm and max_blocks_per_sm must be positive"
                        .into(),
                );
            }
        }
        if let Some(p) = self.pitch_sweep.iter().flatten().find(|p| {
            p.pitch_bytes == 0
                || p.wave_pages == 0
                || p.iterations == 0
                || ![p.read_gb_per_s, p.write_gb_per_s, p.update_gb_per_s]
                    .iter()
                    .all(|v| v.is_finite() && *v > 0.0)
        }) {
            return Err(format!(
                "pitch_sweep: the point at pitch {} over {} has a zero pitch, no pages, no iterations or a rate that is not a positive number",
                p.pitch_bytes, p.span_bytes
            ));
        }
        if let Some(p) = self.spread_sweep.iter().flatten().find(|p| {
            p.apart == 0
                || ![p.read_spread, p.write_spread, p.gb_per_s]
                    .iter()
                    .all(|v| v.is_finite() && *v > 0.0)
        }) {
            return Err(format!(
                "spread_sweep: the point {} apart has a spread or a rate that is not a positive number",
                p.apart
            ));
        }
        if self.sm_count == 0 || self.max_threads_per_sm == 0 {
            return Err("sm_count and max_threads_per_sm must be positive".into());
        }
        if self.dram_read_granularity < 32 || !self.dram_read_granularity.is_multiple_of(32) {
            return Err(format!(
                "dram_read_granularity is {}, not a whole number of 32-byte sectors",
                self.dram_read_granularity
            ));
        }
        Ok(())
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
            stride_sweep: Vec::new(),
            inflight_sweep: Vec::new(),
        }
    }

    /// [`sample`] as a schema-4 file would give it: its points without iterations.
    pub(crate) fn schema_4() -> Profile {
        Profile {
            schema: 4,
            spread_sweep: None,
            ..sample()
        }
    }

    /// [`sample`] as a schema-3 file would give it: no pitch sweep.
    pub(crate) fn schema_3() -> Profile {
        Profile {
            schema: 3,
            pitch_sweep: None,
            spread_sweep: None,
            ..sample()
        }
    }

    /// [`sample`] as a schema-2 file would give it: no residency limits, no rates.
    pub(crate) fn schema_2() -> Profile {
        Profile {
            schema: 2,
            pitch_sweep: None,
            spread_sweep: None,
            sm: None,
            load_lines_per_ns_per_sm: None,
            store_lines_per_ns_per_sm: None,
            shared_wavefronts_per_ns_per_sm: None,
            ..sample()
        }
    }

    #[test]
    fn round_trips_and_refuses_what_is_not_a_profile() {
        let text = serde_json::to_string(&sample()).unwrap();
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), sample());
        let e = Profile::parse("{\"rows\": []}", "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.json: not a coalesce profile (no schema"), "{e}");
        let newer = text.replace("\"schema\":5", "\"schema\":7");
        let e = Profile::parse(&newer, "p.json").unwrap_err().to_string();
        assert!(e.contains("newer coalesce (profile schema 7"), "{e}");
        let missing = text.replace("\"loaded_latency_ns\"", "\"renamed\"");
        let e = Profile::parse(&missing, "p.json").unwrap_err().to_string();
        assert!(e.contains("missing field `loaded_latency_ns`"), "{e}");
        let odd = text.replace("\"dram_read_granularity\":64", "\"dram_read_granularity\":48");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("not a whole number of 32-byte sectors"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn schema_3_needs_its_fields_and_schema_2_loads_without_them() {
        let text = serde_json::to_string(&sample()).unwrap();
        for field in SCHEMA_3_FIELDS {
            let mut v = serde_json::to_value(sample()).unwrap();
            v.as_object_mut().unwrap().remove(field);
            let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
            assert_eq!(
                e,
                format!("p.json: not a coalesce profile: missing field `{field}`")
            );
        }
        // A schema-2 file: loads, its bounds not calibrated.
        let old = serde_json::to_string(&schema_2()).unwrap();
        assert!(!old.contains("lines_per_ns"), "{old}");
        let p = Profile::parse(&old, "p.json").unwrap();
        assert_eq!(
            (p.schema, p.sm.is_none(), p.shared_wavefronts_per_ns_per_sm),
            (2, true, None)
        );
        // ... and does not carry fields it cannot have.
        let odd = old.replace("\"schema\":2", "\"schema\":2,\"load_lines_per_ns_per_sm\":1.0");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(
            e.contains("schema 2 has no field `load_lines_per_ns_per_sm`"),
            "{e}"
        );
        let zero = text.replace(
            "\"store_lines_per_ns_per_sm\":0.5",
            "\"store_lines_per_ns_per_sm\":0.0",
        );
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(
            e.contains("store_lines_per_ns_per_sm is 0, not a positive number"),
            "{e}"
        );
        let no_regs = text.replace("\"registers_per_sm\":65536", "\"registers_per_sm\":0");
        assert!(Profile::parse(&no_regs, "p.json").is_err());
    }

    #[test]
    fn schema_4_needs_its_pitch_sweep_and_schema_3_loads_without_it() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("pitch_sweep");
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: missing field `pitch_sweep`");
        let old = serde_json::to_string(&schema_3()).unwrap();
        assert!(!old.contains("pitch_sweep"), "{old}");
        assert_eq!(Profile::parse(&old, "p.json").unwrap(), schema_3());
        let odd = old.replace("\"schema\":3", "\"schema\":3,\"pitch_sweep\":[]");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("schema 3 has no field `pitch_sweep`"), "{e}");
        let text = serde_json::to_string(&sample()).unwrap();
        let zero = text.replace("\"write_gb_per_s\":650.0", "\"write_gb_per_s\":0.0");
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(
            e.contains("pitch_sweep: the point at pitch 64 over 1073741824"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn schema_5_points_say_their_iterations_and_schema_4_points_are_one() {
        // One iteration goes without saying; more are written.
        let text = serde_json::to_string(&sample()).unwrap();
        assert!(!text.contains("iterations"), "{text}");
        let mut two = sample();
        two.pitch_sweep.as_mut().unwrap()[0].iterations = 2;
        let text = serde_json::to_string(&two).unwrap();
        assert!(text.contains("\"iterations\":2"), "{text}");
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), two);
        // A schema-4 file has none: every point one iteration, as its kernels ran.
        let old = serde_json::to_string(&schema_4()).unwrap();
        let p = Profile::parse(&old, "p.json").unwrap();
        assert_eq!((p.schema, p.pitch_sweep.unwrap()[0].iterations), (4, 1));
        let mut v = serde_json::to_value(&two).unwrap();
        v.as_object_mut().unwrap().remove("spread_sweep");
        let odd = v.to_string().replace("\"schema\":5", "\"schema\":4");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: not a coalesce profile: schema 4 has no field `iterations` in pitch_sweep"
        );
        let zero = text.replace("\"iterations\":2", "\"iterations\":0");
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(e.contains("no iterations"), "{e}");
    }

    #[test]
    fn schema_5_needs_its_spread_sweep_and_schema_4_loads_without_it() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("spread_sweep");
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: missing field `spread_sweep`");
        let old = serde_json::to_string(&schema_4()).unwrap();
        assert!(!old.contains("spread_sweep"), "{old}");
        let text = serde_json::to_string(&sample()).unwrap();
        let odd = text.replace("\"schema\":5", "\"schema\":4");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("schema 4 has no field `spread_sweep`"), "{e}");
        let zero = text.replace("\"gb_per_s\":2800.0", "\"gb_per_s\":0.0");
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(e.contains("spread_sweep: the point 32 apart"), "{e}");
        assert!(text.contains("\"stream\":\"writes\""), "{text}");
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

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    #[test]
    fn a_schema_1_profile_is_refitted_from_its_sweep() {
        let mut v1 = serde_json::to_value(schema_2()).unwrap();
        let obj = v1.as_object_mut().unwrap();
        obj.insert("schema".into(), 1.into());
        obj.remove("queueing_latency_ns");
        // Without a sweep: its one latency, no queueing (the schema-1 model).
        let p = Profile::parse(&v1.to_string(), "v1.json").unwrap();
        assert_eq!(p.schema, 2);
        assert_eq!((p.loaded_latency_ns, p.queueing_latency_ns), (900.0, 0.0));
        // With one: the fit of [`crate::calibrate::loaded_latency`] replaces it.
        let sweep = vec![
            point(8192.0, 2415.962327813314),
            point(16384.0, 2824.218949611766),
            point(32768.0, 2988.4176228974547),
        ];
        let obj = v1.as_object_mut().unwrap();
        obj.insert("inflight_sweep".into(), serde_json::to_value(&sweep).unwrap());
        obj.insert("copy_gb_per_s".into(), 2992.511376787178.into());
        let p = Profile::parse(&v1.to_string(), "v1.json").unwrap();
        assert!((p.loaded_latency_ns - 683.383).abs() < 1e-3, "{p:?}");
        assert!((p.queueing_latency_ns - 50.540).abs() < 1e-3, "{p:?}");
        assert!((p.latency_at(0.0) - p.loaded_latency_ns).abs() < 1e-12);
        // Schema 2 must say its queueing.
        let mut v2 = serde_json::to_value(schema_2()).unwrap();
        v2.as_object_mut().unwrap().remove("queueing_latency_ns");
        let e = Profile::parse(&v2.to_string(), "p.json").unwrap_err().to_string();
        assert!(e.contains("missing field `queueing_latency_ns`"), "{e}");
        let negative = serde_json::to_string(&Profile {
            queueing_latency_ns: -1.0,
            ..sample()
        })
        .unwrap();
        let e = Profile::parse(&negative, "p.json").unwrap_err().to_string();
        assert!(e.contains("queueing_latency_ns is -1"), "{e}");
    }

    #[test]
    fn the_shipped_profiles_are_their_measurements_refitted() {
        use crate::calibrate::pitch::ITERATIONS;
        assert_eq!(SHIPPED.len(), 2);
        for (name, text) in SHIPPED {
            let p = Profile::parse(text, name).unwrap();
            assert_eq!(p.device, *name);
            // Measured by `calibrate` on each GPU at schema 5: residency limits, on-chip
            // rates, the pitch sweep at every iteration count, and the spread sweep
            // (both streams at every distance).
            assert_eq!(p.schema, 5, "{name}");
            assert!(p.sm.is_some() && p.load_lines_per_ns_per_sm.is_some(), "{name}");
            let sweep = p.pitch_sweep.as_ref().map(Vec::len);
            assert_eq!(sweep, Some(31 * ITERATIONS.len()), "{name}");
            let spread = p.spread_sweep.as_ref().map(Vec::len);
            assert_eq!(
                spread,
                Some(2 * crate::calibrate::spread::apart(false).len()),
                "{name}"
            );
            // Every fitted value is what the fits give from the raw sweeps.
            let mut refit = p.clone();
            refit.refit();
            assert_eq!(
                refit, p,
                "{name}: run the ignored test regenerate_shipped_profiles"
            );
            // The file is exactly what the regeneration writes.
            let written = serde_json::to_string_pretty(&p).unwrap() + "\n";
            assert!(
                written == *text,
                "{name}: not as regenerate_shipped_profiles writes it"
            );
            assert_eq!(p.inflight_sweep.len(), 8);
            assert_eq!(p.stride_sweep.len(), 64);
            assert!(p.queueing_latency_ns > 0.0, "{name}: {p:?}");
        }
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

    /// Rewrites host/profiles/*.json as this coalesce reads and refits them: a
    /// schema-1 file as `coalesce calibrate` wrote it becomes the current schema, its
    /// measured values (device, date, attributes, copy ceiling, idle latency, both raw
    /// sweeps) as they were and its fitted values refitted from the sweeps. Run after
    /// a fit changes: `cargo test -p coalesce --lib regenerate_shipped_profiles -- --ignored`.
    #[test]
    #[ignore = "rewrites the shipped profiles"]
    fn regenerate_shipped_profiles() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let mut p = Profile::load(&path).unwrap();
            p.refit();
            std::fs::write(&path, serde_json::to_string_pretty(&p).unwrap() + "\n").unwrap();
        }
    }
}
