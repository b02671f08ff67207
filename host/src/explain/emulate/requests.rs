//! A log's accesses grouped into warp requests: the lanes of one warp (32 consecutive
//! linear thread ids of a block, x fastest) executing one site, in one direction and
//! space, for the same time form one request, as one warp-wide load or store
//! instruction does on the GPU. Both the per-site statistics ([`super::analyse`]) and
//! the traffic ([`super::traffic`]) are sums over requests.

use std::ops::Range;
use std::panic::Location;

use kernels::gpu::emu::{Access, Op, Space};

/// One access site as a log tells sites apart: its source location (by value: one
/// place compiled twice may have two `Location`s), direction and space.
#[derive(Clone, Copy, Debug)]
pub struct Site {
    pub location: &'static Location<'static>,
    pub op: Op,
    pub space: Space,
}

/// One request: whose, and where its accesses' log indices lie in [`Requests::order`].
#[derive(Clone, Debug)]
pub struct Request {
    /// Into [`Requests::sites`].
    pub site: usize,
    pub block: usize,
    pub warp: usize,
    pub occurrence: usize,
    pub members: Range<usize>,
}

/// A log's requests, ordered by block, warp, site and occurrence (so each site's
/// requests come in the order of their block, warp and occurrence), each request's
/// accesses in log order.
pub struct Requests {
    /// The log's sites, numbered in the order the log first shows them.
    pub sites: Vec<Site>,
    /// Each access's site.
    pub site_of: Vec<usize>,
    pub requests: Vec<Request>,
    /// Log indices, request after request.
    pub order: Vec<usize>,
}

impl Requests {
    /// The requests of `log`.
    pub fn of(log: &[Access]) -> Requests {
        let mut sites: Vec<Site> = Vec::new();
        // The site of the access before: a thread's log runs through few sites.
        let mut last: Option<(*const Location<'static>, Op, Space, usize)> = None;
        let mut site_of = |a: &Access| -> usize {
            let at: *const Location<'static> = a.site;
            if let Some((l, op, space, id)) = last
                && l == at
                && op == a.op
                && space == a.space
            {
                return id;
            }
            let same = |s: &Site| s.op == a.op && s.space == a.space;
            let id = match sites
                .iter()
                .position(|s| std::ptr::eq(s.location, a.site) && same(s))
                .or_else(|| sites.iter().position(|s| *s.location == *a.site && same(s)))
            {
                Some(id) => id,
                None => {
                    sites.push(Site {
                        location: a.site,
                        op: a.op,
                        space: a.space,
                    });
                    sites.len() - 1
                }
            };
            last = Some((at, a.op, a.space, id));
            id
        };
        let ids: Vec<usize> = log.iter().map(&mut site_of).collect();
        let order = sort(log, &ids);
        let mut requests = Vec::new();
        let mut start = 0;
        let key = |i: usize| (log[i].block, log[i].warp(), ids[i], log[i].occurrence);
        while start < order.len() {
            let k = key(order[start]);
            let mut end = start + 1;
            while end < order.len() && key(order[end]) == k {
                end += 1;
            }
            requests.push(Request {
                site: k.2,
                block: k.0,
                warp: k.1,
                occurrence: k.3,
                members: start..end,
            });
            start = end;
        }
        Requests {
            sites,
            site_of: ids,
            requests,
            order,
        }
    }

    /// The log indices of `r`'s accesses, in log order.
    pub fn members(&self, r: &Request) -> &[usize] {
        &self.order[r.members.clone()]
    }
}

/// Log indices sorted by (block, warp, site, occurrence), then log order: one `u128`
/// key each where the fields fit it (they do for any launch a GPU could make), else
/// tuples.
fn sort(log: &[Access], ids: &[usize]) -> Vec<usize> {
    const BLOCK: u32 = 36;
    const WARP: u32 = 16;
    const SITE: u32 = 12;
    const OCCURRENCE: u32 = 32;
    let fits = |x: usize, bits: u32| (x as u128) < (1u128 << bits);
    let packed: Option<Vec<u128>> = log
        .iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (a, &site))| {
            let ok = fits(a.block, BLOCK)
                && fits(a.warp(), WARP)
                && fits(site, SITE)
                && fits(a.occurrence, OCCURRENCE)
                && fits(i, 32);
            ok.then(|| {
                let mut k = a.block as u128;
                k = (k << WARP) | a.warp() as u128;
                k = (k << SITE) | site as u128;
                k = (k << OCCURRENCE) | a.occurrence as u128;
                (k << 32) | i as u128
            })
        })
        .collect();
    match packed {
        Some(mut keys) => {
            keys.sort_unstable();
            keys.into_iter()
                .map(|k| (k & u128::from(u32::MAX)) as usize)
                .collect()
        }
        None => {
            let mut keys: Vec<(usize, usize, usize, usize, usize)> = log
                .iter()
                .zip(ids)
                .enumerate()
                .map(|(i, (a, &site))| (a.block, a.warp(), site, a.occurrence, i))
                .collect();
            keys.sort_unstable();
            keys.into_iter().map(|k| k.4).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(block: usize, thread: usize, occurrence: usize, op: Op) -> Access {
        Access {
            block,
            thread,
            site: Location::caller(),
            occurrence,
            op,
            space: Space::Global,
            addr: 4 * thread,
            array: 0,
            array_name: "",
            epoch: 0,
            bytes: 4,
            async_copy: false,
            bulk: false,
            copied_from: None,
        }
    }

    #[test]
    fn lanes_of_one_warp_site_and_occurrence_are_one_request_in_log_order() {
        let mut log = Vec::new();
        // Two warps of block 3, each thread loading twice and storing once; thread 40
        // (warp 1) first in the log.
        for t in (32..64).chain(0..32) {
            log.push(access(3, t, 0, Op::Load));
            log.push(access(3, t, 1, Op::Load));
            log.push(access(3, t, 0, Op::Store));
        }
        let r = Requests::of(&log);
        assert_eq!(r.sites.len(), 2, "the load and the store are two sites");
        assert_eq!(r.requests.len(), 6);
        for q in &r.requests {
            let members = r.members(q);
            assert_eq!(members.len(), 32);
            assert!(members.windows(2).all(|w| w[0] < w[1]), "log order");
            assert!(
                members
                    .iter()
                    .all(|&i| log[i].warp() == q.warp && log[i].occurrence == q.occurrence)
            );
        }
        // By warp first: warp 0's three requests, though its lanes come later.
        assert_eq!(
            r.requests
                .iter()
                .map(|q| (q.warp, q.site, q.occurrence))
                .collect::<Vec<_>>(),
            [(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0), (1, 0, 1), (1, 1, 0)]
        );
        // An occurrence too large to pack sorts the same.
        log[0].occurrence = 1 << 40;
        let big = Requests::of(&log);
        assert_eq!(big.requests.len(), 7);
        assert_eq!(
            big.requests
                .iter()
                .map(|q| (q.warp, q.site, q.occurrence, q.members.len()))
                .collect::<Vec<_>>(),
            [
                (0, 0, 0, 32),
                (0, 0, 1, 32),
                (0, 1, 0, 32),
                (1, 0, 0, 31),
                (1, 0, 1, 32),
                (1, 0, 1 << 40, 1),
                (1, 1, 0, 32)
            ]
        );
    }
}
