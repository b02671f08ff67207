//! The loops of a kernel's code: natural loops over its control-flow graph, one node
//! per instruction (the entry is instruction 0).
//!
//! Why dominators and not "a backward branch makes a loop [target, branch]": ptxas
//! moves an mbarrier wait's spin loop out of line, after the kernel's `EXIT`, and
//! jumps back into the main loop from there (`BRA` back to the instruction after the
//! wait). That branch is backward but closes no loop: its target does not dominate
//! it. LLVM likewise enters a loop in its middle (`bra.uni` forward to the header,
//! the latch laid out before it), so a loop's instructions need not be one range.
//! A back edge here is an edge whose target dominates its source; the loop is its
//! natural loop (every instruction that reaches the edge's source without passing
//! the header), back edges to one header making one loop. Irreducible cycles (none
//! that ptxas or LLVM emit for our kernels) are not loops here.

/// One instruction, as control flow sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    /// The instruction a branch may jump to (`None`: no branch, or a target outside
    /// the function).
    pub target: Option<usize>,
    /// Whether execution may go on to the next instruction (not after an
    /// unpredicated `BRA`, `EXIT`, `ret`).
    pub falls_through: bool,
}

/// A natural loop: its header and every instruction of its body, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Loop {
    pub header: usize,
    pub body: Vec<usize>,
}

impl Loop {
    pub fn contains(&self, node: usize) -> bool {
        self.body.binary_search(&node).is_ok()
    }
}

/// Which instructions the entry reaches, and the loops, ordered by header.
#[derive(Debug)]
pub(super) struct Flow {
    pub reachable: Vec<bool>,
    pub loops: Vec<Loop>,
}

pub(super) fn flow(nodes: &[Node]) -> Flow {
    let n = nodes.len();
    if n == 0 {
        return Flow {
            reachable: Vec::new(),
            loops: Vec::new(),
        };
    }
    let succs: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            let mut s = Vec::with_capacity(2);
            if nodes[i].falls_through && i + 1 < n {
                s.push(i + 1);
            }
            if let Some(t) = nodes[i].target.filter(|&t| t < n && !s.contains(&t)) {
                s.push(t);
            }
            s
        })
        .collect();
    // Reverse postorder of a depth-first walk from the entry.
    let mut reachable = vec![false; n];
    let mut post = Vec::with_capacity(n);
    let mut stack = vec![(0usize, 0usize)];
    reachable[0] = true;
    while let Some((v, i)) = stack.last_mut() {
        if let Some(&w) = succs[*v].get(*i) {
            *i += 1;
            if !reachable[w] {
                reachable[w] = true;
                stack.push((w, 0));
            }
        } else {
            post.push(*v);
            stack.pop();
        }
    }
    let rpo: Vec<usize> = post.into_iter().rev().collect();
    let mut rank = vec![usize::MAX; n];
    for (r, &v) in rpo.iter().enumerate() {
        rank[v] = r;
    }
    let mut preds = vec![Vec::new(); n];
    for (v, s) in succs.iter().enumerate().filter(|(v, _)| reachable[*v]) {
        for &w in s {
            preds[w].push(v);
        }
    }
    let idom = dominators(&rpo, &rank, &preds);
    let dominates = |h: usize, mut v: usize| loop {
        if v == h {
            return true;
        }
        if v == 0 {
            return false;
        }
        v = idom[v];
    };
    // Back edges, grouped by header.
    let mut latches: Vec<(usize, Vec<usize>)> = Vec::new();
    for &v in &rpo {
        for &h in &succs[v] {
            if dominates(h, v) {
                match latches.iter_mut().find(|(x, _)| *x == h) {
                    Some((_, l)) => l.push(v),
                    None => latches.push((h, vec![v])),
                }
            }
        }
    }
    let mut loops: Vec<Loop> = latches
        .into_iter()
        .map(|(header, sources)| {
            let mut inside = vec![false; n];
            inside[header] = true;
            let mut work = sources;
            while let Some(x) = work.pop() {
                if !inside[x] {
                    inside[x] = true;
                    work.extend(preds[x].iter().copied());
                }
            }
            Loop {
                header,
                body: (0..n).filter(|&i| inside[i]).collect(),
            }
        })
        .collect();
    loops.sort_by_key(|l| l.header);
    Flow { reachable, loops }
}

/// Immediate dominators (Cooper, Harvey and Kennedy's iteration over the reverse
/// postorder); the entry is its own.
fn dominators(rpo: &[usize], rank: &[usize], preds: &[Vec<usize>]) -> Vec<usize> {
    let mut idom = vec![usize::MAX; rank.len()];
    idom[rpo[0]] = rpo[0];
    let intersect = |idom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while rank[a] > rank[b] {
                a = idom[a];
            }
            while rank[b] > rank[a] {
                b = idom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in &rpo[1..] {
            let mut new = None;
            for &p in preds[v].iter().filter(|&&p| idom[p] != usize::MAX) {
                new = Some(new.map_or(p, |q| intersect(&idom, p, q)));
            }
            if let Some(d) = new
                && idom[v] != d
            {
                idom[v] = d;
                changed = true;
            }
        }
    }
    idom
}
