//! From an emulated launch's access log to statistics per access site.
//!
//! The lanes of one warp (32 consecutive linear thread ids of a block, x fastest)
//! executing a site for the i-th time form one request, as one warp-wide load or
//! store instruction does on the GPU.

use std::fmt;
use std::ops::Range;

use kernels::gpu::emu::{Access, Executions, Op, Space};
use serde::Serialize;

use super::hash::FastMap;
use super::model::{self, Lane, Model};
use super::requests::{Requests, Site};

/// Load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Load,
    Store,
}

/// Global or shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    Global,
    Shared,
}

/// How a request's addresses fall, in words a lesson uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// As few sectors as the requested bytes need.
    Coalesced,
    /// Contiguous, but one sector more than needed: it straddles a sector boundary.
    Misaligned,
    /// Every lane reads the same address: one sector serves the warp.
    Broadcast,
    /// More sectors than needed, but lanes share some.
    Strided,
    /// Every distinct address in a sector of its own.
    Scattered,
    /// Shared memory: one pass.
    ConflictFree,
    /// Shared memory: more than one pass.
    BankConflicts,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pattern::Coalesced => "coalesced",
            Pattern::Misaligned => "misaligned",
            Pattern::Broadcast => "broadcast",
            Pattern::Strided => "strided",
            Pattern::Scattered => "scattered",
            Pattern::ConflictFree => "conflict-free",
            Pattern::BankConflicts => "bank conflicts",
        })
    }
}

/// Everything measured about one access site (a load or store at one source location).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteStats {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub op: Direction,
    pub space: Memory,
    /// Global: the kernel argument (buffer) the site accesses, where known.
    pub buffer: Option<String>,
    /// The site is an asynchronous copy (`cp.async`): its global read (a global load
    /// site) or its shared write (a shared store site), both one `LDGSTS` on the GPU.
    pub async_copy: bool,
    /// The site is the copy engine's (TMA): each request is one row of a box, issued
    /// by one thread, with no warp's addresses to coalesce.
    pub bulk: bool,
    /// Warp requests (warp-wide executions of the site) recorded: each thread's first
    /// executions only, so every per-request figure below is over these.
    pub requests: u64,
    /// Warp requests the emulated blocks made at this site in all, recorded or not:
    /// what weighs this site against the others of its kernel (a site executed four
    /// times per loop iteration counts four times another's once, though both are
    /// recorded the same number of times).
    pub executions: u64,
    /// Of those, the requests made while the warp had warpgroup MMAs in flight (a
    /// tile's stores issued beside the tensor cores' work).
    pub executions_beside_mma: u64,
    /// Active lanes, summed over requests.
    pub lanes: u64,
    /// The widest access of one lane, in bytes (16: a float4, or a 16-byte `cp.async`,
    /// which is `cp.async.cg`; 4: a 4-byte one, `cp.async.ca`).
    pub lane_bytes: u64,
    /// Distinct 32-byte sectors, summed over requests (global: whatever the model;
    /// shared: of shared memory, which Nsight Compute counts as the global sectors of
    /// a 16-byte `cp.async`: see [`crate::explain::KernelReport::ncu_sectors_per_request`]).
    pub sectors: u64,
    /// Global: distinct 128-byte lines, summed.
    pub lines: u64,
    /// Global: transactions under the chosen model (sectors for sm70), summed.
    pub transactions: u64,
    /// Global: bytes those transactions move, summed.
    pub fetched_bytes: u64,
    /// Distinct bytes the lanes asked for, summed.
    pub useful_bytes: u64,
    /// Shared: bank-conflict ways, summed over requests (1 per conflict-free request).
    pub bank_ways: u64,
    /// Shared: wavefronts, summed over requests (the ways of each pass of a request,
    /// summed: 4 for a conflict-free warp of 16-byte loads).
    pub wavefronts: u64,
    /// Shared: the worst request's ways.
    pub bank_ways_max: u64,
    /// Shared writes of a `cp.async`: the global lines read and shared rows written
    /// that pair up, summed over requests ([`model::line_rows`]).
    pub line_rows: u64,
    /// The most common pattern among the requests.
    pub pattern: Pattern,
    /// The share of requests that have that pattern.
    pub pattern_share: f64,
}

