//! The arithmetic of Hopper's data movement on the emulator, apart from any launch:
//! where the copy engine puts a box's elements in shared memory ([`box_elements`],
//! [`swizzle_128`]), and what a warpgroup MMA computes from its operands
//! ([`WarpgroupMma`]).

use std::vec::Vec;

use crate::gpu::tensor_map::{Swizzle, TileMap};

/// The 128-byte swizzle of an address in a 1024-byte-aligned group: the 16-byte chunk
/// index (bits 4..7) XOR the row index within the group (bits 7..10). Its own inverse.
pub fn swizzle_128(addr: usize) -> usize {
    addr ^ (((addr >> 7) & 7) << 4)
}

/// One element of a box: where it comes from in the tensor (None outside it: the
/// copy engine fills zeros on load and drops it on store) and its byte offset from the
/// box's start in shared memory, after the swizzle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxElement {
    pub global: Option<usize>,
    pub shared: usize,
}

/// Every element of the box of `map` at (`c0`, `c1`), row by row, with its shared
/// memory landing `dst` (the box's start address, whose low 10 bits the swizzle reads),
/// for a tensor of `size`-byte elements (4 for f32; 2 for BF16 and FP16, whose 128-byte
/// rows hold twice the elements and swizzle alike).
pub fn box_elements(map: &TileMap, size: usize, [c0, c1]: [i32; 2], dst: usize) -> Vec<BoxElement> {
    let [bx, by] = map.boxes.map(|b| b as usize);
    let mut out = Vec::with_capacity(bx * by);
    for r in 0..by {
        for c in 0..bx {
            let (x, y) = (i64::from(c0) + c as i64, i64::from(c1) + r as i64);
            let inside = x >= 0 && y >= 0 && (x as u64) < map.dims[0] && (y as u64) < map.dims[1];
            let global =
                inside.then(|| map.base as usize + y as usize * map.pitch as usize + x as usize * size);
            let linear = dst + (r * bx + c) * size;
            let shared = match map.swizzle {
                Swizzle::None => linear,
                Swizzle::B128 => swizzle_128(linear),
            } - dst;
            out.push(BoxElement { global, shared });
        }
    }
    out
}

/// The global byte ranges of a box's rows inside the tensor of `size`-byte elements:
/// what the copy engine reads (or writes), one line-aligned run per row.
pub fn box_rows(map: &TileMap, size: usize, [c0, c1]: [i32; 2]) -> Vec<(usize, usize)> {
    let [bx, by] = map.boxes.map(i64::from);
    let x0 = i64::from(c0).max(0);
    let x1 = (i64::from(c0) + bx).min(map.dims[0] as i64);
    (0..by)
        .map(|r| i64::from(c1) + r)
        .filter(|&y| y >= 0 && (y as u64) < map.dims[1] && x1 > x0)
        .map(|y| {
            let start = map.base as usize + y as usize * map.pitch as usize + x0 as usize * size;
            (start, (x1 - x0) as usize * size)
        })
        .collect()
}

/// A warpgroup MMA (`m64nNk8`, TF32) as one thread of the group computes its share:
/// A's 64 x 8 tile from the group's registers, B's 8 x N tile from shared memory.
pub struct WarpgroupMma<'a> {
    /// Every thread's four A registers, thread after thread (128 x 4 words).
    pub a: &'a [u32],
    pub n: usize,
}

/// The bits of an f32 the tensor cores read as TF32: the 13 low ones dropped.
fn tf32(bits: u32) -> f32 {
    f32::from_bits(bits & !0x1fff)
}

impl WarpgroupMma<'_> {
    /// A[row][k]: register `(row % 16) / 8 + 2 (k / 4)` of lane `4 (row % 8) + k % 4` of
    /// warp `row / 16`, as the fragment layout of `mma.m16n8k8` places it.
    pub fn a(&self, row: usize, k: usize) -> f32 {
        let thread = 32 * (row / 16) + 4 * (row % 8) + k % 4;
        tf32(self.a[4 * thread + (row % 16) / 8 + 2 * (k / 4)])
    }

    /// `acc += A B` for thread `thread` of the group, whose accumulator `4 j + 2 h + e`
    /// is D[16 w + g + 8 h][8 j + 2 t + e]; `b(k, col)` reads B. The products are exact
    /// and added in k order, each addition rounded to f32 (the hardware's own order is
    /// not specified; products are validated within a bound that allows for it).
    pub fn accumulate(&self, thread: usize, acc: &mut [f32], b: impl Fn(usize, usize) -> f32) {
        accumulate(thread, &mut acc[..self.n / 2], 8, |row, k| self.a(row, k), b);
    }
}

