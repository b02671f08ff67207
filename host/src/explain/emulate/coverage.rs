//! Which bytes of memory a window's accesses touched: a byte mask per 32-byte sector,
//! kept in pages of 32 sectors (1 KiB of addresses), so that a window streaming over
//! hundreds of MiB holds a few bytes per sector while a scattered one pays a page per
//! sector it touches.

use super::hash::FastMap;

/// Sectors per page.
const PAGE_SECTORS: usize = 32;
/// A sector's mask with every byte touched.
const FULL: u32 = u32::MAX;

/// The bytes touched, by 32-byte sector.
#[derive(Default)]
pub struct Coverage {
    /// Each page's masks, and where its number finds them.
    masks: Vec<[u32; PAGE_SECTORS]>,
    pages: FastMap<u64, usize>,
    /// The page the last access touched (accesses in a row mostly share one).
    last: Option<(u64, usize)>,
}

impl Coverage {
    /// Marks bytes `addr .. addr + bytes`.
    pub fn cover(&mut self, addr: u64, bytes: u64) {
        let (mut at, end) = (addr, addr + bytes);
        while at < end {
            let sector = at / 32;
            let upto = ((sector + 1) * 32).min(end);
            let n = upto - at;
            let bits = if n >= 32 {
                FULL
            } else {
                ((1u32 << n) - 1) << (at % 32)
            };
            let page = sector / PAGE_SECTORS as u64;
            let i = match self.last {
                Some((p, i)) if p == page => i,
                _ => {
                    let fresh = self.masks.len();
                    let i = *self.pages.entry(page).or_insert(fresh);
                    if i == fresh {
                        self.masks.push([0; PAGE_SECTORS]);
                    }
                    self.last = Some((page, i));
                    i
                }
            };
            self.masks[i][sector as usize % PAGE_SECTORS] |= bits;
            at = upto;
        }
    }

    fn page(&self, page: u64) -> Option<&[u32; PAGE_SECTORS]> {
        self.pages.get(&page).map(|&i| &self.masks[i])
    }

    /// Whether any byte of the 128-byte line `line` (its address / 128) was touched.
    pub fn has_line(&self, line: u64) -> bool {
        let first = line * 4;
        self.page(first / PAGE_SECTORS as u64).is_some_and(|p| {
            let at = first as usize % PAGE_SECTORS;
            p[at..at + 4].iter().any(|&m| m != 0)
        })
    }

    /// The aligned `size`-byte pieces (32, 64 or 128) with a byte touched, and how many
    /// of them have some bytes untouched.
    pub fn pieces(&self, size: u64) -> (u64, u64) {
        let per = (size / 32) as usize;
        let (mut touched, mut partial) = (0, 0);
        for page in &self.masks {
            for piece in page.chunks_exact(per) {
                if piece.iter().any(|&m| m != 0) {
                    touched += 1;
                    partial += u64::from(piece.iter().any(|&m| m != FULL));
                }
            }
        }
        (touched, partial)
    }

    /// Every touched sector's index (address / 32), in no order.
    pub fn touched(&self) -> impl Iterator<Item = u64> + '_ {
        self.pages.iter().flat_map(|(&page, &i)| {
            self.masks[i]
                .iter()
                .enumerate()
                .filter(|(_, m)| **m != 0)
                .map(move |(i, _)| page * PAGE_SECTORS as u64 + i as u64)
        })
    }

    /// The memory this holds, roughly: its pages and the table that finds them.
    pub fn bytes(&self) -> usize {
        let page = std::mem::size_of::<[u32; PAGE_SECTORS]>();
        let slot = std::mem::size_of::<(u64, usize)>() + 1;
        self.masks.capacity() * page + self.pages.capacity() * slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_count_touched_and_partly_touched_bytes() {
        let mut c = Coverage::default();
        // One whole 128-byte line, and 4 bytes at 1000 (in sector 31 of page 0).
        c.cover(128, 128);
        c.cover(1000, 4);
        assert_eq!(c.pieces(32), (5, 1));
        assert_eq!(c.pieces(64), (3, 1));
        assert_eq!(c.pieces(128), (2, 1));
        assert!(c.has_line(1) && c.has_line(7) && !c.has_line(0) && !c.has_line(2));
        // Across a page boundary, byte by byte: the sector fills up.
        c.cover(1020, 8);
        c.cover(992, 12);
        c.cover(1004, 16);
        assert_eq!(c.pieces(32), (6, 1), "sector 31 full, sector 32 holds 4 bytes");
        let mut sectors: Vec<u64> = c.touched().collect();
        sectors.sort_unstable();
        assert_eq!(sectors, [4, 5, 6, 7, 31, 32]);
        assert!(c.bytes() > 0);
    }
}
