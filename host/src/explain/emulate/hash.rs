//! A fast hasher for the emulator's counts: their keys are addresses and small
//! indices, hashed millions of times per kernel, where the standard library's
//! DoS-resistant SipHash cost more than the counting itself. Nothing here hashes input
//! an attacker chooses.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The multiply-rotate hash of rustc's own `FxHasher`.
#[derive(Clone, Copy, Default)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let (words, rest) = bytes.as_chunks::<8>();
        for w in words {
            self.add(u64::from_le_bytes(*w));
        }
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_equal_and_near_ones_apart() {
        let hash = |k: (u64, &str)| {
            let mut h = FxHasher::default();
            std::hash::Hash::hash(&k, &mut h);
            h.finish()
        };
        assert_eq!(hash((7, "abc")), hash((7, "abc")));
        assert_ne!(hash((7, "abc")), hash((8, "abc")));
        assert_ne!(hash((7, "abc")), hash((7, "abd")));
        let mut m: FastMap<u64, u32> = FastMap::default();
        for i in 0..1000 {
            *m.entry(i % 10).or_default() += 1;
        }
        assert_eq!(m.len(), 10);
        assert!(m.values().all(|&n| n == 100));
    }
}
