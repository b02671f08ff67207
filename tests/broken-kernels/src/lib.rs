//! Deliberately wrong kernels: each has the signature of a real kernel and one bug,
//! so a test can run it on the real kernel's buffers and launch and show that
//! validation (or fault handling) catches it.
//!
//! Test code only. The emulator tests use this crate on the host; on the GPU,
//! `host/build.rs` compiles it to a second PTX module only when the host package's
//! `broken-kernels` feature is on (`coalesce::ptx::BROKEN_PTX`). The product's PTX
//! never contains these kernels.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

use kernels::copy::{TMA_BLOCK_ELEMENTS, TMA_BOX, TMA_BOXES};
use kernels::gpu::ring::Ring;
use kernels::gpu::shared::dynamic_shared_array;
use kernels::gpu::thread::{self, block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};
use kernels::gpu::tma::{self, TensorMap};
use kernels::gpu::{Bf16, F16, Global, GlobalMut, Half};
use kernels::transpose::{BLOCK_ROWS, TILE};
use kernels::{kernel, shared_array};

/// One handle per broken kernel, typed with its parameters (see build.rs).
#[cfg(not(target_arch = "nvptx64"))]
#[allow(non_upper_case_globals)]
pub mod entry {
    include!(concat!(env!("OUT_DIR"), "/kernel_handles.rs"));
}

/// This crate's kernels, runnable on the emulator.
#[cfg(not(target_arch = "nvptx64"))]
pub static HOST_KERNELS: &[&kernels::handle::KernelInfo] = entry::ALL;

kernel! {
    /// `copy_f32` with an off-by-one guard (`i + 1 < n`): the last element is never
    /// written, so it keeps the harness's poison.
    pub fn copy_f32_off_by_one(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i + 1 < n {
            // SAFETY: i < n - 1.
            unsafe { dst.write(i, src.read(i)) };
        }
    }
}

kernel! {
    /// `matmul_remapped` with a transposed index: A is read as if it were stored
    /// column by column (`a[kk * m + row]` for `a[row * k + kk]`). Every read stays in
    /// bounds; the product is wrong whenever m > 1 and k > 1.
    pub fn matmul_remapped_a_transposed(m: usize, n: usize, k: usize, a: Global<f32>, b: Global<f32>, c: GlobalMut<f32>) {
        let tid = thread_idx_x() as usize;
        let row = block_idx_y() as usize * TILE + tid / TILE;
        let col = block_idx_x() as usize * TILE + tid % TILE;
        if row < m && col < n {
            let mut acc = 0.0f32;
            for kk in 0..k {
                // SAFETY: kk * m + row < k * m, kk * n + col < k * n.
                acc = kernels::gpu::math::fma(unsafe { a.read(kk * m + row) }, unsafe { b.read(kk * n + col) }, acc);
            }
            // SAFETY: row < m, col < n.
            unsafe { c.write(row * n + col, acc) };
        }
    }
}

kernel! {
    /// `transpose_tiled` without its barrier: a thread reads tile elements that other
    /// warps may not have written yet. On the GPU the result depends on timing (and
    /// racecheck reports the hazard); under the emulator's serial schedules it is
    /// wrong every time.
    pub fn transpose_tiled_no_barrier(rows: usize, cols: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let tile = shared_array![COALESCE_BROKEN_TRANSPOSE_TILE: [f32; TILE * TILE]];
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        let (bx, by) = (block_idx_x() as usize * TILE, block_idx_y() as usize * TILE);
        for k in 0..TILE / BLOCK_ROWS {
            let j = ty + k * BLOCK_ROWS;
            let (x, y) = (bx + tx, by + j);
            if x < cols && y < rows {
                // SAFETY: in bounds of src and of the tile.
                unsafe { tile.write(j * TILE + tx, src.read(y * cols + x)) };
            }
        }
        // The missing line: sync_threads();
        for k in 0..TILE / BLOCK_ROWS {
            let j = ty + k * BLOCK_ROWS;
            let (x, y) = (by + tx, bx + j);
            if x < rows && y < cols {
                // SAFETY: in bounds; but nothing orders this read after its write.
                unsafe { dst.write(y * rows + x, tile.read(tx * TILE + j)) };
            }
        }
    }
}

