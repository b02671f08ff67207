//! One GPU: its context, the loaded kernels, a stream, and what it is.
//!
//! A kernel that faults (an illegal address) leaves the CUDA context unusable for
//! the rest of the process. [`Gpu`] remembers the first such error and answers every
//! later launch, allocation or wait with it, instead of submitting more work; cust's
//! destructors ignore the driver's errors, so dropping everything afterwards is safe.

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::Function;
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;

use kernels::handle::KernelInfo;

use crate::arena::{Arena, Lease};
use crate::error::{Error, Result};
use crate::ptx::{self, PtxModule};

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
    /// Threads one SM holds at once (0 in files written before it was recorded).
    #[serde(default)]
    pub max_threads_per_sm: u32,
    /// The PCI address, `0000:18:00.0`: what tells apart GPUs of one model on a host
    /// (None in files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
}

impl DeviceInfo {
    /// What an NVIDIA H100 80GB HBM3 (SXM) reports: the project's reference GPU, used
    /// where none is at hand (explain's default grids, tests' fixtures).
    pub fn h100() -> DeviceInfo {
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
            max_threads_per_sm: 2048,
            pci_bus_id: None,
        }
    }

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
    /// Each embedded module this device can load ([`PtxModule::compute_capability`]).
    modules: Vec<(PtxModule, Module)>,
    /// Kernels that [`Gpu::function`] answers from another module ([`Gpu::substitute`]).
    substitutes: Vec<Substitute>,
    /// The first error after which the context cannot run anything (a kernel fault).
    poisoned: OnceLock<String>,
    /// Where experiments take their buffers from, once [`Gpu::reserve`] made one.
    arena: RefCell<Option<Rc<Arena>>>,
    // Declared last: dropped after every module and the stream that live in it.
    _context: Context,
}

struct Substitute {
    kernel: String,
    module: Module,
    replacement: String,
}

/// Errors after which the driver refuses all further work in the context ("sticky"
/// errors in CUDA's documentation): faults inside a kernel, and hardware failures.
pub fn is_sticky(e: CudaError) -> bool {
    matches!(
        e,
        CudaError::IllegalAddress
            | CudaError::LaunchTimeout
            | CudaError::AssertError
            | CudaError::HardwareStackError
            | CudaError::IllegalInstruction
            | CudaError::MisalignedAddress
            | CudaError::InvalidAddressSpace
            | CudaError::InvalidProgramCounter
            | CudaError::LaunchFailed
            | CudaError::EccUncorrectable
            | CudaError::NvlinkUncorrectable
            | CudaError::ContextIsDestroyed
    )
}

/// Whether the NVIDIA driver (`libcuda.so.1`) was found when the program started,
/// and the system loader's reason when it was not (host/build.rs's driver loader).
pub fn driver() -> std::result::Result<(), String> {
    unsafe extern "C" {
        fn coalesce_cuda_driver_loaded() -> std::ffi::c_int;
        fn coalesce_cuda_load_error() -> *const std::ffi::c_char;
    }
    // SAFETY: both only read what the loader's constructor wrote before main.
    unsafe {
        if coalesce_cuda_driver_loaded() != 0 {
            return Ok(());
        }
        let why = coalesce_cuda_load_error();
        Err(if why.is_null() {
            "libcuda.so.1 could not be loaded".into()
        } else {
            std::ffi::CStr::from_ptr(why).to_string_lossy().into_owned()
        })
    }
}

/// What still works without a GPU, for the no-GPU message.
const WITHOUT_A_GPU: &str =
    "without a GPU, `coalesce list`, `coalesce explain` and `coalesce report --from FILE` still work";

