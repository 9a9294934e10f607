//! Exhaustive search: every labelling, in lexicographic order. The tests'
//! reference for every other engine, and usable on tiny graphs.

use crate::error::{Error, Result};
use crate::models::graph::{Engine, GraphShape, Potentials};

/// The most labellings [`Exhaustive`] accepts (about 16 million).
pub const MAX_LABELLINGS: u64 = 1 << 24;

/// Exhaustive search over every labelling: exact, `O(prod_i states_i *
/// (nodes + edges))`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exhaustive;

impl Engine for Exhaustive {
    fn name(&self) -> &str {
        "exhaustive search"
    }

    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        let mut count: u64 = 1;
        for &s in shape.states {
            count = count.saturating_mul(u64::from(s));
        }
        if count > MAX_LABELLINGS {
            return Err(Error::invalid_argument(format!(
                "exhaustive search over {} nodes would visit {count} labellings \
                 (at most {MAX_LABELLINGS}); choose another engine",
                shape.num_nodes()
            )));
        }
        Ok(())
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        let states = p.shape.states;
        let mut y = vec![0u32; states.len()];
        let mut best = f64::NEG_INFINITY;
        labels.iter_mut().for_each(|l| *l = 0);
        loop {
            let s = p.score(&y);
            // Strictly greater: ties keep the lexicographically first.
            if s > best {
                best = s;
                labels.copy_from_slice(&y);
            }
            // The next labelling, node 0 fastest.
            let mut i = 0;
            loop {
                if i == y.len() {
                    return Ok(true);
                }
                y[i] += 1;
                if y[i] < states[i] {
                    break;
                }
                y[i] = 0;
                i += 1;
            }
        }
    }
}
