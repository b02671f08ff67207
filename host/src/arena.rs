//! One device allocation that a command's experiments take their buffers from, one
//! experiment at a time, so each runs on the same memory whatever ran before it in
//! the process. Buffers allocated after other experiments have freed theirs land
//! elsewhere, and some kernels run measurably slower there than in a fresh process
//! (the TMA transposes, docs/perf-notes.md); `coalesce run transpose` and a whole
//! `coalesce report` should time a kernel alike.

use std::cell::Cell;
use std::rc::Rc;

use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};

/// Each buffer starts on a boundary of the driver's large pages, as a buffer of its
/// own would.
pub const ALIGN: u64 = 2 << 20;

/// Bytes an arena needs for buffers of `sizes` bytes, each on an [`ALIGN`]
/// boundary; `None` on overflow.
pub fn bytes_for(sizes: &[u64]) -> Option<u64> {
    sizes.iter().try_fold(0u64, |at, &bytes| {
        at.checked_next_multiple_of(ALIGN)?.checked_add(bytes)
    })
}

/// The reserved allocation; at most one [`Lease`] of it at a time.
pub struct Arena {
    memory: DeviceBuffer<u8>,
    leased: Cell<bool>,
}

impl Arena {
    pub fn new(memory: DeviceBuffer<u8>) -> Rc<Arena> {
        Rc::new(Arena {
            memory,
            leased: Cell::new(false),
        })
    }

    /// Its device address.
    pub fn address(&self) -> u64 {
        self.memory.as_device_ptr().as_raw()
    }

    /// Its size, in bytes.
    pub fn bytes(&self) -> u64 {
        self.memory.len() as u64
    }

    /// Whether a [`Lease`] holds it now.
    pub fn leased(&self) -> bool {
        self.leased.get()
    }

    /// Buffers of `sizes` bytes laid out from its start, valid while the [`Lease`]
    /// beside them lives; `None` while another lease holds it or when they do not fit.
    pub fn lease(self: &Rc<Arena>, sizes: &[u64]) -> Option<(Lease, Vec<DeviceSlice<u8>>)> {
        if self.leased.get() || bytes_for(sizes)? > self.bytes() {
            return None;
        }
        let base = self.address();
        let mut at = 0u64;
        let mut slices = Vec::with_capacity(sizes.len());
        for &bytes in sizes {
            at = at.next_multiple_of(ALIGN);
            // SAFETY: [at, at + bytes) lies inside the allocation (bytes_for above),
            // aligned for any element, and no other lease shares it while this one lives.
            slices.push(unsafe {
                DeviceSlice::from_raw_parts(DevicePointer::from_raw(base + at), bytes as usize)
            });
            at += bytes;
        }
        self.leased.set(true);
        Some((
            Lease {
                arena: Rc::clone(self),
            },
            slices,
        ))
    }
}

/// One experiment's hold on the arena; returns it when dropped.
pub struct Lease {
    arena: Rc<Arena>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.arena.leased.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_large_page_boundaries() {
        assert_eq!(bytes_for(&[]), Some(0));
        assert_eq!(bytes_for(&[4]), Some(4));
        // The second buffer starts at 2 MiB, the third at 4 MiB.
        assert_eq!(bytes_for(&[4, 2, 12]), Some(2 * ALIGN + 12));
        assert_eq!(bytes_for(&[ALIGN, 4]), Some(ALIGN + 4));
        assert_eq!(bytes_for(&[1, u64::MAX - 1]), None);
    }
}
