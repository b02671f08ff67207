//! Hopper's asynchronous machinery on the emulator: transaction barriers
//! ([`crate::gpu::barrier`]), the copy engine ([`crate::gpu::tma`]) and warpgroup MMAs
//! ([`crate::gpu::wgmma`]), each at the latest moment the GPU allows, so that a kernel
//! that skips a wait, waits for the wrong phase or frees a stage too early computes
//! with stale or poisoned values and fails validation.
//!
//! - A barrier is a record beside the block's shared memory (keyed by its address):
//!   arrivals still expected, bytes still owed, the phase. A copy the copy engine
//!   issues reads the tensor at once (recording each box row) and queues its bytes on
//!   the barrier; they land in shared memory, and are paid, when a thread's wait finds
//!   every arrival of the phase done: then the phase completes. A wait for a parity
//!   whose phase already completed returns at once, landing nothing.
//! - A warpgroup MMA exchanges the group's A fragments when issued and queues the
//!   thread's share; the thread's `wait_group` computes it then, reading B from shared
//!   memory as it is at that moment, and the warp's lanes leave the wait together.
//! - A wait that cannot be answered yet lets the block's other threads run
//!   ([`super::pause`]).
//! - The blocks of a cluster run together, each with its own shared memory: a
//!   multicast copy queues its words on the barrier at the same offset of each block
//!   it names, a remote arrival arrives on the barrier at the same offset of that
//!   block, and `barrier.cluster` waits for every thread of every block.

use std::collections::HashMap;
use std::sync::Mutex;
use std::vec::Vec;

use super::tensor::{HalfTiles, WarpgroupMma, box_elements, box_rows, k_major_128b};
use super::{BlockState, Cluster, with_thread};
use crate::gpu::tensor_map::{TensorMap, TileMap};

/// One block's transaction barriers, by address.
#[derive(Default)]
pub(super) struct Barriers {
    table: Mutex<HashMap<usize, TxBarrier>>,
    /// When a barrier last changed (an arrival, a copy, a completed phase), to tell a
    /// wait that can never end from a slow one.
    last_change: Mutex<Option<std::time::Instant>>,
}

/// How long every wait of a block may go unanswered before the emulator calls it a
/// deadlock, as the GPU would hang.
const DEADLOCK: std::time::Duration = std::time::Duration::from_secs(20);

#[derive(Debug)]
struct TxBarrier {
    count: u32,
    /// Arrivals the current phase still expects.
    pending: u32,
    /// Bytes expected (`arrive_expect_tx`) less bytes landed, this phase.
    tx: i64,
    phase: u32,
    /// Copies issued but not landed: each element's address and value.
    queued: Vec<(usize, Element)>,
}

impl TxBarrier {
    /// Lands the queued copies and, if every arrival and byte is in, completes the
    /// phase. Returns whether it completed one.
    fn settle(&mut self) -> bool {
        for (addr, value) in self.queued.drain(..) {
            // SAFETY: the copy's destination, checked in bounds of the block's shared
            // memory when it was issued; shared storage lives as long as the block.
            unsafe { value.write(addr) };
            self.tx -= value.bytes() as i64;
        }
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.count;
            return true;
        }
        false
    }
}

impl Barriers {
    /// A wait found its phase incomplete: a deadlock if nothing changed for a while.
    fn stalled(&self) {
        let mut last = self.last_change.lock().unwrap_or_else(|e| e.into_inner());
        let since = *last.get_or_insert_with(std::time::Instant::now);
        assert!(
            since.elapsed() < DEADLOCK,
            "deadlock: threads have waited on transaction barriers for {} s and no barrier changed \
             (a phase that can never complete: an arrival or copy missing, or too few bytes)",
            DEADLOCK.as_secs()
        );
    }

    fn changed(&self) {
        *self.last_change.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now());
    }

    fn with<R>(&self, addr: usize, f: impl FnOnce(&mut TxBarrier) -> R) -> R {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let b = table
            .get_mut(&addr)
            .unwrap_or_else(|| panic!("a transaction barrier used before `init` (shared address {addr:#x})"));
        let before = (b.pending, b.tx, b.phase, b.queued.len());
        let r = f(b);
        let after = (b.pending, b.tx, b.phase, b.queued.len());
        drop(table);
        if before != after {
            self.changed();
        }
        r
    }
}

fn block() -> &'static BlockState {
    // SAFETY: the block state outlives every thread in it (as in sync_threads).
    with_thread(|t| unsafe { &*(t.block() as *const BlockState) })
}

/// The current thread's cluster and its block's rank in it.
fn cluster() -> (&'static Cluster, usize) {
    // SAFETY: the cluster outlives every thread of its blocks.
    with_thread(|t| (unsafe { &*(t.cluster as *const Cluster) }, t.rank))
}

