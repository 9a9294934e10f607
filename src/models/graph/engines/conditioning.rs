//! Cut-set conditioning: exact maximisation on graphs that are a forest
//! after removing a few nodes (J. Pearl, "Probabilistic Reasoning in
//! Intelligent Systems", 1988, sec. 4.5.2; R. Dechter, "Constraint
//! Processing", 2003, ch. 10: the cycle-cutset method).
//!
//! A cut set `S` is chosen from the shape alone: the edges are visited in
//! order with a union-find over the nodes; an edge that would close a cycle
//! puts one of its ends (the one of higher degree, the lower index on ties)
//! into `S`, and every edge touching `S` leaves the graph. The edges left
//! are a forest. For every labelling of `S` (node order, the first node
//! fastest), each edge from `S` to a node `v` outside it adds its score to
//! `v`'s unary scores, and tree max-sum ([`super::TreeMaxSum`]) maximises
//! over the rest. The best full labelling (scored by
//! [`Potentials::score`], the first of equal scores) is the maximiser:
//! exact, in `O(prod_{s in S} states_s * sum over edges of states_u
//! states_v)`. A graph whose cut set has more than [`MAX_CONDITIONED`]
//! labellings is refused.

use super::forest::check_potentials;
use super::TreeMaxSum;
use crate::error::{Error, Result};
use crate::models::graph::{Engine, GraphShape, Pairwise, Potentials};

/// The most labellings of the cut set.
pub const MAX_CONDITIONED: u64 = 1 << 12;

/// Cut-set conditioning: exact on any graph whose cut set (see the module
/// documentation) has at most [`MAX_CONDITIONED`] labellings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Conditioning;

/// The cut set of `shape` (node indices, increasing).
pub fn cut_set(shape: &GraphShape) -> Vec<usize> {
    let n = shape.num_nodes();
    let mut degree = vec![0u32; n];
    for &[u, v] in shape.edges {
        degree[u as usize] += 1;
        degree[v as usize] += 1;
    }
    let mut up: Vec<usize> = (0..n).collect();
    fn find(up: &mut [usize], mut x: usize) -> usize {
        while up[x] != x {
            up[x] = up[up[x]];
            x = up[x];
        }
        x
    }
    let mut cut = vec![false; n];
    for &[u, v] in shape.edges {
        let (u, v) = (u as usize, v as usize);
        if cut[u] || cut[v] {
            continue;
        }
        let (ru, rv) = (find(&mut up, u), find(&mut up, v));
        if ru == rv {
            let pick = if degree[v] > degree[u] || (degree[v] == degree[u] && v < u) {
                v
            } else {
                u
            };
            cut[pick] = true;
        } else {
            up[ru] = rv;
        }
    }
    (0..n).filter(|&i| cut[i]).collect()
}

/// The number of labellings of the nodes `cut`, saturating.
pub fn cut_labellings(shape: &GraphShape, cut: &[usize]) -> u64 {
    cut.iter().fold(1u64, |acc, &i| {
        acc.saturating_mul(u64::from(shape.states[i]))
    })
}

