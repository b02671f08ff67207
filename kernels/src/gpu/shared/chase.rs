//! Links between the words of a `u32` shared array: a dependent chain of shared loads
//! whose every address is the value the load before returned, with no arithmetic
//! between them (an index would cost an address computation per hop).

use super::SharedArray;

impl SharedArray<u32> {
    /// The link to element `i`, to store in the array and give [`follow`](Self::follow):
    /// on the GPU its shared-window address, on the emulator `i` itself.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn link(self, i: usize) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            self.addr + (i as u32) * 4
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            assert!(
                i < self.len,
                "shared index {i} out of bounds (length {})",
                self.len
            );
            i as u32
        }
    }

    /// The element a [`link`](Self::link) names.
    #[inline(always)]
    pub fn index_of(self, link: u32) -> usize {
        #[cfg(target_arch = "nvptx64")]
        {
            (link.wrapping_sub(self.addr) / 4) as usize
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            link as usize
        }
    }

    /// Reads the word `link` names: one `ld.shared.u32` whose address is the register
    /// itself.
    ///
    /// # Safety
    /// `link` came from [`link`](Self::link) of this array, and no other thread writes
    /// the element without a barrier between.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn follow(self, link: u32) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an address inside the array (the caller).
        unsafe {
            <u32 as super::SharedWord>::ld_shared(link)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: as above; `read` checks the bounds.
        unsafe {
            self.read(link as usize)
        }
    }
}