/// Turns the driver's "no device"/"no driver" answers into one clear error.
fn no_gpu(e: CudaError) -> Error {
    if let Err(why) = driver() {
        return Error::NoGpu(format!(
            "no NVIDIA driver on this machine ({why}); {WITHOUT_A_GPU}"
        ));
    }
    let hint = format!("; {WITHOUT_A_GPU}");
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

/// A file-name form of a device name: `NVIDIA H100 80GB HBM3` -> `nvidia-h100-80gb-hbm3`.
pub fn slug(device: &str) -> String {
    let mut s: String = device
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    match s.trim_matches('-') {
        "" => "gpu".into(),
        t => t.to_string(),
    }
}

/// How many CUDA devices this machine has (an error when there is no GPU).
pub fn count() -> Result<u32> {
    cust::init(cust::CudaFlags::empty()).map_err(no_gpu)?;
    match Device::num_devices().map_err(no_gpu)? {
        0 => Err(no_gpu(CudaError::NoDevice)),
        n => Ok(n),
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
        let mut modules = Vec::new();
        for m in PtxModule::ALL {
            if m.loads_on(info.compute_capability) {
                let loaded = Module::from_ptx(ptx::text(m), &[]).map_err(Error::cuda(match m {
                    PtxModule::Baseline => "loading the kernels' PTX",
                    PtxModule::Sm80 => "loading the sm_80 kernels' PTX",
                    PtxModule::Sm90a => "loading the sm_90a kernels' PTX",
                }))?;
                modules.push((m, loaded));
            }
        }
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(Error::cuda("creating a stream"))?;
        Ok(Gpu {
            info,
            stream,
            modules,
            substitutes: Vec::new(),
            poisoned: OnceLock::new(),
            arena: RefCell::new(None),
            _context: context,
        })
    }

    /// `Err(Error::Unsupported)` when `kernel`'s module needs a newer GPU than this
    /// (sm_80 on an older one): the commands skip such a variant with that one line.
    pub fn supports(&self, kernel: &KernelInfo) -> Result<()> {
        if !self.modules.iter().any(|(m, _)| *m == kernel.module) {
            let (major, minor) = self.info.compute_capability;
            return Err(Error::Unsupported {
                kernel: kernel.name.to_string(),
                device: self.info.name.clone(),
                major,
                minor,
            });
        }
        Ok(())
    }

    /// A kernel from the embedded PTX module its handle names (or its substitute).
    pub fn function(&self, kernel: &KernelInfo) -> Result<Function<'_>> {
        self.usable()?;
        self.supports(kernel)?;
        let (module, entry) = match self.substitutes.iter().find(|s| s.kernel == kernel.name) {
            Some(s) => (&s.module, s.replacement.as_str()),
            None => {
                let (_, module) = self
                    .modules
                    .iter()
                    .find(|(m, _)| *m == kernel.module)
                    .expect("supports() found the module");
                (module, kernel.name)
            }
        };
        module.get_function(entry).map_err(|_| Error::MissingKernel {
            kernel: entry.to_string(),
        })
    }

    /// Loads `ptx` into this context and from then on answers [`Gpu::function`]`(kernel)`
    /// with its entry `replacement`, so every command runs that kernel in place of the
    /// embedded one, on the same buffers and launch. It must take the same parameters.
    /// The tests use it to run deliberately broken kernels through the real commands.
    pub fn substitute(&mut self, kernel: &KernelInfo, ptx: &str, replacement: &str) -> Result<()> {
        self.usable()?;
        let module = Module::from_ptx(ptx, &[]).map_err(Error::cuda("loading a substitute PTX module"))?;
        module
            .get_function(replacement)
            .map_err(|_| Error::MissingKernel {
                kernel: replacement.to_string(),
            })?;
        self.substitutes.retain(|s| s.kernel != kernel.name);
        self.substitutes.push(Substitute {
            kernel: kernel.name.to_string(),
            module,
            replacement: replacement.to_string(),
        });
        Ok(())
    }

    /// `Err` once an earlier error has left the context unable to run anything.
    pub fn usable(&self) -> Result<()> {
        match self.poisoned.get() {
            Some(first) => Err(Error::Poisoned { first: first.clone() }),
            None => Ok(()),
        }
    }

    /// Wraps a driver error with what we were doing, remembering it if it was sticky.
    pub fn cuda_error(&self, what: impl Into<String>) -> impl FnOnce(CudaError) -> Error + '_ {
        let what = what.into();
        move |source| {
            let e = Error::Cuda { what, source };
            if is_sticky(source) {
                let _ = self.poisoned.set(e.to_string());
            }
            e
        }
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(u64, u64)> {
        self.usable()?;
        let (free, total) = cust::memory::mem_get_info().map_err(self.cuda_error("querying free memory"))?;
        Ok((free as u64, total as u64))
    }

    /// Waits for all work on the stream, turning a kernel fault into an error.
    pub fn sync(&self, what: &str) -> Result<()> {
        self.usable()?;
        self.stream.synchronize().map_err(self.cuda_error(what))
    }

    /// Allocates `len` uninitialised elements (every user fills or poisons them first).
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.usable()?;
        // SAFETY: T is DeviceCopy (plain data); callers write before they read.
        unsafe { DeviceBuffer::uninitialized(len) }.map_err(self.cuda_error(format!(
            "allocating {} on the device",
            crate::units::format_bytes((len * size_of::<T>()) as u64)
        )))
    }

    /// Allocates `bytes` for experiments' buffers to be carved from ([`crate::arena`]),
    /// replacing any earlier reservation; `false` (and none) if the allocation fails.
    pub fn reserve(&self, bytes: u64) -> Result<bool> {
        self.usable()?;
        self.arena.replace(None);
        // SAFETY: u8 is plain data; every buffer carved from it is written before read.
        let memory = match unsafe { DeviceBuffer::<u8>::uninitialized(bytes as usize) } {
            Err(CudaError::OutOfMemory) => return Ok(false),
            made => made.map_err(self.cuda_error("reserving memory for the experiments' buffers"))?,
        };
        self.arena.replace(Some(Arena::new(memory)));
        Ok(true)
    }

    /// Buffers of `sizes` bytes from the reservation, if there is one, no other
    /// experiment holds it and they fit. One they do not fit is given back, so that
    /// their own allocations have its memory.
    pub fn lease(&self, sizes: &[u64]) -> Option<(Lease, Vec<DeviceSlice<u8>>)> {
        let leased = self.idle_reservation()?.lease(sizes);
        if leased.is_none() {
            self.arena.replace(None);
        }
        leased
    }

    /// The reservation while no experiment holds it.
    fn idle_reservation(&self) -> Option<Rc<Arena>> {
        self.arena.borrow().as_ref().filter(|a| !a.leased()).cloned()
    }

    /// The reservation's device address and size, if there is one.
    pub fn reserved(&self) -> Option<(u64, u64)> {
        self.arena.borrow().as_ref().map(|a| (a.address(), a.bytes()))
    }

    /// Free memory for an experiment's buffers: free device memory, plus the
    /// reservation while no experiment holds it.
    pub fn free_for_buffers(&self) -> Result<u64> {
        let (free, _) = self.memory()?;
        let reserved = self.idle_reservation().map_or(0, |a| a.bytes());
        Ok(free + reserved)
    }

    /// A new device buffer holding a copy of `data`.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        self.usable()?;
        DeviceBuffer::from_slice(data).map_err(self.cuda_error("copying to the device"))
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
        max_threads_per_sm: attr(DeviceAttribute::MaxThreadsPerMultiprocessor)?.max(0) as u32,
        pci_bus_id: pci_address(
            attr(DeviceAttribute::PciDomainId)?,
            attr(DeviceAttribute::PciBusId)?,
            attr(DeviceAttribute::PciDeviceId)?,
        ),
    })
}

