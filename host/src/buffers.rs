//! Device buffers as the harness uses them: filled with random data on the GPU,
//! poisoned before a kernel writes them, copied back for validation.

use cust::memory::{CopyDestination, DeviceSlice};
use kernels::entry;

use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::launch::{AsGlobal, Launch};

/// A quiet NaN with a recognisable payload: never equal to anything, so an output
/// element the kernel did not write fails validation.
pub const POISON_BITS: u32 = 0x7fc0_bad0;

/// Fills `buf` with `kernels::fill::uniform(seed, i)`, computed on the GPU.
pub fn fill_uniform(gpu: &Gpu, buf: &DeviceSlice<f32>, seed: u64) -> Result<()> {
    let cfg = Launch::grid_stride(buf.len(), kernels::fill::BLOCK, gpu.info.sm_count, 8);
    gpu.launch(&entry::fill_uniform, cfg, (buf.len(), seed, buf.global_mut()))
}

/// Overwrites `buf` with [`POISON_BITS`].
pub fn poison(gpu: &Gpu, buf: &mut DeviceSlice<f32>) -> Result<()> {
    // SAFETY: the buffer outlives the stream work (callers sync before dropping it).
    unsafe { buf.set_32_async(POISON_BITS, &gpu.stream) }
        .map_err(gpu.cuda_error("poisoning an output buffer"))
}

/// Waits for the stream, then copies `buf` to the host.
pub fn download(gpu: &Gpu, buf: &DeviceSlice<f32>) -> Result<Vec<f32>> {
    gpu.sync("finishing work before a copy to the host")?;
    let mut host = vec![0f32; buf.len()];
    buf.copy_to(&mut host[..])
        .map_err(gpu.cuda_error("copying a result to the host"))?;
    Ok(host)
}

/// `count` f32 elements in `bytes`, which must hold at least one.
pub fn f32_elements(bytes: u64) -> Result<usize> {
    let n = bytes / 4;
    if n == 0 {
        return Err(Error::Zero {
            what: "--size (in whole f32 elements)",
        });
    }
    usize::try_from(n).map_err(|_| Error::TooLarge {
        what: format!("{bytes} bytes"),
        why: "more elements than usize holds".into(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn poison_is_nan() {
        assert!(f32::from_bits(super::POISON_BITS).is_nan());
    }

    #[test]
    fn element_counts() {
        assert_eq!(super::f32_elements(4096).unwrap(), 1024);
        assert_eq!(super::f32_elements(7).unwrap(), 1);
        assert!(super::f32_elements(3).is_err());
    }
}