/// `acc += A B` over `ks` k steps for thread `thread` of a warpgroup, whose
/// accumulator `4 j + 2 h + e` is D[16 w + g + 8 h][8 j + 2 t + e] (every wgmma shape's
/// f32 layout), with A and B read through `a(row, k)` and `b(k, col)`.
fn accumulate(
    thread: usize,
    acc: &mut [f32],
    ks: usize,
    a: impl Fn(usize, usize) -> f32,
    b: impl Fn(usize, usize) -> f32,
) {
    let (w, lane) = (thread / 32, thread % 32);
    let (g, t) = (lane / 4, lane % 4);
    for (i, out) in acc.iter_mut().enumerate() {
        let (j, h, e) = (i / 4, (i / 2) % 2, i % 2);
        let (row, col) = (16 * w + g + 8 * h, 8 * j + 2 * t + e);
        *out = (0..ks).fold(*out, |sum, k| a(row, k).mul_add(b(k, col), sum));
    }
}

/// Element (`k`, `n`) of a K-major TF32 operand tile of 128-byte rows swizzled by
/// 128 bytes, starting at `start` (the k offset of a step inside its row): row `n` at
/// `n * 128`, 1024-byte groups of 8 rows. Returns the address to read.
pub fn k_major_128b(start: usize, k: usize, n: usize) -> usize {
    swizzle_128(start + n * 128 + k * 4)
}

/// A 16-bit warpgroup MMA's operand tiles in shared memory (`m64nNk16`): A's 64 x 16
/// K-major from `a` (rows of 128 bytes, 8-row groups 1024 bytes apart, the step's k
/// offset inside the row), B's 16 x N MN-major from `b` (atoms of 64 n, k row `r` at
/// 128 r bytes, atoms `leading` bytes apart), both swizzled by 128 bytes.
pub struct HalfTiles {
    pub a: usize,
    pub b: usize,
    pub leading: usize,
    /// Significant bits of the element type: 8 (bf16) or 11 (f16).
    pub bits: u32,
}

impl HalfTiles {
    /// The f32 value of the 16-bit element at `addr`.
    fn read(&self, addr: usize) -> f32 {
        // SAFETY: inside an operand tile in the block's shared memory (the descriptor's contract).
        let h = unsafe { (swizzle_128(addr) as *const u16).read_unaligned() };
        match self.bits {
            8 => <crate::gpu::Bf16 as crate::gpu::Half>::from_bits(h).to_f32(),
            _ => <crate::gpu::F16 as crate::gpu::Half>::from_bits(h).to_f32(),
        }
    }

    pub fn a(&self, row: usize, k: usize) -> f32 {
        self.read(self.a + row * 128 + k * 2)
    }

    pub fn b(&self, k: usize, col: usize) -> f32 {
        self.read(self.b + (col / 64) * self.leading + k * 128 + (col % 64) * 2)
    }

