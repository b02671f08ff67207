//! What a kernel's emulated address stream moves ([`Traffic`]): the bytes its lanes ask
//! for, the DRAM segments and sectors those touch (each counted once over the window:
//! the L2 serves every later touch), the bytes a thread keeps in flight, and the L1's
//! work (128-byte lines per global request, wavefronts per shared request), and the
//! scattered requests the pitch sweep times ([`Scattered`]). The prediction
//! ([`super::predict`]) turns these counts into time on one GPU.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use kernels::gpu::emu::{Access, Op, Space};
use serde::Serialize;

use super::model::{self, Lane};
use crate::profile::{PAGE_BYTES, RequestKind, pages_filled, spread};

/// Segment sizes a read's DRAM traffic is counted in (a profile's granularity is
/// one of them).
pub const GRANULARITIES: [u32; 3] = [32, 64, 128];

/// The least distance between two lanes' addresses for which a request counts as
/// scattered: the pitch sweep's smallest pitch, a 64-byte segment per lane.
pub const SCATTER_MIN_PITCH: u64 = 64;

/// Warp requests of one kind and pitch whose lanes each touch a 64-byte segment of
/// their own, as the pitch sweep's do, and the DRAM bytes they move over the window
/// (each 64-byte segment read and 32-byte sector written once, however many requests
/// of the group share it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Scattered {
    pub kind: RequestKind,
    /// The median distance between the request's lanes' addresses in order, bytes.
    pub pitch_bytes: u64,
    pub requests: u64,
    /// The lanes those requests have in all (an update's counted once): with the
    /// launch's threads, how many of them each thread runs ([`super::predict`]).
    pub lanes: u64,
    pub dram_bytes: u64,
}

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
    /// Of those segments (per size) and sectors, the ones whose bytes the window's
    /// requests use only in part: the rest may be another block's, read while the
    /// segment is still in L2 ([`Traffic::shares_segments`]).
    pub partial_read_segments: [u64; 3],
    pub partial_write_sectors: u64,
    /// The mean global bytes a thread loads before its first global store (or in all,
    /// if it stores nothing): what it has in flight at once.
    pub in_flight_per_thread: f64,
    /// Warp requests to global memory, [loads, stores], and the 32-byte sectors and
    /// 128-byte lines they touch (each request counted on its own, as the L1 sees them).
    pub global_requests: [u64; 2],
    pub global_sectors: [u64; 2],
    pub global_lines: [u64; 2],
    /// Warp requests to shared memory, [loads, stores], and the wavefronts the banks
    /// serve them in (1 per conflict-free request, n per n-way conflict).
    pub shared_requests: [u64; 2],
    pub shared_wavefronts: [u64; 2],
    /// The scattered requests, by kind and pitch: a store to exactly the lanes and
    /// addresses a load of the same warp read is one update with that load; other
    /// loads are gathers, other stores scatters.
    pub scattered: Vec<Scattered>,
    /// 2 MiB pages the scattered requests touch over the window.
    pub scattered_pages: u64,
    /// Sectors the L2 fills from DRAM for a partial write: of each 128-byte line that
    /// no load of the window reads, the sectors that the first store request to touch
    /// it writes only in part. Each costs a 32-byte read and a 32-byte write more
    /// (Nsight Compute: DRAM bytes beyond the useful = 32 x the L2's write lookup
    /// misses; docs/model.md, "Partial writes").
    pub fill_sectors: u64,
    /// How far the first wave's accesses spread, where `explain` counted it (a profile
    /// with a spread sweep: [`super::explain_variant`]); the rest of this struct is
    /// over the window.
    pub wave_spread: Option<Spread>,
}

/// The [`spread`] of a window's global loads and of its global stores.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub read: f64,
    pub write: f64,
}

