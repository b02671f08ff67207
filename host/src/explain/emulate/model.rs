//! The coalescing rules, as pure functions over the lanes of one warp request.
//!
//! - `sm70` (Volta and later, the default): the L1 serves a warp's request in 32-byte
//!   sectors of 128-byte lines; the cost is the number of distinct sectors touched.
//! - `cc1.2` (compute capability 1.2/1.3) and `cc1.0` (1.0/1.1): the half-warp segment
//!   rules of the CUDA C Programming Guide's appendix on compute capability 1.x, kept
//!   for teaching: they show why "thread k reads word k" was once a hard requirement.
//!
//! Shared memory's banks: [`banks`].

use serde::{Deserialize, Serialize};

pub mod banks;
pub use banks::{BANKS, bank_ways, line_rows, shared_wavefronts};

/// Bytes in a sector, the unit the L1 fetches on sm_70 and later.
pub const SECTOR: u64 = 32;
/// Bytes in a cache line (four sectors).
pub const LINE: u64 = 128;
const HALF_WARP: usize = 16;

/// One lane's part of a request: `bytes` at `addr`. For shared memory `addr` is the
/// address within the block's shared storage (only differences between lanes matter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    /// 0..32 within the warp.
    pub lane: usize,
    pub addr: u64,
    pub bytes: u64,
}

/// Which hardware rules turn a request into memory transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Model {
    /// sm_70 and later: 32-byte sectors per warp request.
    #[value(name = "sm70")]
    #[serde(rename = "sm70")]
    Sm70,
    /// Compute capability 1.2/1.3: per half-warp, 32/64/128-byte segments, shrunk to fit.
    #[value(name = "cc1.2")]
    #[serde(rename = "cc1.2")]
    Cc12,
    /// Compute capability 1.0/1.1: per half-warp, one segment if thread k reads word k,
    /// else one transaction per thread.
    #[value(name = "cc1.0")]
    #[serde(rename = "cc1.0")]
    Cc10,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::Sm70 => "sm70",
            Model::Cc12 => "cc1.2",
            Model::Cc10 => "cc1.0",
        }
    }

    /// One line: what a transaction is under this model.
    pub fn about(self) -> &'static str {
        match self {
            Model::Sm70 => {
                "sm_70 and later: a warp's request is served in 32-byte sectors (4 per f32 warp access when coalesced, up to 32)"
            }
            Model::Cc12 => {
                "compute capability 1.2/1.3: each half-warp is served in 32/64/128-byte segments, each shrunk to the half it uses"
            }
            Model::Cc10 => {
                "compute capability 1.0/1.1: a half-warp is one segment only if thread k reads word k of it, else one 32-byte transaction per thread"
            }
        }
    }

    /// What this model calls its unit of transfer.
    pub fn unit(self) -> &'static str {
        match self {
            Model::Sm70 => "sectors",
            Model::Cc12 | Model::Cc10 => "transactions",
        }
    }

    /// The transactions and bytes moved for one global request.
    pub fn cost(self, lanes: &[Lane]) -> Cost {
        match self {
            Model::Sm70 => sm70(lanes),
            Model::Cc12 => cc12(lanes),
            Model::Cc10 => cc10(lanes),
        }
    }
}

/// What a request costs: how many transactions, moving how many bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub transactions: u64,
    pub bytes: u64,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        self.transactions += o.transactions;
        self.bytes += o.bytes;
    }
}

/// Distinct `unit`-byte blocks the lanes touch.
fn distinct_blocks(lanes: &[Lane], unit: u64) -> u64 {
    let mut blocks: Vec<u64> = lanes
        .iter()
        .filter(|l| l.bytes > 0)
        .flat_map(|l| l.addr / unit..=(l.addr + l.bytes - 1) / unit)
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks.len() as u64
}

/// Distinct 32-byte sectors touched.
pub fn sectors(lanes: &[Lane]) -> u64 {
    distinct_blocks(lanes, SECTOR)
}

/// Distinct 128-byte lines touched.
pub fn lines(lanes: &[Lane]) -> u64 {
    distinct_blocks(lanes, LINE)
}

