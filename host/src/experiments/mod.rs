//! The experiments, one module each; [`ALL`] is the registry every command reads.

use crate::error::{Error, Result};
use crate::harness::Experiment;

pub mod complex;
pub mod copy;
pub mod gather;
pub mod matmul;
pub mod offset;
pub mod particles;
pub mod saxpy;
pub mod stride;
pub mod transpose;

/// Every experiment, in the order the suite runs them.
pub static ALL: &[&dyn Experiment] = &[
    &copy::Copy,
    &stride::Stride,
    &offset::Offset,
    &transpose::Transpose,
    &particles::Particles,
    &saxpy::Saxpy,
    &complex::Complex,
    &matmul::Matmul,
];

/// The names of all experiments, comma-separated (for messages).
pub fn known() -> String {
    ALL.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")
}

/// One experiment and, optionally, the variants of it to run.
pub struct Selection {
    pub experiment: &'static dyn Experiment,
    pub variants: Option<Vec<String>>,
}

/// Parses `EXPERIMENT` or `EXPERIMENT/VARIANT` words; none means the whole suite.
pub fn select(words: &[String]) -> Result<Vec<Selection>> {
    if words.is_empty() {
        return Ok(ALL
            .iter()
            .map(|&experiment| Selection {
                experiment,
                variants: None,
            })
            .collect());
    }
    let mut out: Vec<Selection> = Vec::new();
    for word in words {
        let (name, variant) = match word.split_once('/') {
            Some((n, v)) => (n, Some(v)),
            None => (word.as_str(), None),
        };
        let experiment = *ALL
            .iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| Error::UnknownExperiment {
                name: name.to_string(),
                known: known(),
            })?;
        if let Some(v) = variant
            && !experiment.variants().iter().any(|k| k == v)
        {
            return Err(Error::UnknownVariant {
                experiment: name.to_string(),
                variant: v.to_string(),
                known: experiment.variants().join(", "),
            });
        }
        match out.iter_mut().find(|s| s.experiment.name() == name) {
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
        assert_eq!(s[0].experiment.name(), "stride");
        assert_eq!(
            s[0].variants.as_deref(),
            Some(&["4".to_string(), "2".to_string()][..])
        );
        assert_eq!(s[1].experiment.name(), "copy");
        assert!(s[1].variants.is_none());
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let e = select(&words(&["strid"])).err().unwrap().to_string();
        assert!(
            e.contains("\"strid\"") && e.contains("copy, stride, offset"),
            "{e}"
        );
        let e = select(&words(&["stride/3"])).err().unwrap().to_string();
        assert!(e.contains("1, 2, 4, 8, 16, 32, 64"), "{e}");
    }

    #[test]
    fn names_and_kernels_are_unique() {
        let mut names: Vec<_> = ALL.iter().map(|e| e.name()).collect();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for e in ALL {
            assert!(
                !e.variants().is_empty() && !e.kernels().is_empty(),
                "{}",
                e.name()
            );
        }
    }

    #[test]
    fn every_kernel_is_in_the_ptx() {
        let entries = crate::ptx::entry_points(crate::ptx::PTX);
        for e in ALL {
            for k in e.kernels() {
                assert!(
                    entries.contains(&k),
                    "{} launches {k}, which the PTX lacks",
                    e.name()
                );
            }
        }
        assert!(entries.contains(&"fill_uniform"));
    }
}
