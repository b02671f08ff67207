//! The profile file's format: its version, and the checks that refuse in one line
//! what is not a profile, a newer one, or a field its schema lacks or cannot have.

use super::Profile;
use crate::error::{Error, Result};

/// The profile format's version: a newer file is refused in one line, an older one is
/// read as it is (docs/model.md says what each schema added, and what an older file's
/// predictions lack).
pub const PROFILE_SCHEMA: u32 = 8;

/// The fields schema 3 added: required in a schema-3 file, absent before.
pub const SCHEMA_3_FIELDS: [&str; 4] = [
    "sm",
    "load_lines_per_ns_per_sm",
    "store_lines_per_ns_per_sm",
    "shared_wavefronts_per_ns_per_sm",
];

impl Profile {
    /// Parses a profile, refusing what is not one, a newer schema, or a missing field.
    pub fn parse(text: &str, origin: &str) -> Result<Profile> {
        let bad = |why: String| Error::BadProfile {
            path: origin.to_string(),
            why,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not a coalesce profile (not JSON: {e})")))?;
        if ["rows", "runs", "comparisons"]
            .iter()
            .any(|k| value.get(k).is_some())
        {
            return Err(bad(
                "the results of a run, not a GPU's profile (write one with `coalesce calibrate`, or name a GPU whose profile ships)"
                    .into(),
            ));
        }
        let schema = value.get("schema").and_then(|s| s.as_u64()).ok_or_else(|| {
            bad("not a coalesce profile (no schema; write one with `coalesce calibrate`)".into())
        })?;
        if schema > u64::from(PROFILE_SCHEMA) {
            return Err(bad(format!(
                "written by a newer coalesce (profile schema {schema}; this one reads up to {PROFILE_SCHEMA})"
            )));
        }
        if schema >= 2 && value.get("queueing_latency_ns").is_none() {
            return Err(bad(
                "not a coalesce profile: missing field `queueing_latency_ns`".into()
            ));
        }
        if schema >= 3
            && let Some(field) = SCHEMA_3_FIELDS
                .iter()
                .find(|f| value.get(**f).is_none_or(|v| v.is_null()))
        {
            return Err(bad(format!("not a coalesce profile: missing field `{field}`")));
        }
        if schema < 3
            && let Some(field) = SCHEMA_3_FIELDS.iter().find(|f| value.get(**f).is_some())
        {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `{field}`"
            )));
        }
        let has_sweep = value.get("pitch_sweep").is_some_and(|v| !v.is_null());
        if schema >= 4 && !has_sweep {
            return Err(bad("not a coalesce profile: missing field `pitch_sweep`".into()));
        }
        if schema < 4 && has_sweep {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `pitch_sweep`"
            )));
        }
        let has_spread = value.get("spread_sweep").is_some_and(|v| !v.is_null());
        if schema >= 5 && !has_spread {
            return Err(bad("not a coalesce profile: missing field `spread_sweep`".into()));
        }
        if schema < 5 && has_spread {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `spread_sweep`"
            )));
        }
        let has_compute = value.get("compute").is_some_and(|v| !v.is_null());
        if schema >= 6 && !has_compute {
            return Err(bad("not a coalesce profile: missing field `compute`".into()));
        }
        if schema < 6 && value.get("compute").is_some() {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `compute`"
            )));
        }
        if schema < 7 && value.get("power").is_some() {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `power`"
            )));
        }
        // Schema 7 also added the L2's rates to the copy engine.
        for field in ["l2_bulk_read_gb_per_s", "l2_bulk_shared_gb_per_s"] {
            if schema < 7 && value.get("compute").and_then(|c| c.get(field)).is_some() {
                return Err(bad(format!(
                    "not a coalesce profile: schema {schema} has no field `compute.{field}`"
                )));
            }
        }
        // Schema 8 added the launch's fixed cost, its gap beside a long kernel and the
        // L2's own copy ceiling and latency (each absent where calibrate could not
        // measure it).
        for field in ["launch_ns", "launch_gap_ns", "l2_resident"] {
            if schema < 8 && value.get(field).is_some() {
                return Err(bad(format!(
                    "not a coalesce profile: schema {schema} has no field `{field}`"
                )));
            }
        }
        let points = value.get("pitch_sweep").and_then(|v| v.as_array());
        let iterated = |p: &serde_json::Value| p.get("iterations").is_some();
        if schema < 5 && points.is_some_and(|ps| ps.iter().any(iterated)) {
            return Err(bad(format!(
                "not a coalesce profile: schema {schema} has no field `iterations` in pitch_sweep"
            )));
        }
        let mut profile: Profile =
            serde_json::from_value(value).map_err(|e| bad(format!("not a coalesce profile: {e}")))?;
        if schema < 2 {
            // Schema 1 kept one constant latency: read as it is, with no queueing
            // (`profile::refit::upgrade` fits the line to its inflight sweep).
            profile.queueing_latency_ns = 0.0;
        }
        profile.check().map_err(bad)?;
        Ok(profile)
    }

    /// Values no measurement gives (zero or negative rates, granularities that are
    /// not a whole number of sectors).
    fn check(&self) -> std::result::Result<(), String> {
        super::all_positive(
            "",
            [
                ("copy_gb_per_s", Some(self.copy_gb_per_s)),
                ("idle_latency_ns", Some(self.idle_latency_ns)),
                ("loaded_latency_ns", Some(self.loaded_latency_ns)),
            ],
        )?;
        let q = self.queueing_latency_ns;
        if !(q.is_finite() && q >= 0.0) {
            return Err(format!(
                "queueing_latency_ns is {q}, not zero or a positive number"
            ));
        }
        let rates = [
            ("load_lines_per_ns_per_sm", self.load_lines_per_ns_per_sm),
            ("store_lines_per_ns_per_sm", self.store_lines_per_ns_per_sm),
            (
                "shared_wavefronts_per_ns_per_sm",
                self.shared_wavefronts_per_ns_per_sm,
            ),
        ];
        super::all_positive("", rates)?;
        if let Some(sm) = &self.sm {
            let counts = [
                sm.registers_per_sm,
                sm.register_allocation_unit,
                sm.shared_bytes_per_sm,
                sm.max_blocks_per_sm,
            ];
            if counts.contains(&0) || sm.compute_capability[0] == 0 {
                return Err(
                    "sm: compute_capability, registers_per_sm, register_allocation_unit, shared_bytes_per_sm and max_blocks_per_sm must be positive"
                        .into(),
                );
            }
        }
        if let Some(p) = self.pitch_sweep.iter().flatten().find(|p| {
            p.pitch_bytes == 0
                || p.wave_pages == 0
                || p.iterations == 0
                || ![p.read_gb_per_s, p.write_gb_per_s, p.update_gb_per_s]
                    .iter()
                    .all(|v| v.is_finite() && *v > 0.0)
        }) {
            return Err(format!(
                "pitch_sweep: the point at pitch {} over {} has a zero pitch, no pages, no iterations or a rate that is not a positive number",
                p.pitch_bytes, p.span_bytes
            ));
        }
        if let Some(p) = self.spread_sweep.iter().flatten().find(|p| {
            p.apart == 0
                || ![p.read_spread, p.write_spread, p.gb_per_s]
                    .iter()
                    .all(|v| v.is_finite() && *v > 0.0)
        }) {
            return Err(format!(
                "spread_sweep: the point {} apart has a spread or a rate that is not a positive number",
                p.apart
            ));
        }
        if let Some(c) = &self.compute {
            c.check()?;
        }
        if let Some(p) = &self.power {
            p.check()?;
        }
        super::all_positive(
            "",
            [
                ("launch_ns", self.launch_ns),
                ("launch_gap_ns", self.launch_gap_ns),
            ],
        )?;
        if let (Some(gap), Some(launch)) = (self.launch_gap_ns, self.launch_ns)
            && gap > launch
        {
            return Err(format!(
                "launch_gap_ns is {gap}, above launch_ns ({launch}): a launch cannot cost a long kernel more than an empty one"
            ));
        }
        if let Some(l2) = &self.l2_resident {
            l2.check()?;
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
mod tests {
    use super::*;
    use crate::profile::SweepPoint;
    use crate::profile::tests::{sample, schema_2, schema_3, schema_4, schema_5};

    #[test]
    fn round_trips_and_refuses_what_is_not_a_profile() {
        let text = serde_json::to_string(&sample()).unwrap();
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), sample());
        let e = Profile::parse("{\"name\": []}", "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.json: not a coalesce profile (no schema"), "{e}");
        // A run's results, given where a profile goes, are named as such.
        for results in ["{\"schema\":2,\"rows\":[]}", "{\"schema\":2,\"runs\":[]}"] {
            let e = Profile::parse(results, "r.json").unwrap_err().to_string();
            assert!(
                e.starts_with("r.json: the results of a run, not a GPU's profile"),
                "{e}"
            );
        }
        let newer = text.replace("\"schema\":8", "\"schema\":9");
        let e = Profile::parse(&newer, "p.json").unwrap_err().to_string();
        assert!(e.contains("newer coalesce (profile schema 9"), "{e}");
        let missing = text.replace("\"loaded_latency_ns\"", "\"renamed\"");
        let e = Profile::parse(&missing, "p.json").unwrap_err().to_string();
        assert!(e.contains("missing field `loaded_latency_ns`"), "{e}");
        let odd = text.replace("\"dram_read_granularity\":64", "\"dram_read_granularity\":48");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("not a whole number of 32-byte sectors"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn schema_3_needs_its_fields_and_schema_2_loads_without_them() {
        let text = serde_json::to_string(&sample()).unwrap();
        for field in SCHEMA_3_FIELDS {
            let mut v = serde_json::to_value(sample()).unwrap();
            v.as_object_mut().unwrap().remove(field);
            let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
            assert_eq!(
                e,
                format!("p.json: not a coalesce profile: missing field `{field}`")
            );
        }
        // A schema-2 file: loads, its bounds not calibrated.
        let old = serde_json::to_string(&schema_2()).unwrap();
        assert!(!old.contains("lines_per_ns"), "{old}");
        let p = Profile::parse(&old, "p.json").unwrap();
        assert_eq!(
            (p.schema, p.sm.is_none(), p.shared_wavefronts_per_ns_per_sm),
            (2, true, None)
        );
        // ... and does not carry fields it cannot have.
        let odd = old.replace("\"schema\":2", "\"schema\":2,\"load_lines_per_ns_per_sm\":1.0");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(
            e.contains("schema 2 has no field `load_lines_per_ns_per_sm`"),
            "{e}"
        );
        let zero = text.replace(
            "\"store_lines_per_ns_per_sm\":0.5",
            "\"store_lines_per_ns_per_sm\":0.0",
        );
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(
            e.contains("store_lines_per_ns_per_sm is 0, not a positive number"),
            "{e}"
        );
        let no_regs = text.replace("\"registers_per_sm\":65536", "\"registers_per_sm\":0");
        assert!(Profile::parse(&no_regs, "p.json").is_err());
    }

    #[test]
    fn schema_4_needs_its_pitch_sweep_and_schema_3_loads_without_it() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("pitch_sweep");
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: missing field `pitch_sweep`");
        let old = serde_json::to_string(&schema_3()).unwrap();
        assert!(!old.contains("pitch_sweep"), "{old}");
        assert_eq!(Profile::parse(&old, "p.json").unwrap(), schema_3());
        let odd = old.replace("\"schema\":3", "\"schema\":3,\"pitch_sweep\":[]");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("schema 3 has no field `pitch_sweep`"), "{e}");
        let text = serde_json::to_string(&sample()).unwrap();
        let zero = text.replace("\"write_gb_per_s\":650.0", "\"write_gb_per_s\":0.0");
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(
            e.contains("pitch_sweep: the point at pitch 64 over 1073741824"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn schema_5_points_say_their_iterations_and_schema_4_points_are_one() {
        // One iteration goes without saying; more are written.
        let text = serde_json::to_string(&sample()).unwrap();
        assert!(!text.contains("iterations"), "{text}");
        let mut two = sample();
        two.pitch_sweep.as_mut().unwrap()[0].iterations = 2;
        let text = serde_json::to_string(&two).unwrap();
        assert!(text.contains("\"iterations\":2"), "{text}");
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), two);
        // A schema-4 file has none: every point one iteration, as its kernels ran.
        let old = serde_json::to_string(&schema_4()).unwrap();
        let p = Profile::parse(&old, "p.json").unwrap();
        assert_eq!((p.schema, p.pitch_sweep.unwrap()[0].iterations), (4, 1));
        let mut v = serde_json::to_value(&two).unwrap();
        v.as_object_mut().unwrap().remove("spread_sweep");
        v.as_object_mut().unwrap().remove("compute");
        v.as_object_mut().unwrap().remove("power");
        let odd = v.to_string().replace("\"schema\":8", "\"schema\":4");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: not a coalesce profile: schema 4 has no field `iterations` in pitch_sweep"
        );
        let zero = text.replace("\"iterations\":2", "\"iterations\":0");
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(e.contains("no iterations"), "{e}");
    }

    #[test]
    fn schema_5_needs_its_spread_sweep_and_schema_4_loads_without_it() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("spread_sweep");
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: missing field `spread_sweep`");
        let old = serde_json::to_string(&schema_4()).unwrap();
        assert!(!old.contains("spread_sweep"), "{old}");
        let text = serde_json::to_string(&sample()).unwrap();
        let odd = serde_json::to_string(&schema_5())
            .unwrap()
            .replace("\"schema\":5", "\"schema\":4");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert!(e.contains("schema 4 has no field `spread_sweep`"), "{e}");
        let zero = text.replace("\"gb_per_s\":2800.0", "\"gb_per_s\":0.0");
        let e = Profile::parse(&zero, "p.json").unwrap_err().to_string();
        assert!(e.contains("spread_sweep: the point 32 apart"), "{e}");
        assert!(text.contains("\"stream\":\"writes\""), "{text}");
    }

    #[test]
    fn schema_7_may_carry_power_and_the_copy_engines_rates_and_schema_6_may_not() {
        // Measured where NVML answers; a schema-7 file without it loads.
        let text = serde_json::to_string(&sample()).unwrap();
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), sample());
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("power");
        assert_eq!(Profile::parse(&v.to_string(), "p.json").unwrap().power, None);
        // Nor the copy engine's L2 rates, which schema 7 added too.
        let six = v.to_string().replace("\"schema\":8", "\"schema\":6");
        let e = Profile::parse(&six, "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: not a coalesce profile: schema 6 has no field `compute.l2_bulk_read_gb_per_s`"
        );
        let compute = v["compute"].as_object_mut().unwrap();
        compute.remove("l2_bulk_read_gb_per_s");
        compute.remove("l2_bulk_shared_gb_per_s");
        let six = v.to_string().replace("\"schema\":8", "\"schema\":6");
        assert_eq!(Profile::parse(&six, "p.json").unwrap().schema, 6);
        let odd = text.replace("\"schema\":8", "\"schema\":6");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: schema 6 has no field `power`");
        let mut v = serde_json::to_value(sample()).unwrap();
        v["power"]["l2_pj_per_byte"] = serde_json::json!(-1.0);
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert!(
            e.ends_with("power.l2_pj_per_byte is -1, not a positive number"),
            "{e}"
        );
    }

    #[test]
    fn schema_8_may_carry_the_launch_and_the_l2_and_schema_7_may_not() {
        let with = Profile {
            launch_ns: Some(4000.0),
            l2_resident: Some(crate::profile::l2::tests::sample()),
            ..sample()
        };
        let text = serde_json::to_string(&with).unwrap();
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), with);
        let seven = text.replace("\"schema\":8", "\"schema\":7");
        let e = Profile::parse(&seven, "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: not a coalesce profile: schema 7 has no field `launch_ns`"
        );
        let bad = Profile {
            launch_ns: Some(0.0),
            ..with
        };
        let e = Profile::parse(&serde_json::to_string(&bad).unwrap(), "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("launch_ns is 0, not a positive number"), "{e}");
    }

    #[test]
    fn a_launch_gap_is_positive_and_at_most_the_launch() {
        let with = Profile {
            launch_ns: Some(4000.0),
            launch_gap_ns: Some(500.0),
            ..sample()
        };
        let text = serde_json::to_string(&with).unwrap();
        assert_eq!(Profile::parse(&text, "p.json").unwrap(), with);
        let seven = Profile {
            launch_ns: None,
            ..with.clone()
        };
        let seven = serde_json::to_string(&seven)
            .unwrap()
            .replace("\"schema\":8", "\"schema\":7");
        let e = Profile::parse(&seven, "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: not a coalesce profile: schema 7 has no field `launch_gap_ns`"
        );
        let above = Profile {
            launch_gap_ns: Some(5000.0),
            ..with
        };
        let e = Profile::parse(&serde_json::to_string(&above).unwrap(), "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("launch_gap_ns is 5000, above launch_ns (4000)"), "{e}");
    }

    #[test]
    fn schema_6_needs_its_compute_rates_and_schema_5_loads_without_them() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("compute");
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: missing field `compute`");
        let null = v
            .to_string()
            .replace("\"schema\":8", "\"schema\":8,\"compute\":null");
        let e = Profile::parse(&null, "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: not a coalesce profile: missing field `compute`");
        // A schema-5 file: loads, with no compute rates.
        let old = serde_json::to_string(&schema_5()).unwrap();
        assert!(!old.contains("compute\""), "{old}");
        let p = Profile::parse(&old, "p.json").unwrap();
        assert_eq!((p.schema, p.compute), (5, None));
        // ... and cannot carry them, even null.
        let text = serde_json::to_string(&sample()).unwrap();
        let odd = text.replace("\"schema\":8", "\"schema\":5");
        let e = Profile::parse(&odd, "p.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: not a coalesce profile: schema 5 has no field `compute`"
        );
        let odd = old.replace("\"schema\":5", "\"schema\":5,\"compute\":null");
        assert!(Profile::parse(&odd, "p.json").is_err());
        // Rates below sm_80 or off sm_90 are null; a measured one must be positive.
        let mut v = serde_json::to_value(sample()).unwrap();
        v["compute"]["wgmma_tf32_flops_per_ns_per_sm"] = serde_json::Value::Null;
        v["compute"]["mma_tf32_per_ns_per_sm"] = serde_json::Value::Null;
        let p = Profile::parse(&v.to_string(), "p.json").unwrap();
        let c = p.compute.unwrap();
        assert_eq!(
            (c.mma_tf32_per_ns_per_sm, c.wgmma_tf32_flops_per_ns_per_sm),
            (None, None)
        );
        v["compute"]["l2_read_gb_per_s"] = (-1.0).into();
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert_eq!(e, "p.json: compute.l2_read_gb_per_s is -1, not a positive number");
        // A profile calibrated before the 16-bit wgmma rate loads without it.
        let mut v = serde_json::to_value(sample()).unwrap();
        let c = v["compute"].as_object_mut().unwrap();
        assert!(c.remove("wgmma_16bit_flops_per_ns_per_sm").is_some());
        let c = Profile::parse(&v.to_string(), "p.json").unwrap().compute.unwrap();
        assert_eq!(c.wgmma_16bit_flops_per_ns_per_sm, None);
        // A rate missing from the section is refused by name.
        let mut v = serde_json::to_value(sample()).unwrap();
        v["compute"].as_object_mut().unwrap().remove("fma_latency_ns");
        let e = Profile::parse(&v.to_string(), "p.json").unwrap_err().to_string();
        assert!(e.contains("missing field `fma_latency_ns`"), "{e}");
    }

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    #[test]
    fn a_schema_1_profile_reads_as_one_constant_latency() {
        let mut v1 = serde_json::to_value(schema_2()).unwrap();
        let obj = v1.as_object_mut().unwrap();
        obj.insert("schema".into(), 1.into());
        obj.remove("queueing_latency_ns");
        obj.insert(
            "inflight_sweep".into(),
            serde_json::to_value([point(8192.0, 2000.0)]).unwrap(),
        );
        let p = Profile::parse(&v1.to_string(), "v1.json").unwrap();
        assert_eq!(p.schema, 1);
        assert_eq!((p.loaded_latency_ns, p.queueing_latency_ns), (900.0, 0.0));
        assert_eq!(p.latency_at(0.5), 900.0);
        // Schema 2 must say its queueing.
        let mut v2 = serde_json::to_value(schema_2()).unwrap();
        v2.as_object_mut().unwrap().remove("queueing_latency_ns");
        let e = Profile::parse(&v2.to_string(), "p.json").unwrap_err().to_string();
        assert!(e.contains("missing field `queueing_latency_ns`"), "{e}");
        let negative = serde_json::to_string(&Profile {
            queueing_latency_ns: -1.0,
            ..sample()
        })
        .unwrap();
        let e = Profile::parse(&negative, "p.json").unwrap_err().to_string();
        assert!(e.contains("queueing_latency_ns is -1"), "{e}");
    }
}
