//! One GPU: its context, the loaded kernels, a stream, and what it is.

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::Function;
use cust::memory::{DeviceBuffer, DeviceCopy};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ptx;

/// What the harness needs to know about a device, read from its attributes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DeviceInfo {
    pub ordinal: u32,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub total_memory_bytes: u64,
    /// Memory clock in kHz (0 where the driver no longer reports it).
    pub memory_clock_khz: u64,
    pub bus_width_bits: u64,
    pub driver_version: i32,
}

impl DeviceInfo {
    /// Theoretical DRAM bandwidth in GB/s: 2 transfers per clock (DDR) x clock x bus width / 8.
    pub fn peak_gb_per_s(&self) -> Option<f64> {
        let bytes_per_s = 2.0 * self.memory_clock_khz as f64 * 1e3 * self.bus_width_bits as f64 / 8.0;
        (bytes_per_s > 0.0).then_some(bytes_per_s / 1e9)
    }
}

/// An open GPU with the embedded PTX loaded. Dropping it releases the context.
pub struct Gpu {
    pub info: DeviceInfo,
    pub stream: Stream,
    module: Module,
    _context: Context,
}

/// Turns the driver's "no device"/"no driver" answers into one clear error.
fn no_gpu(e: CudaError) -> Error {
    let hint = if ptx::LINKED_CUDA_STUB {
        " (this build found no NVIDIA driver and linked a stub libcuda; rebuild on a machine with the driver)"
    } else {
        ""
    };
    match e {
        CudaError::NoDevice | CudaError::InvalidDevice => {
            Error::NoGpu(format!("no CUDA-capable device is detected{hint}"))
        }
        CudaError::UnknownError | CudaError::NotInitialized | CudaError::Deinitialized => {
            Error::NoGpu(format!("the NVIDIA driver could not be initialised ({e}){hint}"))
        }
        other => Error::NoGpu(format!("{other}{hint}")),
    }
}

impl Gpu {
    /// Opens device `ordinal` (primary context), loads the kernels and makes a stream.
    pub fn open(ordinal: u32) -> Result<Gpu> {
        cust::init(cust::CudaFlags::empty()).map_err(no_gpu)?;
        let count = Device::num_devices().map_err(no_gpu)?;
        if count == 0 {
            return Err(no_gpu(CudaError::NoDevice));
        }
        if ordinal >= count {
            return Err(Error::DeviceOutOfRange {
                requested: ordinal,
                count,
            });
        }
        let device = Device::get_device(ordinal).map_err(Error::cuda("opening the device"))?;
        let context = Context::new(device).map_err(Error::cuda("creating the primary context"))?;
        let info = read_info(ordinal, device)?;
        let module = Module::from_ptx(ptx::PTX, &[]).map_err(Error::cuda("loading the kernels' PTX"))?;
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(Error::cuda("creating a stream"))?;
        Ok(Gpu {
            info,
            stream,
            module,
            _context: context,
        })
    }

    /// A kernel from the embedded PTX.
    pub fn function(&self, name: &str) -> Result<Function<'_>> {
        self.module.get_function(name).map_err(|_| Error::MissingKernel {
            kernel: name.to_string(),
        })
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(u64, u64)> {
        let (free, total) = cust::memory::mem_get_info().map_err(Error::cuda("querying free memory"))?;
        Ok((free as u64, total as u64))
    }

    /// Waits for all work on the stream, turning a kernel fault into an error.
    pub fn sync(&self, what: &str) -> Result<()> {
        self.stream.synchronize().map_err(Error::cuda(what.to_string()))
    }

    /// Allocates `len` uninitialised elements (every user fills or poisons them first).
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: T is DeviceCopy (plain data); callers write before they read.
        unsafe { DeviceBuffer::uninitialized(len) }.map_err(Error::cuda(format!(
            "allocating {} on the device",
            crate::units::format_bytes((len * size_of::<T>()) as u64)
        )))
    }
}

fn read_info(ordinal: u32, device: Device) -> Result<DeviceInfo> {
    let attr = |a: DeviceAttribute| {
        device
            .get_attribute(a)
            .map_err(Error::cuda("reading device attributes"))
    };
    // Newer drivers may drop the memory clock attribute; report no peak rather than fail.
    let clock = device
        .get_attribute(DeviceAttribute::MemoryClockRate)
        .unwrap_or(0);
    Ok(DeviceInfo {
        ordinal,
        name: device.name().map_err(Error::cuda("reading the device name"))?,
        compute_capability: (
            attr(DeviceAttribute::ComputeCapabilityMajor)?,
            attr(DeviceAttribute::ComputeCapabilityMinor)?,
        ),
        sm_count: attr(DeviceAttribute::MultiprocessorCount)? as u32,
        l2_bytes: attr(DeviceAttribute::L2CacheSize)? as u64,
        total_memory_bytes: device
            .total_memory()
            .map_err(Error::cuda("reading total memory"))? as u64,
        memory_clock_khz: clock.max(0) as u64,
        bus_width_bits: attr(DeviceAttribute::GlobalMemoryBusWidth)?.max(0) as u64,
        driver_version: cust::CudaApiVersion::get()
            .map(|v| v.major() * 1000 + v.minor() * 10)
            .unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            l2_bytes: 50 << 20,
            total_memory_bytes: 80 << 30,
            memory_clock_khz: 2_619_000,
            bus_width_bits: 5120,
            driver_version: 13000,
        }
    }

    #[test]
    fn peak_is_ddr_clock_times_bus() {
        // 2 x 2.619 GHz x 5120 bit / 8 = 3352 GB/s, the H100 SXM datasheet's 3.35 TB/s.
        let peak = h100().peak_gb_per_s().unwrap();
        assert!((peak - 3352.32).abs() < 0.01, "{peak}");
    }

    #[test]
    fn no_clock_means_no_peak() {
        let info = DeviceInfo {
            memory_clock_khz: 0,
            ..h100()
        };
        assert_eq!(info.peak_gb_per_s(), None);
    }
}
