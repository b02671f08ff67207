//! A tensor map as the copy engine ([`super::tma`]) and the emulator read it, and the
//! shared-memory layout a box lands in: types only, which the copy engine's wrappers
//! and the emulator both use.

/// A tensor map: 128 opaque bytes, 64-byte aligned, read by the copy engine.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap {
    pub words: [u64; 16],
}

/// How a box lands in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Row after row, as in global memory.
    None,
    /// 16-byte chunks permuted within each 128-byte row by the row's index mod 8.
    B128,
}

/// The index, in 4-byte elements, of element (`row`, `col`) of a box of 32-element
/// (128-byte) rows that landed with [`Swizzle::B128`] at a 1024-byte boundary.
#[inline(always)]
pub const fn swizzled_128(row: usize, col: usize) -> usize {
    row * 32 + ((((col >> 2) ^ row) & 7) << 2) + (col & 3)
}

/// The emulator's tensor map: what the host told the driver, in plain words.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileMap {
    /// The tensor's first element.
    pub base: u64,
    /// Extents in elements, innermost first; a 1D map has `dims[1] == 1`.
    pub dims: [u64; 2],
    /// Bytes from one row (index 1) to the next.
    pub pitch: u64,
    /// The box, innermost first.
    pub boxes: [u32; 2],
    pub swizzle: Swizzle,
}

#[cfg(not(target_arch = "nvptx64"))]
impl TileMap {
    /// Marks an emulator map, so a driver-encoded one is refused instead of misread.
    const MAGIC: u64 = 0x636f_616c_6573_6365;

    /// The map as the emulated kernel receives it.
    pub fn encode(self) -> TensorMap {
        let mut words = [0u64; 16];
        words[0] = Self::MAGIC;
        words[1] = self.base;
        words[2] = self.dims[0];
        words[3] = self.dims[1];
        words[4] = self.pitch;
        words[5] = u64::from(self.boxes[0]) | u64::from(self.boxes[1]) << 32;
        words[6] = match self.swizzle {
            Swizzle::None => 0,
            Swizzle::B128 => 128,
        };
        TensorMap { words }
    }

    /// [`TileMap::encode`] for a tensor of `bytes`-byte elements. A 4-byte map is the
    /// same 128 bytes as `encode` makes; any other size is kept in word 7.
    pub fn encode_with_element(self, bytes: u32) -> TensorMap {
        let mut map = self.encode();
        if bytes != 4 {
            map.words[7] = u64::from(bytes);
        }
        map
    }

    /// Bytes per element of the tensor `map` describes (4 unless
    /// [`TileMap::encode_with_element`] said otherwise).
    pub fn element_bytes(map: &TensorMap) -> usize {
        match map.words[7] {
            0 => 4,
            b => b as usize,
        }
    }

    /// The map `encode` made.
    ///
    /// # Panics
    /// For a map the emulator did not make.
    pub fn decode(map: &TensorMap) -> TileMap {
        let w = &map.words;
        assert_eq!(w[0], Self::MAGIC, "not a tensor map made for the emulator");
        TileMap {
            base: w[1],
            dims: [w[2], w[3]],
            pitch: w[4],
            boxes: [w[5] as u32, (w[5] >> 32) as u32],
            swizzle: if w[6] == 128 { Swizzle::B128 } else { Swizzle::None },
        }
    }
}