/// The spread of a window's global accesses (docs/model.md, "Spread"): per direction,
/// the 2 MiB pages touched over those the distinct 32-byte sectors touched would fill,
/// each of `buffers` (the byte ranges of the kernel's arrays) counted by itself: a
/// contiguous stream of any array starts its own page, as a device allocation does.
pub fn spread_of(accesses: &[Access], buffers: &[Range<usize>]) -> Spread {
    let of = |op: Op| {
        let sectors: HashSet<u64> = accesses
            .iter()
            .filter(|a| a.space == Space::Global && a.op == op && a.bytes > 0)
            .flat_map(|a| a.addr as u64 / 32..=(a.addr + a.bytes - 1) as u64 / 32)
            .collect();
        let (mut pages, mut filled) = (0, 0);
        for buffer in buffers {
            let (start, end) = (buffer.start as u64 / 32, buffer.end as u64 / 32);
            let mine: Vec<u64> = sectors
                .iter()
                .copied()
                .filter(|s| (start..end).contains(s))
                .collect();
            pages += mine
                .iter()
                .map(|s| 32 * s / PAGE_BYTES)
                .collect::<HashSet<u64>>()
                .len() as u64;
            filled += pages_filled(32 * mine.len() as u64);
        }
        spread(pages, filled)
    };
    Spread {
        read: of(Op::Load),
        write: of(Op::Store),
    }
}

impl Traffic {
    /// Whether the window reads a `granularity`-byte segment, or writes a sector, of
    /// which it uses only some bytes: then blocks outside the window may use the rest
    /// while it is in L2, and DRAM bytes counted over the window alone overstate them.
    pub fn shares_segments(&self, granularity: u32) -> bool {
        let at = GRANULARITIES.iter().rposition(|&c| c <= granularity).unwrap_or(0);
        self.partial_read_segments[at] > 0 || self.partial_write_sectors > 0
    }
}

/// Marks bytes `addr .. addr + bytes` in the `size`-byte pieces they fall in (each
/// piece's bytes as a bit mask; sizes up to 128).
fn cover(pieces: &mut HashMap<usize, u128>, size: usize, addr: usize, bytes: usize) {
    let (mut at, end) = (addr, addr + bytes);
    while at < end {
        let piece = at / size;
        let upto = ((piece + 1) * size).min(end);
        let n = upto - at;
        let bits = if n >= 128 { u128::MAX } else { (1u128 << n) - 1 };
        *pieces.entry(piece).or_insert(0) |= bits << (at % size);
        at = upto;
    }
}

/// The mask of a `size`-byte piece with every byte marked.
fn full(size: usize) -> u128 {
    if size >= 128 {
        u128::MAX
    } else {
        (1u128 << size) - 1
    }
}

/// How many pieces of `size` bytes have some but not all bytes marked.
fn partial(pieces: &HashMap<usize, u128>, size: usize) -> u64 {
    pieces.values().filter(|&&m| m != full(size)).count() as u64
}

/// A request's identity: (block, warp, site, occurrence).
type RequestKey = (usize, usize, &'static std::panic::Location<'static>, usize);

/// The request `a` belongs to.
fn request_key(a: &Access) -> RequestKey {
    (a.block, a.warp(), a.site, a.occurrence)
}

