//! Tensor maps for the copy engine (TMA): how a declaration describes one of its
//! buffers as a 1D or 2D tensor for a kernel that copies boxes of it
//! ([`kernels::gpu::tma`]), encoded by the driver for the GPU
//! (`cuTensorMapEncodeTiled`) and in plain words for the emulator.

use std::ffi::c_void;

use kernels::gpu::tensor_map::{Swizzle, TensorMap, TileMap};

use crate::elem::Elem;
use crate::error::{Error, Result};
use crate::problem::{Dim, Problem};

/// One buffer seen as a tensor: a kernel parameter (the map's address). Its element
/// type is the buffer's ([`crate::experiment::Buffer::elem`]), given when it is
/// encoded: extents and boxes count elements, strides are bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapSpec {
    /// The buffer, as [`crate::experiment::Arg::Buffer`] counts them.
    pub buffer: usize,
    pub shape: MapShape,
    /// The box the kernel copies, in elements, innermost first (1 for the outer of a
    /// 1D map). A 128-byte swizzled row is 32 f32s or 64 16-bit elements.
    pub boxes: [u32; 2],
    pub swizzle: Swizzle,
    /// A matrix whose rows the harness lays out at a padded pitch (the next whole 16
    /// bytes) when its width leaves them off the copy engine's 16-byte boundaries;
    /// otherwise such a matrix cannot be addressed and its variant is skipped.
    pub padded: bool,
}

/// The tensor's extents, from the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapShape {
    /// `len` elements in a row.
    Line(Dim),
    /// `rows` x `cols` elements, row-major.
    Matrix { rows: Dim, cols: Dim },
}

/// The copy engine's coordinates are signed 32-bit.
const MAX_COORD: u64 = i32::MAX as u64;

impl MapSpec {
    /// A 1D map of `len` floats in boxes of `boxes` elements.
    pub const fn line(buffer: usize, len: Dim, boxes: u32) -> MapSpec {
        MapSpec {
            buffer,
            shape: MapShape::Line(len),
            boxes: [boxes, 1],
            swizzle: Swizzle::None,
            padded: false,
        }
    }

    /// A 2D map of a `rows` x `cols` matrix in boxes of `box_rows` x `box_cols`,
    /// landing as `swizzle` says.
    pub const fn matrix(
        buffer: usize,
        (rows, cols): (Dim, Dim),
        [box_rows, box_cols]: [u32; 2],
        swizzle: Swizzle,
    ) -> MapSpec {
        MapSpec {
            buffer,
            shape: MapShape::Matrix { rows, cols },
            boxes: [box_cols, box_rows],
            swizzle,
            padded: false,
        }
    }

    /// The same matrix, its rows laid out at the copy engine's pitch whatever its
    /// width: the tensor's extents stay the true ones, so the
    /// copy engine zero-fills past them on loads, clips stores, and never reads or
    /// writes the padding.
    pub const fn padded(self) -> MapSpec {
        MapSpec { padded: true, ..self }
    }

    /// Extents in elements (innermost first) and the row pitch in bytes at `p`, for
    /// elements of `elem`, or why the copy engine cannot address this tensor.
    pub fn extents(&self, p: &Problem, elem: Elem) -> Result<([u64; 2], u64)> {
        let size = elem.bytes() as u64;
        let (dims, pitch) = match self.shape {
            MapShape::Line(len) => {
                let n = p.dim(len) as u64;
                ([n, 1], n.saturating_mul(size))
            }
            MapShape::Matrix { rows, cols } => {
                let (r, c) = (p.dim(rows) as u64, p.dim(cols) as u64);
                let whole = 16 / size;
                if self.padded {
                    let pitch = c
                        .checked_next_multiple_of(whole)
                        .unwrap_or(u64::MAX)
                        .saturating_mul(size);
                    ([c, r], pitch)
                } else if c % whole != 0 {
                    return Err(Error::Unaddressable {
                        what: format!("a matrix of {c} columns"),
                        why: format!(
                            "the copy engine (TMA) needs every row to start on a 16-byte boundary: a multiple of {whole} {} elements",
                            elem.label()
                        ),
                    });
                } else {
                    ([c, r], c.saturating_mul(size))
                }
            }
        };
        if dims.iter().any(|&d| d > MAX_COORD) {
            return Err(Error::Unaddressable {
                what: format!("a tensor of {} x {} {} elements", dims[1], dims[0], elem.label()),
                why: format!("the copy engine's coordinates reach {MAX_COORD} elements a dimension"),
            });
        }
        Ok((dims, pitch))
    }

