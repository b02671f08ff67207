//! Judging one launch against its experiment's [`Reference`]: the one check every
//! backend applies (the GPU with Rust or C++ kernels, cuBLAS, the CPU emulator).

use crate::error::Result;
use crate::experiment::{Buffer, Check, Experiment, Inputs, Problem, Reference, Role, Variant};
use crate::validate::{self, ProductBound, Validation, check_product_bound, exact, sample_entries};

/// Which buffers a judgement reads back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// What the kernel writes (outputs, in-out buffers): on the GPU, where copying
    /// gigabytes of inputs back would cost more than the run.
    Written,
    /// Every buffer the kernel is passed: inputs must come back bit for bit too
    /// (the emulator, where nothing is large).
    Everything,
}

/// Compares what `fetch(buffer)` returns (each element's exact value, whatever the
/// buffer's [`Elem`](crate::elem::Elem)) with the reference for `variant` at
/// `problem`, whose read buffers held `inputs` before the launch. `rounding` widens a
/// product's bound for inputs rounded to that relative precision (cuBLAS TF32: 2^-10;
/// 0 for plain f32); a TF32 variant's own rounding widens it at least to its
/// [`Arithmetic::input_rounding`](crate::experiment::Arithmetic::input_rounding).
pub fn judge(
    experiment: &Experiment,
    variant: &Variant,
    problem: &Problem,
    inputs: &Inputs,
    mut fetch: impl FnMut(usize) -> Result<Vec<f32>>,
    scope: Scope,
    rounding: f64,
) -> Result<Validation> {
    let buffers = experiment.buffers_for(variant, problem)?;
    let mut passed: Vec<usize> = Vec::new();
    for b in variant.buffers() {
        if !passed.contains(&b) {
            passed.push(b);
        }
    }
    let judged: Vec<usize> = passed
        .into_iter()
        .filter(|&b| scope == Scope::Everything || buffers[b].role != Role::Input)
        .collect();
    let named = judged.len() > 1;
    let mut checks = Vec::with_capacity(judged.len());
    for b in judged {
        let got = fetch(b)?;
        let buf = &buffers[b];
        let mut v = match (buf.role, experiment.reference) {
            (Role::Input, _) => exact(&got, |i| {
                if buf.is_padding(i) {
                    buf.elem.poison_value()
                } else {
                    inputs.value(b, buf.elem, i)
                }
            }),
            (_, Reference::Elementwise { check, expected }) => {
                let want = |i| expected(problem, variant.param, inputs, b, i);
                match check {
                    Check::Exact => exact(&got, want),
                    Check::Close(tol) => validate::close(&got, want, tol),
                }
            }
            (_, Reference::Product { a, b: bb, .. }) => {
                let dims = match *problem {
                    Problem::Product { m, n, k } => (m, n, k),
                    other => panic!("{}: a product reference on a {other:?} problem", experiment.name),
                };
                let at = sample_entries(dims.0 * dims.1, inputs.seed);
                let (pa, pb) = (&buffers[a], &buffers[bb]);
                let bound = ProductBound {
                    input: rounding.max(variant.input_rounding()),
                    output: buf.elem,
                };
                // C's padding must still hold the poison; its entries are read
                // through its pitch, as A's and B's are.
                let c: Vec<f32> = (0..dims.0 * dims.1).map(|i| got[buf.at(i)]).collect();
                let product = check_product_bound(
                    &c,
                    dims,
                    |i| inputs.value(a, pa.elem, pa.at(i)),
                    |i| inputs.value(bb, pb.elem, pb.at(i)),
                    &at,
                    bound,
                );
                match buf.padding {
                    None => product,
                    Some(_) => validate::all([product, padding_untouched(&got, buf)]),
                }
            }
        };
        if named {
            v.detail = format!("{}: {}", buffers[b].name, v.detail);
        }
        checks.push(v);
    }
    Ok(validate::all(checks))
}

/// A padded output's padding still holds the poison it was given: the kernel wrote
/// only its matrix.
fn padding_untouched(got: &[f32], buf: &Buffer) -> Validation {
    let poison = buf.elem.poison_value().to_bits();
    match (0..got.len()).find(|&j| buf.is_padding(j) && got[j].to_bits() != poison) {
        None => Validation {
            ok: true,
            detail: "row padding untouched".into(),
        },
        Some(j) => {
            let pitch = buf.padding.map_or(1, |p| p.pitch);
            Validation {
                ok: false,
                detail: format!(
                    "row {}'s padding was written (element {} of the row, pitch {pitch}): got {}",
                    j / pitch,
                    j % pitch,
                    got[j]
                ),
            }
        }
    }
}