/// Block `rank` of the current cluster, and where `addr` of this block's dynamic
/// shared memory is in it (`mapa`): the same offset.
#[track_caller]
fn mapped(rank: u32, addr: usize) -> (&'static BlockState, usize) {
    let (cluster, own) = cluster();
    let size = cluster.blocks.len();
    assert!(
        (rank as usize) < size,
        "block rank {rank} named in a cluster of {size} block(s)"
    );
    let (from, to) = (&cluster.blocks[own], &cluster.blocks[rank as usize]);
    let ((start, len), (base, _)) = (from.dynamic_segment(), to.dynamic_segment());
    let offset = addr.checked_sub(start).unwrap_or(usize::MAX);
    assert!(
        offset < len,
        "a shared address another block of the cluster is to reach ({addr:#x}) is outside the dynamic \
         shared segment, the one the emulator maps between blocks"
    );
    (to, base + offset)
}

/// `mbarrier.init`.
pub fn barrier_init(addr: usize, count: u32) {
    let b = TxBarrier {
        count,
        pending: count,
        tx: 0,
        phase: 0,
        queued: Vec::new(),
    };
    let hopper = &block().hopper;
    hopper
        .table
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(addr, b);
    hopper.changed();
}

/// `mbarrier.arrive` (`tx` = 0) or `arrive.expect_tx`.
pub fn barrier_arrive(addr: usize, tx: u32) {
    arrive_on(block(), addr, tx);
}

fn arrive_on(block: &BlockState, addr: usize, tx: u32) {
    block.hopper.with(addr, |b| {
        if b.pending == 0 && !b.settle() {
            panic!("more arrivals on a transaction barrier than its count in one phase");
        }
        b.pending -= 1;
        b.tx += i64::from(tx);
    });
}

/// One arrival on the barrier at `addr`'s offset in block `rank` of the cluster.
#[track_caller]
pub fn barrier_arrive_in(rank: u32, addr: usize) {
    let (block, addr) = mapped(rank, addr);
    arrive_on(block, addr, 0);
}

/// `mbarrier.try_wait.parity`: lands what the phase waits for when its arrivals are
/// done. A no lets the block's other threads run before it returns.
pub fn barrier_try_wait(addr: usize, parity: u32) -> bool {
    let block = block();
    let done = block.hopper.with(addr, |b| {
        if parity & 1 != b.phase & 1 {
            return true;
        }
        b.settle();
        parity & 1 != b.phase & 1
    });
    if done {
        // What the thread reads after the wait is another phase's, as after a block
        // barrier: its shared accesses' recording starts a new epoch.
        with_thread(|t| t.epoch += 1);
    } else {
        let rank = with_thread(|t| t.linear_thread);
        block.hopper.stalled();
        super::pause(block, rank);
    }
    done
}

/// A copy engine load of the box at `coords` of `*map` into shared memory at `dst`,
/// owed to the barrier at `bar`; with `ctas` a mask of cluster ranks (multicast), into
/// `dst`'s offset of each of those blocks, owed to the barrier at `bar`'s offset in
/// each, the tensor read once.
///
/// # Safety
/// `map` points to a tensor map the host made for this launch.
#[track_caller]
pub unsafe fn tma_load(map: *const TensorMap, coords: [i32; 2], dst: usize, bar: usize, ctas: u16) {
    // SAFETY: a map the host made for this launch (the kernel's contract).
    let (map, size) = unsafe { (TileMap::decode(&*map), TileMap::element_bytes(&*map)) };
    for (start, bytes) in box_rows(&map, size, coords) {
        super::record::record_bulk(start, bytes, super::Op::Load);
    }
    let faithful = !with_thread(|t| t.config.addresses_only);
    let queued: Vec<(usize, Element)> = box_elements(&map, size, coords, dst)
        .into_iter()
        .map(|e| {
            // SAFETY: inside the tensor the host described (checked by its extents).
            let value = match e.global {
                Some(g) if faithful => unsafe { Element::read(g, size) },
                _ => Element::zero(size),
            };
            (dst + e.shared, value)
        })
        .collect();
    super::record::check_shared(dst, queued.len() * size);
    if ctas == 0 {
        block().hopper.with(bar, |b| b.queued.extend(queued));
        return;
    }
    for rank in (0..16).filter(|r| ctas & (1 << r) != 0) {
        let ((to, at), (_, bar)) = (mapped(rank, dst), mapped(rank, bar));
        let values = queued.iter().map(|&(addr, value)| (addr - dst + at, value));
        to.hopper.with(bar, |b| b.queued.extend(values));
    }
}

