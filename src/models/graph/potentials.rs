//! What an inference engine is given: the shape of one example's graph and
//! its (loss-augmented) scores. The model computes these with the library's
//! kernels; an engine only maximises over labellings.
//!
//! The objective an engine maximises over labellings `y` (node `i` in state
//! `y_i < states[i]`):
//!
//! ```text
//! score(y) = sum_i unary_i(y_i) + sum_e pairwise_e(y_u, y_v)      e = (u, v)
//! ```

use crate::error::{Error, Result};

/// The structure of one example's graph: nodes with a number of states
/// each, and edges between them. Checked when the model is built
/// ([`GraphShape::check`]): every state count is at least 1, every edge
/// joins two different existing nodes.
#[derive(Debug, Clone, Copy)]
pub struct GraphShape<'a> {
    /// The number of states of each node.
    pub states: &'a [u32],
    /// The edges, each `[u, v]` with `u != v` (an edge's table has `u`'s
    /// states as rows, `v`'s as columns).
    pub edges: &'a [[u32; 2]],
}

impl GraphShape<'_> {
    /// The number of nodes.
    #[inline]
    pub fn num_nodes(&self) -> usize {
        self.states.len()
    }

    /// The first problem of the shape: a node with zero states, an edge to a
    /// node that does not exist, or a self loop. The message names the node
    /// or edge (the caller adds the example).
    pub fn check(&self) -> Result<()> {
        if let Some(i) = self.states.iter().position(|&s| s == 0) {
            return Err(Error::invalid_argument(format!("node {i} has zero states")));
        }
        let n = self.states.len();
        for (e, &[u, v]) in self.edges.iter().enumerate() {
            for node in [u, v] {
                if node as usize >= n {
                    return Err(Error::invalid_argument(format!(
                        "edge {e} ({u}, {v}) joins node {node}, which does not exist \
                         (the graph has {n} nodes)"
                    )));
                }
            }
            if u == v {
                return Err(Error::invalid_argument(format!(
                    "edge {e} is a self loop on node {u}"
                )));
            }
        }
        Ok(())
    }
}

/// A node's candidate positions when its states are the cells of a grid
/// (the landmark and pose models): state `s` is the position
/// `(origin[0] + s % width, origin[1] + s / width)`, so `states = width *
/// height`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// The position of state 0 (image coordinates, x then y).
    pub origin: [i32; 2],
    /// Columns of the grid (positions along x).
    pub width: u32,
    /// Rows of the grid (positions along y).
    pub height: u32,
}

impl Grid {
    /// The position `(x, y)` of state `s`.
    #[inline]
    pub fn position(&self, s: u32) -> [i64; 2] {
        [
            i64::from(self.origin[0]) + i64::from(s % self.width),
            i64::from(self.origin[1]) + i64::from(s / self.width),
        ]
    }
}

/// The pairwise terms of one example.
#[derive(Debug, Clone, Copy)]
pub enum Pairwise<'a> {
    /// A table per edge: edge `e = (u, v)` scores
    /// `values[start[e] + a * states[v] + b]` for `y_u = a`, `y_v = b`
    /// (`start` has one entry per edge plus the end).
    Tables {
        /// Every edge's table, row-major, one after another.
        values: &'a [f64],
        /// Where each edge's table starts; `start[edges.len()]` is the end.
        start: &'a [usize],
    },
    /// A quadratic displacement cost per edge between nodes whose states
    /// are grid positions: edge `e = (u, v)` scores
    /// `-(c[0] dx + c[1] dy + c[2] dx^2 + c[3] dy^2)` with
    /// `(dx, dy) = position_v(y_v) - position_u(y_u)`. With `c[2], c[3] >= 0`
    /// the score is concave in the displacement and the generalised distance
    /// transform maximises over `y_u` for every `y_v` in linear time.
    Displacement {
        /// Each node's grid (`width * height = states[i]`).
        grids: &'a [Grid],
        /// Each edge's cost coefficients `(dx, dy, dx^2, dy^2)`.
        cost: &'a [[f64; 4]],
    },
}

/// One example's scores: what [`super::Engine::maximize`] maximises.
#[derive(Debug, Clone, Copy)]
pub struct Potentials<'a> {
    /// The example they are of (for a caller's decoder that keeps data of
    /// its own per example).
    pub example: usize,
    /// The graph.
    pub shape: GraphShape<'a>,
    /// `unary[unary_start[i] + s]`: the score of node `i` in state `s`
    /// (loss augmentation included).
    pub unary: &'a [f64],
    /// Where each node's scores start; `unary_start[num_nodes]` is the end.
    pub unary_start: &'a [usize],
    /// The edges' scores.
    pub pairwise: Pairwise<'a>,
}

impl Potentials<'_> {
    /// The scores of node `i`'s states.
    #[inline]
    pub fn unary_of(&self, i: usize) -> &[f64] {
        &self.unary[self.unary_start[i]..self.unary_start[i + 1]]
    }

    /// The score of edge `e` with its ends in states `a` (first node) and
    /// `b` (second node).
    #[inline]
    pub fn pair(&self, e: usize, a: u32, b: u32) -> f64 {
        let [u, v] = self.shape.edges[e];
        match self.pairwise {
            Pairwise::Tables { values, start } => {
                values[start[e] + a as usize * self.shape.states[v as usize] as usize + b as usize]
            }
            Pairwise::Displacement { grids, cost } => {
                let [xu, yu] = grids[u as usize].position(a);
                let [xv, yv] = grids[v as usize].position(b);
                let (dx, dy) = ((xv - xu) as f64, (yv - yu) as f64);
                let c = cost[e];
                -(c[0] * dx + c[1] * dy + c[2] * dx * dx + c[3] * dy * dy)
            }
        }
    }

    /// `score(y)`: the objective of a labelling, summed in node order then
    /// edge order (the reference the engines are tested against).
    pub fn score(&self, labels: &[u32]) -> f64 {
        let mut s = 0.0;
        for (i, &y) in labels.iter().enumerate() {
            s += self.unary_of(i)[y as usize];
        }
        for (e, &[u, v]) in self.shape.edges.iter().enumerate() {
            s += self.pair(e, labels[u as usize], labels[v as usize]);
        }
        s
    }
}
