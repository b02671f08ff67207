//! The coalescing rules, as pure functions over the lanes of one warp request.
//!
//! - `sm70` (Volta and later, the default): the L1 serves a warp's request in 32-byte
//!   sectors of 128-byte lines; the cost is the number of distinct sectors touched.
//! - `cc1.2` (compute capability 1.2/1.3) and `cc1.0` (1.0/1.1): the half-warp segment
//!   rules of the CUDA C Programming Guide's appendix on compute capability 1.x, kept
//!   for teaching: they show why "thread k reads word k" was once a hard requirement.
//!
//! Shared memory has 32 banks of 4-byte words on every model here: a pass of a request
//! takes as many wavefronts (ways) as the most distinct words any one bank must serve,
//! and a request of 8- or 16-byte accesses takes two or four passes.

use serde::{Deserialize, Serialize};

/// Bytes in a sector, the unit the L1 fetches on sm_70 and later.
pub const SECTOR: u64 = 32;
/// Bytes in a cache line (four sectors).
pub const LINE: u64 = 128;
/// Shared-memory banks, each 4 bytes wide.
pub const BANKS: u64 = 32;
const BANK_WORD: u64 = 4;
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

/// Shared-memory bank conflicts: the most distinct 4-byte words any one of the 32
/// banks serves in one pass of this request (1 = conflict-free; lanes reading the same
/// word are served by one broadcast, so they do not add ways). A request of 8- or
/// 16-byte accesses is served in passes of fewer lanes ([`shared_wavefronts`]); the
/// ways are the worst pass's. 0 for an empty request.
pub fn bank_ways(lanes: &[Lane], load: bool) -> u64 {
    passes(lanes, load).iter().map(|p| ways(p)).max().unwrap_or(0)
}

/// Shared-memory wavefronts (passes through the banks) one warp request takes. A pass
/// returns at most one 4-byte word per lane (128 bytes), so a request of 8-byte
/// accesses is served as two half-warps and one of 16-byte accesses as four
/// quarter-warps, each taking as many wavefronts as its worst bank's distinct words.
/// A load whose active lanes pair up on one address (lane n with lane n^1 throughout,
/// or with n^2) packs two lanes' words into one return: passes of twice the lanes.
/// (NVIDIA's description of the return path and the pairing rule:
/// forums.developer.nvidia.com/t/unexpected-shared-memory-bank-conflict/77228.)
pub fn shared_wavefronts(lanes: &[Lane], load: bool) -> u64 {
    passes(lanes, load).iter().map(|p| ways(p)).sum()
}

/// Shared-memory wavefronts of a 16-byte `cp.async` request (`cp.async.cg`, SASS
/// `LDGSTS.E.BYPASS.128`: L2 straight to shared memory), from each lane's pair (the
/// global address it copies, where known; the shared offset it writes): one wavefront
/// per global 128-byte line and 128-byte row of shared memory its bytes land in. A
/// line whose 128 bytes land in one aligned row takes one; one that lands across two
/// rows (rows 144 or 544 bytes apart) takes two, though no bank is used twice. Lanes
/// that copy nothing (a zero fill) share one line of their own.
pub fn line_rows(pairs: impl IntoIterator<Item = (Option<u64>, u64)>) -> u64 {
    let mut seen: Vec<(Option<u64>, u64)> = pairs
        .into_iter()
        .map(|(from, to)| (from.map(|a| a / LINE), to / LINE))
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len() as u64
}