kernel! {
    /// Faults: thread i stores to address 4 i, as if `dst` were a null pointer. No
    /// device memory is mapped there, so the launch ends with an illegal-address
    /// error that poisons the context. GPU only: on the host it would crash the
    /// process, so the emulator never runs it.
    pub fn copy_f32_wild(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // The real pointer is ignored; the address comes from the thread index so the
            // compiler cannot fold it away.
            let _ = dst;
            let wild = GlobalMut::<f32>::from_ptr(core::ptr::with_exposed_provenance_mut(4 * i));
            // SAFETY: none: this store is the bug under test.
            unsafe { wild.write(0, src.read(i)) };
        }
    }
}

kernel! {
    #[requires(sm_90a)]
    /// `copy_tma` waiting for its stage with the producer's place in the ring, a round
    /// ahead (parity 1 where the copy completes phase 0): the wait answers at once, as
    /// the phase before the first counts as complete, so the stores read shared memory
    /// before the copy lands.
    pub fn copy_tma_wrong_phase(src: Global<TensorMap>, dst: Global<TensorMap>) {
        if thread::thread_idx_x() != 0 {
            return;
        }
        // SAFETY: copy_tma's launch and maps.
        unsafe {
            let ring = Ring::new(dynamic_shared_array::<f32>(TMA_BLOCK_ELEMENTS + 2), 1, TMA_BLOCK_ELEMENTS);
            let tile = ring.tiles();
            ring.init();
            let first = thread::block_idx_x() as usize * TMA_BLOCK_ELEMENTS;
            let full = ring.acquire(ring.producer_start());
            for b in 0..TMA_BOXES {
                tma::load_1d(src, (first + b * TMA_BOX) as i32, tile, b * TMA_BOX, full);
            }
            ring.wait(ring.producer_start());
            for b in 0..TMA_BOXES {
                tma::store_1d(dst, (first + b * TMA_BOX) as i32, tile, b * TMA_BOX);
            }
            tma::commit_group();
            tma::wait_group_read::<0>();
        }
    }
}

/// `hgemm_simt_*` keeping its sum in the 16-bit type, rounded after every k step (as
/// code that accumulates in `__nv_bfloat16` or `half` does) instead of once at the
/// store: every read and write as the real kernel's, the sum off by many roundings.
#[inline(always)]
unsafe fn hgemm_rounds_every_step<H: Half>(
    m: u32,
    n: u32,
    k: u32,
    a: Global<H>,
    b: Global<H>,
    c: GlobalMut<H>,
) {
    let row = block_idx_y() * 32 + thread_idx_y();
    let col = block_idx_x() * 32 + thread_idx_x();
    if row < m && col < n {
        let mut acc = H::from_f32(0.0);
        for kk in 0..k {
            // SAFETY: row < m, col < n, kk < k.
            let (x, y) = unsafe { (a.read((row * k + kk) as usize), b.read((kk * n + col) as usize)) };
            acc = H::from_f32(kernels::gpu::math::fma(x.to_f32(), y.to_f32(), acc.to_f32()));
        }
        // SAFETY: row < m, col < n.
        unsafe { c.write((row * n + col) as usize, acc) };
    }
}

kernel! {
    /// `hgemm_simt_bf16` rounding to BF16 after every k step.
    pub fn hgemm_simt_bf16_rounds_every_step(m: u32, n: u32, k: u32, a: Global<Bf16>, b: Global<Bf16>, c: GlobalMut<Bf16>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { hgemm_rounds_every_step(m, n, k, a, b, c) }
    }
}

kernel! {
    /// `hgemm_simt_f16` rounding to FP16 after every k step.
    pub fn hgemm_simt_f16_rounds_every_step(m: u32, n: u32, k: u32, a: Global<F16>, b: Global<F16>, c: GlobalMut<F16>) {
        // SAFETY: forwards the kernel's arguments.
        unsafe { hgemm_rounds_every_step(m, n, k, a, b, c) }
    }
}

