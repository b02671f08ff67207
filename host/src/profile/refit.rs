//! A profile fitted again from the raw sweeps it keeps, with this coalesce's fits:
//! `coalesce refit` rewrites profile files so (host/profiles, after a fit changes),
//! and a schema-1 file is upgraded so when it is loaded ([`Profile::load`]).

use super::Profile;
use super::fit::{loaded_latency, read_granularity};

/// Fits every fitted parameter again from the raw sweeps the profile keeps: the DRAM
/// read granularity from `stride_sweep`, the loaded latency and its queueing from
/// `inflight_sweep`, and the L2-resident ones from `l2_resident.inflight_sweep`. A
/// parameter whose sweep gives no fit (an empty sweep) keeps its value. The measured
/// values are not touched. A schema-1 profile becomes schema 2 (a latency that rises
/// with load: its line is now fitted).
pub fn refit(p: &mut Profile) {
    if let Some(g) = read_granularity(&p.stride_sweep, p.copy_gb_per_s) {
        p.dram_read_granularity = g.bytes;
    }
    if let Some(l) = loaded_latency(&p.inflight_sweep, p.sm_count, p.copy_gb_per_s) {
        p.loaded_latency_ns = l.base_ns;
        p.queueing_latency_ns = l.queue_ns;
    }
    if let Some(l2) = &mut p.l2_resident
        && let Some(l) = loaded_latency(&l2.inflight_sweep, p.sm_count, l2.copy_gb_per_s)
    {
        l2.loaded_latency_ns = l.base_ns;
        l2.queueing_latency_ns = l.queue_ns;
    }
    p.schema = p.schema.max(2);
}

