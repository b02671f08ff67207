//! hgemm: the 16-bit GEMM chapter. C = A B, row-major, A m x k, B k x n and C m x n
//! all of one 16-bit type ([`Bf16`](crate::gpu::Bf16) or [`F16`](crate::gpu::F16)),
//! products accumulated in f32 and rounded to the 16-bit type once, at the store: the
//! precision the field trains and serves in, half the bytes of an f32 product per
//! element moved.
//!
//! Each rung is one kernel body generic over [`Half`](crate::gpu::Half), instantiated
//! once per type, so a BF16 and an FP16 kernel never differ but in their element.

mod epilogue;
pub mod overlap;
pub mod simt;
pub mod stream_k;
pub mod tiling;
pub mod wgmma;
