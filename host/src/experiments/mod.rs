//! The experiments, one declaration each ([`crate::experiment::Experiment`]);
//! [`ALL`] is the registry every command, backend, bench and test reads.

use crate::error::{Error, Result};
use crate::experiment::{Arithmetic, Experiment};

/// Declares each experiment's module and lists it in [`ALL`], in suite order: adding
/// an experiment is one line here. A module of one experiment names it `EXPERIMENT`;
/// one declaring several (`hgemm => [BF16, F16]`) lists them after the `;`.
macro_rules! registry {
    ($($name:ident),* $(,)? ; $($multi:ident => [$($item:ident),+]),* $(,)?) => {
        $(pub mod $name;)*
        $(pub mod $multi;)*
        /// Every experiment, in the order the suite runs them.
        pub static ALL: &[&Experiment] = &[$(&$name::EXPERIMENT,)* $($(&$multi::$item,)+)*];
    };
}

registry![
    copy, inflight, stride, offset, transpose, particles, saxpy, complex, matmul, sgemm;
    hgemm => [BF16, F16],
];

/// The names of all experiments, comma-separated (for messages).
pub fn known() -> String {
    ALL.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
}

/// The experiment called `name`.
pub fn named(name: &str) -> Option<&'static Experiment> {
    ALL.iter().copied().find(|e| e.name == name)
}

/// The arithmetic of `experiment`'s variant `variant` (FP32 where either is unknown,
/// as in results saved by an older coalesce): how saved rows are compared with cuBLAS.
pub fn arithmetic(experiment: &str, variant: &str) -> Arithmetic {
    named(experiment)
        .and_then(|e| e.variant(variant))
        .map_or(Arithmetic::Fp32, |v| v.arithmetic)
}

/// One experiment and, optionally, the variants of it to run.
#[derive(Debug)]
pub struct Selection {
    pub experiment: &'static Experiment,
    pub variants: Option<Vec<String>>,
}

impl Selection {
    /// The whole experiment.
    pub fn all(experiment: &'static Experiment) -> Selection {
        Selection {
            experiment,
            variants: None,
        }
    }

    /// Whether variant `name` is selected.
    pub fn includes(&self, name: &str) -> bool {
        self.variants.as_ref().is_none_or(|v| v.iter().any(|x| x == name))
    }

    /// How many variants run.
    pub fn count(&self) -> usize {
        self.variants
            .as_ref()
            .map_or(self.experiment.variants.len(), Vec::len)
    }
}

/// Parses `EXPERIMENT` or `EXPERIMENT/VARIANT` words; none means the whole suite.
pub fn select(words: &[String]) -> Result<Vec<Selection>> {
    select_from(ALL, words)
}

