//! What a kernel's emulated address stream moves ([`Traffic`]): the bytes its lanes ask
//! for, the DRAM segments and sectors those touch (each counted once over the window:
//! the L2 serves every later touch), the bytes a thread keeps in flight, and the L1's
//! work (128-byte lines per global request, wavefronts per shared request), and the
//! scattered requests the pitch sweep times ([`Scattered`]). The prediction
//! ([`crate::explain::bandwidth`]) turns these counts into time on one GPU.

use std::collections::BTreeMap;
use std::ops::Range;

use kernels::gpu::emu::{Access, Op, Space};
use serde::Serialize;

use super::coverage::Coverage;
use super::hash::{FastMap, FastSet};
use super::model::{self, Lane};
use super::requests::Requests;
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
    /// launch's threads, how many of them each thread runs ([`crate::explain::bandwidth`]).
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
    /// with a spread sweep: [`crate::explain::explain_variant`]); the rest of this struct is
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
    let mut counter = Counter::default();
    counter.add(accesses);
    counter.spread(buffers)
}

/// The spread of the sectors `touched` (their indices, address / 32) over `buffers`.
fn spread_over(touched: &Coverage, buffers: &[Range<usize>]) -> f64 {
    let ranges: Vec<(u64, u64)> = buffers
        .iter()
        .map(|b| (b.start as u64 / 32, b.end as u64 / 32))
        .collect();
    // Per buffer: its sectors, and the pages they lie in.
    let mut sectors = vec![0u64; buffers.len()];
    let mut pages: Vec<FastSet<u64>> = vec![FastSet::default(); buffers.len()];
    for s in touched.touched() {
        for (b, &(start, end)) in ranges.iter().enumerate() {
            if (start..end).contains(&s) {
                sectors[b] += 1;
                pages[b].insert(32 * s / PAGE_BYTES);
            }
        }
    }
    let pages: u64 = pages.iter().map(|p| p.len() as u64).sum();
    let filled: u64 = sectors.iter().map(|&n| pages_filled(32 * n)).sum();
    spread(pages, filled)
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

/// A request's identity within a [`Counter::add`]: (block, warp, site, occurrence),
/// the site numbered by its source location alone.
type RequestKey = (usize, usize, usize, usize);

/// One scattered request: its key, its lanes (in lane order) and its pitch.
type Found = (RequestKey, Vec<Lane>, u64);

/// Per (kind, pitch): requests, and the segments read and sectors written.
#[derive(Default)]
struct Group {
    requests: u64,
    lanes: u64,
    segments: FastSet<u64>,
    sectors: FastSet<u64>,
}

/// A window's traffic counted as its blocks run: each block's log is added whole
/// ([`Counter::add`]) and dropped, and what the window moved is kept as counts and
/// the sectors touched (`coverage.rs`), so memory grows with the bytes the window
/// touches, not with its accesses.
#[derive(Default)]
pub struct Counter {
    /// Only the sectors touched, for [`Counter::spread`] alone.
    sectors_only: bool,
    t: Traffic,
    read: Coverage,
    write: Coverage,
    /// Per 128-byte line first touched by a store request that writes some of its
    /// sectors only in part: how many; it fills them unless a load reads the line.
    fill_candidates: FastMap<u64, u64>,
    groups: BTreeMap<(RequestKind, u64), Group>,
    scattered_pages: FastSet<u64>,
    /// Bytes the threads loaded before their first store, and the threads.
    in_flight: (u64, u64),
    /// Threads a block has, where known: every one of them counts in the mean bytes in
    /// flight, those that touch no global memory (the copy engine's blocks, where one
    /// thread loads for all) with none.
    block_threads: Option<u64>,
}

impl Counter {
    /// A counter of the sectors a window touches and nothing else: its
    /// [`Counter::spread`] is the whole counter's, its [`Counter::traffic`] is not.
    pub fn sectors_only() -> Counter {
        Counter {
            sectors_only: true,
            ..Counter::default()
        }
    }

    /// A counter whose mean bytes in flight are over every thread of the blocks it
    /// counts, `threads` a block, not only over those that touch global memory.
    pub fn of_blocks_of(threads: u64) -> Counter {
        Counter {
            block_threads: Some(threads),
            ..Counter::default()
        }
    }

    /// Adds a log whose requests are whole (one or more blocks' logs, each thread's
    /// accesses in its program order, as the emulator appends them).
    pub fn add(&mut self, accesses: &[Access]) {
        if self.sectors_only {
            for a in accesses.iter().filter(|a| a.space == Space::Global) {
                let touched = if a.op == Op::Load {
                    &mut self.read
                } else {
                    &mut self.write
                };
                touched.cover(a.addr as u64, a.bytes as u64);
            }
            return;
        }
        self.add_requests(accesses, &Requests::of(accesses));
    }

    /// [`Counter::add`] of a log already grouped into `requests`.
    pub fn add_requests(&mut self, accesses: &[Access], requests: &Requests) {
        if self.sectors_only {
            return self.add(accesses);
        }
        // A request's identity as its bytes are deduplicated: its site by source
        // location alone (a load and a store of one place and occurrence are one).
        let place: Vec<usize> = requests
            .sites
            .iter()
            .map(|s| {
                (requests.sites.iter())
                    .position(|t| *t.location == *s.location)
                    .unwrap_or(0)
            })
            .collect();
        let mut found: [Vec<Found>; 2] = Default::default();
        // Store requests as (first log index, their lanes).
        let mut stores: Vec<(usize, Vec<Lane>)> = Vec::new();
        let mut lanes: Vec<Lane> = Vec::with_capacity(32);
        for r in &requests.requests {
            let members = requests.members(r);
            let site = requests.sites[r.site];
            let op = usize::from(site.op == Op::Store);
            lanes.clear();
            lanes.extend(members.iter().map(|&i| {
                let a = &accesses[i];
                Lane {
                    lane: a.lane(),
                    addr: (a.array + a.addr) as u64,
                    bytes: a.bytes as u64,
                }
            }));
            // The copy engine's box rows (TMA) go between the L2 and shared memory
            // without the SM's load/store pipe: no L1 requests, lines or wavefronts.
            let bulk = accesses[members[0]].bulk;
            if site.space == Space::Shared {
                if !bulk {
                    self.t.shared_requests[op] += 1;
                    self.t.shared_wavefronts[op] += model::shared_wavefronts(&lanes, op == 0);
                }
                continue;
            }
            self.t.global_sectors[op] += model::sectors(&lanes);
            if !bulk {
                self.t.global_requests[op] += 1;
                self.t.global_lines[op] += model::lines(&lanes);
            }
            if let Some(pitch) = scatter_pitch(&lanes) {
                let mut sorted = lanes.clone();
                sorted.sort_unstable_by_key(|l| (l.lane, l.addr));
                let key = (r.block, r.warp, place[r.site], r.occurrence);
                found[op].push((key, sorted, pitch));
            }
            if op == 1 {
                stores.push((members[0], lanes.clone()));
            }
        }
        self.add_scattered(&found);
        // In log order: the bytes asked for (lanes of one request asking for the same
        // bytes count once: a broadcast), the reads' sectors, each thread's bytes in flight.
        let mut requested: FastSet<(RequestKey, usize)> = FastSet::default();
        let mut threads: FastMap<(usize, usize), (u64, bool)> = FastMap::default();
        for (a, &site) in accesses
            .iter()
            .zip(&requests.site_of)
            .filter(|(a, _)| a.space == Space::Global)
        {
            let fresh = requested.insert(((a.block, a.warp(), place[site], a.occurrence), a.addr));
            let entry = threads.entry((a.block, a.thread)).or_insert((0, false));
            match a.op {
                Op::Load => {
                    if fresh {
                        self.t.useful_read += a.bytes as u64;
                    }
                    self.read.cover(a.addr as u64, a.bytes as u64);
                    if !entry.1 {
                        entry.0 += a.bytes as u64;
                    }
                }
                Op::Store => {
                    if fresh {
                        self.t.useful_write += a.bytes as u64;
                    }
                    entry.1 = true;
                }
            }
        }
        self.in_flight.0 += threads.values().map(|v| v.0).sum::<u64>();
        self.in_flight.1 += match self.block_threads {
            Some(n) => n * threads.keys().map(|k| k.0).collect::<FastSet<_>>().len() as u64,
            None => threads.len() as u64,
        };
        // Store requests in the order the log first meets them: only a line's first
        // toucher's partial sectors fill ([`Traffic::fill_sectors`]).
        stores.sort_unstable_by_key(|s| s.0);
        for (_, lanes) in &stores {
            for (line, partial) in partial_sectors_by_line(lanes) {
                if !self.write.has_line(line) && partial > 0 {
                    self.fill_candidates.insert(line, partial);
                }
            }
            for l in lanes {
                self.write.cover(l.addr, l.bytes);
            }
        }
    }

    /// Adds one log's scattered requests (`found[d]`: loads, d = 0, and stores) to the
    /// groups: a store to exactly the lanes and addresses a load of the same warp read
    /// is one update with that load; other loads are gathers, other stores scatters.
    fn add_scattered(&mut self, found: &[Vec<Found>; 2]) {
        // The lanes and addresses of a warp's request, to pair a store with its load.
        let warp_of = |key: &RequestKey, lanes: &[Lane]| {
            (
                key.0,
                key.1,
                lanes.iter().map(|l| (l.lane, l.addr)).collect::<Vec<_>>(),
            )
        };
        let mut loads: FastMap<_, u32> = FastMap::default();
        for (key, lanes, _) in &found[0] {
            *loads.entry(warp_of(key, lanes)).or_insert(0) += 1;
        }
        let mut updated: FastMap<_, u32> = FastMap::default();
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
            let g = self.groups.entry((kind, *pitch)).or_default();
            g.requests += 1;
            g.lanes += lanes.len() as u64;
            for l in lanes {
                g.sectors.extend(l.addr / 32..=(l.addr + l.bytes.max(1) - 1) / 32);
                self.scattered_pages.insert(l.addr / PAGE_BYTES);
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
            let g = self.groups.entry((kind, *pitch)).or_default();
            if kind == RequestKind::Gather {
                g.requests += 1;
                g.lanes += lanes.len() as u64;
            }
            for l in lanes {
                g.segments
                    .extend(l.addr / 64..=(l.addr + l.bytes.max(1) - 1) / 64);
                self.scattered_pages.insert(l.addr / PAGE_BYTES);
            }
        }
    }

    /// The memory the counts hold, roughly.
    pub fn bytes(&self) -> usize {
        let set = |n: usize| n * (std::mem::size_of::<u64>() + 1);
        self.read.bytes()
            + self.write.bytes()
            + self.fill_candidates.capacity() * (2 * std::mem::size_of::<u64>() + 1)
            + set(self.scattered_pages.capacity())
            + self
                .groups
                .values()
                .map(|g| set(g.segments.capacity()) + set(g.sectors.capacity()))
                .sum::<usize>()
    }

    /// The spread of the window's global accesses over `buffers` ([`spread_of`]).
    pub fn spread(&self, buffers: &[Range<usize>]) -> Spread {
        Spread {
            read: spread_over(&self.read, buffers),
            write: spread_over(&self.write, buffers),
        }
    }

    /// What the window moved.
    pub fn traffic(&self) -> Traffic {
        let mut t = self.t.clone();
        for (i, g) in GRANULARITIES.iter().enumerate() {
            (t.read_segments[i], t.partial_read_segments[i]) = self.read.pieces(u64::from(*g));
        }
        (t.write_sectors, t.partial_write_sectors) = self.write.pieces(32);
        t.fill_sectors = self
            .fill_candidates
            .iter()
            .filter(|(line, _)| !self.read.has_line(**line))
            .map(|(_, n)| n)
            .sum();
        if self.in_flight.1 > 0 {
            t.in_flight_per_thread = self.in_flight.0 as f64 / self.in_flight.1 as f64;
        }
        t.scattered = self
            .groups
            .iter()
            .map(|(&(kind, pitch_bytes), g)| Scattered {
                kind,
                pitch_bytes,
                requests: g.requests,
                lanes: g.lanes,
                dram_bytes: 64 * g.segments.len() as u64 + 32 * g.sectors.len() as u64,
            })
            .collect();
        t.scattered_pages = self.scattered_pages.len() as u64;
        t
    }
}

/// Per 128-byte line a request's lanes write to: how many of its sectors they write
/// only in part.
fn partial_sectors_by_line(lanes: &[Lane]) -> BTreeMap<u64, u64> {
    // Each sector's written bytes as a mask.
    let mut masks: Vec<(u64, u32)> = Vec::new();
    for l in lanes {
        let (mut at, end) = (l.addr, l.addr + l.bytes);
        while at < end {
            let sector = at / 32;
            let upto = ((sector + 1) * 32).min(end);
            let n = upto - at;
            let bits = if n >= 32 {
                u32::MAX
            } else {
                ((1u32 << n) - 1) << (at % 32)
            };
            match masks.iter_mut().find(|(s, _)| *s == sector) {
                Some((_, m)) => *m |= bits,
                None => masks.push((sector, bits)),
            }
            at = upto;
        }
    }
    let mut lines = BTreeMap::new();
    for (sector, mask) in masks {
        *lines.entry(sector / 4).or_insert(0) += u64::from(mask != u32::MAX);
    }
    lines
}

/// The pitch of a request whose lanes each touch a 64-byte segment of their own (the
/// median distance between its distinct addresses in order), or `None`.
fn scatter_pitch(lanes: &[Lane]) -> Option<u64> {
    let mut addrs: Vec<u64> = lanes.iter().map(|l| l.addr).collect();
    addrs.sort_unstable();
    addrs.dedup();
    if addrs.len() < 2 {
        return None;
    }
    let mut gaps: Vec<u64> = addrs.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    (gaps[0] >= SCATTER_MIN_PITCH).then(|| gaps[gaps.len() / 2])
}

/// Counts a recorded window's traffic. Each thread's accesses appear in the log in
/// its program order (the emulator appends a thread's own log whole).
pub fn traffic(accesses: &[Access]) -> Traffic {
    let mut counter = Counter::default();
    counter.add(accesses);
    counter.traffic()
}

#[cfg(test)]
pub(in crate::explain) mod tests {
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
            bulk: false,
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

    #[test]
    fn the_copy_engines_box_rows_take_no_requests_lines_or_wavefronts() {
        // One box row of 128 bytes into shared memory, as the emulator logs a TMA load:
        // a global read and a shared write by one thread.
        let row = |bulk: bool| {
            let read = Access {
                bulk,
                ..global(0, Op::Load, 0, 128)
            };
            let write = Access {
                space: Space::Shared,
                op: Op::Store,
                ..read
            };
            traffic(&[read, write])
        };
        let (lsu, tma) = (row(false), row(true));
        assert!(lsu.global_lines[0] > 0 && lsu.shared_wavefronts[1] > 0);
        assert_eq!((tma.global_requests, tma.global_lines), ([0, 0], [0, 0]));
        assert_eq!((tma.shared_requests, tma.shared_wavefronts), ([0, 0], [0, 0]));
        // Its sectors still count, for the L2 and the DRAM.
        assert_eq!(tma.global_sectors, lsu.global_sectors);
        assert!(tma.global_sectors[0] > 0);
    }
}
