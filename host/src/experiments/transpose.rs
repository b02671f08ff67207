//! transpose: out (cols x rows) = in (rows x cols)ᵀ, four kernels from naive to
//! tiled and padded. Useful bytes: 2 x rows x cols x 4.

use cust::memory::DeviceBuffer;
use kernels::transpose::{BLOCK_ROWS, TILE};

use crate::buffers::{download, fill_uniform, poison};
use crate::device::{DeviceInfo, Gpu};
use crate::error::{Error, Result};
use crate::harness::{Case, Experiment, Params, Prepared, Work};
use crate::launch::{Arg, LaunchCfg, MAX_GRID_X, MAX_GRID_YZ};
use crate::validate::{Validation, exact};

pub struct Transpose;

/// (variant, kernel, whether the grid spans the output rather than the input)
pub const VARIANTS: [(&str, &str, bool); 4] = [
    ("naive-write", "transpose_naive_write", false),
    ("naive-read", "transpose_naive_read", true),
    ("tiled", "transpose_tiled", false),
    ("tiled-padded", "transpose_tiled_padded", false),
];

/// rows x cols from the params: the shape, or the largest square of `size` bytes.
pub fn dims(p: &Params) -> Result<(usize, usize)> {
    match p.shape.as_deref() {
        Some(&[r, c]) => Ok((r, c)),
        _ => {
            let side = ((p.size / 4) as f64).sqrt().floor() as usize;
            if side == 0 {
                return Err(Error::Zero {
                    what: "--size (one f32 matrix element)",
                });
            }
            Ok((side, side))
        }
    }
}

fn elements(rows: usize, cols: usize) -> Result<usize> {
    rows.checked_mul(cols).ok_or_else(|| Error::TooLarge {
        what: format!("{rows} x {cols}"),
        why: "overflows usize".into(),
    })
}

/// A 2D grid of 32 x 32 tiles over a matrix of `rows` x `cols` (x along cols).
pub fn grid(rows: usize, cols: usize) -> Result<LaunchCfg> {
    let (gx, gy) = (cols.div_ceil(TILE) as u64, rows.div_ceil(TILE) as u64);
    if gx > MAX_GRID_X || gy > MAX_GRID_YZ {
        return Err(Error::TooLarge {
            what: format!("a {rows} x {cols} matrix"),
            why: format!("needs a {gx} x {gy} grid of tiles; CUDA allows {MAX_GRID_X} x {MAX_GRID_YZ}"),
        });
    }
    Ok(LaunchCfg {
        grid: (gx as u32, gy as u32, 1),
        block: (TILE as u32, BLOCK_ROWS as u32, 1),
        shared_bytes: 0,
    })
}

impl Experiment for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn about(&self) -> &'static str {
        "out = inᵀ: coalescing both ways needs a shared-memory tile; padding removes its bank conflicts"
    }
    fn variants(&self) -> Vec<String> {
        VARIANTS.iter().map(|v| v.0.to_string()).collect()
    }
    fn kernels(&self) -> Vec<&'static str> {
        VARIANTS.iter().map(|v| v.1).collect()
    }
    fn default_size(&self, _: &DeviceInfo) -> u64 {
        8192 * 8192 * 4
    }
    fn shape_rank(&self) -> usize {
        2
    }
    fn device_bytes(&self, p: &Params) -> Option<u64> {
        let (r, c) = dims(p).ok()?;
        (r as u64).checked_mul(c as u64)?.checked_mul(8)
    }
    fn launches(&self, p: &Params, _: &DeviceInfo) -> Result<Vec<LaunchCfg>> {
        let (rows, cols) = dims(p)?;
        elements(rows, cols)?;
        VARIANTS
            .iter()
            .map(|&(_, _, over_output)| {
                if over_output {
                    grid(cols, rows)
                } else {
                    grid(rows, cols)
                }
            })
            .collect()
    }
    fn prepare<'g>(&self, gpu: &'g Gpu, p: &Params) -> Result<Box<dyn Prepared + 'g>> {
        let (rows, cols) = dims(p)?;
        let cfgs = self.launches(p, &gpu.info)?;
        let n = elements(rows, cols)?;
        let cases = VARIANTS
            .iter()
            .map(|&(v, k, _)| Case {
                variant: v.into(),
                kernel: k,
                work: Work::Bytes(2 * 4 * n as u64),
            })
            .collect();
        Ok(Box::new(Prepared2d {
            rows,
            cols,
            src: gpu.alloc(n)?,
            dst: gpu.alloc(n)?,
            seed: p.seed,
            case_seed: p.seed,
            cases,
            cfgs,
        }))
    }
}

struct Prepared2d {
    rows: usize,
    cols: usize,
    src: DeviceBuffer<f32>,
    dst: DeviceBuffer<f32>,
    seed: u64,
    case_seed: u64,
    cases: Vec<Case>,
    cfgs: Vec<LaunchCfg>,
}

impl Prepared for Prepared2d {
    fn cases(&self) -> &[Case] {
        &self.cases
    }
    fn reset(&mut self, gpu: &Gpu, case: usize) -> Result<()> {
        self.case_seed = self.seed.wrapping_add(case as u64);
        fill_uniform(gpu, &self.src, self.case_seed)?;
        poison(gpu, &mut self.dst)
    }
    fn launch_spec(&self, case: usize) -> (LaunchCfg, Vec<Arg>) {
        let args = vec![
            self.rows.into(),
            self.cols.into(),
            self.src.as_device_ptr().into(),
            self.dst.as_device_ptr().into(),
        ];
        (self.cfgs[case], args)
    }
    fn validate(&self, gpu: &Gpu, _case: usize) -> Result<Validation> {
        let got = download(gpu, &self.dst)?;
        let (rows, cols, seed) = (self.rows, self.cols, self.case_seed);
        // out[c][r] = in[r][c]
        Ok(exact(&got, |i| {
            kernels::fill::uniform(seed, ((i % rows) * cols + i / rows) as u64)
        }))
    }
    fn size_label(&self) -> Option<String> {
        Some(format!("{}x{}", self.rows, self.cols))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_from_size_and_shape_wins() {
        assert_eq!(dims(&Params::sized(8192 * 8192 * 4, 0)).unwrap(), (8192, 8192));
        assert_eq!(dims(&Params::sized(4 * 1000, 0)).unwrap(), (31, 31));
        let p = Params {
            size: 4,
            shape: Some(vec![33, 65]),
            seed: 0,
        };
        assert_eq!(dims(&p).unwrap(), (33, 65));
        assert_eq!(Transpose.device_bytes(&p), Some(33 * 65 * 8));
    }

    #[test]
    fn grids_cover_every_tile() {
        let g = grid(33, 65).unwrap();
        assert_eq!((g.grid.0, g.grid.1), (3, 2));
        assert_eq!(g.block, (32, 8, 1));
        assert!(grid(usize::MAX / 2, 1).is_err());
    }
}