/// The lanes of each pass of a shared-memory request, in lane order.
fn passes(lanes: &[Lane], load: bool) -> Vec<Vec<Lane>> {
    let active: Vec<Lane> = lanes.iter().copied().filter(|l| l.bytes > 0).collect();
    let width = active.iter().map(|l| l.bytes).max().unwrap_or(0);
    let mut per_pass = (32 * BANK_WORD / width.max(BANK_WORD)).max(1) as usize;
    if per_pass < 32 && load && (paired(&active, 1) || paired(&active, 2)) {
        per_pass *= 2;
    }
    let mut out: Vec<Vec<Lane>> = Vec::new();
    for l in active {
        let pass = l.lane / per_pass;
        if out.len() <= pass {
            out.resize(pass + 1, Vec::new());
        }
        out[pass].push(l);
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Whether every active lane n whose partner n ^ `mask` is active reads the partner's
/// address.
fn paired(lanes: &[Lane], mask: usize) -> bool {
    let mut at = [None; 32];
    for l in lanes {
        at[l.lane % 32] = Some(l.addr);
    }
    lanes
        .iter()
        .all(|l| at[(l.lane % 32) ^ mask].is_none_or(|a| a == l.addr))
}

/// The most distinct 4-byte words one bank serves among `lanes` (0 if none).
fn ways(lanes: &[Lane]) -> u64 {
    let mut words: Vec<u64> = lanes
        .iter()
        .filter(|l| l.bytes > 0)
        .flat_map(|l| l.addr / BANK_WORD..=(l.addr + l.bytes - 1) / BANK_WORD)
        .collect();
    words.sort_unstable();
    words.dedup();
    let mut per_bank = [0u64; BANKS as usize];
    for w in words {
        per_bank[(w % BANKS) as usize] += 1;
    }
    per_bank.into_iter().max().unwrap_or(0)
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
    fn bank_ways() {
        let ways = |r: &[Lane]| super::bank_ways(r, true);
        // Row of a 32-wide tile: 32 consecutive words, 32 banks.
        assert_eq!(ways(&request(0..32, |k| 4 * k as u64)), 1);
        // Column of a 32 x 32 tile: every word in bank 0.
        assert_eq!(ways(&request(0..32, |k| 4 * 32 * k as u64)), 32);
        // Column of a 32 x 33 tile: the padding spreads it over all banks.
        assert_eq!(ways(&request(0..32, |k| 4 * 33 * k as u64)), 1);
        // Stride 2 words: two words per bank.
        assert_eq!(ways(&request(0..32, |k| 8 * k as u64)), 2);
        // Everyone reads one word: a broadcast.
        assert_eq!(ways(&request(0..32, |_| 64)), 1);
        assert_eq!(ways(&[]), 0);
        for r in [
            request(0..32, |k| 4 * 32 * k as u64),
            request(0..32, |k| 4 * k as u64),
        ] {
            assert_eq!(shared_wavefronts(&r, true), ways(&r), "4-byte words: one pass");
        }
    }

    /// Lanes `lanes` accessing `bytes`-wide vectors at `addr(lane)`.
    fn vectors(bytes: u64, addr: impl Fn(usize) -> u64) -> Vec<Lane> {
        (0..32)
            .map(|lane| Lane {
                lane,
                addr: addr(lane),
                bytes,
            })
            .collect()
    }

    #[test]
    fn wide_accesses_take_a_pass_per_half_or_quarter_warp() {
        // 32 consecutive float4s: 512 bytes, four quarter-warps of 128 conflict-free bytes.
        let r = vectors(16, |k| 16 * k as u64);
        assert_eq!((shared_wavefronts(&r, true), super::bank_ways(&r, true)), (4, 1));
        // 32 consecutive 8-byte words: two half-warps.
        assert_eq!(shared_wavefronts(&vectors(8, |k| 8 * k as u64), true), 2);
        // NVIDIA's forum case: byte offset (lane % 4) x 16. Lane n and n^1 differ, so
        // no packing: four passes, though only 64 distinct bytes are read.
        assert_eq!(shared_wavefronts(&vectors(16, |k| (k as u64 % 4) * 16), true), 4);
        // ... and with lanes paired on one address (n with n^1): two.
        assert_eq!(
            shared_wavefronts(&vectors(16, |k| (k as u64 / 2 % 4) * 16), true),
            2
        );
        // A broadcast of one float4 packs too; a store does not.
        assert_eq!(shared_wavefronts(&vectors(16, |_| 0), true), 2);
        assert_eq!(shared_wavefronts(&vectors(16, |_| 0), false), 4);
    }

    #[test]
    fn sgemm_fragment_loads_match_what_nsight_compute_counted() {
        // Warp-tiled rungs, lane = 4 row + col: the A fragment (8 floats per row, all
        // four lanes of a row on one float4) pairs, two passes; the B fragment (4
        // floats per column, n and n^1 differ) takes four. Nsight Compute on the H100
        // counted 3.00 wavefronts per request over equal numbers of both.
        let a = vectors(16, |k| 32 * (k as u64 / 4));
        let b = vectors(16, |k| 16 * (k as u64 % 4));
        assert_eq!((shared_wavefronts(&a, true), shared_wavefronts(&b, true)), (2, 4));
        // vec4 / tile-2d: 16 threads per row of 8 x 8 outputs; B columns 8 floats apart
        // put two float4s of a quarter-warp in one bank: 2 passes of 2 each... x 4 = 8
        // (Nsight Compute: 5.00 per request, averaged with A's 2).
        let b = vectors(16, |k| 32 * (k as u64 % 16));
        assert_eq!((shared_wavefronts(&b, true), super::bank_ways(&b, true)), (8, 2));
        let a = vectors(16, |k| 32 * (k as u64 / 16));
        assert_eq!(shared_wavefronts(&a, true), 2);
    }

    #[test]
    fn contiguity_and_useful_bytes_merge_overlaps() {
        let r = request(0..3, |k| [0, 2, 4][k]);
        assert!(contiguous(&r));
        assert_eq!(useful_bytes(&r), 8);
        assert!(!contiguous(&request(0..2, |k| 100 * k as u64)));
    }

    #[test]
    fn a_16_byte_copy_takes_a_wavefront_per_line_and_shared_row() {
        // 32 lanes of 16 bytes: 512 contiguous global bytes from a 128-byte boundary.
        let copy = |to: &dyn Fn(u64) -> u64| line_rows((0..32u64).map(|l| (Some(4096 + 16 * l), to(l))));
        // Into an aligned 512-byte shared row: four lines, four rows.
        assert_eq!(copy(&|l| 16 * l), 4);
        // 32 bytes off a 128-byte boundary: each line lands across two rows.
        assert_eq!(copy(&|l| 544 + 16 * l), 8);
        // Four 128-byte rows 144 bytes apart (the TF32 rungs' A): row 0 aligned.
        assert_eq!(copy(&|l| 144 * (l / 8) + 16 * (l % 8)), 7);
        assert_eq!(copy(&|l| 144 * (4 + l / 8) + 16 * (l % 8)), 8);
        // Zero-filled lanes read no line: their rows alone.
        assert_eq!(line_rows((0..32u64).map(|l| (None, 16 * l))), 4);
    }
}