/// [`select`] over any list of experiments (a test's own, say).
pub fn select_from(all: &[&'static Experiment], words: &[String]) -> Result<Vec<Selection>> {
    let known = || all.iter().map(|e| e.name).collect::<Vec<_>>().join(", ");
    if words.is_empty() {
        return Ok(all.iter().map(|&e| Selection::all(e)).collect());
    }
    let mut out: Vec<Selection> = Vec::new();
    for word in words {
        let (name, variant) = match word.split_once('/') {
            Some((n, v)) => (n, Some(v)),
            None => (word.as_str(), None),
        };
        let experiment = *all
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::UnknownExperiment {
                name: name.to_string(),
                known: known(),
            })?;
        if let Some(v) = variant
            && experiment.variant(v).is_none()
        {
            return Err(Error::UnknownVariant {
                experiment: name.to_string(),
                variant: v.to_string(),
                known: experiment.variant_names().join(", "),
            });
        }
        match out.iter_mut().find(|s| s.experiment.name == name) {
            Some(s) => match (&mut s.variants, variant) {
                (Some(vs), Some(v)) if !vs.iter().any(|x| x == v) => vs.push(v.to_string()),
                (vs, None) => *vs = None,
                _ => {}
            },
            None => out.push(Selection {
                experiment,
                variants: variant.map(|v| vec![v.to_string()]),
            }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn empty_selects_everything() {
        assert_eq!(select(&[]).unwrap().len(), ALL.len());
    }

    #[test]
    fn selects_experiments_and_variants() {
        let s = select(&words(&["stride/4", "copy", "stride/2"])).unwrap();
        assert_eq!(s[0].experiment.name, "stride");
        assert_eq!(
            s[0].variants.as_deref(),
            Some(&["4".to_string(), "2".to_string()][..])
        );
        assert_eq!(s[1].experiment.name, "copy");
        assert!(s[1].variants.is_none());
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let e = select(&words(&["strid"])).err().unwrap().to_string();
        assert!(e.contains("\"strid\"") && e.contains(&known()), "{e}");
        let e = select(&words(&["stride/3"])).err().unwrap().to_string();
        assert!(e.contains("1, 2, 4, 8, 16, 32, 64"), "{e}");
    }

    #[test]
    fn names_and_kernels_are_unique() {
        let mut names: Vec<_> = ALL.iter().map(|e| e.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for e in ALL {
            assert!(!e.variants.is_empty(), "{}", e.name);
            let mut v = e.variant_names();
            v.sort();
            v.dedup();
            assert_eq!(v.len(), e.variants.len(), "{}: duplicate variant names", e.name);
        }
    }

    #[test]
    fn a_rung_builds_on_a_variant_declared_before_it() {
        for e in ALL {
            for (i, v) in e.variants.iter().enumerate() {
                if let Some(base) = v.builds_on {
                    assert!(
                        e.variants[..i].iter().any(|b| b.name == base),
                        "{}/{} builds on {base}, which {} does not declare before it",
                        e.name,
                        v.name,
                        e.name
                    );
                }
            }
        }
    }

    #[test]
    fn every_kernel_is_in_the_ptx_module_its_handle_names() {
        for e in ALL {
            for k in e.kernels() {
                assert!(
                    crate::ptx::entry_points(crate::ptx::text(k.module)).contains(&k.name),
                    "{} launches {}, which its PTX module lacks",
                    e.name,
                    k.name
                );
            }
        }
    }

    fn h100() -> crate::device::DeviceInfo {
        crate::device::DeviceInfo {
            name: "test".into(),
            ..crate::device::DeviceInfo::h100()
        }
    }

    /// Sizes and shapes no GPU can run: every one must come back as a clean error
    /// (or, given unlimited memory, a launch within CUDA's and the kernels' limits),
    /// never a panic. Debug builds panic on arithmetic overflow, so this also proves
    /// the size arithmetic is checked.
    fn extremes() -> Vec<crate::harness::RunOptions> {
        let plan = |size: Option<u64>, shape: Option<Vec<usize>>| crate::harness::RunOptions {
            size,
            shape,
            reps: Default::default(),
            seed: 1,
        };
        let mut plans: Vec<_> = [
            4,
            (1 << 32) * 4 + 4,
            17 << 30,
            16 << 40,
            9_000_000 << 40,
            u64::MAX - 3,
            u64::MAX,
        ]
        .into_iter()
        .map(|s| plan(Some(s), None))
        .collect();
        let big = [4_000_000_000, 1 << 33, usize::MAX / 2, usize::MAX, 1];
        for &a in &big {
            for &b in &big {
                plans.push(plan(None, Some(vec![a, b])));
                for &c in &big {
                    plans.push(plan(None, Some(vec![a, b, c])));
                }
            }
        }
        plans
    }

    #[test]
    fn extreme_sizes_and_shapes_are_clean_errors_for_every_experiment() {
        use crate::harness::choose_problem;
        use crate::launch::{Launch, MAX_GRID_X, MAX_GRID_YZ};
        let info = h100();
        // (The 32-bit thread index limit belongs to one-per-element launches and is
        // tested with them; matmul and transpose index in usize.)
        let within_limits = |c: &Launch| {
            (1..=MAX_GRID_X).contains(&(c.grid.0 as u64))
                && (1..=MAX_GRID_YZ).contains(&(c.grid.1 as u64))
                && (1..=MAX_GRID_YZ).contains(&(c.grid.2 as u64))
        };
        for e in ALL {
            for plan in extremes() {
                let what = format!("{} {:?} {:?}", e.name, plan.size, plan.shape);
                for free in [80 << 30, u64::MAX] {
                    match choose_problem(e, &plan, &info, free) {
                        Ok(p) => {
                            let cfgs = e.launches(&p, &info).expect(&what);
                            assert!(cfgs.iter().flatten().all(within_limits), "{what}: {cfgs:?}");
                            assert!(e.device_bytes(&p).is_some(), "{what}");
                        }
                        Err(err) => {
                            let text = err.to_string();
                            assert!(!text.is_empty() && !text.contains('\n'), "{what}: {text}");
                        }
                    }
                }
                // The experiment's own checks, without the memory gate in front.
                let shape = plan.shape.as_deref().filter(|s| s.len() == e.shape_rank());
                if let Ok(p) = e.kind.problem(plan.size.unwrap_or(4), e.elem(), shape) {
                    let _ = e.device_bytes(&p);
                    if let Ok(cfgs) = e.launches(&p, &info) {
                        assert!(cfgs.iter().flatten().all(within_limits), "{what}: {cfgs:?}");
                        assert_eq!(cfgs.len(), e.variants.len(), "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn sizes_beyond_free_memory_say_what_is_needed_and_free() {
        use crate::harness::{RunOptions, choose_problem};
        let plan = |size: Option<u64>, shape: Option<Vec<usize>>| RunOptions {
            size,
            shape,
            reps: Default::default(),
            seed: 1,
        };
        let copy = ALL[0];
        let e = choose_problem(copy, &plan(Some(16 << 40), None), &h100(), 80 << 30).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        // 16 TiB x 2 arrays + the baseline's 2.
        assert_eq!(
            e.to_string(),
            "copy needs 64.0 TiB of device memory at this size but only 80.0 GiB is free; pass a smaller --size or --shape"
        );
        // Sizes whose byte counts overflow u64.
        let e = choose_problem(copy, &plan(Some(9_000_000 << 40), None), &h100(), 80 << 30).unwrap_err();
        assert!(e.to_string().starts_with("copy needs more than 16 EiB"), "{e}");
        let transpose = named("transpose").unwrap();
        let shape = vec![4_000_000_000, 4_000_000_000];
        let e = choose_problem(transpose, &plan(None, Some(shape)), &h100(), 80 << 30).unwrap_err();
        assert_eq!(
            e.to_string(),
            "transpose needs more than 16 EiB of device memory at this size but only 80.0 GiB is free; pass a smaller --size or --shape"
        );
        // The default size shrinks to fit instead.
        let p = choose_problem(copy, &plan(None, None), &h100(), 1 << 30).unwrap();
        let n = p.largest_array().unwrap() as u64;
        assert!(4 * 4 * n <= (1 << 30) / 10 * 9, "{n}");
    }

    #[test]
    fn sizes_beyond_32_bit_thread_indices_are_refused_before_allocating() {
        use crate::harness::{RunOptions, choose_problem};
        // 17 GiB per array fits an 80 GB GPU (4 x 17 GiB with the baseline) but is
        // 4.5 billion elements: one thread each overflows the kernels' u32 index.
        let plan = RunOptions {
            size: Some(17 << 30),
            shape: None,
            reps: Default::default(),
            seed: 1,
        };
        for name in ["copy", "offset", "saxpy"] {
            let e = named(name).unwrap();
            let err = choose_problem(e, &plan, &h100(), 79 << 30).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{name}");
            assert_eq!(
                err.to_string(),
                "4563402752 elements is too large: one thread each is more than the 4294967296 threads the kernels' 32-bit index reaches",
                "{name}"
            );
        }
        // A 1 x 2^33 transpose: its naive-read grid has 2^28 rows of tiles.
        let transpose = named("transpose").unwrap();
        let plan = RunOptions {
            size: None,
            shape: Some(vec![1, 1 << 33]),
            ..plan
        };
        let err = choose_problem(transpose, &plan, &h100(), u64::MAX).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("CUDA allows"), "{err}");
        // A column of 4 million: 16 MB, but 125000 rows of tiles (gridDim.y <= 65535).
        let plan = RunOptions {
            shape: Some(vec![4_000_000, 1]),
            ..plan
        };
        let err = choose_problem(transpose, &plan, &h100(), 79 << 30).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a 4000000 x 1 matrix is too large: needs a 1 x 125000 grid of 32 x 32 tiles; CUDA allows 2147483647 x 65535"
        );
    }
}
