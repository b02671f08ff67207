//! Device buffers as the harness uses them: filled with random data on the GPU,
//! poisoned before a kernel writes them, copied back for validation. A buffer is its
//! bytes on the device and the [`Elem`] they hold.

use cust::memory::{CopyDestination, DeviceSlice};
use kernels::entry;
use kernels::gpu::{Bf16, F16};

use crate::device::Gpu;
use crate::elem::Elem;
use crate::error::{Error, Result};
use crate::launch::{AsGlobal, Launch};

/// The f32 poison ([`Elem::poison`]): a quiet NaN with a recognisable payload.
pub const POISON_BITS: u32 = Elem::F32.poison();

/// Fills `buf` (`elem` elements) with `kernels::fill::uniform(seed, i)` rounded to
/// `elem`, computed on the GPU.
pub fn fill_uniform(gpu: &Gpu, buf: &DeviceSlice<u8>, elem: Elem, seed: u64) -> Result<()> {
    let n = buf.len() / elem.bytes();
    let cfg = Launch::grid_stride(n, kernels::fill::BLOCK, gpu.info.sm_count, 8);
    match elem {
        Elem::F32 => gpu.launch(&entry::fill_uniform, cfg, (n, seed, buf.global_mut_as::<f32>())),
        Elem::Bf16 => gpu.launch(
            &entry::fill_uniform_bf16,
            cfg,
            (n, seed, buf.global_mut_as::<Bf16>()),
        ),
        Elem::F16 => gpu.launch(
            &entry::fill_uniform_f16,
            cfg,
            (n, seed, buf.global_mut_as::<F16>()),
        ),
    }
}

/// Overwrites `buf` with `elem`'s poison.
pub fn poison(gpu: &Gpu, buf: &mut DeviceSlice<u8>, elem: Elem) -> Result<()> {
    // SAFETY: the buffer outlives the stream work (callers sync before dropping it);
    // its length is a whole number of elements and its start is aligned for them.
    let set = unsafe {
        match elem.bytes() {
            4 => buf.set_32_async(elem.poison(), &gpu.stream),
            _ => buf.set_16_async(elem.poison() as u16, &gpu.stream),
        }
    };
    set.map_err(gpu.cuda_error("poisoning an output buffer"))
}

/// Overwrites the padding of `buf`, a matrix of rows of `cols` elements laid out
/// `pitch` elements apart, with `elem`'s poison: one 2D memset over the rows' tails.
pub fn poison_padding(
    gpu: &Gpu,
    buf: &DeviceSlice<u8>,
    elem: Elem,
    (cols, pitch): (usize, usize),
) -> Result<()> {
    let size = elem.bytes();
    let (pitch, width) = (pitch * size, pitch - cols);
    let rows = buf.len() / pitch;
    let first = buf.as_device_ptr().as_raw() + (cols * size) as u64;
    let stream = gpu.stream.as_inner();
    // SAFETY: `rows` rows of `pitch` bytes lie in the buffer, each row's tail of
    // `width` elements within its row; the stream outlives the work (callers sync).
    let status = unsafe {
        match size {
            4 => cust::sys::cuMemsetD2D32Async(first, pitch, elem.poison(), width, rows, stream),
            _ => cust::sys::cuMemsetD2D16Async(first, pitch, elem.poison() as u16, width, rows, stream),
        }
    };
    // cust has no 2D memset, nor a public conversion of a raw status: the status is
    // named in the message.
    if status != cust::sys::cudaError_enum::CUDA_SUCCESS {
        return Err(gpu
            .cuda_error(format!("poisoning a matrix's row padding ({status:?})"))(
            cust::error::CudaError::UnknownError,
        ));
    }
    Ok(())
}

/// Waits for the stream, then copies `buf` to the host as the exact values of its
/// `elem` elements.
pub fn download(gpu: &Gpu, buf: &DeviceSlice<u8>, elem: Elem) -> Result<Vec<f32>> {
    gpu.sync("finishing work before a copy to the host")?;
    let mut host = vec![0u8; buf.len()];
    buf.copy_to(&mut host[..])
        .map_err(gpu.cuda_error("copying a result to the host"))?;
    Ok(elem.decode(&host))
}

/// How many `elem` elements `bytes` holds; it must hold at least one.
pub fn elements(bytes: u64, elem: Elem) -> Result<usize> {
    let n = bytes / elem.bytes() as u64;
    if n == 0 {
        return Err(Error::Zero {
            what: "--size (in whole elements)",
        });
    }
    usize::try_from(n).map_err(|_| Error::TooLarge {
        what: format!("{bytes} bytes"),
        why: "more elements than usize holds".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_is_nan() {
        assert!(f32::from_bits(POISON_BITS).is_nan());
    }

    /// The GPU's fills, run on the emulator with the harness's own grid (a few blocks
    /// striding over more elements than they have threads), store what `Inputs`
    /// says each element holds: the f32 draw, rounded as the buffer's type stores it.
    #[test]
    fn the_fills_store_what_inputs_recompute() {
        use kernels::gpu::GlobalMut;
        use kernels::gpu::emu::{Dim3, LaunchConfig, launch};

        use crate::experiment::Inputs;
        let inputs = Inputs { seed: 9 };
        let n = 3 * 256 * 2 + 77;
        for (b, elem) in [Elem::F32, Elem::Bf16, Elem::F16].into_iter().enumerate() {
            let cfg = Launch::grid_stride(n, kernels::fill::BLOCK, 3, 1);
            let config = LaunchConfig {
                grid: Dim3::from(cfg.grid.0),
                block: Dim3::from(cfg.block.0),
                ..Default::default()
            };
            let seed = inputs.stream(b);
            let mut words = vec![0u32; n];
            let at = words.as_mut_ptr();
            // SAFETY (each): `words` holds n elements of any of the types.
            let _ = unsafe {
                match elem {
                    Elem::F32 => launch(
                        &config,
                        entry::fill_uniform.bind((n, seed, GlobalMut::from_ptr(at.cast::<f32>()))),
                    ),
                    Elem::Bf16 => launch(
                        &config,
                        entry::fill_uniform_bf16.bind((n, seed, GlobalMut::from_ptr(at.cast::<Bf16>()))),
                    ),
                    Elem::F16 => launch(
                        &config,
                        entry::fill_uniform_f16.bind((n, seed, GlobalMut::from_ptr(at.cast::<F16>()))),
                    ),
                }
            };
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let got = elem.decode(&bytes[..n * elem.bytes()]);
            let want: Vec<f32> = (0..n).map(|i| inputs.value(b, elem, i)).collect();
            assert_eq!(got, want, "{elem:?}");
            assert!(want.iter().all(|&x| elem.round(x) == x));
            if elem != Elem::F32 {
                assert!(
                    (0..n).any(|i| want[i] != inputs.get(b, i)),
                    "{elem:?} rounds some draw"
                );
            }
        }
    }

    #[test]
    fn element_counts() {
        assert_eq!(elements(4096, Elem::F32).unwrap(), 1024);
        assert_eq!(elements(7, Elem::F32).unwrap(), 1);
        assert!(elements(3, Elem::F32).is_err());
        assert_eq!(elements(7, Elem::Bf16).unwrap(), 3);
        assert!(elements(1, Elem::F16).is_err());
    }
}
