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