    /// `acc += A B` for thread `thread` of the group (the accumulator layout of
    /// [`WarpgroupMma::accumulate`]). Products of 16-bit values are exact in f32; they
    /// are added in k order, each addition rounded.
    pub fn accumulate(&self, thread: usize, acc: &mut [f32], n: usize) {
        accumulate(
            thread,
            &mut acc[..n / 2],
            16,
            |row, k| self.a(row, k),
            |k, col| self.b(k, col),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_swizzle_moves_chunks_within_a_row_by_the_row_index() {
        // Row 0 is unchanged, row 1 swaps chunk pairs, row 7 reverses the 8 chunks.
        assert_eq!(swizzle_128(0x10), 0x10);
        assert_eq!(swizzle_128(128), 128 + 16);
        assert_eq!(swizzle_128(7 * 128 + 16), 7 * 128 + 6 * 16);
        for a in 0..4096 {
            assert_eq!(swizzle_128(swizzle_128(a)), a);
            assert_eq!(swizzle_128(a) / 128, a / 128, "a row stays a row");
        }
    }

    #[test]
    fn a_swizzled_box_lands_where_the_readers_index_it() {
        let map = TileMap {
            base: 0,
            dims: [64, 64],
            pitch: 256,
            boxes: [32, 32],
            swizzle: Swizzle::B128,
        };
        let elems = box_elements(&map, 4, [0, 0], 4096);
        for r in 0..32 {
            for c in 0..32 {
                let e = elems[r * 32 + c];
                assert_eq!(
                    e.shared,
                    4 * crate::gpu::tensor_map::swizzled_128(r, c),
                    "({r}, {c})"
                );
                assert_eq!(e.global, Some(r * 256 + c * 4));
            }
        }
    }

    /// A box of 16-bit elements, 64 to a 128-byte row: each row's bytes land where an
    /// f32 box's do (the swizzle permutes 16-byte chunks, 8 elements here), and the
    /// rows read from the tensor are as many bytes.
    #[test]
    fn a_16_bit_box_lands_in_the_same_bytes_as_an_f32_one() {
        let map = TileMap {
            base: 0x10000,
            dims: [200, 50],
            pitch: 400,
            boxes: [64, 16],
            swizzle: Swizzle::B128,
        };
        let half = box_elements(&map, 2, [64, 8], 4096);
        let word = box_elements(
            &TileMap {
                boxes: [32, 16],
                ..map
            },
            4,
            [32, 8],
            4096,
        );
        for r in 0..16 {
            for c in 0..64 {
                let e = half[r * 64 + c];
                // The f32 element holding the same 4 bytes, and which half of it.
                let w = word[r * 32 + c / 2];
                assert_eq!(e.shared, w.shared + 2 * (c % 2), "({r}, {c})");
                assert_eq!(e.global, Some(0x10000 + (8 + r) * 400 + (64 + c) * 2));
            }
        }
        assert_eq!(box_rows(&map, 2, [64, 8])[0], (0x10000 + 8 * 400 + 128, 128));
        // Past the tensor's 200 columns: columns 192..199 of the box at 192 are in.
        let edge = box_elements(&map, 2, [192, 0], 0);
        assert!(edge[7].global.is_some() && edge[8].global.is_none());
        assert_eq!(box_rows(&map, 2, [192, 0])[0].1, 16);
    }

    #[test]
    fn boxes_past_the_edges_read_nothing_there() {
        let map = TileMap {
            base: 1000,
            dims: [40, 3],
            pitch: 160,
            boxes: [32, 4],
            swizzle: Swizzle::None,
        };
        let elems = box_elements(&map, 4, [32, 1], 0);
        assert_eq!(elems[0].global, Some(1000 + 160 + 32 * 4));
        assert_eq!(elems[8].global, None, "column 40 is past the tensor");
        assert!(elems[64..].iter().all(|e| e.global.is_none()), "row 3 is past it");
        assert_eq!(
            box_rows(&map, 4, [32, 1]),
            [(1000 + 160 + 128, 32), (1000 + 320 + 128, 32)]
        );
        assert!(box_rows(&map, 4, [40, 0]).is_empty());
    }

    #[test]
    fn a_warpgroup_mma_is_the_product_of_its_fragments() {
        // A[row][k] = row + k / 8, B[k][col] = 1 for k == col % 8: D[row][col] = A[row][col % 8].
        let mut a = std::vec![0u32; 512];
        for row in 0..64 {
            for k in 0..8 {
                let thread = 32 * (row / 16) + 4 * (row % 8) + k % 4;
                a[4 * thread + (row % 16) / 8 + 2 * (k / 4)] = (row as f32 + k as f32 / 8.0).to_bits();
            }
        }
        let mma = WarpgroupMma { a: &a, n: 16 };
        for thread in [0, 37, 127] {
            let mut acc = [0.5f32; 8];
            mma.accumulate(thread, &mut acc, |k, col| if k == col % 8 { 1.0 } else { 0.0 });
            let (w, g, t) = (thread / 32, thread % 32 / 4, thread % 4);
            for (i, &v) in acc.iter().enumerate() {
                let (row, col) = (16 * w + g + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * t + i % 2);
                assert_eq!(
                    v,
                    0.5 + row as f32 + (col % 8) as f32 / 8.0,
                    "thread {thread}, acc {i}"
                );
            }
        }
    }
}
