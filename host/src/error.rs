//! Typed errors: each is one line for the user, and knows its exit code.

use cust::error::CudaError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no NVIDIA GPU available: {0}")]
    NoGpu(String),

    #[error("--device {requested} is out of range: this machine has {}", devices(*count))]
    DeviceOutOfRange { requested: u32, count: u32 },

    #[error("CUDA error while {what}: {source}")]
    Cuda {
        what: String,
        #[source]
        source: CudaError,
    },

    #[error("{what} must be greater than zero")]
    Zero { what: &'static str },

    #[error("invalid size {input:?}: {why} (examples: 4096, 256M, 1.5GiB)")]
    BadSize { input: String, why: String },

    #[error("invalid shape {input:?}: {why}")]
    BadShape { input: String, why: String },

    #[error("{what} is too large: {why}")]
    TooLarge { what: String, why: String },

    #[error(
        "{experiment} needs {needed} of device memory at this size but only {free} is free; pass a smaller --size or --shape"
    )]
    OutOfMemory {
        experiment: String,
        needed: String,
        free: String,
    },

    #[error("unknown experiment {name:?}; known experiments: {known}")]
    UnknownExperiment { name: String, known: String },

    #[error("unknown variant {variant:?} of {experiment}; its variants: {known}")]
    UnknownVariant {
        experiment: String,
        variant: String,
        known: String,
    },

    #[error("the GPU cannot run anything more in this process after: {first}")]
    Poisoned { first: String },

    /// A kernel of the sm_80 module on an older GPU: the variant is skipped with this line.
    #[error("{kernel} not run: it needs sm_80 (cp.async) and the {device} is sm_{major}{minor}")]
    Unsupported {
        kernel: String,
        device: String,
        major: i32,
        minor: i32,
    },

    /// A shape the copy engine (TMA) cannot address: the variant is skipped with this line.
    #[error("not run at {what}: {why}")]
    Unaddressable { what: String, why: String },

    #[error("kernel {kernel} not found in the embedded PTX (rebuild with `cargo build`)")]
    MissingKernel { kernel: String },

    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// An option's value that is wrong whatever the files hold.
    #[error("{0}")]
    BadArgument(String),

    #[error("{path}: not Nsight Compute CSV output as scripts/gpu-run.sh ncu writes it: {why}")]
    NcuCsv { path: String, why: String },

    #[error("{path}: {why}")]
    BadResults { path: String, why: String },

    #[error("{path}: {why}")]
    BadProfile { path: String, why: String },

    #[error("emulating {kernel} failed: {why}")]
    Emulation { kernel: String, why: String },

    #[error("{0}")]
    Json(#[from] serde_json::Error),

    /// A CUDA library call (cuBLAS) failed after the library loaded.
    #[error("{0}")]
    Library(String),

    #[error("drawing a plot failed: {0}")]
    Plot(String),
}

/// A machine's CUDA devices by their ordinals: `one CUDA device, 0`, `2 CUDA devices,
/// 0 and 1`, `4 CUDA devices, 0 to 3`.
fn devices(count: u32) -> String {
    match count {
        0 => "no CUDA device".into(),
        1 => "one CUDA device, 0".into(),
        2 => "2 CUDA devices, 0 and 1".into(),
        n => format!("{n} CUDA devices, 0 to {}", n - 1),
    }
}

impl Error {
    /// The one rule (docs/commands.md, "Exit codes"): 2 for what the user can fix in
    /// the invocation or the input (a bad argument, a malformed input file), 1 for
    /// everything that failed while doing it (no GPU, a CUDA error, a file that
    /// cannot be read or written). Validation failures are 1 too ([`crate::cli`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::DeviceOutOfRange { .. }
            | Error::Zero { .. }
            | Error::BadSize { .. }
            | Error::BadShape { .. }
            | Error::TooLarge { .. }
            | Error::UnknownExperiment { .. }
            | Error::UnknownVariant { .. }
            | Error::BadArgument(_)
            | Error::NcuCsv { .. }
            | Error::BadResults { .. }
            | Error::BadProfile { .. } => 2,
            // Read, but not text: a malformed file, not an unreadable one.
            Error::Read { source, .. } if source.kind() == std::io::ErrorKind::InvalidData => 2,
            _ => 1,
        }
    }

    /// Wraps a driver error with what we were doing.
    pub fn cuda(what: impl Into<String>) -> impl FnOnce(CudaError) -> Error {
        let what = what.into();
        move |source| Error::Cuda { what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_of_range_device_names_the_ordinals_there_are() {
        let out = |requested, count| Error::DeviceOutOfRange { requested, count }.to_string();
        assert_eq!(
            out(2, 2),
            "--device 2 is out of range: this machine has 2 CUDA devices, 0 and 1"
        );
        assert_eq!(
            out(1, 1),
            "--device 1 is out of range: this machine has one CUDA device, 0"
        );
        assert_eq!(
            out(9, 8),
            "--device 9 is out of range: this machine has 8 CUDA devices, 0 to 7"
        );
    }
}
