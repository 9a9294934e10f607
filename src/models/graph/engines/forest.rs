//! What the tree engines share: the check that a graph is a forest, the
//! check that an example's potentials fit its shape, and the max-sum
//! dynamic programme over a forest (Pearl, "Probabilistic Reasoning in
//! Intelligent Systems", 1988, ch. 4; in max-sum form e.g. Bishop, "Pattern
//! Recognition and Machine Learning", 2006, sec. 8.4.5), which calls an
//! engine's own rule for one edge's message.
//!
//! The walk: each component is rooted at its lowest node and visited breadth
//! first, a node's neighbours in edge order, so the order (and with it every
//! sum and every tie) depends only on the shape. Messages go from the last
//! node visited back to the roots; each node's belief is its unary scores
//! plus its children's messages, added in that fixed order. Each root takes
//! its best state (the lowest on ties) and each child the state its message
//! recorded as best for its parent's state.

use crate::error::{Error, Result};
use crate::models::graph::{GraphShape, Pairwise, Potentials};

/// The parent of a root.
const NO_PARENT: u32 = u32::MAX;

/// `Ok` when `shape` is valid and a forest, else an error naming the first
/// edge (in edge order) that closes a cycle, for `engine`.
pub(super) fn check_forest(shape: &GraphShape, engine: &str) -> Result<()> {
    shape.check()?;
    let n = shape.num_nodes();
    // Union-find: `up[x]` leads to the lowest node of `x`'s component.
    let mut up: Vec<u32> = (0..n as u32).collect();
    fn find(up: &mut [u32], mut x: u32) -> u32 {
        while up[x as usize] != x {
            let grand = up[up[x as usize] as usize];
            up[x as usize] = grand;
            x = grand;
        }
        x
    }
    for (e, &[u, v]) in shape.edges.iter().enumerate() {
        let (ru, rv) = (find(&mut up, u), find(&mut up, v));
        if ru == rv {
            let twin = shape.edges[..e]
                .iter()
                .position(|&[a, b]| (a, b) == (u, v) || (a, b) == (v, u));
            let why = match twin {
                Some(t) => format!("it joins the same two nodes as edge {t}"),
                None => format!("nodes {u} and {v} are already joined by earlier edges"),
            };
            return Err(Error::invalid_argument(format!(
                "edge {e} ({u}, {v}) closes a cycle ({why}); {engine} needs a tree or forest"
            )));
        }
        up[ru.max(rv) as usize] = ru.min(rv);
    }
    Ok(())
}

