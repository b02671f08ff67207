//! matmul: C = A B (f32, row-major), naive / accidental / remapped. Reported in
//! GFLOP/s (2 m n k per launch) and validated against an f64 CPU reference.

use cust::memory::DeviceBuffer;
use kernels::fill::{mix64, uniform};
use kernels::matmul::TILE;
use rayon::prelude::*;

use crate::buffers::{download, fill_uniform, poison};
use crate::device::{DeviceInfo, Gpu};
use crate::error::{Error, Result};
use crate::harness::{Case, Experiment, Gemm, Params, Prepared, Work};
use crate::launch::{Arg, LaunchCfg, MAX_GRID_X, MAX_GRID_YZ};
use crate::validate::Validation;

pub struct Matmul;

pub const VARIANTS: [(&str, &str); 3] = [
    ("naive", "matmul_naive"),
    ("accidental", "matmul_accidental"),
    ("remapped", "matmul_remapped"),
];

/// Products with at most this many entries are checked in full; larger ones on a sample.
const FULL_CHECK: usize = 1 << 16;
/// Sampled entries of a large product, each a full dot product.
pub const SAMPLES: usize = 4096;

/// m, n, k from the shape, or the largest square matrices of `size` bytes.
pub fn dims(p: &Params) -> Result<(usize, usize, usize)> {
    match p.shape.as_deref() {
        Some(&[m, n, k]) => Ok((m, n, k)),
        _ => {
            let side = ((p.size / 4) as f64).sqrt().floor() as usize;
            if side == 0 {
                return Err(Error::Zero {
                    what: "--size (one f32 matrix element)",
                });
            }
            Ok((side, side, side))
        }
    }
}

/// Elements of A, B and C.
fn lengths(m: usize, n: usize, k: usize) -> Result<(usize, usize, usize)> {
    let too_large = || Error::TooLarge {
        what: format!("{m} x {n} x {k}"),
        why: "overflows usize".into(),
    };
    Ok((
        m.checked_mul(k).ok_or_else(too_large)?,
        k.checked_mul(n).ok_or_else(too_large)?,
        m.checked_mul(n).ok_or_else(too_large)?,
    ))
}

/// The launches of the three variants (in [`VARIANTS`] order) for an m x n product:
/// one thread per element of C, in 32 x 32 blocks (1024 x 1 for the remapped kernel).
pub fn launch_cfgs(m: usize, n: usize) -> Result<[LaunchCfg; 3]> {
    let (gx, gy) = (n.div_ceil(TILE) as u64, m.div_ceil(TILE) as u64);
    if gx > MAX_GRID_X || gy > MAX_GRID_YZ {
        return Err(Error::TooLarge {
            what: format!("a {m} x {n} product"),
            why: format!("needs a {gx} x {gy} grid; CUDA allows {MAX_GRID_X} x {MAX_GRID_YZ}"),
        });
    }
    let grid = (gx as u32, gy as u32, 1);
    let square = LaunchCfg {
        grid,
        block: (TILE as u32, TILE as u32, 1),
        shared_bytes: 0,
    };
    let flat = LaunchCfg {
        grid,
        block: ((TILE * TILE) as u32, 1, 1),
        shared_bytes: 0,
    };
    Ok([square, square, flat])
}

impl Experiment for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn about(&self) -> &'static str {
        "C = A B: which index threadIdx.x drives decides coalescing; a two-line remap fixes it"
    }
    fn variants(&self) -> Vec<String> {
        VARIANTS.iter().map(|v| v.0.to_string()).collect()
    }
    fn kernels(&self) -> Vec<&'static str> {
        VARIANTS.iter().map(|v| v.1).collect()
    }
    /// 4096 x 4096 x 4096.
    fn default_size(&self, _: &DeviceInfo) -> u64 {
        4096 * 4096 * 4
    }
    fn shape_rank(&self) -> usize {
        3
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        let (m, n, k) = dims(p).ok()?;
        let (m, n, k) = (m as u64, n as u64, k as u64);
        m.checked_mul(k)?
            .checked_add(k.checked_mul(n)?)?
            .checked_add(m.checked_mul(n)?)?
            .checked_mul(4)
    }
    fn launches(&self, p: &Params, _: &DeviceInfo) -> Result<Vec<LaunchCfg>> {
        let (m, n, k) = dims(p)?;
        lengths(m, n, k)?;
        Ok(launch_cfgs(m, n)?.to_vec())
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let (m, n, k) = dims(p)?;
        let cfgs = self.launches(p, &gpu.info)?;
        let (a_len, b_len, c_len) = lengths(m, n, k)?;
        let work = Work::Flops {
            flops: 2 * m as u64 * n as u64 * k as u64,
            bytes: 4 * (m as u64 * k as u64 + k as u64 * n as u64 + m as u64 * n as u64),
        };
        Ok(Box::new(Buffers {
            m,
            n,
            k,
            a: gpu.alloc(a_len)?,
            b: gpu.alloc(b_len)?,
            c: gpu.alloc(c_len)?,
            seed: p.seed,
            case_seed: p.seed,
            cfgs,
            cases: VARIANTS
                .iter()
                .map(|&(v, kn)| Case {
                    variant: v.into(),
                    kernel: kn,
                    work,
                })
                .collect(),
        }))
    }
}

