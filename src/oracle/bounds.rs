//! Box constraints `lo <= w <= hi` on chosen coordinates: part of the
//! problem's statement, shared by the bundle methods (their constrained
//! reduced problem) and BCFW (its clipped primal point), so it lives below
//! both.

use crate::error::{Error, Result};

/// Per-coordinate bounds; infinite bounds leave a coordinate free.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounds {
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl Bounds {
    /// Checks `lo[j] <= hi[j]`, no NaN, and the lengths.
    pub fn new(lo: Vec<f64>, hi: Vec<f64>, dim: usize) -> Result<Self> {
        if lo.len() != dim || hi.len() != dim {
            return Err(Error::dimension_mismatch(format!(
                "bounds have lengths {} and {} but the problem's dimension is {dim}",
                lo.len(),
                hi.len()
            )));
        }
        for j in 0..dim {
            if lo[j].is_nan()
                || hi[j].is_nan()
                || lo[j] > hi[j]
                || lo[j] == f64::INFINITY
                || hi[j] == f64::NEG_INFINITY
            {
                return Err(Error::invalid_argument(format!(
                    "bounds of coordinate {j} are [{}, {}]: need lo <= hi, lo < +inf, hi > -inf, no NaN",
                    lo[j], hi[j]
                )));
            }
        }
        Ok(Bounds { lo, hi })
    }

    /// `w >= 0` on the given coordinates, free elsewhere.
    pub fn non_negative(coords: &[usize], dim: usize) -> Result<Self> {
        let mut lo = vec![f64::NEG_INFINITY; dim];
        for &j in coords {
            if j >= dim {
                return Err(Error::dimension_mismatch(format!(
                    "coordinate {j} is out of range for dimension {dim}"
                )));
            }
            lo[j] = 0.0;
        }
        Bounds::new(lo, vec![f64::INFINITY; dim], dim)
    }

    /// The lower bound of every coordinate (`-inf` when free).
    pub fn lower(&self) -> &[f64] {
        &self.lo
    }
    /// The upper bound of every coordinate (`+inf` when free).
    pub fn upper(&self) -> &[f64] {
        &self.hi
    }

    /// Whether coordinate `j` has a finite bound.
    pub fn is_constrained(&self, j: usize) -> bool {
        self.lo[j] > f64::NEG_INFINITY || self.hi[j] < f64::INFINITY
    }

    /// `x` clipped to coordinate `j`'s interval.
    pub fn clip(&self, j: usize, x: f64) -> f64 {
        x.max(self.lo[j]).min(self.hi[j])
    }

    /// `v` clipped to the box, coordinate by coordinate.
    pub fn clip_all(&self, v: &[f64]) -> Vec<f64> {
        v.iter()
            .enumerate()
            .map(|(j, &x)| self.clip(j, x))
            .collect()
    }

    /// `h_j(x) = x^2/2 - dist(x, [lo_j, hi_j])^2/2`.
    pub fn h(&self, j: usize, x: f64) -> f64 {
        let c = self.clip(j, x);
        c * x - 0.5 * c * c
    }
}