/// `Ok` when `p`'s arrays fit its shape and its scores are finite, and
/// `labels` has one entry per node; else an error naming the node or edge.
pub(super) fn check_potentials(p: &Potentials, labels: &[u32]) -> Result<()> {
    let shape = &p.shape;
    let n = shape.num_nodes();
    let m = shape.edges.len();
    if labels.len() != n {
        return Err(Error::dimension_mismatch(format!(
            "the labelling has {} entries for {n} nodes",
            labels.len()
        )));
    }
    if p.unary_start.len() != n + 1 {
        return Err(Error::dimension_mismatch(format!(
            "unary_start has {} entries for {n} nodes (needs {})",
            p.unary_start.len(),
            n + 1
        )));
    }
    for i in 0..n {
        let (a, b) = (p.unary_start[i], p.unary_start[i + 1]);
        if b < a || b - a != shape.states[i] as usize || b > p.unary.len() {
            return Err(Error::dimension_mismatch(format!(
                "node {i}'s unary scores span [{a}, {b}) of {} values, not its {} states",
                p.unary.len(),
                shape.states[i]
            )));
        }
        if let Some(s) = p.unary[a..b].iter().position(|x| !x.is_finite()) {
            return Err(Error::non_finite(format!(
                "node {i}'s unary score of state {s} is {}",
                p.unary[a + s]
            )));
        }
    }
    match p.pairwise {
        Pairwise::Tables { values, start } => {
            if start.len() != m + 1 {
                return Err(Error::dimension_mismatch(format!(
                    "the pairwise tables' start has {} entries for {m} edges (needs {})",
                    start.len(),
                    m + 1
                )));
            }
            for (e, &[u, v]) in shape.edges.iter().enumerate() {
                let (a, b) = (start[e], start[e + 1]);
                let want = shape.states[u as usize] as usize * shape.states[v as usize] as usize;
                if b < a || b - a != want || b > values.len() {
                    return Err(Error::dimension_mismatch(format!(
                        "edge {e} ({u}, {v})'s table spans [{a}, {b}) of {} values, \
                         not {want}",
                        values.len()
                    )));
                }
                if let Some(k) = values[a..b].iter().position(|x| !x.is_finite()) {
                    return Err(Error::non_finite(format!(
                        "edge {e} ({u}, {v})'s table entry {k} is {}",
                        values[a + k]
                    )));
                }
            }
        }
        Pairwise::Displacement { grids, cost } => {
            if grids.len() != n {
                return Err(Error::dimension_mismatch(format!(
                    "{} grids for {n} nodes",
                    grids.len()
                )));
            }
            for (i, g) in grids.iter().enumerate() {
                if u64::from(g.width) * u64::from(g.height) != u64::from(shape.states[i]) {
                    return Err(Error::dimension_mismatch(format!(
                        "node {i}'s grid is {} x {} for {} states",
                        g.width, g.height, shape.states[i]
                    )));
                }
            }
            if cost.len() != m {
                return Err(Error::dimension_mismatch(format!(
                    "{} displacement costs for {m} edges",
                    cost.len()
                )));
            }
            for (e, c) in cost.iter().enumerate() {
                if let Some(k) = c.iter().position(|x| !x.is_finite()) {
                    return Err(Error::non_finite(format!(
                        "edge {e}'s displacement cost coefficient {k} is {}",
                        c[k]
                    )));
                }
            }
        }
    }
    Ok(())
}

/// One edge's message to compute: from `child` (belief `belief`) to
/// `parent` over edge `edge`, with `child_first` when the edge is written
/// `[child, parent]`. The rule writes, for each parent state `a`,
/// `message[a] = max_b belief[b] + pairwise(a, b)` and `best[a]` a
/// maximising `b`.
pub(super) struct Edge<'a> {
    /// The edge's index.
    pub edge: usize,
    /// The node the message comes from and the node it goes to.
    pub child: usize,
    /// The node the message goes to.
    pub parent: usize,
    /// Whether the edge is written `[child, parent]` (else `[parent, child]`).
    pub child_first: bool,
    /// The child's unary scores plus its own children's messages.
    pub belief: &'a [f64],
}

/// The forest walk and the max-sum tables, reused between calls.
#[derive(Default)]
pub(super) struct MaxSum {
    /// `adj[adj_start[x]..adj_start[x + 1]]`: `x`'s `(neighbour, edge)`, in
    /// edge order.
    adj_start: Vec<usize>,
    adj: Vec<[u32; 2]>,
    /// The nodes in visiting order (each component's root first).
    order: Vec<u32>,
    /// Each node's parent and the edge to it (`NO_PARENT` for a root).
    parent: Vec<u32>,
    parent_edge: Vec<u32>,
    /// Whether the walk has reached the node.
    seen: Vec<bool>,
    /// `belief[start[x]..start[x + 1]]`: node `x`'s unary scores plus its
    /// children's messages.
    start: Vec<usize>,
    belief: Vec<f64>,
    /// `best[best_start[x] + a]`: node `x`'s best state for its parent in
    /// state `a`.
    best_start: Vec<usize>,
    best: Vec<u32>,
    /// One message.
    message: Vec<f64>,
}

