//! Variants the report singles out (a plot's contrast, a claim's rows), named through
//! the declarations.

use std::fmt;

use crate::experiment::{Experiment, Variant};

/// One variant of one experiment, named through the declarations where a view singles
/// it out (a plot's contrast, a claim's rows): `VariantOf::new(&copy::EXPERIMENT,
/// &copy::F32X4)`, so a renamed or removed variant does not compile, and
/// [`VariantOf::is_declared`] checks that it is in its experiment's list.
#[derive(Clone, Copy)]
pub struct VariantOf {
    pub experiment: &'static Experiment,
    pub variant: &'static Variant,
}

impl VariantOf {
    pub const fn new(experiment: &'static Experiment, variant: &'static Variant) -> VariantOf {
        VariantOf { experiment, variant }
    }

    /// The experiment's and the variant's names, as a row carries them.
    pub fn names(&self) -> (&'static str, &'static str) {
        (self.experiment.name, self.variant.name)
    }

    /// Whether `row` is of this variant.
    pub fn is(&self, experiment: &str, variant: &str) -> bool {
        self.names() == (experiment, variant)
    }

    /// Whether the experiment declares the variant: one of its list with the same
    /// name, kernel and parameter.
    pub fn is_declared(&self) -> bool {
        self.experiment.variants.iter().any(|v| {
            v.name == self.variant.name && v.kernel == self.variant.kernel && v.param == self.variant.param
        })
    }
}

impl PartialEq for VariantOf {
    fn eq(&self, other: &Self) -> bool {
        self.names() == other.names()
    }
}

impl Eq for VariantOf {}

impl fmt::Debug for VariantOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (e, v) = self.names();
        write!(f, "{e}/{v}")
    }
}
