//! The board's energy counter and power limit, read through NVML (`libnvidia-ml.so.1`,
//! which the driver installs beside `libcuda.so.1`), loaded at run time as the CUDA
//! libraries are: a machine without it still runs everything but the power
//! measurement of `coalesce calibrate`.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_ulonglong, c_void};

type Device = *mut c_void;
type Init = unsafe extern "C" fn() -> c_int;
type ByPci = unsafe extern "C" fn(*const c_char, *mut Device) -> c_int;
type Energy = unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int;
type Limit = unsafe extern "C" fn(Device, *mut c_uint) -> c_int;
type Describe = unsafe extern "C" fn(c_int) -> *const c_char;

/// One GPU as NVML sees it.
pub struct Board {
    device: Device,
    energy: Energy,
    limit: Limit,
    describe: Describe,
    // Declared last: the functions above live in it.
    _library: libloading::Library,
}

impl Board {
    /// The GPU at PCI address `pci` (`0000:18:00.0`, as [`crate::device::DeviceInfo`]
    /// records it), or why NVML cannot be asked about it.
    pub fn open(pci: &str) -> Result<Board, String> {
        // SAFETY: loading NVML runs its initialisers, which have no preconditions on us.
        let library = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("NVML (libnvidia-ml.so.1) did not load: {e}"))?;
        // SAFETY: each symbol is NVML's, with the signature its header (nvml.h) gives.
        let (init, by_pci, energy, limit, describe) = unsafe {
            let sym = |name: &[u8]| {
                let shown = String::from_utf8_lossy(&name[..name.len() - 1]).into_owned();
                move |e: libloading::Error| format!("NVML has no {shown}: {e}")
            };
            (
                *library
                    .get::<Init>(b"nvmlInit_v2\0")
                    .map_err(sym(b"nvmlInit_v2\0"))?,
                *library
                    .get::<ByPci>(b"nvmlDeviceGetHandleByPciBusId_v2\0")
                    .map_err(sym(b"nvmlDeviceGetHandleByPciBusId_v2\0"))?,
                *library
                    .get::<Energy>(b"nvmlDeviceGetTotalEnergyConsumption\0")
                    .map_err(sym(b"nvmlDeviceGetTotalEnergyConsumption\0"))?,
                *library
                    .get::<Limit>(b"nvmlDeviceGetEnforcedPowerLimit\0")
                    .map_err(sym(b"nvmlDeviceGetEnforcedPowerLimit\0"))?,
                *library
                    .get::<Describe>(b"nvmlErrorString\0")
                    .map_err(sym(b"nvmlErrorString\0"))?,
            )
        };
        let mut board = Board {
            device: std::ptr::null_mut(),
            energy,
            limit,
            describe,
            _library: library,
        };
        // SAFETY: nvmlInit_v2 takes nothing; NVML counts its inits, so a second is harmless.
        board.answer("nvmlInit_v2", unsafe { init() })?;
        let address = CString::new(pci).map_err(|_| format!("{pci:?} is not a PCI address"))?;
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: a NUL-terminated address and a place for the handle.
        board.answer("finding the GPU by its PCI address", unsafe {
            by_pci(address.as_ptr(), &mut device)
        })?;
        board.device = device;
        Ok(board)
    }

    /// Millijoules the board has used since the driver loaded.
    pub fn energy_mj(&self) -> Result<u64, String> {
        let mut mj: c_ulonglong = 0;
        // SAFETY: the handle NVML gave us and a place for the count.
        self.answer("reading the energy counter", unsafe {
            (self.energy)(self.device, &mut mj)
        })?;
        Ok(mj)
    }

    /// The power limit the board enforces now, in watts.
    pub fn power_limit_w(&self) -> Result<f64, String> {
        let mut mw: c_uint = 0;
        // SAFETY: the handle NVML gave us and a place for the limit.
        self.answer("reading the power limit", unsafe {
            (self.limit)(self.device, &mut mw)
        })?;
        Ok(f64::from(mw) / 1e3)
    }

    /// Ok for NVML_SUCCESS (0), else what NVML says of `code`.
    fn answer(&self, what: &str, code: c_int) -> Result<(), String> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: nvmlErrorString returns a static NUL-terminated string for any code.
        let text = unsafe { (self.describe)(code) };
        let why = if text.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        Err(format!("NVML, {what}: {why}"))
    }
}
