//! How fast a bandwidth-bound kernel will run, and why: the emulated address stream
//! ([`Traffic`]) and a GPU's calibration ([`Profile`]) give the DRAM bytes it moves
//! and the bytes it keeps in flight; the slower of two bounds sets the time.
//! docs/model.md states the model in the same words.
//!
//! - **DRAM bytes**: a read fetches whole `dram_read_granularity`-byte segments and a
//!   write whole 32-byte sectors; segments and sectors are counted once over the
//!   emulated window (the L2 serves every later touch), as a ratio to the bytes the
//!   lanes asked for, and that ratio scales the declared useful bytes.
//! - **Bytes in flight** (Little's law): each resident thread keeps the bytes it loads
//!   before its first store in flight; the whole GPU's reads then flow at
//!   in-flight bytes / loaded latency, and writes follow in proportion.
//!
//! The time is DRAM bytes over the smaller of the copy ceiling and the in-flight
//! rate, and the bound named is the one that sets it.

use std::collections::{HashMap, HashSet};

use kernels::gpu::emu::{Access, Op, Space};
use serde::Serialize;

use crate::profile::Profile;

/// Segment sizes a read's DRAM traffic is counted in (a profile's granularity is
/// one of them).
pub const GRANULARITIES: [u32; 3] = [32, 64, 128];

/// What an emulated window of a launch moves, before any GPU's parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Traffic {
    /// Bytes the lanes asked for, over every global load and store request.
    pub useful_read: u64,
    pub useful_write: u64,
    /// Distinct aligned segments read over the whole window, one count per size in
    /// [`GRANULARITIES`].
    pub read_segments: [u64; 3],
    /// Distinct 32-byte sectors written over the whole window.
    pub write_sectors: u64,
    /// The mean global bytes a thread loads before its first global store (or in all,
    /// if it stores nothing): what it has in flight at once.
    pub in_flight_per_thread: f64,
}

/// Counts a recorded window's traffic. Each thread's accesses appear in the log in
/// its program order (the emulator appends a thread's own log whole).
pub fn traffic(accesses: &[Access]) -> Traffic {
    let mut t = Traffic::default();
    let mut segments: [HashSet<usize>; 3] = Default::default();
    let mut sectors: HashSet<usize> = HashSet::new();
    // Per (block, thread): bytes loaded so far, and whether it has stored yet.
    let mut threads: HashMap<(usize, usize), (u64, bool)> = HashMap::new();
    // Lanes of one request asking for the same bytes count once (a broadcast).
    let mut requested: HashSet<(usize, usize, &'static std::panic::Location<'static>, usize, usize)> =
        HashSet::new();
    for a in accesses.iter().filter(|a| a.space == Space::Global) {
        let fresh = requested.insert((a.block, a.warp(), a.site, a.occurrence, a.addr));
        let entry = threads.entry((a.block, a.thread)).or_insert((0, false));
        match a.op {
            Op::Load => {
                if fresh {
                    t.useful_read += a.bytes as u64;
                }
                for (set, g) in segments.iter_mut().zip(GRANULARITIES) {
                    let g = g as usize;
                    set.extend((a.addr / g)..=((a.addr + a.bytes - 1) / g));
                }
                if !entry.1 {
                    entry.0 += a.bytes as u64;
                }
            }
            Op::Store => {
                if fresh {
                    t.useful_write += a.bytes as u64;
                }
                sectors.extend((a.addr / 32)..=((a.addr + a.bytes - 1) / 32));
                entry.1 = true;
            }
        }
    }
    for (count, set) in t.read_segments.iter_mut().zip(&segments) {
        *count = set.len() as u64;
    }
    t.write_sectors = sectors.len() as u64;
    if !threads.is_empty() {
        t.in_flight_per_thread = threads.values().map(|v| v.0 as f64).sum::<f64>() / threads.len() as f64;
    }
    t
}

/// Which bound sets the predicted time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// The DRAM bytes at the copy ceiling.
    DramBytes,
    /// Too few bytes in flight to reach the ceiling.
    BytesInFlight,
}

