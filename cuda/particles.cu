// CUDA C++ twins of kernels/src/particles.rs: the same algorithm, signature and
// launch, compiled at run time by NVRTC and run by `coalesce compare` on the same
// buffers. pos += vel * dt with one fused multiply-add, as the Rust `step`.

// One particle, 24 bytes, as kernels::particles::Particle (#[repr(C)]).
struct Particle {
    float pos[3];
    float vel[3];
};

// AoS: read the whole particle, write its three positions through a float view.
extern "C" __global__ void particles_aos(size_t n, float dt, Particle* p) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Particle q = p[i];
        float* pos = reinterpret_cast<float*>(p);
        for (size_t d = 0; d < 3; ++d) {
            pos[6 * i + d] = fmaf(q.vel[d], dt, q.pos[d]);
        }
    }
}

// SoA: six arrays, each read or written at consecutive addresses by a warp.
extern "C" __global__ void particles_soa(size_t n, float dt, float* x, float* y, float* z,
                                         const float* vx, const float* vy, const float* vz) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = fmaf(__ldg(&vx[i]), dt, x[i]);
        y[i] = fmaf(__ldg(&vy[i]), dt, y[i]);
        z[i] = fmaf(__ldg(&vz[i]), dt, z[i]);
    }
}

// vel * dt + pos lane by lane, as Rust's Float4::axpy (the same fmaf as `step`).
__device__ __forceinline__ float4 axpy(float4 v, float dt, float4 p) {
    return make_float4(fmaf(dt, v.x, p.x), fmaf(dt, v.y, p.y), fmaf(dt, v.z, p.z), fmaf(dt, v.w, p.w));
}

// SoA, tuned: float4 loads and stores of each array, grid-stride over a grid sized to
// the GPU; the last n % 4 particles one each by the first threads.
extern "C" __global__ void particles_soa_f32x4(size_t n, float dt, float* x, float* y, float* z,
                                               const float* __restrict__ vx, const float* __restrict__ vy,
                                               const float* __restrict__ vz) {
    size_t n4 = n / 4;
    float4* x4 = reinterpret_cast<float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    float4* z4 = reinterpret_cast<float4*>(z);
    const float4* vx4 = reinterpret_cast<const float4*>(vx);
    const float4* vy4 = reinterpret_cast<const float4*>(vy);
    const float4* vz4 = reinterpret_cast<const float4*>(vz);
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n4) {
        x4[i] = axpy(__ldg(&vx4[i]), dt, x4[i]);
        y4[i] = axpy(__ldg(&vy4[i]), dt, y4[i]);
        z4[i] = axpy(__ldg(&vz4[i]), dt, z4[i]);
        i += gridDim.x * blockDim.x;
    }
    size_t tail = n4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x);
    if (tail < n) {
        x[tail] = fmaf(__ldg(&vx[tail]), dt, x[tail]);
        y[tail] = fmaf(__ldg(&vy[tail]), dt, y[tail]);
        z[tail] = fmaf(__ldg(&vz[tail]), dt, z[tail]);
    }
}