struct Buffers {
    m: usize,
    n: usize,
    k: usize,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
    seed: u64,
    case_seed: u64,
    cfgs: Vec<LaunchCfg>,
    cases: Vec<Case>,
}

/// Checks `c` (m x n) against A B computed in f64 at the entries `at`: each entry
/// must be within 2 (k + 2) u sum |a_i b_i| of the exact dot product (u = 2^-24),
/// twice the classical bound for k-term f32 summation, so any reduction order passes
/// and a wrong element does not.
pub fn check_product(
    c: &[f32],
    dims: (usize, usize, usize),
    a: impl Fn(usize) -> f32 + Sync,
    b: impl Fn(usize) -> f32 + Sync,
    at: &[usize],
) -> Validation {
    check_rounded_product(c, dims, a, b, at, 0.0)
}

/// [`check_product`] for a product whose inputs were first rounded to relative
/// precision `r` (TF32: 2^-10): each term may be off by (2 r + r^2) |a_i b_i| more,
/// so the bound grows by twice that, 2 (2 r + r^2) sum |a_i b_i|.
pub fn check_rounded_product(
    c: &[f32],
    (m, n, k): (usize, usize, usize),
    a: impl Fn(usize) -> f32 + Sync,
    b: impl Fn(usize) -> f32 + Sync,
    at: &[usize],
    r: f64,
) -> Validation {
    let u = f64::from(f32::EPSILON) / 2.0;
    let widen = 2.0 * (2.0 * r + r * r);
    let bad: Vec<(usize, f32, f64)> = at
        .par_iter()
        .filter_map(|&idx| {
            let (row, col) = (idx / n, idx % n);
            let (mut exact, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let t = f64::from(a(row * k + kk)) * f64::from(b(kk * n + col));
                exact += t;
                mag += t.abs();
            }
            let got = f64::from(c[idx]);
            let ok = (got - exact).abs() <= (2.0 * (k as f64 + 2.0) * u + widen) * mag;
            (!ok).then_some((idx, c[idx], exact))
        })
        .collect();
    let scope = if at.len() == m * n {
        "all".to_string()
    } else {
        format!("{} sampled", at.len())
    };
    match bad.iter().min_by_key(|b| b.0) {
        None => Validation {
            ok: true,
            detail: format!("f64 reference, error bound scaled with k={k}: {scope} entries match"),
        },
        Some(&(idx, got, want)) => Validation {
            ok: false,
            detail: format!(
                "f64 reference: {} of {scope} entries differ; first C[{}][{}]: got {got}, expected {want}",
                bad.len(),
                idx / n,
                idx % n
            ),
        },
    }
}

/// The entries to check: all of a small product, else `SAMPLES` spread by a hash
/// (always including the first and last, where guards go wrong).
pub fn sample_entries(total: usize, seed: u64) -> Vec<usize> {
    if total <= FULL_CHECK {
        return (0..total).collect();
    }
    let mut at: Vec<usize> = (0..SAMPLES as u64 - 2)
        .map(|i| (mix64(seed ^ i) % total as u64) as usize)
        .collect();
    at.extend([0, total - 1]);
    at
}

