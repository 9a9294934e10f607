//! Maximum s-t flow and a minimum cut by the augmenting-path algorithm of
//! Y. Boykov and V. Kolmogorov, "An experimental comparison of
//! min-cut/max-flow algorithms for energy minimization in vision", IEEE PAMI
//! 26(9), 2004.
//!
//! Two search trees grow at once, `S` from the source and `T` from the sink;
//! both are kept between augmentations instead of being rebuilt:
//!
//! * growth: an active node takes its free neighbours that it reaches
//!   through non-saturated edges into its tree, until a residual edge joins
//!   a node of `S` to a node of `T` (an augmenting path);
//! * augmentation: the path's bottleneck is pushed; the tree edges that it
//!   saturates cut their children off, which become orphans;
//! * adoption: each orphan looks for a new parent in its own tree, through a
//!   non-saturated edge, whose chain of parents still ends at the terminal;
//!   the paper's distance heuristic picks the one closest to the terminal
//!   (distances are trusted only when stamped in the current round). An
//!   orphan that finds none becomes free, its children become orphans and
//!   its tree neighbours that could reach it become active.
//!
//! When no active node is left, `S` is exactly the set of nodes the source
//! still reaches in the residual network and `T` the set of nodes that still
//! reach the sink: `(S, V \ S)` and `(V \ T, T)` are minimum cuts and the
//! flow pushed is their capacity. [`MaxFlow::source_side`] reports the
//! second, the largest source side of any minimum cut (the source sides of
//! the minimum cuts are closed under union).
//!
//! Terminal edges are stored as one signed residual per node (`> 0`: from
//! the source, `< 0`: to the sink): a node given capacity `c_s` from the
//! source and `c_t` to the sink first sends `min(c_s, c_t)` straight through.
//!
//! Capacities are `f64`. Each augmentation pushes the exact minimum of the
//! path's residuals, so at least one residual becomes exactly `0`; every
//! test for a usable edge is `residual > 0` (a residual `<= 0` is
//! saturated), so rounding never lets flow through a saturated edge.
//! Active nodes and orphans are processed first in, first out, and a node's
//! edges in a fixed order: the same network gives the same cut.

use std::collections::VecDeque;

use crate::error::{Error, Result};

/// No arc / no parent.
const NONE: u32 = u32::MAX;
/// The parent of a tree root: the terminal itself.
const TERMINAL: u32 = u32::MAX - 1;
/// The parent of an orphan (its tree edge was saturated).
const ORPHAN: u32 = u32::MAX - 2;

/// Which search tree a node is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tree {
    Free,
    Source,
    Sink,
}

/// A reusable max-flow / min-cut solver: [`MaxFlow::reset`] empties it and
/// keeps its buffers, so repeated cuts of similar size allocate nothing.
#[derive(Debug, Clone, Default)]
pub struct MaxFlow {
    /// Each node's first outgoing arc (`NONE`: none).
    first: Vec<u32>,
    /// Each arc's next arc out of the same node.
    next: Vec<u32>,
    /// Each arc's head. Arcs come in pairs: `a ^ 1` is `a` reversed.
    head: Vec<u32>,
    /// Each arc's residual capacity.
    residual: Vec<f64>,
    /// Each node's terminal residual: `> 0` from the source, `< 0` to the
    /// sink.
    terminal: Vec<f64>,
    /// Each node's tree.
    tree: Vec<Tree>,
    /// The arc from a tree node to its parent, or `TERMINAL`, `ORPHAN`,
    /// `NONE` (free).
    parent: Vec<u32>,
    /// The round in which a node's `distance` was last known to be right.
    stamp: Vec<u64>,
    /// The number of tree edges from a node to its terminal (as of `stamp`).
    distance: Vec<u32>,
    /// Whether a node is in `active`.
    queued: Vec<bool>,
    /// Active nodes, first in first out (free nodes in it are skipped).
    active: VecDeque<u32>,
    /// Orphans waiting for adoption, first in first out.
    orphans: VecDeque<u32>,
    /// The current round (one per augmentation).
    round: u64,
    /// The flow pushed so far, straight-through terminal flow included.
    flow: f64,
}