impl MaxSum {
    /// Walks `shape` breadth first from the lowest node of each component;
    /// an error (that of [`check_forest`]) if it meets a cycle.
    fn walk(&mut self, shape: &GraphShape, engine: &str) -> Result<()> {
        let n = shape.num_nodes();
        self.adj_start.clear();
        self.adj_start.resize(n + 1, 0);
        for &[u, v] in shape.edges {
            self.adj_start[u as usize + 1] += 1;
            self.adj_start[v as usize + 1] += 1;
        }
        for x in 0..n {
            self.adj_start[x + 1] += self.adj_start[x];
        }
        self.adj.clear();
        self.adj.resize(2 * shape.edges.len(), [0, 0]);
        // `parent` counts the entries filled so far, then is reset below.
        self.parent.clear();
        self.parent.resize(n, 0);
        for (e, &[u, v]) in shape.edges.iter().enumerate() {
            for (x, y) in [(u, v), (v, u)] {
                let k = self.adj_start[x as usize] + self.parent[x as usize] as usize;
                self.adj[k] = [y, e as u32];
                self.parent[x as usize] += 1;
            }
        }
        self.parent.fill(NO_PARENT);
        self.parent_edge.clear();
        self.parent_edge.resize(n, NO_PARENT);
        self.seen.clear();
        self.seen.resize(n, false);
        self.order.clear();
        for root in 0..n {
            if self.seen[root] {
                continue;
            }
            self.seen[root] = true;
            self.order.push(root as u32);
            let mut head = self.order.len() - 1;
            while head < self.order.len() {
                let x = self.order[head] as usize;
                head += 1;
                for &[y, e] in &self.adj[self.adj_start[x]..self.adj_start[x + 1]] {
                    if e == self.parent_edge[x] {
                        continue;
                    }
                    if self.seen[y as usize] {
                        // A second path to `y`: name the cycle as the
                        // shape check does.
                        check_forest(shape, engine)?;
                        return Err(Error::internal(format!(
                            "{engine}: edge {e} closes a cycle the forest check missed"
                        )));
                    }
                    self.seen[y as usize] = true;
                    self.parent[y as usize] = x as u32;
                    self.parent_edge[y as usize] = e;
                    self.order.push(y);
                }
            }
        }
        Ok(())
    }

    /// Max-sum over the forest of `p`, each edge's message computed by
    /// `rule(edge, message, best)`; writes a maximising labelling into
    /// `labels`. `p` must have passed [`check_potentials`].
    pub(super) fn run(
        &mut self,
        p: &Potentials,
        labels: &mut [u32],
        engine: &str,
        mut rule: impl FnMut(&Edge, &mut [f64], &mut [u32]) -> Result<()>,
    ) -> Result<()> {
        let shape = &p.shape;
        self.walk(shape, engine)?;
        let n = shape.num_nodes();
        let states = shape.states;
        self.start.clear();
        self.start.push(0);
        self.best_start.clear();
        self.best_start.push(0);
        for x in 0..n {
            self.start.push(self.start[x] + states[x] as usize);
            let up = match self.parent[x] {
                NO_PARENT => 0,
                u => states[u as usize] as usize,
            };
            self.best_start.push(self.best_start[x] + up);
        }
        self.belief.clear();
        for x in 0..n {
            self.belief.extend_from_slice(p.unary_of(x));
        }
        self.best.clear();
        self.best.resize(self.best_start[n], 0);
        for &c in self.order.iter().rev() {
            let c = c as usize;
            let u = self.parent[c];
            if u == NO_PARENT {
                continue;
            }
            let u = u as usize;
            let edge = self.parent_edge[c] as usize;
            let states_u = states[u] as usize;
            self.message.clear();
            self.message.resize(states_u, 0.0);
            let this = Edge {
                edge,
                child: c,
                parent: u,
                child_first: shape.edges[edge][0] as usize == c,
                belief: &self.belief[self.start[c]..self.start[c + 1]],
            };
            let best = &mut self.best[self.best_start[c]..self.best_start[c + 1]];
            rule(&this, &mut self.message, best)?;
            let to = &mut self.belief[self.start[u]..self.start[u + 1]];
            for (b, m) in to.iter_mut().zip(&self.message) {
                *b += m;
            }
        }
        for &x in &self.order {
            let x = x as usize;
            labels[x] = match self.parent[x] {
                NO_PARENT => {
                    let b = &self.belief[self.start[x]..self.start[x + 1]];
                    let mut arg = 0;
                    for (s, &v) in b.iter().enumerate() {
                        if v > b[arg] {
                            arg = s;
                        }
                    }
                    arg as u32
                }
                u => self.best[self.best_start[x] + labels[u as usize] as usize],
            };
        }
        Ok(())
    }
}