    /// The map the emulator's kernels read, of the buffer of `elem` elements at host
    /// address `base`.
    pub fn for_emulator(&self, p: &Problem, elem: Elem, base: u64) -> Result<TensorMap> {
        let (dims, pitch) = self.extents(p, elem)?;
        Ok(TileMap {
            base,
            dims,
            pitch,
            boxes: self.boxes,
            swizzle: self.swizzle,
        }
        .encode_with_element(elem.bytes() as u32))
    }

    /// What `cuTensorMapEncodeTiled` is given for the buffer of `elem` elements at
    /// device address `base` (everything but the output map).
    pub fn encoding(&self, p: &Problem, elem: Elem, base: u64) -> Result<Encoding> {
        let (dims, pitch) = self.extents(p, elem)?;
        Ok(Encoding {
            data_type: tensor_map_data_type(elem),
            rank: match self.shape {
                MapShape::Line(_) => 1,
                MapShape::Matrix { .. } => 2,
            },
            base,
            dims,
            strides: [pitch],
            boxes: self.boxes,
            element_strides: [1, 1],
            swizzle: match self.swizzle {
                Swizzle::None => CU_TENSOR_MAP_SWIZZLE_NONE,
                Swizzle::B128 => CU_TENSOR_MAP_SWIZZLE_128B,
            },
            l2_promotion: CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        })
    }

    /// The driver's map of the buffer of `elem` elements at device address `base`.
    pub fn for_gpu(&self, p: &Problem, elem: Elem, base: u64) -> Result<TensorMap> {
        let e = self.encoding(p, elem, base)?;
        let mut map = TensorMap { words: [0; 16] };
        // SAFETY: the arrays outlive the call and hold `rank` entries (strides rank - 1);
        // the driver writes the 128-byte map.
        let status = unsafe {
            cuTensorMapEncodeTiled(
                &mut map,
                e.data_type,
                e.rank,
                e.base as *mut c_void,
                e.dims.as_ptr(),
                e.strides.as_ptr(),
                e.boxes.as_ptr(),
                e.element_strides.as_ptr(),
                0,
                e.swizzle,
                e.l2_promotion,
                0,
            )
        };
        if status != 0 {
            return Err(Error::Unaddressable {
                what: format!(
                    "a tensor map of {} x {} {} elements in boxes of {:?}",
                    e.dims[1],
                    e.dims[0],
                    elem.label(),
                    self.boxes
                ),
                why: format!("the driver refused it (cuTensorMapEncodeTiled: CUDA error {status})"),
            });
        }
        Ok(map)
    }
}

/// The arguments of one `cuTensorMapEncodeTiled` call (interleave and out-of-bounds
/// fill are always none and zeros).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    /// `CUtensorMapDataType`.
    pub data_type: u32,
    pub rank: u32,
    pub base: u64,
    /// Extents in elements, innermost first.
    pub dims: [u64; 2],
    /// Bytes from one row to the next (rank - 1 of them are read).
    pub strides: [u64; 1],
    /// The box in elements, innermost first.
    pub boxes: [u32; 2],
    pub element_strides: [u32; 2],
    pub swizzle: u32,
    pub l2_promotion: u32,
}

/// cuda.h's `CUtensorMapDataType` of `elem`.
pub const fn tensor_map_data_type(elem: Elem) -> u32 {
    match elem {
        Elem::F32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        Elem::Bf16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        Elem::F16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    }
}

// cuda.h's values.
const CU_TENSOR_MAP_DATA_TYPE_FLOAT16: u32 = 6;
const CU_TENSOR_MAP_DATA_TYPE_FLOAT32: u32 = 7;
const CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: u32 = 9;
const CU_TENSOR_MAP_SWIZZLE_NONE: u32 = 0;
const CU_TENSOR_MAP_SWIZZLE_128B: u32 = 3;
const CU_TENSOR_MAP_L2_PROMOTION_L2_256B: u32 = 3;

