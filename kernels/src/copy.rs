//! copy: the practical bandwidth ceiling, next to the driver's device-to-device copy.

use crate::gpu::ring::Ring;
use crate::gpu::shared::dynamic_shared_array;
use crate::gpu::tma::{self, TensorMap};
use crate::gpu::{Float4, Global, GlobalMut, thread};

/// Threads per block for both copies.
pub const BLOCK: u32 = 256;

kernel! {
    /// One f32 per thread: thread i reads in[i] and writes out[i], so a warp touches
    /// 128 consecutive bytes (4 sectors) per access: coalesced. Guarded by i < n.
    pub fn copy_f32(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n.
            unsafe { dst.write(i, src.read(i)) };
        }
    }
}

kernel! {
    /// 16 bytes per access, grid-stride: a warp moves 512 consecutive bytes per
    /// instruction, and a grid sized to the GPU keeps many loads in flight. The last
    /// n % 4 floats are copied one each by the first threads.
    pub fn copy_f32x4(n: usize, src: Global<f32>, dst: GlobalMut<f32>) {
        let n4 = n / 4;
        // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
        let (src4, dst4) = unsafe { (src.cast::<Float4>(), dst.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n4 {
            // SAFETY: i < n / 4.
            unsafe { dst4.write(i, src4.read(i)) };
            i += thread::grid_size_1d();
        }
        let tail = n4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            unsafe { dst.write(tail, src.read(tail)) };
        }
    }
}

/// `tma`: elements a box of the copy engine, and boxes a block.
pub const TMA_BOX: usize = 256;
pub const TMA_BOXES: usize = 16;
/// Elements one `tma` block copies.
pub const TMA_BLOCK_ELEMENTS: usize = TMA_BOX * TMA_BOXES;

kernel! {
    #[requires(sm_90a)]
    /// The copy engine (TMA) does the addressing: one thread names 16 boxes of 256
    /// floats of a 1D tensor map, and the hardware reads each box as whole lines into
    /// shared memory, then writes it out the same way: coalesced in silicon, no thread
    /// computes an address. Boxes past n are zero-filled on load and dropped on store.
    pub fn copy_tma(src: Global<TensorMap>, dst: Global<TensorMap>) {
        if thread::thread_idx_x() != 0 {
            return;
        }
        // SAFETY: the host launches with (TMA_BLOCK_ELEMENTS + 2) floats of dynamic
        // shared memory and maps of n floats in boxes of TMA_BOX.
        unsafe {
            // One stage, which this thread fills and drains.
            let ring = Ring::new(dynamic_shared_array::<f32>(TMA_BLOCK_ELEMENTS + 2), 1, TMA_BLOCK_ELEMENTS);
            let tile = ring.tiles();
            ring.init();
            let first = thread::block_idx_x() as usize * TMA_BLOCK_ELEMENTS;
            let full = ring.acquire(ring.producer_start());
            for b in 0..TMA_BOXES {
                tma::load_1d(src, (first + b * TMA_BOX) as i32, tile, b * TMA_BOX, full);
            }
            ring.wait(ring.consumer_start());
            for b in 0..TMA_BOXES {
                tma::store_1d(dst, (first + b * TMA_BOX) as i32, tile, b * TMA_BOX);
            }
            tma::commit_group();
            // Shared memory must outlive the stores' reads of it.
            tma::wait_group_read::<0>();
        }
    }
}
