//! Kernel bodies tested on every commit without a GPU: the same Rust source run on
//! the CPU emulator (`kernels::gpu::emu`) must equal the CPU reference.

use kernels::fill::uniform;
use kernels::gpu::emu::{Dim3, LaunchConfig, launch};
use kernels::gpu::{Global, GlobalMut};

/// Sizes that are not multiples of 4, 32 or a block.
const AWKWARD: [usize; 5] = [1, 31, 33, 255, 1029];

fn input(len: usize, seed: u64) -> Vec<f32> {
    (0..len).map(|i| uniform(seed, i as u64)).collect()
}

/// Runs `kernel(src, dst)` over `grid` blocks of `block` threads with host buffers.
fn run(
    grid: u32,
    block: u32,
    src: &[f32],
    dst: &mut [f32],
    kernel: impl Fn(Global<f32>, GlobalMut<f32>) + Sync,
) {
    // Raw pointers are not Sync; pass addresses and rebuild them per thread.
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    let cfg = LaunchConfig {
        grid: Dim3::from(grid),
        block: Dim3::from(block),
        ..Default::default()
    };
    launch(&cfg, || {
        kernel(
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
}

fn poisoned(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

fn assert_bits_eq(got: &[f32], want: impl Fn(usize) -> f32, what: &str) {
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.to_bits(), want(i).to_bits(), "{what}: element {i}");
    }
}

#[test]
fn copies_match_at_awkward_sizes() {
    for n in AWKWARD {
        let src = input(n, 1);
        let mut dst = poisoned(n);
        let grid = n.div_ceil(64) as u32;
        run(grid, 64, &src, &mut dst, |s, d| unsafe {
            kernels::copy::copy_f32(n, s, d)
        });
        assert_bits_eq(&dst, |i| src[i], &format!("copy_f32 n={n}"));

        // A grid smaller than the work exercises the grid-stride loop and the tail.
        let mut dst = poisoned(n);
        let src16 = aligned(&src);
        run(2, 32, &src16, &mut dst, |s, d| unsafe {
            kernels::copy::copy_f32x4(n, s, d)
        });
        assert_bits_eq(&dst, |i| src[i], &format!("copy_f32x4 n={n}"));
    }
}

/// A copy of `v` whose data is 16-byte aligned, as device allocations are.
fn aligned(v: &[f32]) -> AlignedVec {
    AlignedVec::from(v)
}

struct AlignedVec {
    storage: Vec<kernels::gpu::Float4>,
    len: usize,
}

impl From<&[f32]> for AlignedVec {
    fn from(v: &[f32]) -> Self {
        let mut storage = vec![kernels::gpu::Float4::default(); v.len().div_ceil(4)];
        // SAFETY: Float4 is four f32s with no padding.
        let flat =
            unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<f32>(), storage.len() * 4) };
        flat[..v.len()].copy_from_slice(v);
        AlignedVec {
            storage,
            len: v.len(),
        }
    }
}

impl std::ops::Deref for AlignedVec {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: as above; len <= 4 * storage.len().
        unsafe { std::slice::from_raw_parts(self.storage.as_ptr().cast::<f32>(), self.len) }
    }
}

#[test]
fn strided_and_offset_reads_match() {
    for n in [1, 33, 100] {
        for s in kernels::stride::STRIDES {
            let src = input((n - 1) * s + 1, s as u64);
            let mut dst = poisoned(n);
            run(n.div_ceil(32) as u32, 32, &src, &mut dst, |a, b| unsafe {
                kernels::stride::stride_read(n, s, a, b)
            });
            assert_bits_eq(&dst, |i| src[i * s], &format!("stride_read n={n} s={s}"));
        }
        for o in kernels::offset::OFFSETS {
            let src = input(n + o, o as u64);
            let mut dst = poisoned(n);
            run(n.div_ceil(32) as u32, 32, &src, &mut dst, |a, b| unsafe {
                kernels::offset::offset_read(n, o, a, b)
            });
            assert_bits_eq(&dst, |i| src[i + o], &format!("offset_read n={n} o={o}"));
        }
    }
}

#[test]
fn fill_kernel_matches_the_host_function() {
    let n = 100;
    let mut out = poisoned(n);
    let d = out.as_mut_ptr() as usize;
    let cfg = LaunchConfig {
        grid: Dim3::from(2),
        block: Dim3::from(16),
        ..Default::default()
    };
    launch(&cfg, || unsafe {
        kernels::fill::fill_uniform(n, 9, GlobalMut::from_ptr(d as *mut f32))
    });
    assert_bits_eq(&out, |i| uniform(9, i as u64), "fill_uniform");
}

#[test]
fn the_emulator_records_each_access_with_its_source_line() {
    let n = 64;
    let src = input(n, 3);
    let mut dst = poisoned(n);
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    let cfg = LaunchConfig {
        grid: Dim3::from(2),
        block: Dim3::from(32),
        record: true,
        ..Default::default()
    };
    let log = launch(&cfg, || unsafe {
        kernels::stride::stride_read(
            n / 2,
            2,
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
    assert_eq!(log.len(), 64, "32 loads + 32 stores");
    assert!(
        log.iter().all(|a| a.site.file().ends_with("stride.rs")),
        "sites point into the kernel source"
    );
    let loads: Vec<_> = log
        .iter()
        .filter(|a| a.op == kernels::gpu::emu::Op::Load)
        .collect();
    assert_eq!(loads.len(), 32);
    for a in &loads {
        let i = a.block * 32 + a.lane();
        assert_eq!(
            a.addr,
            s + 4 * 2 * i,
            "lane {} of block {} reads in[2i]",
            a.lane(),
            a.block
        );
    }
}

/// Runs a two-pointer matrix kernel on the emulator with a 2D launch.
fn run_2d(
    grid: (u32, u32),
    block: (u32, u32),
    src: &[f32],
    dst: &mut [f32],
    kernel: impl Fn(Global<f32>, GlobalMut<f32>) + Sync,
) {
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    let cfg = LaunchConfig {
        grid: Dim3::from(grid),
        block: Dim3::from(block),
        ..Default::default()
    };
    launch(&cfg, || {
        kernel(
            Global::from_ptr(s as *const f32),
            GlobalMut::from_ptr(d as *mut f32),
        )
    });
}

#[test]
fn transposes_match_on_non_square_matrices() {
    use kernels::transpose::*;
    type K = unsafe fn(usize, usize, Global<f32>, GlobalMut<f32>);
    let kernels: [(&str, K, bool); 4] = [
        ("naive_write", transpose_naive_write, false),
        ("naive_read", transpose_naive_read, true),
        ("tiled", transpose_tiled, false),
        ("tiled_padded", transpose_tiled_padded, false),
    ];
    for (rows, cols) in [(1, 1), (33, 65), (40, 17)] {
        let src = input(rows * cols, 5);
        for (name, k, over_output) in kernels {
            let (gr, gc) = if over_output { (cols, rows) } else { (rows, cols) };
            let grid = (gc.div_ceil(TILE) as u32, gr.div_ceil(TILE) as u32);
            let mut dst = poisoned(rows * cols);
            run_2d(
                grid,
                (TILE as u32, BLOCK_ROWS as u32),
                &src,
                &mut dst,
                |s, d| unsafe { k(rows, cols, s, d) },
            );
            assert_bits_eq(
                &dst,
                |i| src[(i % rows) * cols + i / rows],
                &format!("{name} {rows}x{cols}"),
            );
        }
    }
}
