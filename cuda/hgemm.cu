// The 16-bit GEMM chapter's twins: C = A B, row-major, one 16-bit type (__nv_bfloat16 or
// half), f32 accumulation. The Hopper rungs' bodies are in hgemm_hopper.cuh.
#include "hgemm_hopper.cuh"

extern "C" __global__ void __launch_bounds__(256, 1) hgemm_wgmma_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_plain<__nv_bfloat16>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(256, 1) hgemm_wgmma_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_plain<half>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_ws_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, false, false>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_ws_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, false, false>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_cluster_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, true, false>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_wgmma_cluster_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, true, false>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_persistent_bf16(int m, int n, int k, const TensorMap* a, const TensorMap* b, __nv_bfloat16* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<__nv_bfloat16, true, true>(m, n, k, a, b, c);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hgemm_persistent_f16(int m, int n, int k, const TensorMap* a, const TensorMap* b, half* c) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    hgemm_ws<half, true, true>(m, n, k, a, b, c);
#endif
}
