//! particles: position += velocity x dt, with the particles stored as an array of
//! structs (AoS) or as a struct of arrays (SoA).

use crate::gpu::math::fma;
use crate::gpu::{Element, Float4, Global, GlobalMut, thread};

/// Threads per block.
pub const BLOCK: u32 = 256;

/// One particle, 24 bytes, as an AoS program would declare it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Particle {
    pub pos: [f32; 3],
    pub vel: [f32; 3],
}

impl Element for Particle {}

/// The update both layouts perform, shared with the CPU reference.
#[inline(always)]
pub fn step(pos: f32, vel: f32, dt: f32) -> f32 {
    fma(vel, dt, pos)
}

kernel! {
    /// AoS: each field load of a warp spans 32 particles x 24 bytes = 768 bytes, so
    /// one 4-byte load touches 24 sectors and most of each sector belongs to other
    /// fields (the L1 keeps some for the next field's load).
    pub fn particles_aos(n: usize, dt: f32, p: GlobalMut<Particle>) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n; Particle is 6 f32s with no padding, so the f32 view has 6n elements.
            unsafe {
                let q = p.read(i);
                let pos = p.cast::<f32>();
                for d in 0..3 {
                    pos.write(6 * i + d, step(q.pos[d], q.vel[d], dt));
                }
            }
        }
    }
}

kernel! {
    /// SoA: every load and store of a warp reads 128 consecutive bytes of one array,
    /// 4 sectors, all of them useful.
    #[allow(clippy::too_many_arguments)]
    pub fn particles_soa(
        n: usize,
        dt: f32,
        x: GlobalMut<f32>,
        y: GlobalMut<f32>,
        z: GlobalMut<f32>,
        vx: Global<f32>,
        vy: Global<f32>,
        vz: Global<f32>,
    ) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n, the length of all six arrays.
            unsafe {
                x.write(i, step(x.read(i), vx.read(i), dt));
                y.write(i, step(y.read(i), vy.read(i), dt));
                z.write(i, step(z.read(i), vz.read(i), dt));
            }
        }
    }
}

kernel! {
    /// SoA, tuned: 16-byte loads and stores of four particles' coordinates per array
    /// in a grid-stride loop over a grid sized to the GPU, so each thread keeps 96
    /// bytes in flight instead of 24 and a warp moves 512 consecutive bytes of one
    /// array per instruction. `vel.axpy(dt, pos)` is `step` lane by lane (the same
    /// fused multiply-add). The last n % 4 particles are moved one each by the first threads.
    #[allow(clippy::too_many_arguments)]
    pub fn particles_soa_f32x4(
        n: usize,
        dt: f32,
        x: GlobalMut<f32>,
        y: GlobalMut<f32>,
        z: GlobalMut<f32>,
        vx: Global<f32>,
        vy: Global<f32>,
        vz: Global<f32>,
    ) {
        let n4 = n / 4;
        // SAFETY: device allocations are 256-byte aligned, so f32 data is Float4-aligned.
        let (x4, y4, z4) = unsafe { (x.cast::<Float4>(), y.cast::<Float4>(), z.cast::<Float4>()) };
        // SAFETY: as above.
        let (vx4, vy4, vz4) = unsafe { (vx.cast::<Float4>(), vy.cast::<Float4>(), vz.cast::<Float4>()) };
        let mut i = thread::index_1d();
        while i < n4 {
            // SAFETY: i < n / 4, in bounds of all six arrays.
            unsafe {
                x4.write(i, vx4.read(i).axpy(dt, x4.read(i)));
                y4.write(i, vy4.read(i).axpy(dt, y4.read(i)));
                z4.write(i, vz4.read(i).axpy(dt, z4.read(i)));
            }
            i += thread::grid_size_1d();
        }
        let tail = n4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n, the length of all six arrays.
            unsafe {
                x.write(tail, step(x.read(tail), vx.read(tail), dt));
                y.write(tail, step(y.read(tail), vy.read(tail), dt));
                z.write(tail, step(z.read(tail), vz.read(tail), dt));
            }
        }
    }
}