impl MaxFlow {
    /// An empty solver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the network and gives it `num_nodes` nodes with no edges;
    /// the buffers are kept.
    pub fn reset(&mut self, num_nodes: usize) {
        self.first.clear();
        self.first.resize(num_nodes, NONE);
        self.next.clear();
        self.head.clear();
        self.residual.clear();
        self.terminal.clear();
        self.terminal.resize(num_nodes, 0.0);
        self.tree.clear();
        self.tree.resize(num_nodes, Tree::Free);
        self.parent.clear();
        self.parent.resize(num_nodes, NONE);
        self.stamp.clear();
        self.stamp.resize(num_nodes, 0);
        self.distance.clear();
        self.distance.resize(num_nodes, 0);
        self.queued.clear();
        self.queued.resize(num_nodes, false);
        self.active.clear();
        self.orphans.clear();
        self.round = 0;
        self.flow = 0.0;
    }

    /// The number of nodes (without the terminals).
    pub fn num_nodes(&self) -> usize {
        self.first.len()
    }

    /// A capacity is usable when finite and non-negative. `what` names the
    /// edge, and is only called when the capacity is refused: the networks
    /// are built once per oracle call, so nothing is formatted on success.
    fn check_capacity(what: impl FnOnce() -> String, cap: f64) -> Result<()> {
        if !cap.is_finite() {
            return Err(Error::non_finite(format!("{} has capacity {cap}", what())));
        }
        if cap < 0.0 {
            return Err(Error::invalid_argument(format!(
                "{} has negative capacity {cap}",
                what()
            )));
        }
        Ok(())
    }

    fn check_node(&self, node: usize) -> Result<()> {
        if node >= self.num_nodes() {
            return Err(Error::invalid_argument(format!(
                "node {node} does not exist (the network has {} nodes)",
                self.num_nodes()
            )));
        }
        Ok(())
    }

    /// Adds capacity `from_source` on the edge source -> `node` and
    /// `to_sink` on `node` -> sink (both may be added to several times).
    pub fn add_terminal(&mut self, node: usize, from_source: f64, to_sink: f64) -> Result<()> {
        self.check_node(node)?;
        Self::check_capacity(|| format!("the source edge of node {node}"), from_source)?;
        Self::check_capacity(|| format!("the sink edge of node {node}"), to_sink)?;
        let held = self.terminal[node];
        let (s, t) = if held > 0.0 {
            (held + from_source, to_sink)
        } else {
            (from_source, to_sink - held)
        };
        // min(s, t) goes straight through source -> node -> sink.
        self.flow += s.min(t);
        self.terminal[node] = s - t;
        Ok(())
    }

    /// Adds the edge `from -> to` with capacity `cap` and its reverse with
    /// `reverse_cap`.
    pub fn add_edge(&mut self, from: usize, to: usize, cap: f64, reverse_cap: f64) -> Result<()> {
        self.check_node(from)?;
        self.check_node(to)?;
        if from == to {
            return Err(Error::invalid_argument(format!(
                "edge ({from}, {to}) is a self loop"
            )));
        }
        Self::check_capacity(|| format!("edge ({from}, {to})"), cap)?;
        Self::check_capacity(|| format!("edge ({to}, {from})"), reverse_cap)?;
        if self.head.len() + 2 >= ORPHAN as usize {
            return Err(Error::invalid_argument("the network has too many edges"));
        }
        for (tail, tip, c) in [(from, to, cap), (to, from, reverse_cap)] {
            let arc = self.head.len() as u32;
            self.head.push(tip as u32);
            self.residual.push(c);
            self.next.push(self.first[tail]);
            self.first[tail] = arc;
        }
        Ok(())
    }

    /// Computes a maximum flow and returns its value; afterwards
    /// [`MaxFlow::source_side`] gives a minimum cut. Once per network: build
    /// it after [`MaxFlow::reset`], then solve.
    pub fn solve(&mut self) -> f64 {
        for node in 0..self.num_nodes() {
            let t = self.terminal[node];
            if t != 0.0 {
                self.tree[node] = if t > 0.0 { Tree::Source } else { Tree::Sink };
                self.parent[node] = TERMINAL;
                self.distance[node] = 1;
                self.activate(node);
            }
        }
        while let Some(middle) = self.grow() {
            self.round += 1;
            self.augment(middle);
            self.adopt();
        }
        self.flow
    }

    /// Whether `node` is on the source side of the minimum cut found by the
    /// last [`MaxFlow::solve`]: the largest source side of a minimum cut,
    /// every node that no longer reaches the sink in the residual network
    /// (the sink tree is exactly those that do: an inactive sink-tree node
    /// has every node with a residual edge into it in the sink tree).
    pub fn source_side(&self, node: usize) -> bool {
        self.tree[node] != Tree::Sink
    }

    /// Whether the source still reaches `node` in the residual network
    /// after the last [`MaxFlow::solve`]: `node` is on the source side of
    /// every minimum cut (the smallest source side is exactly these nodes).
    pub fn source_reaches(&self, node: usize) -> bool {
        self.tree[node] == Tree::Source
    }

