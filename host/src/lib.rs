//! `coalesce`: launch Rust GPU kernels (compiled to PTX from `kernels/`) through
//! cust, validate each result against a CPU reference, and measure effective
//! bandwidth next to the device's peak and a device-to-device copy.
//!
//! The pieces: [`experiment`] says what an experiment is, as data, and
//! [`experiments`] declares each one once. Backends run any declaration: [`prepared`]
//! on the GPU (the Rust PTX, or the C++ twins of [`compare`]), and
//! [`explain::emulate`] on the CPU emulator; [`reference`] judges every result the
//! same way. [`harness`] turns the declared work into timed, validated
//! [`harness::Row`]s ([`timing`] times them), [`run_table`] prints rows, [`report`]
//! renders them as Markdown, an HTML page, JSON and SVG plots ([`output`] writes
//! every file), and [`explain`] predicts how each warp's accesses coalesce, per
//! source line.

pub mod arena;
pub mod args;
pub mod buffers;
pub mod calibrate;
pub mod check;
pub mod cli;
pub mod columns;
pub mod commands;
pub mod compare;
pub mod date;
pub mod device;
pub mod elem;
pub mod error;
pub mod experiment;
pub mod experiments;
pub mod explain;
pub mod harness;
pub mod launch;
pub mod nvml;
pub mod output;
pub mod prepared;
pub mod problem;
pub mod profile;
pub mod progress;
pub mod ptx;
pub mod reference;
pub mod report;
pub mod run_table;
pub mod tensor_map;
pub mod timing;
pub mod units;
pub mod validate;

pub use error::{Error, Result};
