//! The raw measurements a profile keeps: the stride and inflight sweeps the fits read,
//! and the pitch and spread sweeps `explain` interpolates.

use serde::{Deserialize, Serialize};

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

/// The three kinds of scattered warp request, each timed by one kernel of the pitch
/// sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestKind {
    /// A load (`pitch_read`: 16 bytes a lane, then a coalesced 4-byte store a thread).
    Gather,
    /// A store (`pitch_write`: 16 bytes a lane, half a sector).
    Scatter,
    /// A store to the bytes the same lanes just loaded (`pitch_update`), counted with
    /// its load: the store finds its sectors in L2.
    Update,
}

/// One point of the pitch sweep (kernels/src/calibrate/pitch.rs, measured by
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

/// One point of the spread sweep (kernels/src/calibrate/spread.rs, measured by
/// `calibrate::spread`): a copy of 256 MiB whose waves read, or write, 128-byte chunks
/// placed `apart` chunks apart, at every SM's full residency. The spreads are counted
/// as `explain` counts a kernel's ([`spread`] over the first wave), so
/// `explain::bandwidth::sweep::spread_factor` reads a kernel's on the same scale.
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
    /// The rate at which the DRAM moved the DRAM bytes of `kind`'s requests at this
    /// point, GB/s: a thread's DRAM bytes over its time. `pitch_read`'s coalesced
    /// 4-byte sums take their time at the copy ceiling `copy_gb_per_s`, the rest is
    /// the gather's. Above the ceiling where L2 reuse across waves (which the window
    /// does not see) saves DRAM bytes.
    pub fn dram_gb_per_s(&self, kind: RequestKind, copy_gb_per_s: f64) -> f64 {
        // ns per thread (GB/s are bytes per ns) and the DRAM bytes in that time.
        let (ns, bytes) = match kind {
            RequestKind::Gather => (
                20.0 / self.read_gb_per_s - 4.0 / copy_gb_per_s,
                self.segment_bytes_per_lane,
            ),
            RequestKind::Scatter => (16.0 / self.write_gb_per_s, self.sector_bytes_per_lane),
            RequestKind::Update => (
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