impl Bound {
    pub fn describe(self) -> &'static str {
        match self {
            Bound::DramBytes => "DRAM bytes at the copy ceiling",
            Bound::BytesInFlight => "bytes in flight (too few to reach the ceiling)",
        }
    }
}

/// A kernel's predicted DRAM traffic, time and bandwidth on one GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The profile's device.
    pub device: String,
    pub dram_read_bytes: f64,
    pub dram_write_bytes: f64,
    /// Threads resident on one SM during the launch.
    pub resident_threads_per_sm: u32,
    /// DRAM bytes one SM's resident threads keep in flight.
    pub in_flight_bytes_per_sm: f64,
    /// The rate those bytes in flight allow, read + write, GB/s.
    pub in_flight_gb_per_s: f64,
    pub time_ms: f64,
    /// Useful bytes over the predicted time, GB/s.
    pub gb_per_s: f64,
    pub pct_of_copy: f64,
    pub bound: Bound,
}

/// How a launch fills the GPU: blocks and threads per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub blocks: u64,
    pub threads_per_block: u32,
}

/// Hopper, Ampere and Volta hold at most 32 blocks per SM.
const MAX_BLOCKS_PER_SM: u32 = 32;

/// Threads resident on one SM: as many whole blocks as fit, no more than the grid
/// spread over every SM. Registers and shared memory are not counted (the bandwidth
/// kernels use few of either); see docs/model.md.
pub fn resident_threads(shape: Shape, profile: &Profile) -> u32 {
    let per_block = shape.threads_per_block.max(1);
    let fit = (profile.max_threads_per_sm / per_block).clamp(1, MAX_BLOCKS_PER_SM);
    let spread = shape.blocks.div_ceil(u64::from(profile.sm_count.max(1)));
    let blocks = u64::from(fit).min(spread.max(1)) as u32;
    blocks * per_block
}

/// Predicts a launch that moves `useful_bytes` (the declared work) with the window's
/// `traffic`, on the profile's GPU. None when the window moved nothing.
pub fn predict(useful_bytes: u64, traffic: &Traffic, shape: Shape, profile: &Profile) -> Option<Prediction> {
    let asked = traffic.useful_read + traffic.useful_write;
    if asked == 0 || useful_bytes == 0 {
        return None;
    }
    let g = profile.dram_read_granularity;
    // The nearest counted granularity at or below the profile's (it is a multiple of 32).
    let at = GRANULARITIES.iter().rposition(|&c| c <= g).unwrap_or(0);
    let read_ratio = ratio(
        traffic.read_segments[at] * u64::from(GRANULARITIES[at]),
        traffic.useful_read,
    );
    let write_ratio = ratio(traffic.write_sectors * 32, traffic.useful_write);
    // The declared useful bytes split between reads and writes as the window's are.
    let read_share = traffic.useful_read as f64 / asked as f64;
    let dram_read = useful_bytes as f64 * read_share * read_ratio;
    let dram_write = useful_bytes as f64 * (1.0 - read_share) * write_ratio;
    let dram = dram_read + dram_write;

    let resident = resident_threads(shape, profile);
    let in_flight_per_sm = f64::from(resident) * traffic.in_flight_per_thread * read_ratio;
    // Little's law: reads flow at (bytes in flight) / latency; writes keep their
    // proportion to reads. Bytes per ns are GB/s.
    let in_flight_rate = if dram_read > 0.0 {
        in_flight_per_sm * f64::from(profile.sm_count) / profile.loaded_latency_ns * (dram / dram_read)
    } else {
        f64::INFINITY
    };
    let (rate, bound) = if in_flight_rate < profile.copy_gb_per_s {
        (in_flight_rate, Bound::BytesInFlight)
    } else {
        (profile.copy_gb_per_s, Bound::DramBytes)
    };
    let time_s = dram / (rate * 1e9);
    let gb_per_s = useful_bytes as f64 / time_s / 1e9;
    Some(Prediction {
        device: profile.device.clone(),
        dram_read_bytes: dram_read,
        dram_write_bytes: dram_write,
        resident_threads_per_sm: resident,
        in_flight_bytes_per_sm: in_flight_per_sm,
        in_flight_gb_per_s: in_flight_rate,
        time_ms: time_s * 1e3,
        gb_per_s,
        pct_of_copy: 100.0 * gb_per_s / profile.copy_gb_per_s,
        bound,
    })
}