/// `hgemm_wgmma_bf16` (rung 1, PLAIN's launch and maps) with B's descriptor naming
/// its 64-wide atoms 1024 bytes apart instead of the 8 KiB between the boxes the copy
/// engine landed: the tensor cores read B's columns 64 and on from inside the first
/// box, in a layout it did not land in (the swizzled tile read as another).
#[inline(always)]
unsafe fn hgemm_wgmma_wrong_atoms(
    m: u32,
    n: u32,
    k: u32,
    maps: (Global<TensorMap>, Global<TensorMap>),
    c: GlobalMut<Bf16>,
) {
    use kernels::gpu::wgmma::{self, Accumulator, Descriptor};
    use kernels::hgemm::tiling::{B_BOX, BK, PLAIN};
    let t = PLAIN;
    let (a_map, b_map) = maps;
    // SAFETY: the rung's launch (PLAIN's shared memory and threads) and maps of A and B.
    unsafe {
        let tiles = dynamic_shared_array::<Bf16>(t.shared_bytes() / 2).aligned(1024);
        let ring = Ring::new(tiles, t.stages, t.stage_len());
        let (m0, n0) = kernels::sgemm::wgmma::tile_of(block_idx_x(), m, n, t.bm() as u32, t.bn as u32);
        let tid = thread_idx_x() as usize;
        if tid == 0 {
            ring.init();
        }
        ring.sync();
        let mut acc = <[f32; 128]>::zeroed();
        let mut s = ring.consumer_start();
        let mut load = ring.producer_start();
        for i in 0..k.div_ceil(BK as u32) {
            // One stage at a time: thread 0 copies k-tile i, everyone waits for it.
            if tid == 0 {
                let full = ring.acquire(load);
                let kk = (i * BK as u32) as i32;
                tma::load_2d(a_map, [kk, m0 as i32], tiles, ring.stage(load), full);
                for j in 0..t.bn / B_BOX {
                    let at = ring.stage(load) + t.a_len() + BK * B_BOX * j;
                    tma::load_2d(b_map, [(n0 as usize + B_BOX * j) as i32, kk], tiles, at, full);
                }
            }
            load.advance();
            ring.wait(s);
            wgmma::fence();
            for step in 0..BK / 16 {
                let st = ring.stage(s);
                let da = Descriptor::k_major_128b(tiles, st + 64 * BK * (tid / 128) + 16 * step);
                // The bug: 1024 bytes between B's atoms, not BK * B_BOX * 2.
                let db = Descriptor::mn_major_128b(tiles, st + t.a_len() + 16 * B_BOX * step, 1024);
                wgmma::mma_16bit_ss::<Bf16, _>(&mut acc, da, db);
            }
            wgmma::commit_group();
            wgmma::wait_group::<0, _>(&mut acc);
            thread::sync_threads();
            s.advance();
        }
        let (w, lane) = ((tid % 128) / 32, tid % 32);
        let row0 = m0 as usize + 64 * (tid / 128) + 16 * w + lane / 4;
        let acc = acc.as_slice();
        for j in 0..32 {
            for h in 0..2 {
                let (row, col) = (row0 + 8 * h, n0 as usize + 8 * j + 2 * (lane % 4));
                if row < m as usize && col < n as usize {
                    for e in 0..2 {
                        c.write(row * n as usize + col + e, Bf16::from_f32(acc[4 * j + 2 * h + e]));
                    }
                }
            }
        }
    }
}

kernel! {
    #[launch_bounds(256, 1)]
    #[requires(sm_90a)]
    /// `hgemm_wgmma_bf16` with B's atoms misplaced in its descriptor.
    pub fn hgemm_wgmma_bf16_wrong_atoms(m: u32, n: u32, k: u32, a: Global<TensorMap>, b: Global<TensorMap>, c: GlobalMut<Bf16>) {
        // SAFETY: the rung's launch and maps.
        unsafe { hgemm_wgmma_wrong_atoms(m, n, k, (a, b), c) }
    }
}