/// The scattered requests among the window's global ones ([`Traffic::scattered`]), and
/// the pages they touch. `requests[d]` are the loads (d = 0) and the stores (d = 1).
fn scattered(requests: &[HashMap<RequestKey, Vec<Lane>>; 2]) -> (Vec<Scattered>, u64) {
    // Per direction: the scattered requests' keys, lanes (in lane order) and pitch.
    let mut found: [Vec<(RequestKey, Vec<Lane>, u64)>; 2] = Default::default();
    for (d, of) in requests.iter().enumerate() {
        for (key, lanes) in of {
            let mut addrs: Vec<u64> = lanes.iter().map(|l| l.addr).collect();
            addrs.sort_unstable();
            addrs.dedup();
            if addrs.len() < 2 {
                continue;
            }
            let mut gaps: Vec<u64> = addrs.windows(2).map(|w| w[1] - w[0]).collect();
            gaps.sort_unstable();
            if gaps[0] >= SCATTER_MIN_PITCH {
                let mut lanes = lanes.clone();
                lanes.sort_unstable_by_key(|l| (l.lane, l.addr));
                found[d].push((*key, lanes, gaps[gaps.len() / 2]));
            }
        }
    }
    // The lanes and addresses of a warp's request, to pair a store with its load.
    let warp_of = |key: &RequestKey, lanes: &[Lane]| {
        (
            key.0,
            key.1,
            lanes.iter().map(|l| (l.lane, l.addr)).collect::<Vec<_>>(),
        )
    };
    let mut loads: HashMap<_, u32> = HashMap::new();
    for (key, lanes, _) in &found[0] {
        *loads.entry(warp_of(key, lanes)).or_insert(0) += 1;
    }
    // Per (kind, pitch): requests, and the segments read and sectors written.
    #[derive(Default)]
    struct Group {
        requests: u64,
        lanes: u64,
        segments: HashSet<u64>,
        sectors: HashSet<u64>,
    }
    let mut groups: BTreeMap<(RequestKind, u64), Group> = BTreeMap::new();
    let mut pages: HashSet<u64> = HashSet::new();
    let mut updated: HashMap<_, u32> = HashMap::new();
    for (key, lanes, pitch) in &found[1] {
        let warp = warp_of(key, lanes);
        let kind = match loads.get_mut(&warp) {
            Some(n) if *n > 0 => {
                *n -= 1;
                *updated.entry(warp).or_insert(0) += 1;
                RequestKind::Update
            }
            _ => RequestKind::Scatter,
        };
        let g = groups.entry((kind, *pitch)).or_default();
        g.requests += 1;
        g.lanes += lanes.len() as u64;
        for l in lanes {
            g.sectors.extend(l.addr / 32..=(l.addr + l.bytes.max(1) - 1) / 32);
            pages.insert(l.addr / PAGE_BYTES);
        }
    }
    for (key, lanes, pitch) in &found[0] {
        // A load an update took is counted with it, its segments too.
        let kind = match updated.get_mut(&warp_of(key, lanes)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                RequestKind::Update
            }
            _ => RequestKind::Gather,
        };
        let g = groups.entry((kind, *pitch)).or_default();
        if kind == RequestKind::Gather {
            g.requests += 1;
            g.lanes += lanes.len() as u64;
        }
        for l in lanes {
            g.segments
                .extend(l.addr / 64..=(l.addr + l.bytes.max(1) - 1) / 64);
            pages.insert(l.addr / PAGE_BYTES);
        }
    }
    let out = groups
        .into_iter()
        .map(|((kind, pitch_bytes), g)| Scattered {
            kind,
            pitch_bytes,
            requests: g.requests,
            lanes: g.lanes,
            dram_bytes: 64 * g.segments.len() as u64 + 32 * g.sectors.len() as u64,
        })
        .collect();
    (out, pages.len() as u64)
}

/// [`Traffic::fill_sectors`]: the store requests in the order the window first meets
/// them; `held` starts as the 128-byte lines the window's loads read.
fn fill_sectors(
    accesses: &[Access],
    stores: &HashMap<RequestKey, Vec<Lane>>,
    mut held: HashSet<usize>,
) -> u64 {
    let mut seen = HashSet::new();
    let order = accesses
        .iter()
        .filter(|a| a.space == Space::Global && a.op == Op::Store)
        .map(request_key)
        .filter(|key| seen.insert(*key));
    let mut fills = 0;
    for key in order {
        let Some(lanes) = stores.get(&key) else { continue };
        let mut written: HashMap<usize, u128> = HashMap::new();
        for l in lanes {
            cover(&mut written, 32, l.addr as usize, l.bytes as usize);
        }
        // The request's sectors by line: only its first toucher's partial sectors fill.
        let mut lines: BTreeMap<usize, u64> = BTreeMap::new();
        for (&sector, &mask) in &written {
            *lines.entry(sector / 4).or_insert(0) += u64::from(mask != full(32));
        }
        for (line, partial) in lines {
            if held.insert(line) {
                fills += partial;
            }
        }
    }
    fills
}