    fn activate(&mut self, node: usize) {
        if !self.queued[node] {
            self.queued[node] = true;
            self.active.push_back(node as u32);
        }
    }

    /// The residual capacity that a tree edge between `child` and its
    /// parent via `arc` (out of the child) needs: towards the child in `S`,
    /// towards the parent in `T`.
    #[inline]
    fn tree_residual(&self, tree: Tree, arc: u32) -> f64 {
        match tree {
            Tree::Source => self.residual[(arc ^ 1) as usize],
            _ => self.residual[arc as usize],
        }
    }

    /// Growth: returns an arc from a node of `S` to a node of `T` with
    /// residual capacity (the middle of an augmenting path), or `None` when
    /// no active node is left. The node that found the path stays active.
    fn grow(&mut self) -> Option<u32> {
        while let Some(&front) = self.active.front() {
            let p = front as usize;
            let tree = self.tree[p];
            if tree != Tree::Free {
                let mut arc = self.first[p];
                while arc != NONE {
                    let a = arc as usize;
                    let q = self.head[a] as usize;
                    // The residual from p's tree side: p -> q in S, q -> p in T.
                    let open = match tree {
                        Tree::Source => self.residual[a] > 0.0,
                        _ => self.residual[a ^ 1] > 0.0,
                    };
                    if open {
                        match self.tree[q] {
                            Tree::Free => {
                                self.tree[q] = tree;
                                self.parent[q] = arc ^ 1;
                                self.stamp[q] = self.stamp[p];
                                self.distance[q] = self.distance[p] + 1;
                                self.activate(q);
                            }
                            other if other != tree => {
                                return Some(if tree == Tree::Source { arc } else { arc ^ 1 });
                            }
                            _ => {}
                        }
                    }
                    arc = self.next[a];
                }
            }
            self.active.pop_front();
            self.queued[p] = false;
        }
        None
    }

    /// Augmentation along the path through `middle`: pushes its bottleneck
    /// and makes orphans of the nodes whose tree edge it saturates.
    fn augment(&mut self, middle: u32) {
        let m = middle as usize;
        let s_end = self.head[m ^ 1] as usize;
        let t_end = self.head[m] as usize;
        // The bottleneck: the middle arc, the S side towards the source, the
        // T side towards the sink.
        let mut delta = self.residual[m];
        let mut node = s_end;
        while self.parent[node] != TERMINAL {
            let arc = self.parent[node];
            delta = delta.min(self.residual[(arc ^ 1) as usize]);
            node = self.head[arc as usize] as usize;
        }
        delta = delta.min(self.terminal[node]);
        let mut node = t_end;
        while self.parent[node] != TERMINAL {
            let arc = self.parent[node];
            delta = delta.min(self.residual[arc as usize]);
            node = self.head[arc as usize] as usize;
        }
        delta = delta.min(-self.terminal[node]);

        self.residual[m] -= delta;
        self.residual[m ^ 1] += delta;
        let mut node = s_end;
        while self.parent[node] != TERMINAL {
            let arc = self.parent[node] as usize;
            self.residual[arc ^ 1] -= delta;
            self.residual[arc] += delta;
            let up = self.head[arc] as usize;
            if self.residual[arc ^ 1] <= 0.0 {
                self.make_orphan(node);
            }
            node = up;
        }
        self.terminal[node] -= delta;
        if self.terminal[node] <= 0.0 {
            self.make_orphan(node);
        }
        let mut node = t_end;
        while self.parent[node] != TERMINAL {
            let arc = self.parent[node] as usize;
            self.residual[arc] -= delta;
            self.residual[arc ^ 1] += delta;
            let up = self.head[arc] as usize;
            if self.residual[arc] <= 0.0 {
                self.make_orphan(node);
            }
            node = up;
        }
        self.terminal[node] += delta;
        if self.terminal[node] >= 0.0 {
            self.make_orphan(node);
        }
        self.flow += delta;
    }

    fn make_orphan(&mut self, node: usize) {
        self.parent[node] = ORPHAN;
        self.orphans.push_back(node as u32);
    }

    /// Whether `node` still holds its own terminal edge (a root of its tree).
    #[inline]
    fn holds_terminal(&self, tree: Tree, node: usize) -> bool {
        match tree {
            Tree::Source => self.terminal[node] > 0.0,
            _ => self.terminal[node] < 0.0,
        }
    }