/// The PCI address as `nvidia-smi` and `cuDeviceGetPCIBusId` write it (domain, bus,
/// device, function 0), or None where the driver gives no such numbers.
pub fn pci_address(domain: i32, bus: i32, device: i32) -> Option<String> {
    (domain >= 0 && bus >= 0 && device >= 0).then(|| format!("{domain:04x}:{bus:02x}:{device:02x}.0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceInfo {
        DeviceInfo::h100()
    }

    #[test]
    fn peak_is_ddr_clock_times_bus() {
        // 2 x 2.619 GHz x 5120 bit / 8 = 3352 GB/s, the H100 SXM datasheet's 3.35 TB/s.
        let peak = h100().peak_gb_per_s().unwrap();
        assert!((peak - 3352.32).abs() < 0.01, "{peak}");
    }

    #[test]
    fn the_pci_address_is_written_as_the_driver_writes_it() {
        assert_eq!(pci_address(0, 0x18, 0).as_deref(), Some("0000:18:00.0"));
        assert_eq!(pci_address(1, 0xc1, 3).as_deref(), Some("0001:c1:03.0"));
        assert_eq!(pci_address(0, -1, 0), None);
    }

    #[test]
    fn no_clock_means_no_peak() {
        let info = DeviceInfo {
            memory_clock_khz: 0,
            ..h100()
        };
        assert_eq!(info.peak_gb_per_s(), None);
    }

    /// The loader's reason is copied when it is given: a later failed look-up (as
    /// NVRTC's and cuBLAS's are) reuses the system loader's message buffer.
    #[test]
    fn the_missing_driver_keeps_its_own_reason() {
        let Err(before) = driver() else {
            return; // A machine with a driver: nothing to say.
        };
        // SAFETY: a library that does not exist; nothing is loaded or run.
        let missing = unsafe { libloading::Library::new("libcoalesce-no-such-library.so.9") };
        assert!(missing.is_err());
        assert_eq!(driver().unwrap_err(), before);
        assert!(before.starts_with("libcuda.so.1: "), "{before}");
    }
}
