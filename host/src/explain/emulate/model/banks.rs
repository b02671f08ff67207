//! Shared memory's cost rules: 32 banks of 4-byte words on every model here. A pass of
//! a request takes as many wavefronts (ways) as the most distinct words any one bank
//! must serve, and a request of 8- or 16-byte accesses takes two or four passes.

use super::{LINE, Lane};

/// Shared-memory banks, each 4 bytes wide.
pub const BANKS: u64 = 32;
const BANK_WORD: u64 = 4;

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