/// A copy engine store of the box at `coords` of `*map` from shared memory at `src`:
/// read and written now (the part outside the tensor is dropped).
///
/// # Safety
/// As for [`tma_load`].
#[track_caller]
pub unsafe fn tma_store(map: *const TensorMap, coords: [i32; 2], src: usize) {
    // SAFETY: as for `tma_load`.
    let (map, size) = unsafe { (TileMap::decode(&*map), TileMap::element_bytes(&*map)) };
    for (start, bytes) in box_rows(&map, size, coords) {
        super::record::record_bulk(start, bytes, super::Op::Store);
    }
    let elements = box_elements(&map, size, coords, src);
    super::record::check_shared(src, elements.len() * size);
    if with_thread(|t| t.config.addresses_only) {
        return;
    }
    for e in elements {
        if let Some(g) = e.global {
            // SAFETY: shared storage checked above; g inside the tensor.
            unsafe { Element::read(src + e.shared, size).write(g) };
        }
    }
}

/// One element the copy engine moves: 4 bytes (f32) or 2 (a 16-bit type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Element {
    Word(u32),
    Half(u16),
}

impl Element {
    /// The `size`-byte element at `addr`.
    ///
    /// # Safety
    /// `addr` is valid for a read of `size` bytes.
    unsafe fn read(addr: usize, size: usize) -> Element {
        // SAFETY: forwarded from the caller.
        unsafe {
            match size {
                2 => Element::Half((addr as *const u16).read_unaligned()),
                _ => Element::Word((addr as *const u32).read_unaligned()),
            }
        }
    }
    /// The zeros the copy engine fills outside the tensor.
    fn zero(size: usize) -> Element {
        match size {
            2 => Element::Half(0),
            _ => Element::Word(0),
        }
    }
    fn bytes(self) -> usize {
        match self {
            Element::Word(_) => 4,
            Element::Half(_) => 2,
        }
    }
    /// # Safety
    /// `addr` is valid for a write of [`Element::bytes`].
    unsafe fn write(self, addr: usize) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self {
                Element::Word(w) => (addr as *mut u32).write_unaligned(w),
                Element::Half(h) => (addr as *mut u16).write_unaligned(h),
            }
        }
    }
}

/// `fence.proxy.async`: nothing to do, as the emulator's copies read shared memory
/// through the same memory as its threads.
pub fn fence_proxy_async() {}

/// One thread's warpgroup MMAs not yet retired, oldest first: each group's issues.
#[derive(Default)]
pub(super) struct Groups {
    open: Vec<Pending>,
    committed: std::collections::VecDeque<Vec<Pending>>,
}

impl Groups {
    /// Whether any MMA the thread issued has not been retired by a wait.
    pub(super) fn in_flight(&self) -> bool {
        !self.open.is_empty() || self.committed.iter().any(|g| !g.is_empty())
    }
}

struct Pending {
    /// The accumulators it adds into (the thread's, as at the issue): a group writes
    /// its own, whichever the wait is handed.
    acc: *mut f32,
    /// The whole group's A fragments (128 threads x 4 words), or, where A is a tile in
    /// shared memory, empty until the wait reads them from `a_tile`.
    a: Vec<u32>,
    a_tile: Option<usize>,
    b: usize,
    n: usize,
    /// A 16-bit MMA (`m64nNk16`): the operands' significant bits (8: bf16, 11: f16)
    /// and B's leading offset (MN-major); None for TF32.
    half: Option<(u32, usize)>,
}

/// A thread's share of an `m64nNk8`'s FLOPs: 2 x 64 x N x 8 over the warpgroup's 128.
fn thread_share(n: usize) -> u64 {
    (2 * 64 * n * 8 / 128) as u64
}

/// `wgmma.mma_async` (TF32, A from registers): the group's A fragments are exchanged
/// now, the product computed at the `wait_group` that retires it.
pub fn wgmma_mma_tf32(acc: &mut [f32], a: [u32; 4], b: usize, n: usize) {
    assert_eq!(
        acc.len(),
        n / 2,
        "an m64n{n}k8 accumulator holds {} floats a thread",
        n / 2
    );
    super::count_tensor_flops(thread_share(n));
    let a = super::warp::warpgroup_exchange(&a);
    with_thread(|t| {
        t.wgmma.open.push(Pending {
            acc: acc.as_mut_ptr(),
            a,
            a_tile: None,
            b,
            n,
            half: None,
        })
    });
}

/// `wgmma.mma_async` (TF32, A and B from shared memory): both tiles are read at the
/// `wait_group` that retires it.
pub fn wgmma_mma_tf32_ss(acc: &mut [f32], a: usize, b: usize, n: usize) {
    assert_eq!(
        acc.len(),
        n / 2,
        "an m64n{n}k8 accumulator holds {} floats a thread",
        n / 2
    );
    super::count_tensor_flops(thread_share(n));
    with_thread(|t| {
        t.wgmma.open.push(Pending {
            acc: acc.as_mut_ptr(),
            a: Vec::new(),
            a_tile: Some(a),
            b,
            n,
            half: None,
        })
    });
}

