//! How a variant's buffers lie in memory: densely as declared, or, for a matrix it
//! passes to the copy engine as a padded map ([`MapSpec::padded`]), with each row
//! padded to the next 16 bytes, so any shape can be addressed.

use super::{Arg, Buffer, Experiment, Problem, Variant};
use crate::error::{Error, Result};
#[cfg(doc)]
use crate::tensor_map::MapSpec;

/// A row-major matrix of `cols` columns whose rows start `pitch` elements apart; the
/// `pitch - cols` elements after each row are padding, which no kernel reads or
/// writes: the harness poisons them and the reference checks they stay so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Padding {
    pub cols: usize,
    pub pitch: usize,
}

impl Buffer {
    /// The same buffer as `rows` rows of `cols` elements, `pitch` apart (None on
    /// overflow); dense when the pitch is the width.
    pub fn padded(self, rows: usize, cols: usize, pitch: usize) -> Option<Self> {
        let padding = (pitch != cols).then_some(Padding { cols, pitch });
        Some(Buffer {
            len: rows.checked_mul(pitch)?,
            padding,
            ..self
        })
    }
    /// Where element `i` of the matrix, counted densely row by row, lies in memory.
    pub fn at(&self, i: usize) -> usize {
        match self.padding {
            None => i,
            Some(Padding { cols, pitch }) => i / cols * pitch + i % cols,
        }
    }
    /// Whether element `j` of memory is a row's padding.
    pub fn is_padding(&self, j: usize) -> bool {
        self.padding.is_some_and(|p| j % p.pitch >= p.cols)
    }
}

impl Experiment {
    /// The buffers as variant `v` is passed them at `p`: the declared ones, each
    /// matrix it names as a padded map ([`MapSpec::padded`]) laid out at the copy
    /// engine's row pitch.
    pub fn buffers_for(&self, v: &Variant, p: &Problem) -> Result<Vec<Buffer>> {
        let mut buffers = self.buffers_at(p)?;
        for spec in v.args.iter().filter_map(|a| match a {
            Arg::Map(spec) if spec.padded => Some(spec),
            _ => None,
        }) {
            let b = &mut buffers[spec.buffer];
            let ([cols, rows], pitch) = spec.extents(p, b.elem)?;
            let pitch = pitch / b.elem.bytes() as u64;
            let laid = usize::try_from(rows)
                .ok()
                .zip(usize::try_from(pitch).ok())
                .and_then(|(rows, pitch)| b.clone().padded(rows, cols as usize, pitch));
            *b = laid.ok_or_else(|| Error::TooLarge {
                what: format!("{} at {p}", self.name),
                why: format!("buffer {} at a padded row pitch overflows usize", b.name),
            })?;
        }
        Ok(buffers)
    }

    /// The buffers at `p` as device memory holds them: each at its largest layout
    /// over the variants that can run there ([`Experiment::buffers_for`]).
    pub fn allocations_at(&self, p: &Problem) -> Result<Vec<Buffer>> {
        let mut largest = self.buffers_at(p)?;
        for v in self.variants {
            let laid = match self.buffers_for(v, p) {
                Err(Error::Unaddressable { .. }) => continue,
                other => other?,
            };
            for (big, b) in largest.iter_mut().zip(laid) {
                if b.len > big.len {
                    *big = b;
                }
            }
        }
        Ok(largest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_matrices_map_dense_indices_through_the_pitch() {
        let b = Buffer::input("a", 3 * 5).padded(3, 5, 8).unwrap();
        assert_eq!((b.len, b.padding), (24, Some(Padding { cols: 5, pitch: 8 })));
        assert_eq!([b.at(0), b.at(4), b.at(5), b.at(14)], [0, 4, 8, 20]);
        assert!(!b.is_padding(4) && b.is_padding(5) && b.is_padding(7) && !b.is_padding(8));
        let dense = Buffer::input("a", 15).padded(3, 5, 5).unwrap();
        assert_eq!(
            (dense.padding, dense.at(14), dense.is_padding(14)),
            (None, 14, false)
        );
        assert!(Buffer::input("a", 1).padded(usize::MAX, 1, 2).is_none());
    }
}