impl SiteStats {
    /// The access's name in tables and on the page (both halves of an asynchronous
    /// copy are one LDGSTS instruction: `cp.async`).
    pub fn op_label(&self) -> &'static str {
        match (self.bulk, self.async_copy, self.op) {
            (true, _, Direction::Load) => "tma load",
            (true, _, Direction::Store) => "tma store",
            (false, true, _) => "cp.async",
            (false, false, Direction::Load) => "load",
            (false, false, Direction::Store) => "store",
        }
    }
    fn per_request(&self, total: u64) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            total as f64 / self.requests as f64
        }
    }
    pub fn sectors_per_request(&self) -> f64 {
        self.per_request(self.sectors)
    }
    pub fn transactions_per_request(&self) -> f64 {
        self.per_request(self.transactions)
    }
    pub fn lines_per_request(&self) -> f64 {
        self.per_request(self.lines)
    }
    pub fn ways_per_request(&self) -> f64 {
        self.per_request(self.bank_ways)
    }
    pub fn wavefronts_per_request(&self) -> f64 {
        self.per_request(self.wavefronts)
    }
    pub fn line_rows_per_request(&self) -> f64 {
        self.per_request(self.line_rows)
    }
    /// A half of a 16-byte `cp.async` (`cp.async.cg`, SASS `LDGSTS.E.BYPASS.128`: L2
    /// straight to shared memory), which Nsight Compute counts apart from the 4-byte
    /// `cp.async.ca` that goes through L1.
    pub fn is_l2_copy(&self) -> bool {
        self.async_copy && self.lane_bytes == 16
    }
    /// Useful over fetched bytes, in percent (global).
    pub fn efficiency_pct(&self) -> f64 {
        if self.fetched_bytes == 0 {
            0.0
        } else {
            100.0 * self.useful_bytes as f64 / self.fetched_bytes as f64
        }
    }
}

/// The pattern of one global request.
fn global_pattern(lanes: &[Lane], sectors: u64, useful: u64) -> Pattern {
    let needed = useful.div_ceil(model::SECTOR);
    let distinct = model::distinct_addresses(lanes);
    if distinct == 1 && lanes.len() > 1 {
        Pattern::Broadcast
    } else if sectors <= needed {
        Pattern::Coalesced
    } else if sectors == needed + 1 && model::contiguous(lanes) {
        Pattern::Misaligned
    } else if sectors >= distinct as u64 {
        Pattern::Scattered
    } else {
        Pattern::Strided
    }
}

/// One site's sums so far, and how many of its requests had each pattern (in
/// [`Pattern`]'s order).
struct Tally {
    stats: SiteStats,
    patterns: [u64; PATTERNS.len()],
}

/// Every pattern, in the order ties between them go (the first listed wins).
const PATTERNS: [Pattern; 7] = [
    Pattern::Coalesced,
    Pattern::Misaligned,
    Pattern::Broadcast,
    Pattern::Strided,
    Pattern::Scattered,
    Pattern::ConflictFree,
    Pattern::BankConflicts,
];

type SiteKey<'a> = (&'a str, u32, u32, Direction, Memory);

fn site_key(site: &'static std::panic::Location<'static>, op: Op, space: Space) -> SiteKey<'static> {
    let op = match op {
        Op::Load => Direction::Load,
        Op::Store => Direction::Store,
    };
    let space = match space {
        Space::Global => Memory::Global,
        Space::Shared => Memory::Shared,
    };
    (site.file(), site.line(), site.column(), op, space)
}