// Not in cust's bindings (CUDA 12); resolved at run time like every driver entry
// point (host/cuda-stub/symbols.txt).
unsafe extern "C" {
    fn cuTensorMapEncodeTiled(
        map: *mut TensorMap,
        data_type: u32,
        rank: u32,
        address: *mut c_void,
        dims: *const u64,
        strides: *const u64,
        boxes: *const u32,
        element_strides: *const u32,
        interleave: u32,
        swizzle: u32,
        l2_promotion: u32,
        oob_fill: u32,
    ) -> u32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_must_start_on_16_byte_boundaries() {
        let spec = MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [32, 32], Swizzle::B128);
        let ok = Problem::Matrix { rows: 33, cols: 68 };
        assert_eq!(spec.extents(&ok, Elem::F32).unwrap(), ([68, 33], 272));
        let odd = Problem::Matrix { rows: 4, cols: 65 };
        let e = spec.extents(&odd, Elem::F32).unwrap_err().to_string();
        assert!(e.contains("65 columns") && e.contains("16-byte boundary"), "{e}");
        // 16-bit rows: 8 elements to 16 bytes.
        let e = spec.extents(&ok, Elem::Bf16).unwrap_err().to_string();
        assert!(e.contains("multiple of 8 bf16"), "{e}");
        let ok16 = Problem::Matrix { rows: 33, cols: 72 };
        assert_eq!(spec.extents(&ok16, Elem::F16).unwrap(), ([72, 33], 144));
    }

    /// A padded matrix keeps its true extents (the copy engine's bounds) and rounds
    /// only its row pitch up to whole 16 bytes; a width already whole keeps its pitch.
    #[test]
    fn padded_rows_round_the_pitch_not_the_extents() {
        let spec = MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [32, 32], Swizzle::B128).padded();
        let odd = Problem::Matrix { rows: 4, cols: 65 };
        assert_eq!(spec.extents(&odd, Elem::F32).unwrap(), ([65, 4], 272));
        assert_eq!(spec.extents(&odd, Elem::Bf16).unwrap(), ([65, 4], 144));
        let whole = Problem::Matrix { rows: 4, cols: 72 };
        assert_eq!(spec.extents(&whole, Elem::F16).unwrap(), ([72, 4], 144));
        let one = Problem::Matrix { rows: 1, cols: 1 };
        assert_eq!(spec.extents(&one, Elem::F32).unwrap(), ([1, 1], 16));
    }

    #[test]
    fn a_line_is_one_row_and_coordinates_are_32_bit() {
        let spec = MapSpec::line(1, Dim::Len, 256);
        assert_eq!(
            spec.extents(&Problem::Elements { n: 1029 }, Elem::F32).unwrap(),
            ([1029, 1], 4116)
        );
        let big = Problem::Elements { n: 1 << 31 };
        assert!(
            spec.extents(&big, Elem::F32)
                .unwrap_err()
                .to_string()
                .contains("coordinates")
        );
    }

    #[test]
    fn the_emulator_reads_back_what_the_host_described() {
        let spec = MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [64, 32], Swizzle::B128);
        let p = Problem::Matrix { rows: 100, cols: 40 };
        let encoded = spec.for_emulator(&p, Elem::F32, 0x1000).unwrap();
        let map = TileMap::decode(&encoded);
        assert_eq!(map.base, 0x1000);
        assert_eq!((map.dims, map.pitch, map.boxes), ([40, 100], 160, [32, 64]));
        assert_eq!(map.swizzle, Swizzle::B128);
        // An f32 map is encoded as before 16-bit maps existed, word for word.
        assert_eq!(encoded, TileMap::decode(&encoded).encode());
        assert_eq!(TileMap::element_bytes(&encoded), 4);
        let half = spec
            .for_emulator(&Problem::Matrix { rows: 100, cols: 64 }, Elem::Bf16, 0x1000)
            .unwrap();
        assert_eq!(TileMap::element_bytes(&half), 2);
        assert_eq!(TileMap::decode(&half).pitch, 128);
    }

    /// The f32 maps' driver arguments, pinned (as every f32 map was encoded before
    /// maps had an element type), and a 16-bit operand map as a wgmma GEMM declares
    /// it: 64 elements (128 bytes, one swizzled row) by `rows`, strides in bytes.
    #[test]
    fn driver_encodings_of_f32_and_16_bit_maps() {
        let p = Problem::Product {
            m: 300,
            n: 256,
            k: 192,
        };
        let a = MapSpec::matrix(0, (Dim::M, Dim::K), [128, 32], Swizzle::B128);
        assert_eq!(
            a.encoding(&p, Elem::F32, 0x7000).unwrap(),
            Encoding {
                data_type: 7,
                rank: 2,
                base: 0x7000,
                dims: [192, 300],
                strides: [768],
                boxes: [32, 128],
                element_strides: [1, 1],
                swizzle: 3,
                l2_promotion: 3,
            }
        );
        let a16 = MapSpec::matrix(0, (Dim::M, Dim::K), [128, 64], Swizzle::B128);
        let b16 = MapSpec::matrix(1, (Dim::K, Dim::N), [64, 64], Swizzle::B128);
        let bf16 = a16.encoding(&p, Elem::Bf16, 0x8000).unwrap();
        assert_eq!(
            (bf16.data_type, bf16.dims, bf16.strides, bf16.boxes, bf16.swizzle),
            (9, [192, 300], [384], [64, 128], 3)
        );
        assert_eq!(
            bf16.boxes[0] as usize * Elem::Bf16.bytes(),
            128,
            "one swizzled row"
        );
        let f16 = b16.encoding(&p, Elem::F16, 0x9000).unwrap();
        assert_eq!(
            (f16.data_type, f16.dims, f16.strides, f16.boxes),
            (6, [256, 192], [512], [64, 64])
        );
        let line = MapSpec::line(1, Dim::Len, 256)
            .encoding(&Problem::Elements { n: 1029 }, Elem::F32, 0)
            .unwrap();
        assert_eq!(
            (line.rank, line.dims, line.strides, line.boxes),
            (1, [1029, 1], [4116], [256, 1])
        );
    }

    /// A 16-bit tensor through the emulated copy engine, end to end: a box of 16 rows
    /// of 64 BF16 elements (one 128-byte swizzled row each) loaded from a 40 x 200
    /// matrix into shared memory, its barrier completed by the box's 2048 bytes, then
    /// stored to a zeroed matrix: the box's elements (clipped at the matrix's edge)
    /// arrive, nothing else, and the second row lands one 16-byte chunk over (the
    /// swizzle) in shared memory.
    #[test]
    fn a_16_bit_box_goes_through_the_emulated_copy_engine() {
        use kernels::gpu::emu::{Dim3, LaunchConfig, launch};
        use kernels::gpu::ring::Ring;
        use kernels::gpu::shared::dynamic_shared_array;
        use kernels::gpu::{Global, GlobalMut, tma};
        let (rows, cols) = (40usize, 200usize);
        let p = Problem::Matrix { rows, cols };
        let src: Vec<f32> = (0..rows * cols)
            .map(|i| Elem::Bf16.round(i as f32 * 0.25 + 0.5))
            .collect();
        let src_bytes = Elem::Bf16.encode(&src);
        let mut dst_bytes = vec![0u8; src_bytes.len()];
        let spec = MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [16, 64], Swizzle::B128);
        let load = spec
            .for_emulator(&p, Elem::Bf16, src_bytes.as_ptr() as u64)
            .unwrap();
        let store = spec
            .for_emulator(&p, Elem::Bf16, dst_bytes.as_mut_ptr() as u64)
            .unwrap();
        // The box at column 192, row 16: 8 of its 64 columns inside the matrix.
        let (c0, r0) = (192usize, 16usize);
        const STAGE: usize = 16 * 64 / 2;
        let mut landed = vec![0u32; STAGE];
        let (l, st, out) = (
            &load as *const TensorMap as usize,
            &store as *const TensorMap as usize,
            landed.as_mut_ptr() as usize,
        );
        let cfg = LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(1),
            dynamic_shared_bytes: (STAGE + 4) * 4,
            ..Default::default()
        };
        launch(&cfg, || {
            // SAFETY: one thread; the launch's shared memory holds one stage of
            // STAGE floats (the box's bytes) and its barriers; the maps describe live
            // host buffers; `landed` holds STAGE words.
            unsafe {
                let ring = Ring::new(dynamic_shared_array::<f32>(STAGE + 4), 1, STAGE);
                ring.init();
                let full = ring.acquire(ring.producer_start());
                let at = [c0 as i32, r0 as i32];
                tma::load_2d(Global::from_ptr(l as *const TensorMap), at, ring.tiles(), 0, full);
                ring.wait(ring.consumer_start());
                let out = GlobalMut::from_ptr(out as *mut f32);
                for i in 0..STAGE {
                    out.write(i, ring.tiles().read(i));
                }
                tma::store_2d(Global::from_ptr(st as *const TensorMap), at, ring.tiles(), 0);
                tma::commit_group();
                tma::wait_group::<0>();
            }
        });
        let dst = Elem::Bf16.decode(&dst_bytes);
        for r in 0..rows {
            for c in 0..cols {
                let inside = (r0..r0 + 16).contains(&r) && c >= c0;
                let want = if inside { src[r * cols + c] } else { 0.0 };
                assert_eq!(dst[r * cols + c], want, "({r}, {c})");
            }
        }
        // Shared memory: element (1, 0) of the box at byte 128 + 16 (the swizzle moves
        // row 1's chunks by one), (0, 0) at byte 0; past the edge, zeros.
        let shared: Vec<u8> = landed.iter().flat_map(|w| w.to_le_bytes()).collect();
        let half = |byte: usize| Elem::Bf16.decode(&shared[byte..byte + 2])[0];
        assert_eq!(half(0), src[r0 * cols + c0]);
        assert_eq!(half(128 + 16), src[(r0 + 1) * cols + c0]);
        assert_eq!(half(128), 0.0, "row 1's first chunk holds columns past the edge");
    }
}