impl Engine for Conditioning {
    fn name(&self) -> &str {
        "cut-set conditioning"
    }

    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        shape.check()?;
        let cut = cut_set(shape);
        let count = cut_labellings(shape, &cut);
        if count > MAX_CONDITIONED {
            return Err(Error::invalid_argument(format!(
                "cut-set conditioning: the cut set {cut:?} has {count} labellings \
                 (at most {MAX_CONDITIONED}); choose another engine"
            )));
        }
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        self.check_shape(&p.shape)?;
        check_potentials(p, labels)?;
        let shape = &p.shape;
        let n = shape.num_nodes();
        let cut = cut_set(shape);
        let mut in_cut = vec![false; n];
        for &c in &cut {
            in_cut[c] = true;
        }
        // The rest: its nodes renumbered, its edges and their tables.
        let mut index = vec![u32::MAX; n];
        let mut states = Vec::new();
        let mut unary_start = vec![0usize];
        for i in (0..n).filter(|&i| !in_cut[i]) {
            index[i] = states.len() as u32;
            states.push(shape.states[i]);
            unary_start.push(unary_start.last().unwrap() + shape.states[i] as usize);
        }
        let (mut edges, mut values, mut start) = (Vec::new(), Vec::new(), vec![0usize]);
        // Edges from the cut to the rest: (edge, the end in the rest, whether
        // it is the edge's first end).
        let mut links = Vec::new();
        for (e, &[u, v]) in shape.edges.iter().enumerate() {
            let (cu, cv) = (in_cut[u as usize], in_cut[v as usize]);
            if !cu && !cv {
                edges.push([index[u as usize], index[v as usize]]);
                for a in 0..shape.states[u as usize] {
                    for b in 0..shape.states[v as usize] {
                        values.push(p.pair(e, a, b));
                    }
                }
                start.push(values.len());
            } else if cu != cv {
                links.push((e, if cu { v } else { u } as usize, cv));
            }
        }
        let mut unary = vec![0.0; *unary_start.last().unwrap()];
        let mut assignment = vec![0u32; n];
        let mut rest = vec![0u32; states.len()];
        let mut best = f64::NEG_INFINITY;
        loop {
            // The rest's unary scores given the cut's states.
            for i in (0..n).filter(|&i| !in_cut[i]) {
                let at = unary_start[index[i] as usize];
                unary[at..at + shape.states[i] as usize].copy_from_slice(p.unary_of(i));
            }
            for &(e, node, first) in &links {
                let [u, v] = shape.edges[e];
                let at = unary_start[index[node] as usize];
                for s in 0..shape.states[node] {
                    unary[at + s as usize] += if first {
                        p.pair(e, s, assignment[v as usize])
                    } else {
                        p.pair(e, assignment[u as usize], s)
                    };
                }
            }
            let reduced = Potentials {
                example: p.example,
                shape: GraphShape {
                    states: &states,
                    edges: &edges,
                },
                unary: &unary,
                unary_start: &unary_start,
                pairwise: Pairwise::Tables {
                    values: &values,
                    start: &start,
                },
            };
            TreeMaxSum.maximize(&reduced, &mut rest)?;
            for i in (0..n).filter(|&i| !in_cut[i]) {
                assignment[i] = rest[index[i] as usize];
            }
            let score = p.score(&assignment);
            if score > best {
                best = score;
                labels.copy_from_slice(&assignment);
            }
            // The next labelling of the cut, its first node fastest.
            let mut k = 0;
            loop {
                if k == cut.len() {
                    return Ok(true);
                }
                let c = cut[k];
                assignment[c] += 1;
                if assignment[c] < shape.states[c] {
                    break;
                }
                assignment[c] = 0;
                k += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_graphs::{self, Problem};
    use super::super::testing::{self, Structure};
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn matches_exhaustive_search_on_random_graphs_with_and_without_cycles() {
        let mut rng = ChaCha8Rng::seed_from_u64(71);
        let mut with_cut = 0;
        for round in 0..1500 {
            let (n, edges) = test_graphs::random_graph(&mut rng, 8);
            let integer = rng.gen_bool(0.5);
            let states: Vec<u32> = (0..n).map(|_| rng.gen_range(1..=3)).collect();
            let g = Problem::build(
                states,
                edges,
                &mut rng,
                |r, _, _| test_graphs::value(r, integer),
                |r, _, su, sv| {
                    (0..su * sv)
                        .map(|_| test_graphs::value(r, integer))
                        .collect()
                },
            );
            let p = g.potentials();
            with_cut += usize::from(!cut_set(&p.shape).is_empty());
            testing::assert_optimal(&Conditioning, &p, &format!("round {round}"));
        }
        assert!(with_cut > 500, "{with_cut} graphs needed a cut set");
        for round in 0..300 {
            let g = testing::random_grids(&mut rng, Structure::Tree);
            testing::assert_optimal(&Conditioning, &g.potentials(), &format!("grid {round}"));
        }
    }

    #[test]
    fn the_cut_set_leaves_a_forest_and_a_big_one_is_refused() {
        let mut rng = ChaCha8Rng::seed_from_u64(72);
        for _ in 0..500 {
            let (n, edges) = test_graphs::random_graph(&mut rng, 12);
            let states = vec![2; n as usize];
            let shape = GraphShape {
                states: &states,
                edges: &edges,
            };
            let cut = cut_set(&shape);
            let kept: Vec<[u32; 2]> = edges
                .iter()
                .copied()
                .filter(|&[u, v]| !cut.contains(&(u as usize)) && !cut.contains(&(v as usize)))
                .collect();
            let rest = GraphShape {
                states: &states,
                edges: &kept,
            };
            TreeMaxSum.check_shape(&rest).unwrap();
        }
        // The complete graph on 14 ternary nodes: 12 cut nodes, 3^12 > 4,096.
        let states = vec![3; 14];
        let edges: Vec<[u32; 2]> = (0..14)
            .flat_map(|i| (i + 1..14).map(move |j| [i, j]))
            .collect();
        let shape = GraphShape {
            states: &states,
            edges: &edges,
        };
        let err = Conditioning.check_shape(&shape).unwrap_err();
        assert!(err.message().contains("labellings"), "{err}");
    }
}
