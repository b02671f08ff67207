//! `ldmatrix`: a warp loads four 8 x 4 matrices of 32-bit words from shared memory
//! straight into the fragment layout of the tensor cores' A operand (sm_75 and later).

use super::SharedArray;

impl SharedArray<f32> {
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`, warp-wide, seen as 32-bit words:
    /// lane `8 j + r` passes the index `i` of row r of matrix j (4 consecutive floats,
    /// 16-byte aligned), and lane L receives, in register j, word `L % 4` of row `L / 4`
    /// of matrix j. One instruction per lane instead of four scalar loads, each row one
    /// 16-byte shared access (eight per pass: rows whose addresses differ mod 128 bytes
    /// never conflict).
    ///
    /// With matrix j = rows `8 (j % 2)..` and columns `4 (j / 2)..` of a 16 x 8 tile
    /// this is [`mma_m16n8k8_tf32`](crate::gpu::mma::mma_m16n8k8_tf32)'s A fragment.
    /// Every lane of the warp must make the call.
    ///
    /// # Safety
    /// `i % 4 == 0` and `i + 4 <= self.len()` on every lane, and no thread writes those
    /// elements without a barrier between.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn ldmatrix_x4(self, i: usize) -> [f32; 4] {
        #[cfg(target_arch = "nvptx64")]
        {
            let (r0, r1, r2, r3): (f32, f32, f32, f32);
            // SAFETY: an aligned, in-bounds shared-window address (the caller). Not
            // `pure`: warp-collective, it must stay in the warp's common control flow.
            unsafe {
                core::arch::asm!(
                    "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
                    a = in(reg32) self.addr + (i as u32) * 4,
                    r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
                    options(readonly, nostack, preserves_flags));
            }
            [r0, r1, r2, r3]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // This lane's row: one 16-byte shared read, as the hardware makes it.
            // SAFETY: read4 checks alignment and bounds; the rest is the caller's.
            let row = unsafe { self.read4(i) };
            let all = crate::gpu::emu::warp_exchange(&[row.x, row.y, row.z, row.w].map(f32::to_bits));
            let lane = crate::gpu::thread::thread_rank_in_block() % 32;
            // Word lane % 4 of the row lane 8 j + lane / 4 read.
            core::array::from_fn(|j| f32::from_bits(all[4 * (8 * j + lane / 4) + lane % 4]))
        }
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use crate::gpu::emu::{Dim3, LaunchConfig, Op, Schedule, Space, launch};
    use crate::gpu::thread::thread_rank_in_block;
    use crate::shared_array;
    use std::sync::Mutex;
    use std::vec::Vec;

    /// A 16 x 8 tile in a padded shared array (pitch 12): each lane passes the row
    /// the A fragment needs and gets A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4];
    /// each lane's row is one 16-byte shared read.
    #[test]
    fn loads_the_a_fragment_of_a_16_by_8_tile() {
        const PITCH: usize = 12;
        for schedule in [Schedule::Concurrent, Schedule::Reverse] {
            let got = Mutex::new(Vec::new());
            let cfg = LaunchConfig {
                grid: Dim3::from(1),
                block: Dim3::from(32),
                record: true,
                schedule,
                ..Default::default()
            };
            let log = launch(&cfg, || {
                let lane = thread_rank_in_block();
                let s = shared_array![LDMATRIX_TEST: [f32; 16 * PITCH]];
                // SAFETY: in bounds; the barrier orders the writes before the loads.
                unsafe {
                    for c in 0..PITCH {
                        if lane < 16 {
                            s.write(lane * PITCH + c, (lane * 100 + c) as f32);
                        }
                    }
                    crate::gpu::thread::sync_threads();
                    let (j, r) = (lane / 8, lane % 8);
                    let f = s.ldmatrix_x4((r + 8 * (j % 2)) * PITCH + 4 * (j / 2));
                    got.lock().unwrap().push((lane, f));
                }
            });
            for (lane, f) in got.into_inner().unwrap() {
                let (g, t) = (lane / 4, lane % 4);
                let a = |r: usize, k: usize| (r * 100 + k) as f32;
                assert_eq!(
                    f,
                    [a(g, t), a(g + 8, t), a(g, t + 4), a(g + 8, t + 4)],
                    "lane {lane}"
                );
            }
            let reads: Vec<_> = log
                .iter()
                .filter(|a| a.space == Space::Shared && a.op == Op::Load)
                .collect();
            assert_eq!(reads.len(), 32);
            assert!(reads.iter().all(|a| a.bytes == 16));
        }
    }
}
