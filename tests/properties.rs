//! Property tests of the index arithmetic every kernel relies on: for random sizes,
//! shapes and grids, the real kernels run on the CPU emulator with every access
//! recorded, and the recorded addresses must cover each element exactly as often as
//! the algorithm needs (once for a copy or a store), never leave their buffers, and
//! stay aligned to the access width.
//!
//! Case counts are small (each case spawns an OS thread per emulated GPU thread);
//! set PROPTEST_CASES to run more.

use std::collections::HashSet;

mod common;

use common::recorded;
use kernels::gpu::emu::{Access, Dim3, Op, Space};
use kernels::gpu::{Float4, Global, GlobalMut};
use proptest::prelude::*;

/// Guard floats on each side of every buffer: an access just outside a buffer lands
/// in memory the test owns, and is reported rather than corrupting the heap.
const GUARD: usize = 64;

/// A host buffer standing in for a device allocation: 16-byte aligned, with guards.
struct Buf {
    name: &'static str,
    _storage: Vec<Float4>,
    /// The address of element 0, after the front guard: kernels get it as a pointer.
    body: usize,
    len: usize,
}

impl Buf {
    fn new(name: &'static str, len: usize) -> Buf {
        let mut storage = vec![Float4::default(); (len + 2 * GUARD).div_ceil(4)];
        // SAFETY: Float4 is four f32s with no padding; the body starts after the guard.
        let body = unsafe { storage.as_mut_ptr().cast::<f32>().add(GUARD) };
        for i in 0..len {
            // SAFETY: element i of the body, inside `storage`.
            unsafe { body.add(i).write(kernels::fill::uniform(9, i as u64)) };
        }
        Buf {
            name,
            _storage: storage,
            body: body as usize,
            len,
        }
    }
    fn addr(&self) -> usize {
        self.body
    }
}

/// Loads and stores per f32 element of each buffer, from a recorded launch.
struct Tally {
    loads: Vec<Vec<u32>>,
    stores: Vec<Vec<u32>>,
}

