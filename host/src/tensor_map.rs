//! Tensor maps for the copy engine (TMA): how a declaration describes one of its
//! buffers as a 1D or 2D tensor for a kernel that copies boxes of it
//! ([`kernels::gpu::tma`]), encoded by the driver for the GPU
//! (`cuTensorMapEncodeTiled`) and in plain words for the emulator.

use std::ffi::c_void;

use kernels::gpu::tensor_map::{Swizzle, TensorMap, TileMap};

use crate::error::{Error, Result};
use crate::problem::{Dim, Problem};

/// One buffer seen as a tensor: a kernel parameter (the map's address).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapSpec {
    /// The buffer, as [`crate::experiment::Arg::Buffer`] counts them.
    pub buffer: usize,
    pub shape: MapShape,
    /// The box the kernel copies, innermost first (1 for the outer of a 1D map).
    pub boxes: [u32; 2],
    pub swizzle: Swizzle,
}

/// The tensor's extents, from the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapShape {
    /// `len` floats in a row.
    Line(Dim),
    /// `rows` x `cols` floats, row-major.
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
        }
    }

    /// Extents (innermost first) and the row pitch in bytes at `p`, or why the copy
    /// engine cannot address this tensor.
    pub fn extents(&self, p: &Problem) -> Result<([u64; 2], u64)> {
        let (dims, pitch) = match self.shape {
            MapShape::Line(len) => {
                let n = p.dim(len) as u64;
                ([n, 1], n * 4)
            }
            MapShape::Matrix { rows, cols } => {
                let (r, c) = (p.dim(rows) as u64, p.dim(cols) as u64);
                if c % 4 != 0 {
                    return Err(Error::Unaddressable {
                        what: format!("a matrix of {c} columns"),
                        why: "the copy engine (TMA) needs every row to start on a 16-byte boundary: a multiple of 4 floats".into(),
                    });
                }
                ([c, r], c * 4)
            }
        };
        if dims.iter().any(|&d| d > MAX_COORD) {
            return Err(Error::Unaddressable {
                what: format!("a tensor of {} x {} floats", dims[1], dims[0]),
                why: format!("the copy engine's coordinates reach {MAX_COORD} elements a dimension"),
            });
        }
        Ok((dims, pitch))
    }

    /// The map the emulator's kernels read, of the buffer at host address `base`.
    pub fn for_emulator(&self, p: &Problem, base: u64) -> Result<TensorMap> {
        let (dims, pitch) = self.extents(p)?;
        Ok(TileMap {
            base,
            dims,
            pitch,
            boxes: self.boxes,
            swizzle: self.swizzle,
            elem_bytes: 4,
        }
        .encode())
    }

    /// The driver's map of the buffer at device address `base`.
    pub fn for_gpu(&self, p: &Problem, base: u64) -> Result<TensorMap> {
        let (dims, pitch) = self.extents(p)?;
        let rank = match self.shape {
            MapShape::Line(_) => 1,
            MapShape::Matrix { .. } => 2,
        };
        let strides = [pitch];
        let element_strides = [1u32, 1];
        let swizzle = match self.swizzle {
            Swizzle::None => CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::B128 => CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let mut map = TensorMap { words: [0; 16] };
        // SAFETY: the arrays outlive the call and hold `rank` entries (strides rank - 1);
        // the driver writes the 128-byte map.
        let status = unsafe {
            cuTensorMapEncodeTiled(
                &mut map,
                CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                rank,
                base as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                self.boxes.as_ptr(),
                element_strides.as_ptr(),
                0,
                swizzle,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                0,
            )
        };
        if status != 0 {
            return Err(Error::Unaddressable {
                what: format!(
                    "a tensor map of {} x {} floats in boxes of {:?}",
                    dims[1], dims[0], self.boxes
                ),
                why: format!("the driver refused it (cuTensorMapEncodeTiled: CUDA error {status})"),
            });
        }
        Ok(map)
    }
}

// cuda.h's values.
const CU_TENSOR_MAP_DATA_TYPE_FLOAT32: u32 = 7;
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
        assert_eq!(spec.extents(&ok).unwrap(), ([68, 33], 272));
        let odd = Problem::Matrix { rows: 4, cols: 65 };
        let e = spec.extents(&odd).unwrap_err().to_string();
        assert!(e.contains("65 columns") && e.contains("16-byte boundary"), "{e}");
    }

    #[test]
    fn a_line_is_one_row_and_coordinates_are_32_bit() {
        let spec = MapSpec::line(1, Dim::Len, 256);
        assert_eq!(
            spec.extents(&Problem::Elements { n: 1029 }).unwrap(),
            ([1029, 1], 4116)
        );
        let big = Problem::Elements { n: 1 << 31 };
        assert!(
            spec.extents(&big)
                .unwrap_err()
                .to_string()
                .contains("coordinates")
        );
    }

    #[test]
    fn the_emulator_reads_back_what_the_host_described() {
        let spec = MapSpec::matrix(0, (Dim::Rows, Dim::Cols), [64, 32], Swizzle::B128);
        let p = Problem::Matrix { rows: 100, cols: 40 };
        let map = TileMap::decode(&spec.for_emulator(&p, 0x1000).unwrap());
        assert_eq!(map.base, 0x1000);
        assert_eq!((map.dims, map.pitch, map.boxes), ([40, 100], 160, [32, 64]));
        assert_eq!(map.swizzle, Swizzle::B128);
    }
}