    /// The number of tree edges from `node` to its terminal, or `None` if
    /// its chain of parents meets an orphan. Stamps the chain it walked with
    /// the current round and its distances.
    fn origin_distance(&mut self, node: usize) -> Option<u32> {
        let mut steps = 0u32;
        let mut at = node;
        let total = loop {
            if self.stamp[at] == self.round {
                break steps + self.distance[at];
            }
            match self.parent[at] {
                TERMINAL => {
                    self.stamp[at] = self.round;
                    self.distance[at] = 1;
                    break steps + 1;
                }
                ORPHAN | NONE => return None,
                arc => {
                    steps += 1;
                    at = self.head[arc as usize] as usize;
                }
            }
        };
        // Stamp the walked chain: the distance drops by one per step.
        let mut d = total;
        let mut at = node;
        while self.stamp[at] != self.round {
            self.stamp[at] = self.round;
            self.distance[at] = d;
            d -= 1;
            at = self.head[self.parent[at] as usize] as usize;
        }
        Some(total)
    }

    /// Adoption: every orphan gets a new parent in its tree or becomes free.
    fn adopt(&mut self) {
        while let Some(orphan) = self.orphans.pop_front() {
            let p = orphan as usize;
            let tree = self.tree[p];
            if self.holds_terminal(tree, p) {
                self.parent[p] = TERMINAL;
                self.stamp[p] = self.round;
                self.distance[p] = 1;
                continue;
            }
            // The candidate parent closest to the terminal (first on ties).
            let mut best: Option<(u32, u32)> = None;
            let mut arc = self.first[p];
            while arc != NONE {
                let q = self.head[arc as usize] as usize;
                if self.tree[q] == tree && self.tree_residual(tree, arc) > 0.0 {
                    if let Some(d) = self.origin_distance(q) {
                        if best.is_none_or(|(_, b)| d < b) {
                            best = Some((arc, d));
                        }
                    }
                }
                arc = self.next[arc as usize];
            }
            if let Some((arc, d)) = best {
                self.parent[p] = arc;
                self.stamp[p] = self.round;
                self.distance[p] = d + 1;
                continue;
            }
            // No parent: p becomes free; its children become orphans and
            // the neighbours that could take it back become active.
            let mut arc = self.first[p];
            while arc != NONE {
                let a = arc as usize;
                let q = self.head[a] as usize;
                if self.tree[q] == tree {
                    if self.tree_residual(tree, arc) > 0.0 {
                        self.activate(q);
                    }
                    let up = self.parent[q];
                    if up != TERMINAL
                        && up != ORPHAN
                        && up != NONE
                        && self.head[up as usize] as usize == p
                    {
                        self.make_orphan(q);
                    }
                }
                arc = self.next[a];
            }
            self.tree[p] = Tree::Free;
            self.parent[p] = NONE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A network kept as given, to check the solver's cut against.
    struct Network {
        n: usize,
        source: Vec<f64>,
        sink: Vec<f64>,
        arcs: Vec<(usize, usize, f64)>,
    }

    impl Network {
        fn random(rng: &mut ChaCha8Rng, max_nodes: usize, integer: bool) -> Network {
            let n = rng.gen_range(1..=max_nodes);
            let cap = |rng: &mut ChaCha8Rng| -> f64 {
                if rng.gen_bool(0.3) {
                    0.0
                } else if integer {
                    f64::from(rng.gen_range(1..=5u32))
                } else {
                    rng.gen_range(0.0..3.0)
                }
            };
            let source: Vec<f64> = (0..n).map(|_| cap(rng)).collect();
            let sink: Vec<f64> = (0..n).map(|_| cap(rng)).collect();
            let mut arcs = Vec::new();
            for i in 0..n {
                for j in 0..n {
                    if i != j && rng.gen_bool(0.4) {
                        arcs.push((i, j, cap(rng)));
                    }
                }
            }
            Network {
                n,
                source,
                sink,
                arcs,
            }
        }

        /// Loads the network into `flow`, the arcs as pairs with their
        /// reverse capacity 0 or a second random arc.
        fn load(&self, flow: &mut MaxFlow) {
            flow.reset(self.n);
            for i in 0..self.n {
                flow.add_terminal(i, self.source[i], self.sink[i]).unwrap();
            }
            for &(i, j, c) in &self.arcs {
                flow.add_edge(i, j, c, 0.0).unwrap();
            }
        }

        /// The capacity of the cut whose source side is `in_s`.
        fn cut(&self, in_s: impl Fn(usize) -> bool) -> f64 {
            let mut c = 0.0;
            for i in 0..self.n {
                c += if in_s(i) {
                    self.sink[i]
                } else {
                    self.source[i]
                };
            }
            for &(i, j, cap) in &self.arcs {
                if in_s(i) && !in_s(j) {
                    c += cap;
                }
            }
            c
        }

        /// The minimum cut over every partition.
        fn brute_force_min_cut(&self) -> f64 {
            (0u32..1 << self.n)
                .map(|mask| self.cut(|i| mask >> i & 1 == 1))
                .fold(f64::INFINITY, f64::min)
        }

        /// An independent maximum flow: Edmonds-Karp (shortest augmenting
        /// paths by breadth-first search) on a dense residual matrix, the
        /// source being node `n` and the sink `n + 1`.
        fn edmonds_karp(&self) -> f64 {
            let m = self.n + 2;
            let (s, t) = (self.n, self.n + 1);
            let mut r = vec![vec![0.0f64; m]; m];
            for (i, (&from_s, &to_t)) in self.source.iter().zip(&self.sink).enumerate() {
                r[s][i] += from_s;
                r[i][t] += to_t;
            }
            for &(i, j, c) in &self.arcs {
                r[i][j] += c;
            }
            let mut total = 0.0;
            loop {
                let mut prev = vec![usize::MAX; m];
                prev[s] = s;
                let mut queue = VecDeque::from([s]);
                while let Some(x) = queue.pop_front() {
                    for y in 0..m {
                        if prev[y] == usize::MAX && r[x][y] > 0.0 {
                            prev[y] = x;
                            queue.push_back(y);
                        }
                    }
                }
                if prev[t] == usize::MAX {
                    return total;
                }
                let mut delta = f64::INFINITY;
                let mut y = t;
                while y != s {
                    delta = delta.min(r[prev[y]][y]);
                    y = prev[y];
                }
                let mut y = t;
                while y != s {
                    r[prev[y]][y] -= delta;
                    r[y][prev[y]] += delta;
                    y = prev[y];
                }
                total += delta;
            }
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn the_flow_equals_its_cut_and_the_brute_force_min_cut() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // One solver for every network: its buffers are reused.
        let mut flow = MaxFlow::new();
        for trial in 0..2000 {
            let net = Network::random(&mut rng, 9, trial % 2 == 0);
            net.load(&mut flow);
            let value = flow.solve();
            let cut = net.cut(|i| flow.source_side(i));
            let best = net.brute_force_min_cut();
            assert!(
                close(value, cut),
                "trial {trial}: flow {value}, its cut {cut}"
            );
            assert!(
                close(value, best),
                "trial {trial}: flow {value}, min cut {best}"
            );
            if trial % 2 == 0 {
                // Integer capacities: every sum is exact.
                assert_eq!(value, best, "trial {trial}");
            }
        }
    }

    #[test]
    fn larger_networks_match_edmonds_karp_and_are_deterministic() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let mut flow = MaxFlow::new();
        for trial in 0..60 {
            let net = Network::random(&mut rng, 60, trial % 3 != 0);
            net.load(&mut flow);
            let value = flow.solve();
            let side: Vec<bool> = (0..net.n).map(|i| flow.source_side(i)).collect();
            let reference = net.edmonds_karp();
            assert!(
                close(value, reference),
                "trial {trial}: {value} vs {reference}"
            );
            assert!(close(value, net.cut(|i| side[i])), "trial {trial}");
            // A fresh solver gives the same bits and the same cut.
            let mut fresh = MaxFlow::new();
            net.load(&mut fresh);
            assert_eq!(fresh.solve().to_bits(), value.to_bits());
            assert!((0..net.n).all(|i| fresh.source_side(i) == side[i]));
        }
    }

    #[test]
    fn bad_capacities_and_nodes_are_refused() {
        let mut flow = MaxFlow::new();
        flow.reset(3);
        let e = flow.add_edge(0, 1, -1.0, 0.0).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::InvalidArgument);
        assert!(e.message.contains("(0, 1)"), "{}", e.message);
        let e = flow.add_edge(0, 1, 1.0, f64::NAN).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::NonFinite);
        assert!(e.message.contains("(1, 0)"), "{}", e.message);
        assert!(flow
            .add_edge(0, 3, 1.0, 0.0)
            .unwrap_err()
            .message
            .contains("node 3"));
        assert!(flow.add_edge(2, 2, 1.0, 0.0).is_err());
        let e = flow.add_terminal(1, 1.0, f64::INFINITY).unwrap_err();
        assert!(e.message.contains("sink edge of node 1"), "{}", e.message);
        // Nothing refused was added: the network still cuts nothing.
        assert_eq!(flow.solve(), 0.0);
    }
}