impl Prepared for Buffers {
    fn cases(&self) -> &[Case] {
        &self.cases
    }
    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()> {
        self.case_seed = self.seed.wrapping_add(2 * case as u64);
        fill_uniform(gpu, &self.a, self.case_seed)?;
        fill_uniform(gpu, &self.b, self.case_seed + 1)?;
        poison(gpu, &mut self.c)
    }
    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>) {
        let args = vec![
            self.m.into(),
            self.n.into(),
            self.k.into(),
            self.a.as_device_ptr().into(),
            self.b.as_device_ptr().into(),
            self.c.as_device_ptr().into(),
        ];
        (self.cfgs[case], args)
    }
    fn validate(&self, gpu: &Gpu, case: usize) -> Result<Validation> {
        self.validate_gemm(gpu, case, 0.0)
    }
    fn gemm(&self, _case: usize) -> Option<Gemm> {
        Some(Gemm {
            m: self.m,
            n: self.n,
            k: self.k,
            a: self.a.as_device_ptr().as_raw(),
            b: self.b.as_device_ptr().as_raw(),
            c: self.c.as_device_ptr().as_raw(),
        })
    }
    fn validate_gemm(&self, gpu: &Gpu, _case: usize, input_rounding: f64) -> Result<Validation> {
        let c = download(gpu, &self.c)?;
        let s = self.case_seed;
        let at = sample_entries(self.m * self.n, s);
        Ok(check_rounded_product(
            &c,
            (self.m, self.n, self.k),
            |i| uniform(s, i as u64),
            |i| uniform(s + 1, i as u64),
            &at,
            input_rounding,
        ))
    }
    fn size_label(&self) -> Option<String> {
        Some(format!("{}x{}x{}", self.m, self.n, self.k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).fold(0f32, |acc, kk| a[i * k + kk].mul_add(b[kk * n + j], acc));
            }
        }
        c
    }

    #[test]
    fn f32_product_passes_and_a_wrong_entry_fails() {
        let (m, n, k) = (33, 65, 17);
        let a: Vec<f32> = (0..m * k).map(|i| uniform(1, i as u64)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| uniform(2, i as u64)).collect();
        let mut c = reference(m, n, k, &a, &b);
        let all: Vec<usize> = (0..m * n).collect();
        assert!(check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all).ok);
        c[5 * n + 7] += 1e-3;
        let v = check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all);
        assert!(!v.ok && v.detail.contains("C[5][7]"), "{}", v.detail);
        c[5 * n + 7] = f32::NAN;
        assert!(!check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all).ok);
    }

    #[test]
    fn rounded_inputs_widen_the_bound_just_enough() {
        let (m, n, k) = (8, 8, 64);
        let a: Vec<f32> = (0..m * k).map(|i| uniform(3, i as u64)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| uniform(4, i as u64)).collect();
        // TF32 keeps 10 mantissa bits: truncate the inputs, then multiply in f32.
        let tf32 = |x: f32| f32::from_bits(x.to_bits() & !0x1fff);
        let (ta, tb): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|&x| tf32(x)).collect(),
            b.iter().map(|&x| tf32(x)).collect(),
        );
        let c = reference(m, n, k, &ta, &tb);
        let all: Vec<usize> = (0..m * n).collect();
        let r = 2f64.powi(-10);
        assert!(!check_product(&c, (m, n, k), |i| a[i], |i| b[i], &all).ok);
        assert!(check_rounded_product(&c, (m, n, k), |i| a[i], |i| b[i], &all, r).ok);
        let mut off = c.clone();
        off[9] += 0.5;
        assert!(!check_rounded_product(&off, (m, n, k), |i| a[i], |i| b[i], &all, r).ok);
    }

    #[test]
    fn samples_large_products_and_checks_small_ones_fully() {
        assert_eq!(sample_entries(1000, 0).len(), 1000);
        let s = sample_entries(4096 * 4096, 7);
        assert_eq!(s.len(), SAMPLES);
        assert!(s.contains(&0) && s.contains(&(4096 * 4096 - 1)));
        assert!(s.iter().all(|&i| i < 4096 * 4096));
    }

    #[test]
    fn work_and_footprint() {
        let p = Params {
            size: 4,
            shape: Some(vec![33, 65, 17]),
            seed: 0,
        };
        assert_eq!(dims(&p).unwrap(), (33, 65, 17));
        assert_eq!(Matmul.device_bytes(&p), Some(4 * (33 * 17 + 17 * 65 + 33 * 65)));
        assert_eq!(
            dims(&Params::sized(4096 * 4096 * 4, 0)).unwrap(),
            (4096, 4096, 4096)
        );
    }
}