/// `wgmma.mma_async` (16-bit, `m64nNk16`, A K-major and B MN-major from shared
/// memory, B's 64-wide atoms `leading` bytes apart): both tiles are read at the
/// `wait_group` that retires it.
pub fn wgmma_mma_16bit_ss(acc: &mut [f32], a: usize, (b, leading): (usize, usize), n: usize, bits: u32) {
    assert_eq!(
        acc.len(),
        n / 2,
        "an m64n{n}k16 accumulator holds {} floats a thread",
        n / 2
    );
    super::count_tensor_flops(2 * thread_share(n));
    with_thread(|t| {
        t.wgmma.open.push(Pending {
            acc: acc.as_mut_ptr(),
            a: Vec::new(),
            a_tile: Some(a),
            b,
            n,
            half: Some((bits, leading)),
        })
    });
}

/// The A fragments of the whole warpgroup (as [`wgmma_mma_tf32`] exchanges them) of a
/// K-major 64 x 8 tile at `start`: A[row][k] is word (row % 16) / 8 + 2 (k / 4) of
/// thread 32 (row / 16) + 4 (row % 8) + k % 4.
fn fragments_of(start: usize) -> Vec<u32> {
    let mut a = std::vec![0u32; 512];
    for row in 0..64 {
        for k in 0..8 {
            let thread = 32 * (row / 16) + 4 * (row % 8) + k % 4;
            // SAFETY: A's tile, in the block's shared memory (the descriptor's contract).
            a[4 * thread + (row % 16) / 8 + 2 * (k / 4)] =
                unsafe { (k_major_128b(start, k, row) as *const u32).read_unaligned() };
        }
    }
    a
}

/// `wgmma.commit_group`.
pub fn wgmma_commit() {
    with_thread(|t| {
        let open = core::mem::take(&mut t.wgmma.open);
        t.wgmma.committed.push_back(open);
    });
}

/// `wgmma.wait_group N`: computes every group but the newest `n`, each into the
/// accumulators it was issued with, which must be among `accs`.
pub fn wgmma_wait(accs: &mut [&mut [f32]], n: usize) {
    let (retired, thread) = with_thread(|t| {
        let keep = n.min(t.wgmma.committed.len());
        let retire = t.wgmma.committed.len() - keep;
        let retired: Vec<Pending> = t.wgmma.committed.drain(..retire).flatten().collect();
        (retired, t.linear_thread % 128)
    });
    if with_thread(|t| t.config.addresses_only) {
        return;
    }
    for mut p in retired {
        let Some(acc) = accs.iter_mut().find(|a| a.as_ptr() == p.acc.cast_const()) else {
            panic!("wgmma.wait_group retires an MMA into accumulators it was not handed");
        };
        let acc: &mut [f32] = acc;
        if let Some((bits, leading)) = p.half {
            let tiles = HalfTiles {
                a: p.a_tile.expect("a 16-bit MMA reads A from shared memory"),
                b: p.b,
                leading,
                bits,
            };
            tiles.accumulate(thread, acc, p.n);
            continue;
        }
        if let Some(start) = p.a_tile {
            p.a = fragments_of(start);
        }
        // SAFETY: B's tile, in the block's shared memory (the descriptor's contract).
        let b = |k: usize, col: usize| unsafe { (k_major_128b(p.b, k, col) as *const f32).read_unaligned() };
        let tf32 = |x: f32| f32::from_bits(x.to_bits() & !0x1fff);
        WarpgroupMma { a: &p.a, n: p.n }.accumulate(thread, acc, |k, col| tf32(b(k, col)));
    }
    // `.sync.aligned`: the warp's lanes leave together, so that once one lane (the one
    // that frees a stage for its warp) is past the wait, every lane has read its
    // operands from shared memory.
    super::warp::warp_exchange(&[]);
}

/// This block's rank in its cluster (0 without clusters).
pub fn cluster_rank() -> u32 {
    cluster().1 as u32
}

/// `barrier.cluster`: every thread of every block of the cluster meets here; a
/// cluster of one block is its block, and this `sync_threads()`.
pub fn cluster_sync() {
    let (cluster, rank) = cluster();
    if cluster.blocks.len() == 1 {
        return super::sync_threads();
    }
    let thread = with_thread(|t| t.linear_thread);
    super::run::cluster_barrier(cluster, &cluster.blocks[rank], thread);
    with_thread(|t| t.epoch += 1);
}
