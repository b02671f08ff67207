//! Element types of an experiment's buffers: f32 (the default) and the two 16-bit
//! floats the tensor cores multiply. Everything that allocates, fills, poisons, reads
//! back or counts the bytes of a buffer asks its [`Elem`].

use kernels::gpu::{Bf16, F16, Half};

/// What one element of a buffer is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Elem {
    /// IEEE binary32 (`float`).
    #[default]
    F32,
    /// bfloat16 (`__nv_bfloat16`): f32's exponent, 8 significant bits.
    Bf16,
    /// IEEE binary16 (`half`): 5 exponent bits, 11 significant bits.
    F16,
}

impl Elem {
    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            Elem::F32 => 4,
            Elem::Bf16 | Elem::F16 => 2,
        }
    }

    /// Its name as the tables print it: `f32`, `bf16`, `f16`.
    pub const fn label(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::Bf16 => "bf16",
            Elem::F16 => "f16",
        }
    }

    /// The CUDA C++ type: `float`, `__nv_bfloat16` (cuda_bf16.h), `half` (cuda_fp16.h).
    pub const fn cuda_type(self) -> &'static str {
        match self {
            Elem::F32 => "float",
            Elem::Bf16 => "__nv_bfloat16",
            Elem::F16 => "half",
        }
    }

    /// cuBLAS's `cudaDataType` for it (library_types.h): CUDA_R_32F, CUDA_R_16BF,
    /// CUDA_R_16F.
    pub const fn cuda_data_type(self) -> &'static str {
        match self {
            Elem::F32 => "CUDA_R_32F",
            Elem::Bf16 => "CUDA_R_16BF",
            Elem::F16 => "CUDA_R_16F",
        }
    }

    /// Significant bits, the implicit one included: a value rounded to this type from
    /// f32 is off by at most 2^-BITS of itself (where it is normal).
    pub const fn bits(self) -> u32 {
        match self {
            Elem::F32 => 24,
            Elem::Bf16 => 8,
            Elem::F16 => 11,
        }
    }

    /// Half the smallest subnormal: the most a value rounded to this type is off by
    /// where it is too small to keep its relative precision.
    pub fn tiny(self) -> f64 {
        match self {
            Elem::F32 => 2f64.powi(-150),
            Elem::Bf16 => 2f64.powi(-134),
            Elem::F16 => 2f64.powi(-25),
        }
    }

    /// A quiet NaN with a recognisable payload, in the element's own width (the low
    /// 16 bits for a 16-bit type): never equal to anything, so an output element a
    /// kernel did not write fails validation.
    pub const fn poison(self) -> u32 {
        match self {
            Elem::F32 => 0x7fc0_bad0,
            Elem::Bf16 => 0x7fcb,
            Elem::F16 => 0x7ead,
        }
    }

    /// `x` as this type stores it (round to nearest, ties to even), as an exact f32.
    pub fn round(self, x: f32) -> f32 {
        match self {
            Elem::F32 => x,
            Elem::Bf16 => Bf16::from_f32(x).to_f32(),
            Elem::F16 => F16::from_f32(x).to_f32(),
        }
    }

    /// The bytes of `values`, each rounded to this type, little-endian.
    pub fn encode(self, values: &[f32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(values.len() * self.bytes());
        for &x in values {
            match self {
                Elem::F32 => out.extend_from_slice(&x.to_le_bytes()),
                Elem::Bf16 => out.extend_from_slice(&Bf16::from_f32(x).to_bits().to_le_bytes()),
                Elem::F16 => out.extend_from_slice(&F16::from_f32(x).to_bits().to_le_bytes()),
            }
        }
        out
    }

    /// The poison's value as an f32 (a NaN), bit for bit as [`Elem::decode`] reads it.
    pub fn poison_value(self) -> f32 {
        self.decode(&self.poisoned(1))[0]
    }

    /// `count` elements of poison, as bytes.
    pub fn poisoned(self, count: usize) -> Vec<u8> {
        let one = self.poison().to_le_bytes();
        one[..self.bytes()].repeat(count)
    }

    /// The values of elements stored as `bytes` (a whole number of them), exactly.
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            Elem::F32 => bytes
                .as_chunks::<4>()
                .0
                .iter()
                .map(|&b| f32::from_le_bytes(b))
                .collect(),
            Elem::Bf16 => bytes
                .as_chunks::<2>()
                .0
                .iter()
                .map(|&b| Bf16::from_bits(u16::from_le_bytes(b)).to_f32())
                .collect(),
            Elem::F16 => bytes
                .as_chunks::<2>()
                .0
                .iter()
                .map(|&b| F16::from_bits(u16::from_le_bytes(b)).to_f32())
                .collect(),
        }
    }

    /// Bytes of `len` elements, or None on overflow.
    pub fn bytes_of(self, len: usize) -> Option<u64> {
        (len as u64).checked_mul(self.bytes() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Elem; 3] = [Elem::F32, Elem::Bf16, Elem::F16];

    #[test]
    fn sizes_names_and_cuda_types() {
        let rows: Vec<_> = ALL
            .iter()
            .map(|e| (e.bytes(), e.label(), e.cuda_type(), e.cuda_data_type(), e.bits()))
            .collect();
        assert_eq!(
            rows,
            [
                (4, "f32", "float", "CUDA_R_32F", 24),
                (2, "bf16", "__nv_bfloat16", "CUDA_R_16BF", 8),
                (2, "f16", "half", "CUDA_R_16F", 11),
            ]
        );
        assert_eq!(Elem::default(), Elem::F32);
        assert_eq!(Elem::Bf16.bytes_of(usize::MAX), None);
    }

    #[test]
    fn poison_is_a_nan_of_each_width() {
        for e in ALL {
            let v = e.decode(&e.poisoned(3));
            assert_eq!(v.len(), 3);
            assert!(v.iter().all(|x| x.is_nan()), "{e:?}");
        }
        assert_eq!(Elem::F32.poison(), 0x7fc0_bad0);
    }

    #[test]
    fn round_trips_keep_exactly_what_the_type_rounds_to() {
        let xs = [0.0f32, -1.0, 0.1, 1.0 / 3.0, -0.999_999, 1e-6, 65504.0, 3.0e-8];
        for e in ALL {
            let back = e.decode(&e.encode(&xs));
            let want: Vec<f32> = xs.iter().map(|&x| e.round(x)).collect();
            assert_eq!(back, want, "{e:?}");
            for (x, r) in xs.iter().zip(&want) {
                let bound = 2f64.powi(-(e.bits() as i32)) * f64::from(x.abs()) + e.tiny();
                assert!(f64::from((x - r).abs()) <= bound, "{e:?} {x} -> {r}");
            }
        }
        // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie, to even (1).
        assert_eq!(Elem::Bf16.round(1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(Elem::F16.round(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(Elem::F16.round(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
    }
}
