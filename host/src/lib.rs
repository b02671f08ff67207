//! `coalesce`: launch Rust GPU kernels (compiled to PTX from `kernels/`) through
//! cust, validate each result against a CPU reference, and measure effective
//! bandwidth next to the device's peak and a device-to-device copy.
//!
//! The pieces: [`device`] opens a GPU, [`launch`] passes arguments, [`harness`]
//! turns each experiment's declared work into timed, validated [`harness::Row`]s,
//! [`experiments`] holds one module per experiment, [`table`] prints and saves rows,
//! [`report`] writes them as Markdown, JSON and SVG plots. [`explain`] runs the same
//! kernels on the CPU emulator and predicts how each warp's accesses coalesce, per
//! source line.

pub mod buffers;
pub mod check;
pub mod cli;
pub mod compare;
pub mod device;
pub mod error;
pub mod experiments;
pub mod explain;
pub mod harness;
pub mod launch;
pub mod progress;
pub mod ptx;
pub mod report;
pub mod table;
pub mod units;
pub mod validate;

pub use error::{Error, Result};