/// Per-site statistics of a window, summed as its blocks run: each block's log is
/// added whole ([`Sites::add`]), so a window of any number of blocks holds one block's
/// log at a time.
pub struct Sites<'b> {
    model: Model,
    buffers: &'b [(String, Range<usize>)],
    /// Sites by identity, numbered in the order the logs first show them; each kernel
    /// has a handful.
    ids: FastMap<SiteKey<'static>, usize>,
    sites: Vec<SiteKey<'static>>,
    tallies: Vec<Option<Tally>>,
    /// Per site: its requests over every execution, recorded or not.
    executed: Vec<f64>,
    /// Per site: of those, the ones made with warpgroup MMAs in flight.
    beside_mma: Vec<f64>,
}

impl<'b> Sites<'b> {
    /// Sums under `model`; `buffers` names the kernel's global buffers by address range.
    pub fn new(model: Model, buffers: &'b [(String, Range<usize>)]) -> Sites<'b> {
        Sites {
            model,
            buffers,
            ids: FastMap::default(),
            sites: Vec::new(),
            tallies: Vec::new(),
            executed: Vec::new(),
            beside_mma: Vec::new(),
        }
    }

    /// The number of a log's site, a new one the first time.
    fn id(&mut self, site: &Site) -> usize {
        let key = site_key(site.location, site.op, site.space);
        *self.ids.entry(key).or_insert_with(|| {
            self.sites.push(key);
            self.tallies.push(None);
            self.executed.push(0.0);
            self.beside_mma.push(0.0);
            self.sites.len() - 1
        })
    }

    /// Adds the log of whole blocks (every lane of each request), in increasing block
    /// order across calls. `executions` (each thread's count of each site, recorded or
    /// not) scales each site's recorded requests to all of them.
    pub fn add(&mut self, log: &[Access], executions: &[Executions]) {
        self.add_requests(log, &Requests::of(log), executions);
    }

    /// [`Sites::add`] of a log already grouped into `requests`.
    pub fn add_requests(&mut self, log: &[Access], requests: &Requests, executions: &[Executions]) {
        let ids: Vec<usize> = requests.sites.iter().map(|s| self.id(s)).collect();
        // Per (site, block, warp): every execution over the recorded ones, of the warp's
        // busiest lane (a warp issues a site as often as its busiest lane executes it).
        // And the share of them made with MMAs in flight, its busiest lane's too.
        let mut counts: FastMap<(usize, usize, usize), (usize, usize, usize)> = FastMap::default();
        for e in executions {
            if let Some(&id) = self.ids.get(&site_key(e.site, e.op, e.space)) {
                let c = counts.entry((id, e.block, e.thread / 32)).or_default();
                *c = (c.0.max(e.executions), c.1.max(e.recorded), c.2.max(e.beside_mma));
            }
        }
        let scale = |id: usize, block: usize, warp: usize| match counts.get(&(id, block, warp)) {
            Some(&(all, recorded, _)) if recorded > 0 => all as f64 / recorded as f64,
            _ => 1.0,
        };
        let beside_share = |id: usize, block: usize, warp: usize| match counts.get(&(id, block, warp)) {
            Some(&(all, _, beside)) if all > 0 => beside.min(all) as f64 / all as f64,
            _ => 0.0,
        };
        let mut lanes: Vec<Lane> = Vec::with_capacity(32);
        let mut offsets: Vec<Lane> = Vec::with_capacity(32);
        for r in &requests.requests {
            let id = ids[r.site];
            let members = requests.members(r);
            lanes.clear();
            lanes.extend(members.iter().map(|&i| {
                let a = &log[i];
                Lane {
                    lane: a.lane(),
                    addr: (a.array + a.addr) as u64,
                    bytes: a.bytes as u64,
                }
            }));
            let (file, line, column, op, space) = self.sites[id];
            let first = &log[members[0]];
            let buffers = self.buffers;
            let tally = self.tallies[id].get_or_insert_with(|| Tally {
                stats: SiteStats {
                    file: file.to_string(),
                    line,
                    column,
                    op,
                    space,
                    buffer: match space {
                        Memory::Global => buffers
                            .iter()
                            .find(|(_, r)| r.contains(&first.addr))
                            .map(|(name, _)| name.clone()),
                        Memory::Shared => None,
                    },
                    async_copy: first.async_copy,
                    bulk: first.bulk,
                    requests: 0,
                    executions: 0,
                    executions_beside_mma: 0,
                    lanes: 0,
                    lane_bytes: 0,
                    sectors: 0,
                    lines: 0,
                    transactions: 0,
                    fetched_bytes: 0,
                    useful_bytes: 0,
                    bank_ways: 0,
                    wavefronts: 0,
                    bank_ways_max: 0,
                    line_rows: 0,
                    pattern: Pattern::Coalesced,
                    pattern_share: 0.0,
                },
                patterns: [0; PATTERNS.len()],
            });
            let s = &mut tally.stats;
            s.requests += 1;
            let executed = scale(id, r.block, r.warp);
            self.executed[id] += executed;
            self.beside_mma[id] += executed * beside_share(id, r.block, r.warp);
            s.lanes += lanes.len() as u64;
            s.lane_bytes = lanes.iter().map(|l| l.bytes).fold(s.lane_bytes, u64::max);
            let useful = model::useful_bytes(&lanes);
            s.useful_bytes += useful;
            let pattern = match space {
                Memory::Global => {
                    let sectors = model::sectors(&lanes);
                    let cost = self.model.cost(&lanes);
                    s.sectors += sectors;
                    s.lines += model::lines(&lanes);
                    s.transactions += cost.transactions;
                    s.fetched_bytes += cost.bytes;
                    global_pattern(&lanes, sectors, useful)
                }
                Memory::Shared => {
                    // Offsets within the array: the GPU places it 128-byte aligned (the
                    // kernel std declares it so), the emulator's storage only 16-byte
                    // aligned.
                    offsets.clear();
                    offsets.extend(members.iter().zip(&lanes).map(|(&i, l)| Lane {
                        addr: log[i].addr as u64,
                        ..*l
                    }));
                    s.sectors += model::sectors(&offsets);
                    if s.async_copy {
                        let pairs = members
                            .iter()
                            .zip(&offsets)
                            .map(|(&i, o)| (log[i].copied_from.map(|a| a as u64), o.addr));
                        s.line_rows += model::line_rows(pairs);
                    }
                    let ways = model::bank_ways(&lanes, op == Direction::Load);
                    s.bank_ways += ways;
                    s.wavefronts += model::shared_wavefronts(&lanes, op == Direction::Load);
                    s.bank_ways_max = s.bank_ways_max.max(ways);
                    if ways <= 1 {
                        Pattern::ConflictFree
                    } else {
                        Pattern::BankConflicts
                    }
                }
            };
            let at = PATTERNS
                .iter()
                .position(|&p| p == pattern)
                .expect("every pattern is listed");
            tally.patterns[at] += 1;
        }
    }

    /// Every site's statistics, ordered by source line, loads before stores within a line.
    pub fn finish(self) -> Vec<SiteStats> {
        let mut out: Vec<SiteStats> = self
            .tallies
            .into_iter()
            .zip(self.executed.into_iter().zip(self.beside_mma))
            .filter_map(|(t, (executed, beside_mma))| {
                let t = t?;
                let mut s = t.stats;
                s.executions = executed.round() as u64;
                s.executions_beside_mma = beside_mma.round() as u64;
                // Most common; ties go to the pattern listed first.
                let (at, count) = t
                    .patterns
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))?;
                s.pattern = PATTERNS[at];
                s.pattern_share = *count as f64 / s.requests as f64;
                Some(s)
            })
            .collect();
        out.sort_by(|a, b| (&a.file, a.line, a.op, a.column).cmp(&(&b.file, b.line, b.op, b.column)));
        out
    }
}

/// Groups `log` into requests and sums them per site under `model`, ordered by
/// source line, loads before stores within a line. `executions` (each thread's count
/// of each site, recorded or not) scales each site's recorded requests to all of
/// them; `buffers` names the kernel's global buffers by address range.
pub fn analyse(
    log: &[Access],
    executions: &[Executions],
    model: Model,
    buffers: &[(String, Range<usize>)],
) -> Vec<SiteStats> {
    let mut sites = Sites::new(model, buffers);
    sites.add(log, executions);
    sites.finish()
}