/// A profile as `coalesce` uses it: a schema-1 file (one constant latency) refitted
/// from its inflight sweep, as schema 2; a later schema as it is. A schema-1 file
/// without a usable sweep keeps its latency, with no queueing.
pub fn upgrade(mut p: Profile) -> Profile {
    if p.schema < 2 {
        refit(&mut p);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::tests::{sample, schema_2};
    use crate::profile::{SHIPPED, SweepPoint};

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    #[test]
    fn refit_keeps_the_compute_rates() {
        let mut p = sample();
        refit(&mut p);
        assert_eq!(p.compute, sample().compute);
        assert!(p.compute.is_some());
    }

    #[test]
    fn the_l2_resident_line_is_refitted_from_its_own_sweep() {
        // 132 SMs, a 7000 GB/s L2 ceiling: f32-1 and f32-2 below the knee, then a
        // plateau. The DRAM's line is left as its own sweep gives it.
        let sweep = vec![
            point(8192.0, 3300.0),
            point(16384.0, 6000.0),
            point(32768.0, 6500.0),
            point(65536.0, 6400.0),
        ];
        let mut p = sample();
        p.l2_resident = Some(crate::profile::L2Resident {
            copy_gb_per_s: 7000.0,
            loaded_latency_ns: 157.0,
            queueing_latency_ns: 292.0,
            inflight_sweep: sweep.clone(),
            ..crate::profile::l2::tests::sample()
        });
        let mut dram = sample();
        refit(&mut dram);
        refit(&mut p);
        let fit = loaded_latency(&sweep, p.sm_count, 7000.0).unwrap();
        let l2 = p.l2_resident.as_ref().unwrap();
        assert_eq!(fit.used, 2);
        assert_eq!(
            (l2.loaded_latency_ns, l2.queueing_latency_ns),
            (fit.base_ns, fit.queue_ns)
        );
        assert!(l2.loaded_latency_ns > 600.0, "{l2:?}");
        assert_eq!(l2.copy_gb_per_s, 7000.0);
        assert_eq!(
            (p.loaded_latency_ns, p.queueing_latency_ns),
            (dram.loaded_latency_ns, dram.queueing_latency_ns)
        );
        // No sweep to fit: the line is kept.
        p.l2_resident.as_mut().unwrap().inflight_sweep.clear();
        let kept = p.clone();
        refit(&mut p);
        assert_eq!(p, kept);
    }

    #[test]
    fn a_schema_1_profile_is_refitted_from_its_sweep() {
        let mut v1 = serde_json::to_value(schema_2()).unwrap();
        let obj = v1.as_object_mut().unwrap();
        obj.insert("schema".into(), 1.into());
        obj.remove("queueing_latency_ns");
        // Without a sweep: its one latency, no queueing (the schema-1 model).
        let p = upgrade(Profile::parse(&v1.to_string(), "v1.json").unwrap());
        assert_eq!(p.schema, 2);
        assert_eq!((p.loaded_latency_ns, p.queueing_latency_ns), (900.0, 0.0));
        // With one: the fit of [`crate::profile::fit::loaded_latency`] replaces it.
        let sweep = vec![
            point(8192.0, 2415.962327813314),
            point(16384.0, 2824.218949611766),
            point(32768.0, 2988.4176228974547),
        ];
        let obj = v1.as_object_mut().unwrap();
        obj.insert("inflight_sweep".into(), serde_json::to_value(&sweep).unwrap());
        obj.insert("copy_gb_per_s".into(), 2992.511376787178.into());
        let p = upgrade(Profile::parse(&v1.to_string(), "v1.json").unwrap());
        assert_eq!(p.schema, 2);
        assert!((p.loaded_latency_ns - 683.383).abs() < 1e-3, "{p:?}");
        assert!((p.queueing_latency_ns - 50.540).abs() < 1e-3, "{p:?}");
        assert!((p.latency_at(0.0) - p.loaded_latency_ns).abs() < 1e-12);
        // A later schema is used as it is, even where a refit would change it.
        let mut later = sample();
        later.inflight_sweep = sweep;
        assert_eq!(upgrade(later.clone()), later);
    }

    /// `Profile::load` upgrades a schema-1 file as it reads it; `load_as_written` does
    /// not, so `coalesce refit` can say what changed.
    #[test]
    fn loading_a_file_upgrades_it_and_loading_it_as_written_does_not() {
        let mut v1 = serde_json::to_value(schema_2()).unwrap();
        let obj = v1.as_object_mut().unwrap();
        obj.insert("schema".into(), 1.into());
        obj.remove("queueing_latency_ns");
        let dir = std::env::temp_dir().join(format!("coalesce-upgrade-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v1.json");
        std::fs::write(&path, v1.to_string()).unwrap();
        let written = Profile::load_as_written(&path).unwrap();
        assert_eq!(written.schema, 1);
        let loaded = Profile::load(&path).unwrap();
        assert_eq!(loaded, upgrade(written));
        assert_eq!(loaded.schema, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_shipped_profiles_are_their_measurements_refitted() {
        use crate::calibrate::pitch::ITERATIONS;
        assert_eq!(SHIPPED.len(), 2);
        for (name, text) in SHIPPED {
            let p = Profile::parse(text, name).unwrap();
            assert_eq!(p.device, *name);
            // Measured by `calibrate` on each GPU at schema 5 or later: residency limits,
            // on-chip rates, the pitch sweep at every iteration count, and the spread
            // sweep (both streams at every distance); at schema 6 the compute rates.
            assert!(p.schema >= 5, "{name}");
            assert_eq!(p.compute.is_some(), p.schema >= 6, "{name}");
            assert!(p.sm.is_some() && p.load_lines_per_ns_per_sm.is_some(), "{name}");
            let sweep = p.pitch_sweep.as_ref().map(Vec::len);
            assert_eq!(sweep, Some(31 * ITERATIONS.len()), "{name}");
            let spread = p.spread_sweep.as_ref().map(Vec::len);
            assert_eq!(
                spread,
                Some(2 * crate::calibrate::spread::apart(false).len()),
                "{name}"
            );
            // Every fitted value is what the fits give from the raw sweeps, and the
            // file is exactly what `coalesce refit` writes.
            let regenerate = "run `cargo run -p coalesce -- refit host/profiles/*.json`";
            let mut refitted = p.clone();
            refit(&mut refitted);
            assert_eq!(refitted, p, "{name}: {regenerate}");
            let written = serde_json::to_string_pretty(&p).unwrap() + "\n";
            assert!(written == *text, "{name}: {regenerate}");
            assert_eq!(p.inflight_sweep.len(), 8);
            assert_eq!(p.stride_sweep.len(), 64);
            assert!(p.queueing_latency_ns > 0.0, "{name}: {p:?}");
        }
    }
}