/// The byte ranges the lanes asked for, merged: the bytes the warp actually needed.
fn merged(lanes: &[Lane]) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = lanes.iter().map(|l| (l.addr, l.addr + l.bytes)).collect();
    spans.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (start, end) in spans {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// Distinct bytes requested (lanes reading the same word count it once).
pub fn useful_bytes(lanes: &[Lane]) -> u64 {
    merged(lanes).iter().map(|(s, e)| e - s).sum()
}

/// Whether the requested bytes form one contiguous run.
pub fn contiguous(lanes: &[Lane]) -> bool {
    merged(lanes).len() <= 1
}

/// Distinct addresses requested.
pub fn distinct_addresses(lanes: &[Lane]) -> usize {
    let mut a: Vec<u64> = lanes.iter().map(|l| l.addr).collect();
    a.sort_unstable();
    a.dedup();
    a.len()
}

/// sm_70 and later: one 32-byte sector per distinct sector touched.
pub fn sm70(lanes: &[Lane]) -> Cost {
    let s = sectors(lanes);
    Cost {
        transactions: s,
        bytes: s * SECTOR,
    }
}

fn half_warps(lanes: &[Lane]) -> [Vec<Lane>; 2] {
    let mut halves = [Vec::new(), Vec::new()];
    for l in lanes {
        halves[(l.lane / HALF_WARP).min(1)].push(*l);
    }
    for h in &mut halves {
        h.sort_by_key(|l| l.lane);
    }
    halves
}

/// Compute capability 1.0/1.1. A half-warp coalesces into one transaction (two
/// 128-byte ones for 16-byte words) only if every active thread k accesses word k of
/// one segment of 16 words, aligned to its size: 64 bytes for 4-byte words, 128 for
/// 8-byte, 256 for 16-byte. Otherwise each active thread gets its own transaction of
/// at least 32 bytes. Inactive threads do not break coalescing.
pub fn cc10(lanes: &[Lane]) -> Cost {
    let mut cost = Cost::default();
    for half in half_warps(lanes) {
        let Some(first) = half.first() else { continue };
        let word = first.bytes;
        let segment = 16 * word;
        // Where word 0 of the segment would be, as seen from each thread k.
        let base = |l: &Lane| l.addr.checked_sub((l.lane % HALF_WARP) as u64 * word);
        let in_sequence = matches!(word, 4 | 8 | 16)
            && half.iter().all(|l| l.bytes == word)
            && base(first).is_some_and(|b| b.is_multiple_of(segment))
            && half.iter().all(|l| base(l) == base(first));
        if in_sequence {
            cost += if word == 16 {
                Cost {
                    transactions: 2,
                    bytes: 256,
                }
            } else {
                Cost {
                    transactions: 1,
                    bytes: segment,
                }
            };
        } else {
            for l in &half {
                cost += Cost {
                    transactions: 1,
                    bytes: l.bytes.next_power_of_two().max(SECTOR),
                };
            }
        }
    }
    cost
}

/// Compute capability 1.2/1.3, per half-warp, as the programming guide gives it:
/// find the segment (32 bytes for 1-byte words, 64 for 2-byte, 128 for 4-, 8- and
/// 16-byte words) holding the address of the lowest-numbered active thread; serve
/// every active thread whose address lies in it; while only the lower or upper half
/// of the segment is used, halve it (128 -> 64 -> 32); issue it; repeat.
pub fn cc12(lanes: &[Lane]) -> Cost {
    let mut cost = Cost::default();
    for half in half_warps(lanes) {
        let mut pending = half;
        while let Some(first) = pending.first().copied() {
            let word = pending.iter().map(|l| l.bytes).max().unwrap_or(first.bytes);
            let segment = match word {
                0..=1 => 32,
                2 => 64,
                _ => 128,
            };
            let base = first.addr / segment * segment;
            let (served, rest): (Vec<Lane>, Vec<Lane>) = pending
                .iter()
                .partition(|l| l.addr >= base && l.addr < base + segment);
            let lo = served.iter().map(|l| l.addr).min().unwrap_or(base);
            let hi = served.iter().map(|l| l.addr + l.bytes).max().unwrap_or(base);
            let (mut start, mut size) = (base, segment);
            while size > SECTOR {
                let mid = start + size / 2;
                if hi <= mid {
                    size /= 2;
                } else if lo >= mid {
                    start = mid;
                    size /= 2;
                } else {
                    break;
                }
            }
            cost += Cost {
                transactions: 1,
                bytes: size,
            };
            pending = rest;
        }
    }
    cost
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lanes `lanes` reading 4-byte words at `addr(lane)`.
    fn request(lanes: impl IntoIterator<Item = usize>, addr: impl Fn(usize) -> u64) -> Vec<Lane> {
        lanes
            .into_iter()
            .map(|lane| Lane {
                lane,
                addr: addr(lane),
                bytes: 4,
            })
            .collect()
    }

    fn cost(transactions: u64, bytes: u64) -> Cost {
        Cost { transactions, bytes }
    }

    // The worked examples, for one half-warp (lanes 0..16) of 4-byte words.

    #[test]
    fn in_sequence_half_warp() {
        // Thread k reads word k of an aligned 64-byte segment.
        let r = request(0..16, |k| 1024 + 4 * k as u64);
        assert_eq!(cc10(&r), cost(1, 64));
        assert_eq!(cc12(&r), cost(1, 64), "128 B segment, lower half used: 64 B");
        assert_eq!(sm70(&r), cost(2, 64));
    }

    #[test]
    fn in_sequence_with_inactive_threads_still_coalesces() {
        let r = request((0..16).filter(|k| k % 5 != 3), |k| 1024 + 4 * k as u64);
        assert_eq!(cc10(&r), cost(1, 64));
        assert_eq!(cc12(&r), cost(1, 64));
    }

    #[test]
    fn permuted_within_a_segment() {
        // Every word of the 64-byte segment is read, but not by thread k.
        let r = request(0..16, |k| 1024 + 4 * ((k as u64 * 5) % 16));
        assert_eq!(cc10(&r), cost(16, 16 * 32), "cc1.0: one transaction per thread");
        assert_eq!(cc12(&r), cost(1, 64), "cc1.2: the segment is what matters");
        assert_eq!(sm70(&r), cost(2, 64));
    }

    #[test]
    fn misaligned_across_a_128_byte_boundary() {
        // Words 18..34 of a 128-byte-aligned region: bytes 72..136.
        let r = request(0..16, |k| 1024 + 72 + 4 * k as u64);
        assert_eq!(cc10(&r), cost(16, 16 * 32));
        // [1024, 1152) holds bytes 72..128: its upper 64 B half, not within 32 B;
        // [1152, 1280) holds bytes 128..136: its first 32 B.
        assert_eq!(cc12(&r), cost(2, 64 + 32));
        assert_eq!(sm70(&r), cost(3, 96));
    }

    #[test]
    fn misaligned_within_one_128_byte_segment_is_one_128_byte_transaction() {
        let r = request(0..16, |k| 1024 + 4 + 4 * k as u64);
        assert_eq!(cc12(&r), cost(1, 128));
        assert_eq!(cc10(&r).transactions, 16);
    }

    #[test]
    fn full_warps_add_their_half_warps() {
        let r = request(0..32, |k| 4096 + 4 * k as u64);
        assert_eq!(cc10(&r), cost(2, 128));
        assert_eq!(cc12(&r), cost(2, 128));
        assert_eq!(sm70(&r), cost(4, 128));
        assert_eq!((lines(&r), useful_bytes(&r)), (1, 128));
    }

    #[test]
    fn cc12_shrinks_to_32_bytes_and_serves_scattered_threads_one_segment_each() {
        let r = request(0..4, |k| 4096 + 4 * k as u64);
        assert_eq!(cc12(&r), cost(1, 32));
        let r = request(0..16, |k| 4096 * (k as u64 + 1));
        assert_eq!(cc12(&r), cost(16, 16 * 32));
    }

    #[test]
    fn sixteen_byte_words() {
        // A half-warp of float4s in sequence: 256 bytes.
        let r: Vec<Lane> = (0..16)
            .map(|k| Lane {
                lane: k,
                addr: 4096 + 16 * k as u64,
                bytes: 16,
            })
            .collect();
        assert_eq!(cc10(&r), cost(2, 256));
        assert_eq!(cc12(&r), cost(2, 256));
        assert_eq!(sm70(&r), cost(8, 256));
    }

    #[test]
    fn sm70_stride_s_touches_min_4s_32_sectors() {
        for s in [1u64, 2, 4, 8, 16, 32, 64] {
            let r = request(0..32, |k| (1 << 20) + 4 * s * k as u64);
            assert_eq!(sectors(&r), (4 * s).min(32), "stride {s}");
        }
    }

    #[test]
    fn broadcast_is_one_sector_of_useful_bytes() {
        let r = request(0..32, |_| 4096 + 8);
        assert_eq!(sm70(&r), cost(1, 32));
        assert_eq!((useful_bytes(&r), distinct_addresses(&r)), (4, 1));
    }

    #[test]
    fn contiguity_and_useful_bytes_merge_overlaps() {
        let r = request(0..3, |k| [0, 2, 4][k]);
        assert!(contiguous(&r));
        assert_eq!(useful_bytes(&r), 8);
        assert!(!contiguous(&request(0..2, |k| 100 * k as u64)));
    }
}