/// Counts a recorded window's traffic. Each thread's accesses appear in the log in
/// its program order (the emulator appends a thread's own log whole).
pub fn traffic(accesses: &[Access]) -> Traffic {
    let mut t = Traffic::default();
    // Per segment size, and for written sectors: the bytes used of each piece touched.
    let mut segments: [HashMap<usize, u128>; 3] = Default::default();
    let mut sectors: HashMap<usize, u128> = HashMap::new();
    // Per (block, thread): bytes loaded so far, and whether it has stored yet.
    let mut threads: HashMap<(usize, usize), (u64, bool)> = HashMap::new();
    // Lanes of one request asking for the same bytes count once (a broadcast).
    let mut requested: HashSet<(RequestKey, usize)> = HashSet::new();
    // Every request's lanes, global and shared: (request, op, space).
    let mut requests: HashMap<(RequestKey, usize, bool), Vec<Lane>> = HashMap::new();
    for a in accesses {
        let op = usize::from(a.op == Op::Store);
        requests
            .entry((request_key(a), op, a.space == Space::Shared))
            .or_default()
            .push(Lane {
                lane: a.lane(),
                addr: (a.array + a.addr) as u64,
                bytes: a.bytes as u64,
            });
    }
    for ((.., op, shared), lanes) in &requests {
        if *shared {
            t.shared_requests[*op] += 1;
            t.shared_wavefronts[*op] += model::shared_wavefronts(lanes, *op == 0);
        } else {
            t.global_requests[*op] += 1;
            t.global_sectors[*op] += model::sectors(lanes);
            t.global_lines[*op] += model::lines(lanes);
        }
    }
    let mut global: [HashMap<RequestKey, Vec<Lane>>; 2] = Default::default();
    for ((key, op, shared), lanes) in requests {
        if !shared {
            global[op].insert(key, lanes);
        }
    }
    (t.scattered, t.scattered_pages) = scattered(&global);
    for a in accesses.iter().filter(|a| a.space == Space::Global) {
        let fresh = requested.insert((request_key(a), a.addr));
        let entry = threads.entry((a.block, a.thread)).or_insert((0, false));
        match a.op {
            Op::Load => {
                if fresh {
                    t.useful_read += a.bytes as u64;
                }
                for (set, g) in segments.iter_mut().zip(GRANULARITIES) {
                    cover(set, g as usize, a.addr, a.bytes);
                }
                if !entry.1 {
                    entry.0 += a.bytes as u64;
                }
            }
            Op::Store => {
                if fresh {
                    t.useful_write += a.bytes as u64;
                }
                cover(&mut sectors, 32, a.addr, a.bytes);
                entry.1 = true;
            }
        }
    }
    for (i, (set, g)) in segments.iter().zip(GRANULARITIES).enumerate() {
        t.read_segments[i] = set.len() as u64;
        t.partial_read_segments[i] = partial(set, g as usize);
    }
    t.write_sectors = sectors.len() as u64;
    t.partial_write_sectors = partial(&sectors, 32);
    t.fill_sectors = fill_sectors(accesses, &global[1], segments[2].keys().copied().collect());
    if !threads.is_empty() {
        t.in_flight_per_thread = threads.values().map(|v| v.0 as f64).sum::<f64>() / threads.len() as f64;
    }
    t
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Thread `thread` of block 0 accesses `bytes` of global memory at `addr`, from one
    /// source line (a warp's accesses in one direction form one request).
    pub(in crate::explain) fn global(thread: usize, op: Op, addr: usize, bytes: usize) -> Access {
        Access {
            block: 0,
            thread,
            site: std::panic::Location::caller(),
            occurrence: 0,
            op,
            space: Space::Global,
            addr,
            array: 0,
            array_name: "",
            epoch: 0,
            bytes,
            async_copy: false,
            copied_from: None,
        }
    }

    fn store(addr: usize, bytes: usize) -> Access {
        global(0, Op::Store, addr, bytes)
    }

    #[test]
    fn each_array_spreads_over_its_own_pages() {
        const PAGE: usize = PAGE_BYTES as usize;
        let buffers = [0..8 * PAGE, 8 * PAGE..16 * PAGE];
        // 1 MiB from the start of each array: half a page each, two pages in all,
        // which lying together would fill one; each array by itself fills its page.
        let two = [store(0, PAGE / 2), store(8 * PAGE, PAGE / 2)];
        assert_eq!(spread_of(&two, &buffers).write, 1.0);
        // A page's worth of bytes in four 512 KiB pieces, one a page apart: 4x.
        let apart: Vec<Access> = (0..4).map(|p| store(p * PAGE, PAGE / 4)).collect();
        assert_eq!(spread_of(&apart, &buffers).write, 4.0);
        // Nothing stored: no spread counted (0), and nothing loaded either.
        assert_eq!(spread_of(&apart, &buffers).read, 0.0);
    }
}
