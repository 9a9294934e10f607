//! Random small graphs for the engines' tests: cycles, grids, complete
//! graphs, trees, random graphs and disconnected unions of these, with
//! owned potentials.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::models::graph::{GraphShape, Pairwise, Potentials};

/// One example's potentials, owned.
pub(super) struct Problem {
    pub states: Vec<u32>,
    pub edges: Vec<[u32; 2]>,
    pub unary: Vec<f64>,
    pub unary_start: Vec<usize>,
    pub values: Vec<f64>,
    pub start: Vec<usize>,
}

impl Problem {
    /// The engines' view of the problem.
    pub fn potentials(&self) -> Potentials<'_> {
        Potentials {
            example: 0,
            shape: GraphShape {
                states: &self.states,
                edges: &self.edges,
            },
            unary: &self.unary,
            unary_start: &self.unary_start,
            pairwise: Pairwise::Tables {
                values: &self.values,
                start: &self.start,
            },
        }
    }

    /// A problem on `states` and `edges` whose unary scores come from
    /// `unary(node, state)` and tables from `table(edge, states_u,
    /// states_v)` (row-major, `states_u * states_v` values).
    /// `rng` is handed to both (a `&mut ()` when they need none).
    pub fn build<R>(
        states: Vec<u32>,
        edges: Vec<[u32; 2]>,
        rng: &mut R,
        mut unary: impl FnMut(&mut R, usize, u32) -> f64,
        mut table: impl FnMut(&mut R, usize, u32, u32) -> Vec<f64>,
    ) -> Problem {
        let mut p = Problem {
            states,
            edges,
            unary: Vec::new(),
            unary_start: vec![0],
            values: Vec::new(),
            start: vec![0],
        };
        for (i, &s) in p.states.iter().enumerate() {
            for k in 0..s {
                p.unary.push(unary(rng, i, k));
            }
            p.unary_start.push(p.unary.len());
        }
        for (e, &[u, v]) in p.edges.iter().enumerate() {
            let (su, sv) = (p.states[u as usize], p.states[v as usize]);
            let t = table(rng, e, su, sv);
            assert_eq!(t.len(), (su * sv) as usize);
            p.values.extend(t);
            p.start.push(p.values.len());
        }
        p
    }
}

/// The edges of one random connected-or-not graph on nodes
/// `offset..offset + n` (`kind` picks the family).
fn family(rng: &mut ChaCha8Rng, kind: u32, offset: u32, n: u32, edges: &mut Vec<[u32; 2]>) {
    let mut push = |rng: &mut ChaCha8Rng, a: u32, b: u32| {
        // Either orientation: the tables' rows are the first node's states.
        if rng.gen_bool(0.5) {
            edges.push([offset + a, offset + b]);
        } else {
            edges.push([offset + b, offset + a]);
        }
    };
    match kind {
        // A cycle (a path for n = 2, nothing for n = 1).
        0 => {
            for i in 0..n.saturating_sub(1) {
                push(rng, i, i + 1);
            }
            if n > 2 {
                push(rng, n - 1, 0);
            }
        }
        // A grid, `width` columns.
        1 => {
            let width = rng.gen_range(1..=n.clamp(1, 4));
            for i in 0..n {
                if (i + 1) % width != 0 && i + 1 < n {
                    push(rng, i, i + 1);
                }
                if i + width < n {
                    push(rng, i, i + width);
                }
            }
        }
        // The complete graph.
        2 => {
            for i in 0..n {
                for j in i + 1..n {
                    push(rng, i, j);
                }
            }
        }
        // A random tree.
        3 => {
            for i in 1..n {
                let parent = rng.gen_range(0..i);
                push(rng, parent, i);
            }
        }
        // A random graph, each pair with probability 0.4, some twice.
        _ => {
            for i in 0..n {
                for j in i + 1..n {
                    if rng.gen_bool(0.4) {
                        push(rng, i, j);
                        if rng.gen_bool(0.1) {
                            push(rng, j, i);
                        }
                    }
                }
            }
        }
    }
}

/// A random graph of `1..=max_nodes` nodes: one family, or the disjoint
/// union of two (a disconnected graph).
pub(super) fn random_graph(rng: &mut ChaCha8Rng, max_nodes: u32) -> (u32, Vec<[u32; 2]>) {
    let n = rng.gen_range(1..=max_nodes);
    let mut edges = Vec::new();
    if n >= 2 && rng.gen_bool(0.25) {
        let first = rng.gen_range(1..n);
        let (k1, k2) = (rng.gen_range(0..5), rng.gen_range(0..5));
        family(rng, k1, 0, first, &mut edges);
        family(rng, k2, first, n - first, &mut edges);
    } else {
        let kind = rng.gen_range(0..5);
        family(rng, kind, 0, n, &mut edges);
    }
    (n, edges)
}

/// A random score: integers in `-3..=3` (many exact ties) when `integer`,
/// else uniform in `[-2, 2)`.
pub(super) fn value(rng: &mut ChaCha8Rng, integer: bool) -> f64 {
    if integer {
        f64::from(rng.gen_range(-3i32..=3))
    } else {
        rng.gen_range(-2.0..2.0)
    }
}

/// Whether `a` and `b` agree to `1e-9` relative (absolute near zero).
pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}
