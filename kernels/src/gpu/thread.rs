//! Thread, block and grid indices, and the block barrier (names as in `cuda_std::thread`).

#[cfg(target_arch = "nvptx64")]
mod imp {
    use core::arch::nvptx;

    macro_rules! special_register {
        ($($name:ident => $intrinsic:ident),* $(,)?) => {$(
            #[inline(always)]
            pub fn $name() -> u32 {
                // SAFETY: reading a special register has no preconditions.
                unsafe { nvptx::$intrinsic() as u32 }
            }
        )*};
    }

    special_register! {
        thread_idx_x => _thread_idx_x, thread_idx_y => _thread_idx_y, thread_idx_z => _thread_idx_z,
        block_idx_x => _block_idx_x, block_idx_y => _block_idx_y, block_idx_z => _block_idx_z,
        block_dim_x => _block_dim_x, block_dim_y => _block_dim_y, block_dim_z => _block_dim_z,
        grid_dim_x => _grid_dim_x, grid_dim_y => _grid_dim_y, grid_dim_z => _grid_dim_z,
    }

    #[inline(always)]
    pub fn sync_threads() {
        // SAFETY: `bar.sync 0`; every kernel calls it from uniform control flow.
        unsafe { nvptx::_syncthreads() }
    }

    /// `__syncwarp()`: the lanes of this warp meet here, their shared-memory accesses
    /// ordered; every lane calls it.
    #[inline(always)]
    pub fn sync_warp() {
        // SAFETY: `bar.warp.sync` of the whole warp, which every lane reaches.
        unsafe { core::arch::asm!("bar.warp.sync 0xffffffff;", options(nostack, preserves_flags)) }
    }

    /// The 128 threads of this thread's warpgroup (in a one-dimensional block) meet
    /// here, their shared-memory accesses ordered, while the block's other warpgroups
    /// go on: `bar.sync 1 + w, 128` for warpgroup `w` (barrier 0 is the block's).
    /// Every thread of the warpgroup calls it.
    #[inline(always)]
    pub fn sync_warpgroup() {
        let id = 1 + thread_idx_x() / 128;
        // SAFETY: a named barrier of the warpgroup's 128 threads, which all reach it;
        // at most 8 warpgroups a block, so ids 1 to 8 of the 16.
        unsafe {
            core::arch::asm!("bar.sync {id}, 128;", id = in(reg32) id, options(nostack, preserves_flags))
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use crate::gpu::emu;

    macro_rules! emulated_register {
        ($($name:ident => $field:ident . $axis:ident),* $(,)?) => {$(
            #[inline]
            pub fn $name() -> u32 {
                emu::with_thread(|t| t.$field.$axis)
            }
        )*};
    }

    emulated_register! {
        thread_idx_x => thread_idx.x, thread_idx_y => thread_idx.y, thread_idx_z => thread_idx.z,
        block_idx_x => block_idx.x, block_idx_y => block_idx.y, block_idx_z => block_idx.z,
        block_dim_x => block_dim.x, block_dim_y => block_dim.y, block_dim_z => block_dim.z,
        grid_dim_x => grid_dim.x, grid_dim_y => grid_dim.y, grid_dim_z => grid_dim.z,
    }

    pub fn sync_threads() {
        emu::sync_threads()
    }

    /// `__syncwarp()` (see the GPU's).
    pub fn sync_warp() {
        emu::warp_exchange(&[]);
    }

    /// The warpgroup's barrier (see the GPU's).
    pub fn sync_warpgroup() {
        emu::sync_warpgroup();
    }
}

pub use imp::*;

/// The global linear index of this thread along x: `blockIdx.x * blockDim.x + threadIdx.x`.
///
/// Computed in 32 bits (as nvcc does for `int` indices) and widened once.
#[inline(always)]
pub fn index_1d() -> usize {
    (block_idx_x() * block_dim_x() + thread_idx_x()) as usize
}

/// The total number of threads in the grid along x: the step of a grid-stride loop.
/// Never zero, which lets the compiler drop division-by-zero checks on it.
#[inline(always)]
pub fn grid_size_1d() -> usize {
    let n = (grid_dim_x() * block_dim_x()) as usize;
    // SAFETY: every launch has at least one block of at least one thread.
    unsafe { core::hint::assert_unchecked(n > 0) };
    n
}

/// The thread's linear index inside its block (x fastest, then y, then z):
/// the order in which threads are grouped into warps.
#[inline(always)]
pub fn thread_rank_in_block() -> usize {
    ((thread_idx_z() * block_dim_y() + thread_idx_y()) * block_dim_x() + thread_idx_x()) as usize
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::gpu::GlobalMut;
    use crate::gpu::emu::{Dim3, LaunchConfig, Schedule, launch};
    use crate::gpu::shared::dynamic_shared_array;
    use std::vec;

    /// Each of two warpgroups' threads writes its index to shared memory, and after
    /// the warpgroup's barrier its thread 0 adds up the warpgroup's 128. Run one
    /// thread at a time in rank order, thread 0 runs first and sees the others'
    /// writes only if the barrier held it until they were made.
    #[test]
    fn a_warpgroups_barrier_holds_its_threads_until_all_128_arrive() {
        for schedule in [Schedule::Forward, Schedule::Concurrent] {
            let mut out = vec![0u32; 2];
            let o = out.as_mut_ptr() as usize;
            let config = LaunchConfig {
                grid: Dim3::from(1),
                block: Dim3::from(256),
                dynamic_shared_bytes: 256 * 4,
                schedule,
                ..Default::default()
            };
            launch(&config, || {
                let t = thread_idx_x() as usize;
                let out = GlobalMut::from_ptr(o as *mut u32);
                // SAFETY: 256 words of dynamic shared memory, one per thread; `out`
                // holds a word per warpgroup.
                unsafe {
                    let shared = dynamic_shared_array::<u32>(256);
                    shared.write(t, t as u32);
                    sync_warpgroup();
                    if t.is_multiple_of(128) {
                        let sum = (t..t + 128).map(|i| shared.read(i)).sum();
                        out.write(t / 128, sum);
                    }
                }
            });
            assert_eq!(
                out,
                [(0..128).sum::<u32>(), (128..256).sum::<u32>()],
                "{schedule:?}"
            );
        }
    }
}
