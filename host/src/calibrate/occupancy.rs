//! The SM's residency limits: device attributes, and the register allocation unit
//! fitted against the driver's occupancy calculator. The fit runs explain's residency
//! formula, so it lives apart from the other fits: the profile reads the fits, and the
//! residency formula reads the profile.

use kernels::handle::{KernelInfo, PtxModule};

use crate::device::Gpu;
use crate::error::Result;
use crate::profile::SmLimits;

/// One kernel's residency as the driver's occupancy calculator gives it, with the
/// registers and static shared bytes the driver's own compilation assigned it.
#[derive(Clone, Debug, PartialEq)]
pub struct OccupancySample {
    pub kernel: String,
    pub threads_per_block: u32,
    pub registers: u32,
    pub shared_bytes: u32,
    /// cuOccupancyMaxActiveBlocksPerMultiprocessor (no dynamic shared memory).
    pub driver_blocks: u32,
}

/// The register allocation units tried, most common first: the first of equally good
/// ones is kept.
pub const ALLOCATION_UNITS: [u32; 4] = [256, 128, 512, 64];

/// The register allocation unit: the one of [`ALLOCATION_UNITS`] with which the
/// residency formula ([`crate::explain::residency::residency`], with the SM's other
/// limits `sm`) gives the driver's blocks per SM for the most samples. Returns it and
/// how many samples agree; `None` without samples.
pub fn register_allocation_unit(
    samples: &[OccupancySample],
    max_threads_per_sm: u32,
    sm: &crate::profile::SmLimits,
) -> Option<(u32, usize)> {
    use crate::explain::residency::{Resources, residency};
    if samples.is_empty() {
        return None;
    }
    let agreeing = |unit: u32| {
        let limits = crate::profile::SmLimits {
            register_allocation_unit: unit,
            ..sm.clone()
        };
        samples
            .iter()
            .filter(|s| {
                let r = Resources {
                    registers: s.registers,
                    shared_bytes: s.shared_bytes,
                };
                residency(s.threads_per_block, 0, max_threads_per_sm, Some(&limits), Some(r)).blocks
                    == s.driver_blocks
            })
            .count()
    };
    ALLOCATION_UNITS
        .iter()
        .map(|&u| (u, agreeing(u)))
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
}

/// A device attribute cust 0.3.2 has no name for, read from the driver directly.
fn raw_attribute(gpu: &Gpu, attribute: cust::sys::CUdevice_attribute) -> Result<u32> {
    let device =
        cust::device::Device::get_device(gpu.info.ordinal).map_err(gpu.cuda_error("opening the device"))?;
    let mut value = 0i32;
    // SAFETY: a plain query into a local; the device handle is valid.
    let status = unsafe { cust::sys::cuDeviceGetAttribute(&mut value, attribute, device.as_raw()) };
    if status != cust::sys::cudaError_enum::CUDA_SUCCESS {
        return Err(crate::Error::BadProfile {
            path: "calibrate".into(),
            why: format!("the driver did not give device attribute {attribute:?} ({status:?})"),
        });
    }
    Ok(value.max(0) as u32)
}

/// The SM's residency limits: device attributes, and the register allocation unit that
/// agrees with the driver's occupancy calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor)
/// for the most of the embedded kernels, each at 128, 256 and 1024 threads per block
/// where it allows them. Returns the limits and (samples, agreeing).
pub(super) fn sm_limits(gpu: &Gpu, progress: &mut impl FnMut(&str)) -> Result<(SmLimits, usize, usize)> {
    use cust::device::DeviceAttribute as A;
    use cust::function::{BlockSize, FunctionAttribute as F};
    use cust::sys::CUdevice_attribute as Raw;
    progress("residency limits");
    let device =
        cust::device::Device::get_device(gpu.info.ordinal).map_err(gpu.cuda_error("opening the device"))?;
    let attr = |a: A| -> Result<u32> {
        Ok(device
            .get_attribute(a)
            .map_err(gpu.cuda_error("reading device attributes"))?
            .max(0) as u32)
    };
    let (major, minor) = gpu.info.compute_capability;
    let mut limits = SmLimits {
        compute_capability: [major.max(0) as u32, minor.max(0) as u32],
        registers_per_sm: attr(A::MaxRegistersPerMultiprocessor)?,
        register_allocation_unit: ALLOCATION_UNITS[0],
        shared_bytes_per_sm: attr(A::MaxSharedMemoryPerMultiprocessor)?,
        reserved_shared_bytes_per_block: raw_attribute(
            gpu,
            Raw::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        )?,
        max_blocks_per_sm: raw_attribute(gpu, Raw::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
    };
    let mut samples = Vec::new();
    // The baseline module's kernels, in its (the PTX's) order.
    let mut baseline: Vec<&KernelInfo> = kernels::HOST_KERNELS
        .iter()
        .copied()
        .filter(|k| k.module == PtxModule::Baseline)
        .collect();
    baseline.sort_by_key(|k| k.name);
    for kernel in baseline {
        let f = gpu.function(kernel)?;
        let get = |a: F| {
            f.get_attribute(a)
                .map_err(gpu.cuda_error("reading a kernel's attributes"))
        };
        let (registers, shared, most) = (
            get(F::NumRegisters)?,
            get(F::SharedMemorySizeBytes)?,
            get(F::MaxThreadsPerBlock)?,
        );
        for threads in [128u32, 256, 1024].into_iter().filter(|&t| t as i32 <= most) {
            let blocks = f
                .max_active_blocks_per_multiprocessor(BlockSize::x(threads), 0)
                .map_err(gpu.cuda_error("asking the driver's occupancy calculator"))?;
            samples.push(OccupancySample {
                kernel: kernel.name.to_string(),
                threads_per_block: threads,
                registers: registers.max(0) as u32,
                shared_bytes: shared.max(0) as u32,
                driver_blocks: blocks,
            });
        }
    }
    let (unit, agreeing) = register_allocation_unit(&samples, gpu.info.max_threads_per_sm, &limits)
        .unwrap_or((ALLOCATION_UNITS[0], 0));
    limits.register_allocation_unit = unit;
    Ok((limits, samples.len(), agreeing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocation_unit_is_the_one_that_agrees_with_the_driver() {
        let sm = crate::profile::tests::sample().sm.unwrap();
        let sample = |registers, driver_blocks| OccupancySample {
            kernel: "k".into(),
            threads_per_block: 256,
            registers,
            shared_bytes: 0,
            driver_blocks,
        };
        // 42 registers: 5 blocks at a unit of 256 (1536 per warp), 6 at 64 (1344).
        let driver = [sample(42, 5), sample(8, 8), sample(64, 4)];
        assert_eq!(register_allocation_unit(&driver, 2048, &sm), Some((256, 3)));
        let at_64 = [sample(42, 6), sample(8, 8)];
        assert_eq!(register_allocation_unit(&at_64, 2048, &sm), Some((64, 2)));
        // Samples no unit tells apart keep the first.
        assert_eq!(
            register_allocation_unit(&[sample(8, 8)], 2048, &sm),
            Some((256, 1))
        );
        assert_eq!(register_allocation_unit(&[], 2048, &sm), None);
    }
}