fn ratio(dram: u64, useful: u64) -> f64 {
    if useful == 0 {
        0.0
    } else {
        dram as f64 / useful as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::tests::sample;

    /// `stride` floats apart, one per lane, 32 lanes per warp, one store per lane.
    fn strided(stride: usize, warps: usize) -> Vec<Access> {
        let site_load = std::panic::Location::caller();
        let mut log = Vec::new();
        for w in 0..warps {
            for lane in 0..32 {
                let i = w * 32 + lane;
                for (op, addr) in [
                    (Op::Load, (1 << 30) + 4 * i * stride),
                    (Op::Store, (1 << 34) + 4 * i),
                ] {
                    log.push(Access {
                        block: 0,
                        thread: i,
                        site: site_load,
                        occurrence: 0,
                        op,
                        space: Space::Global,
                        addr,
                        array: 0,
                        bytes: 4,
                    });
                }
            }
        }
        log
    }

    #[test]
    fn a_coalesced_copy_moves_what_it_asks_for() {
        let t = traffic(&strided(1, 8));
        assert_eq!((t.useful_read, t.useful_write), (1024, 1024));
        assert_eq!(t.read_segments, [32, 16, 8]);
        assert_eq!(t.write_sectors, 32);
        assert_eq!(t.in_flight_per_thread, 4.0);
    }

    #[test]
    fn wide_strides_fetch_a_whole_segment_per_lane() {
        // 16 floats apart: every lane in its own 64-byte segment.
        let t = traffic(&strided(16, 4));
        assert_eq!(t.read_segments[1], 128);
        let shape = Shape {
            blocks: 1 << 20,
            threads_per_block: 256,
        };
        let p = predict(8 << 20, &t, shape, &sample()).unwrap();
        // 16x the useful reads, 1x the writes: (64 + 4) bytes per 8 useful.
        assert!((p.dram_read_bytes - 16.0 * (4 << 20) as f64).abs() < 1.0);
        assert_eq!(p.bound, Bound::DramBytes);
        assert!(
            (p.pct_of_copy - 100.0 * 8.0 / 68.0).abs() < 1e-9,
            "{}",
            p.pct_of_copy
        );
    }

    #[test]
    fn one_float_per_thread_is_bound_by_bytes_in_flight() {
        let t = traffic(&strided(1, 8));
        let shape = Shape {
            blocks: 1 << 20,
            threads_per_block: 256,
        };
        let profile = sample();
        let p = predict(8 << 20, &t, shape, &profile).unwrap();
        assert_eq!(p.resident_threads_per_sm, 2048);
        // 2048 threads x 4 bytes on 132 SMs over 900 ns, doubled for the writes.
        let rate = 2048.0 * 4.0 * 132.0 / 900.0 * 2.0;
        assert!((p.in_flight_gb_per_s - rate).abs() < 1e-9);
        assert_eq!(p.bound, Bound::BytesInFlight);
        assert!((p.pct_of_copy - 100.0 * rate / 3000.0).abs() < 1e-9);
        // Four times the bytes in flight reach the ceiling.
        let mut more = t.clone();
        more.in_flight_per_thread = 16.0;
        assert_eq!(
            predict(8 << 20, &more, shape, &profile).unwrap().bound,
            Bound::DramBytes
        );
    }

    #[test]
    fn small_grids_and_big_blocks_hold_fewer_threads() {
        let p = sample();
        let shape = |blocks, threads_per_block| Shape {
            blocks,
            threads_per_block,
        };
        assert_eq!(resident_threads(shape(1 << 20, 256), &p), 2048);
        assert_eq!(resident_threads(shape(132, 256), &p), 256);
        assert_eq!(resident_threads(shape(1 << 20, 1024), &p), 2048);
        assert_eq!(resident_threads(shape(1 << 20, 768), &p), 1536);
        assert_eq!(resident_threads(shape(1 << 20, 32), &p), 1024);
    }
}
