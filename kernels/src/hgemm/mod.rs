//! The 16-bit GEMM chapter: C = A B with A (m x k), B (k x n) and C (m x n) row-major
//! in one 16-bit type ([`crate::gpu::Bf16`] or [`crate::gpu::F16`]), products
//! accumulated in f32 and rounded once, at the store.

pub mod wgmma;