/// Counts every global access per element; `Err` names the first one that leaves
/// every buffer or is misaligned for its width.
fn tally(log: &[Access], bufs: &[&Buf]) -> Result<Tally, String> {
    let mut t = Tally {
        loads: bufs.iter().map(|b| vec![0; b.len]).collect(),
        stores: bufs.iter().map(|b| vec![0; b.len]).collect(),
    };
    for a in log.iter().filter(|a| a.space == Space::Global) {
        if a.addr % a.bytes != 0 {
            return Err(format!(
                "{}: {:?} of {} bytes at {:#x} is misaligned",
                a.site, a.op, a.bytes, a.addr
            ));
        }
        let hit = bufs.iter().enumerate().find(|(_, b)| {
            let (lo, hi) = (b.addr(), b.addr() + 4 * b.len);
            a.addr >= lo && a.addr + a.bytes <= hi
        });
        let Some((which, b)) = hit else {
            return Err(format!(
                "{}: {:?} of {} bytes at {:#x} (thread {} of block {}) is outside every buffer ({})",
                a.site,
                a.op,
                a.bytes,
                a.addr,
                a.thread,
                a.block,
                bufs.iter()
                    .map(|b| format!("{} {:#x}+{}", b.name, b.addr(), 4 * b.len))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let first = (a.addr - b.addr()) / 4;
        let counts = match a.op {
            Op::Load => &mut t.loads[which],
            Op::Store => &mut t.stores[which],
        };
        for c in &mut counts[first..first + a.bytes / 4] {
            *c += 1;
        }
    }
    Ok(t)
}

/// The first element whose count is not `want`, as a message.
fn each(counts: &[u32], want: impl Fn(usize) -> u32, what: &str) -> Result<(), String> {
    match counts.iter().enumerate().find(|&(i, &c)| c != want(i)) {
        None => Ok(()),
        Some((i, &c)) => Err(format!("{what}: element {i} {c} times, expected {}", want(i))),
    }
}

/// Sizes around the interesting boundaries: tiny, not multiples of 4, and (for the
/// strided saxpy) more float4s than its 4096-row view has rows, so it has columns.
fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..70, 70usize..5000, 16_380usize..40_000]
}

/// A grid-stride launch of any shape with at least 4 threads (the scalar tail of the
/// float4 kernels gives one leftover float to each of the first n % 4 threads).
fn grids() -> impl Strategy<Value = (u32, u32)> {
    (1u32..=4, 4u32..=128)
}

type Copy = unsafe fn(usize, Global<f32>, GlobalMut<f32>);
type Saxpy = unsafe fn(usize, f32, Global<f32>, GlobalMut<f32>);

fn check_copy(kernel: Copy, n: usize, (blocks, block): (u32, u32)) -> Result<(), String> {
    let (src, dst) = (Buf::new("src", n), Buf::new("dst", n));
    let (s, d) = (src.addr(), dst.addr());
    let log = recorded(blocks, block, || unsafe {
        kernel(
            n,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    let t = tally(&log, &[&src, &dst])?;
    each(&t.loads[0], |_| 1, "src loads")?;
    each(&t.stores[1], |_| 1, "dst stores")?;
    each(&t.loads[1], |_| 0, "dst loads")?;
    each(&t.stores[0], |_| 0, "src stores")
}

fn check_saxpy(kernel: Saxpy, n: usize, (blocks, block): (u32, u32)) -> Result<(), String> {
    let (x, y) = (Buf::new("x", n), Buf::new("y", n));
    let (px, py) = (x.addr(), y.addr());
    let log = recorded(blocks, block, || unsafe {
        kernel(
            n,
            1.5,
            Global::from_ptr(px as *const f32),
            GlobalMut::from_ptr(py as *mut f32),
        )
    });
    let t = tally(&log, &[&x, &y])?;
    each(&t.loads[0], |_| 1, "x loads")?;
    each(&t.loads[1], |_| 1, "y loads")?;
    each(&t.stores[1], |_| 1, "y stores")?;
    each(&t.stores[0], |_| 0, "x stores")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn grid_stride_loops_cover_every_element_once(n in sizes(), grid in grids()) {
        check_copy(kernels::copy::copy_f32x4, n, grid).map_err(|e| TestCaseError::fail(format!("copy_f32x4: {e}")))?;
        check_saxpy(kernels::saxpy::saxpy_f32x4, n, grid).map_err(|e| TestCaseError::fail(format!("saxpy_f32x4: {e}")))?;
        check_saxpy(kernels::saxpy::saxpy_f32x4_strided, n, grid)
            .map_err(|e| TestCaseError::fail(format!("saxpy_f32x4_strided: {e}")))?;
        // The fill kernel that makes every input: one store per element.
        let out = Buf::new("out", n);
        let o = out.addr();
        let log = recorded(grid.0, grid.1, || unsafe { kernels::fill::fill_uniform(n, 1, GlobalMut::from_ptr(o as *mut f32)) });
        let t = tally(&log, &[&out]).map_err(TestCaseError::fail)?;
        each(&t.stores[0], |_| 1, "fill_uniform stores").map_err(TestCaseError::fail)?;
    }
}

type Transpose = unsafe fn(usize, usize, Global<f32>, GlobalMut<f32>);

/// (kernel, whether its grid spans the output, bytes of its shared tile)
const TRANSPOSES: [(&str, Transpose, bool, usize); 4] = {
    use kernels::transpose::*;
    [
        ("transpose_naive_write", transpose_naive_write, false, 0),
        ("transpose_naive_read", transpose_naive_read, true, 0),
        ("transpose_tiled", transpose_tiled, false, 4 * TILE * TILE),
        (
            "transpose_tiled_padded",
            transpose_tiled_padded,
            false,
            4 * TILE * (TILE + 1),
        ),
    ]
};

fn check_transpose(
    (name, kernel, over_output, tile_bytes): (&str, Transpose, bool, usize),
    rows: usize,
    cols: usize,
) -> Result<(), String> {
    use kernels::transpose::{BLOCK_ROWS, TILE};
    let (src, dst) = (Buf::new("src", rows * cols), Buf::new("dst", rows * cols));
    let (s, d) = (src.addr(), dst.addr());
    let (gr, gc) = if over_output { (cols, rows) } else { (rows, cols) };
    let grid = (gc.div_ceil(TILE) as u32, gr.div_ceil(TILE) as u32);
    let log = recorded(grid, (TILE as u32, BLOCK_ROWS as u32), || unsafe {
        kernel(
            rows,
            cols,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    let t = tally(&log, &[&src, &dst]).map_err(|e| format!("{name}: {e}"))?;
    each(&t.loads[0], |_| 1, &format!("{name} src loads"))?;
    each(&t.stores[1], |_| 1, &format!("{name} dst stores"))?;
    // The tile: every shared access inside it, each slot written at most once per block,
    // and every slot a block reads is one that block wrote.
    let mut written: HashSet<(usize, usize)> = HashSet::new();
    for a in log
        .iter()
        .filter(|a| a.space == Space::Shared && a.op == Op::Store)
    {
        if !written.insert((a.block, a.addr)) {
            return Err(format!(
                "{name}: block {} writes tile offset {} twice",
                a.block, a.addr
            ));
        }
    }
    for a in log.iter().filter(|a| a.space == Space::Shared) {
        if a.addr + a.bytes > tile_bytes {
            return Err(format!(
                "{name}: shared offset {} is outside its {tile_bytes}-byte tile",
                a.addr
            ));
        }
        if a.op == Op::Load && !written.contains(&(a.block, a.addr)) {
            return Err(format!(
                "{name}: block {} reads tile offset {} it never wrote",
                a.block, a.addr
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn transposes_move_every_element_once_and_tiles_stay_in_bounds(rows in 1usize..=64, cols in 1usize..=64) {
        for k in TRANSPOSES {
            check_transpose(k, rows, cols).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn matmul_mappings_write_each_output_once(m in 1usize..=64, n in 1usize..=64, k in 1usize..=3) {
        use kernels::matmul::*;
        type Matmul = unsafe fn(u32, u32, u32, Global<f32>, Global<f32>, GlobalMut<f32>);
        let grid = (n.div_ceil(TILE) as u32, m.div_ceil(TILE) as u32);
        let kernels: [(&str, Matmul, Dim3); 3] = [
            ("matmul_naive", matmul_naive, Dim3::from((TILE as u32, TILE as u32))),
            ("matmul_accidental", matmul_accidental, Dim3::from((TILE as u32, TILE as u32))),
            ("matmul_remapped", matmul_remapped, Dim3::from((TILE * TILE) as u32)),
        ];
        for (name, kernel, block) in kernels {
            let (a, b, c) = (Buf::new("a", m * k), Buf::new("b", k * n), Buf::new("c", m * n));
            let (pa, pb, pc) = (a.addr(), b.addr(), c.addr());
            let log = recorded(grid, block, || unsafe {
                kernel(m as u32, n as u32, k as u32, Global::from_ptr(pa as *const f32), Global::from_ptr(pb as *const f32), GlobalMut::from_ptr(pc as *mut f32))
            });
            let fail = |e: String| TestCaseError::fail(format!("{name}: {e}"));
            let t = tally(&log, &[&a, &b, &c]).map_err(fail)?;
            each(&t.stores[2], |_| 1, "C stores").map_err(fail)?;
            // Each A[row][kk] feeds the n outputs of its row; each B[kk][col] the m of its column.
            each(&t.loads[0], |_| n as u32, "A loads").map_err(fail)?;
            each(&t.loads[1], |_| m as u32, "B loads").map_err(fail)?;
        }
    }
}

#[test]
fn the_tally_catches_a_gap_and_an_overrun() {
    // The properties can fail: an off-by-one guard leaves an element unwritten, and
    // an access past the end is reported with its source line.
    let n = 33;
    let (src, dst) = (Buf::new("src", n), Buf::new("dst", n));
    let (s, d) = (src.addr(), dst.addr());
    let log = recorded(2, 32, || unsafe {
        broken_kernels::copy_f32_off_by_one(
            n,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    let t = tally(&log, &[&src, &dst]).unwrap();
    let gap = each(&t.stores[1], |_| 1, "dst stores").unwrap_err();
    assert_eq!(gap, "dst stores: element 32 0 times, expected 1");
    // One float past dst: inside the guard, outside every buffer.
    let log = recorded(1, 1, || unsafe {
        GlobalMut::<f32>::from_ptr(d as *mut f32).write(n, 0.0)
    });
    let e = tally(&log, &[&src, &dst]).err().expect("an overrun is reported");
    assert!(
        e.contains("outside every buffer") && e.contains("properties.rs"),
        "{e}"
    );
}
