//! `coalesce calibrate`'s microbenchmarks (host/src/calibrate/): each measures one rate
//! or latency of the GPU for the profile `explain --profile` predicts with. They live
//! apart from the lessons, so the files beside this folder are the lessons alone.

pub mod chase;
pub mod pipes;
pub mod pitch;
pub mod spread;
pub mod throughput;
