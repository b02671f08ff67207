//! A GPU's calibration profile: the few numbers, measured by `coalesce calibrate`
//! with microbenchmarks of our own, that turn `explain`'s address streams into a
//! predicted time. Every parameter is per GPU, never per kernel. docs/model.md gives
//! the formulas; [`crate::explain::predict`] applies them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The profile format's version; a newer file is refused in one line.
pub const PROFILE_SCHEMA: u32 = 1;

/// One GPU's parameters. Each field says what it is and how it was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub schema: u32,
    pub coalesce_version: String,
    /// The device name as the driver reports it (`NVIDIA H100 80GB HBM3`): a profile
    /// applies to that GPU only.
    pub device: String,
    /// When it was measured (`YYYY-MM-DD HH:MM UTC`).
    pub measured: String,
    /// Multiprocessors (device attribute).
    pub sm_count: u32,
    /// L2 bytes (device attribute): `explain` sizes default problems from it, as
    /// `coalesce run` does on that GPU.
    pub l2_bytes: u64,
    /// Threads one SM holds at once (device attribute MAX_THREADS_PER_MULTIPROCESSOR):
    /// the most that can have loads in flight.
    pub max_threads_per_sm: u32,
    /// Read + written bytes per second of cuMemcpyDtoD at 8 x L2, GB/s: the ceiling.
    pub copy_gb_per_s: f64,
    /// Bytes DRAM reads for a 32-byte sector that no neighbour shares: the stride
    /// sweep's widest strides, (time x copy bandwidth - bytes written) / elements read.
    pub dram_read_granularity: u32,
    /// One dependent load that misses L2, on an idle GPU, ns: a single thread chasing
    /// pointers through a random cycle 8 x L2 long. For information: the model uses
    /// the loaded latency below.
    pub idle_latency_ns: f64,
    /// Latency under load, ns: Little's law (bytes in flight = bandwidth x latency)
    /// fitted to the inflight sweep's copies that run below the ceiling.
    pub loaded_latency_ns: f64,
    /// The measurements behind the fits, for the record.
    pub stride_sweep: Vec<SweepPoint>,
    pub inflight_sweep: Vec<SweepPoint>,
}

/// One microbenchmark measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// What varies: the stride in elements, or the bytes each thread keeps in flight.
    pub x: f64,
    /// Read + written bytes per second, GB/s.
    pub gb_per_s: f64,
}

/// The profiles that ship with coalesce, measured on the GPUs named in them.
pub const SHIPPED: &[(&str, &str)] = &[];

impl Profile {
    /// Parses a profile, refusing what is not one, a newer schema, or a missing field.
    pub fn parse(text: &str, origin: &str) -> Result<Profile> {
        let bad = |why: String| Error::BadProfile {
            path: origin.to_string(),
            why,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not a coalesce profile (not JSON: {e})")))?;
        let schema = value.get("schema").and_then(|s| s.as_u64()).ok_or_else(|| {
            bad("not a coalesce profile (no schema; write one with `coalesce calibrate`)".into())
        })?;
        if schema > u64::from(PROFILE_SCHEMA) {
            return Err(bad(format!(
                "written by a newer coalesce (profile schema {schema}; this one reads up to {PROFILE_SCHEMA})"
            )));
        }
        let profile: Profile =
            serde_json::from_value(value).map_err(|e| bad(format!("not a coalesce profile: {e}")))?;
        profile.check().map_err(bad)?;
        Ok(profile)
    }

    /// Reads a profile file.
    pub fn load(path: &Path) -> Result<Profile> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// The shipped profile for `device`, if there is one.
    pub fn shipped(device: &str) -> Option<Result<Profile>> {
        SHIPPED
            .iter()
            .find(|(name, _)| *name == device)
            .map(|(name, text)| Profile::parse(text, &format!("the shipped profile of {name}")))
    }

    /// Refuses a profile for another GPU than the one it is applied to.
    pub fn for_device(self, device: &str, origin: &str) -> Result<Profile> {
        if self.device == device {
            Ok(self)
        } else {
            Err(Error::BadProfile {
                path: origin.to_string(),
                why: format!("measured on {}, not on {device}", self.device),
            })
        }
    }

    /// Values no measurement gives (zero or negative rates, granularities that are
    /// not a whole number of sectors).
    fn check(&self) -> std::result::Result<(), String> {
        let positive = [
            ("copy_gb_per_s", self.copy_gb_per_s),
            ("idle_latency_ns", self.idle_latency_ns),
            ("loaded_latency_ns", self.loaded_latency_ns),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("{name} is {v}, not a positive number"));
        }
        if self.sm_count == 0 || self.max_threads_per_sm == 0 {
            return Err("sm_count and max_threads_per_sm must be positive".into());
        }
        if self.dram_read_granularity < 32 || !self.dram_read_granularity.is_multiple_of(32) {
            return Err(format!(
                "dram_read_granularity is {}, not a whole number of 32-byte sectors",
                self.dram_read_granularity
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A profile with plausible H100 numbers, for tests of the arithmetic only.
    pub(crate) fn sample() -> Profile {
        Profile {
            schema: PROFILE_SCHEMA,
            coalesce_version: "test".into(),
            device: "Test GPU".into(),
            measured: "2026-11-23 00:00 UTC".into(),
            sm_count: 132,
            l2_bytes: 50 << 20,
            max_threads_per_sm: 2048,
            copy_gb_per_s: 3000.0,
            dram_read_granularity: 64,
            idle_latency_ns: 700.0,
            loaded_latency_ns: 900.0,
            stride_sweep: Vec::new(),
            inflight_sweep: Vec::new(),
        }
    }

    #[test]
    fn round_trips_and_refuses_what_is_not_a_profile() {
        let text = serde_json::to_string(&sample()).unwrap();
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), sample());
        let e = Profile::parse("{\"rows\": []}", "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.json: not a coalesce profile (no schema"), "{e}");
        let newer = text.replace("\"schema\":1", "\"schema\":7");
        let e = Profile::parse(&newer, "p.json").unwrap_err().to_string();
        assert!(e.contains("newer coalesce (profile schema 7"), "{e}");
        let missing = text.replace("\"loaded_latency_ns\"", "\"renamed\"");
        let e = Profile::parse(&missing, "p.json").unwrap_err().to_string();
        assert!(e.contains("missing field `loaded_latency_ns`"), "{e}");
        let odd = text.replace("\"dram_read_granularity\":64", "\"dram_read_granularity\":48");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("not a whole number of 32-byte sectors"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_profile_of_another_gpu_is_refused() {
        let e = sample()
            .for_device("NVIDIA H200", "p.json")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p.json: measured on Test GPU, not on NVIDIA H200");
        assert!(sample().for_device("Test GPU", "p.json").is_ok());
    }
}
