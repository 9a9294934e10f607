//! The bundle methods' pass where most examples violate their margin.
//!
//! Summed over a set of examples, `-psi` is
//!
//! ```text
//! sum_{i violates} (x_i in block y^_i - x_i in block y_i)
//!   = sum_i x_i in block y^_i  -  T,    T = sum_i x_i in block y_i,
//! ```
//!
//! since an example that does not violate has `y^_i = y_i` and adds the same
//! row to both sums. The left side adds two rows per violator, the right one
//! row per example and the fixed `T`. Near a random `w` (the first passes,
//! where every example violates) that is half the row additions; near the
//! optimum, where few violate, the left side is cheaper. So the pass cuts a
//! span into tiles of [`TILE`] examples from its start, scores a tile's
//! first block, and takes the right side for the whole tile when the
//! violators there say it pays ([`Multiclass::complement_pays`]).
//!
//! `T` of a tile depends only on its rows and labels: it is kept, by the
//! tile's first example and length, up to a quarter of the features' bytes
//! ([`TruthSums`]), and summed afresh with the tile's rows when it is not.
//! Either way it has the same bits, so a pass's sums depend on `w` and the
//! span only, never on what earlier passes kept. They equal the per-example
//! sums up to rounding; when the sums are exact (features on a grid, as
//! the bytes of images scaled by 1/255 in `f32` are, added in `f64`) they
//! are the same bits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Adds, Multiclass, RiskWork, Rows, RISK_BLOCK};
use crate::error::Result;
use crate::linalg::PackedRows;

/// Examples of a tile: blocks of [`RISK_BLOCK`], the first of which
/// decides the tile's form; longer than the spans the pass asks for (1,024
/// examples), so that a span is one tile and keeps one `T` (on the
/// Fashion-MNIST pass at a random `w`, tiles of 4 or 8 blocks were slower:
/// more `T`s to read and subtract).
pub(super) const TILE: usize = 22 * RISK_BLOCK;

/// The truth sums `T` of the tiles (`K d'` numbers each, class `k`'s rows
/// summed in example order into block `k`, the bias entry counting them),
/// by the tile's first example and length.
#[derive(Debug, Default)]
pub(super) struct TruthSums {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_tile: HashMap<(usize, usize), Arc<[f64]>>,
    bytes: usize,
}

impl TruthSums {
    fn get(&self, tile: (usize, usize)) -> Option<Arc<[f64]>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.by_tile.get(&tile).cloned()
    }

    /// Keeps `sums` for `tile` while the kept sums stay under `limit`
    /// bytes.
    fn keep(&self, tile: (usize, usize), sums: &[f64], limit: usize) {
        let bytes = std::mem::size_of_val(sums);
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.bytes + bytes <= limit && !kept.by_tile.contains_key(&tile) {
            kept.by_tile.insert(tile, Arc::from(sums));
            kept.bytes += bytes;
        }
    }

    /// How many tiles' sums are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.by_tile.len()
    }
}

impl Multiclass {
    /// Whether the complement form is the cheaper for a tile of `len`
    /// examples whose first block of `seen` has `violators`: the tile's
    /// violators, extrapolated, each add two rows; the complement adds one
    /// per example and then subtracts `T`, which reads `K` rows' worth of
    /// `f64` (twice a row's bytes). Only dense rows, and tiles of at least
    /// a block (a span of a few examples keeps no sums).
    fn complement_pays(&self, violators: usize, seen: usize, len: usize) -> bool {
        matches!(&*self.x, Rows::Dense(_))
            && len >= RISK_BLOCK
            && 2 * violators * len > (len + 2 * self.num_classes) * seen
    }

    /// The tile of `len <= TILE` examples from `first`, its hinges added to
    /// `risk` block by block and its `-psi` to `grad`: each violator's, or,
    /// when the first block's violators say so, every example's row in
    /// block `y^` and then `-T`.
    pub(super) fn tile_risk<'a>(
        &'a self,
        (first, len): (usize, usize),
        w: &[f64],
        packed: Option<&PackedRows<'_>>,
        grad: &mut [f64],
        work: &mut RiskWork<'a>,
        risk: &mut f64,
    ) -> Result<()> {
        let end = first + len;
        let mut blocks = (first..end)
            .step_by(RISK_BLOCK)
            .map(|b| (b, RISK_BLOCK.min(end - b)));
        // The first block decides the form of the whole tile.
        let (_, seen) = blocks.next().expect("a tile has examples");
        let (r, violators) = self.score_block(first, seen, w, packed, work)?;
        *risk += r;
        let complement = self.complement_pays(violators, seen, len);
        let kept = complement
            .then(|| self.truth_sums.get((first, len)))
            .flatten();
        let sum_truths = complement && kept.is_none();
        // `T` summed with the blocks' rows while they are in cache.
        let mut sums = std::mem::take(&mut work.tile_sums);
        if sum_truths {
            sums.clear();
            sums.resize(self.num_classes * self.x.d_ext(), 0.0);
        }
        let add = |work: &mut RiskWork<'a>, grad: &mut [f64], sums: &mut [f64]| {
            if complement {
                self.add_rows(Adds::Answers, grad, work);
                if sum_truths {
                    self.add_rows(Adds::Truths, sums, work);
                }
            } else {
                self.add_rows(Adds::Violators, grad, work);
            }
        };
        add(work, grad, &mut sums);
        for (b, n) in blocks {
            *risk += self.score_block(b, n, w, packed, work)?.0;
            add(work, grad, &mut sums);
        }
        if !complement {
            work.tile_sums = sums;
            return Ok(());
        }
        let t: &[f64] = match &kept {
            Some(t) => t,
            None => {
                let limit = self.x.m() * self.x.d() * std::mem::size_of::<f32>() / 4;
                self.truth_sums.keep((first, len), &sums, limit);
                &sums
            }
        };
        for (g, t) in grad.iter_mut().zip(t) {
            *g -= t;
        }
        work.tile_sums = sums;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{Corner, MaxOracle};

    /// A model whose features lie on a grid of 1/64 (every sum of them in
    /// `f64` is exact) with `m` examples of `d >= k` features and `k`
    /// classes; three examples in four have 3 at feature `y_i`.
    fn grid_model(m: usize, d: usize, k: usize) -> Multiclass {
        let y: Vec<usize> = (0..m).map(|i| (i * 7 + i / 3) % k).collect();
        let mut x: Vec<f32> = (0..m * d)
            .map(|j| ((j * 37 % 101) as f32 - 50.0) / 64.0)
            .collect();
        for (i, &yi) in y.iter().enumerate() {
            if i % 4 != 0 {
                x[i * d + yi] = 3.0;
            }
        }
        Multiclass::new(x, d, y, k, true).unwrap()
    }

    /// The span's `-psi` summed one violator at a time, as the corners add.
    fn per_example(model: &Multiclass, first: usize, n: usize, w: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; model.dim()];
        let mut c = Corner::new(model.dim());
        for i in first..first + n {
            c.clear();
            model.max_oracle(i, w, &mut c).unwrap();
            for (j, v) in c.sparse_entries() {
                g[j] -= v;
            }
        }
        g
    }

    #[test]
    fn the_complement_form_gives_the_per_example_sums_and_keeps_its_tiles() {
        let (m, d, k) = (3 * TILE + 60, 21, 5);
        let model = grid_model(m, d, k);
        // At w = 0 every example violates (the complement form in every
        // tile); at `w_k = e_k` those with the 3 do not (the direct form).
        let zero = vec![0.0; model.dim()];
        let mut fitted = vec![0.0; model.dim()];
        for c in 0..k {
            fitted[c * (d + 1) + c] = 1.0;
        }
        let first = 5;
        let n = m - 9;
        for (w, complement) in [(&zero, true), (&fitted, false)] {
            let before = model.truth_sums.len();
            let mut g = vec![0.0; model.dim()];
            model.block_risk_of(first, n, w, &mut g).unwrap();
            let want = per_example(&model, first, n, w);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&g), bits(&want), "complement {complement}");
            let tiles = n.div_ceil(TILE);
            let kept = model.truth_sums.len() - before;
            assert_eq!(kept, if complement { tiles } else { 0 });
        }
        // Kept sums give the bits of sums made afresh.
        let mut again = vec![0.0; model.dim()];
        model.block_risk_of(first, n, &zero, &mut again).unwrap();
        let mut fresh = vec![0.0; model.dim()];
        grid_model(m, d, k)
            .block_risk_of(first, n, &zero, &mut fresh)
            .unwrap();
        assert_eq!(again, fresh);
    }

    #[test]
    fn the_form_follows_the_first_blocks_violators() {
        let model = grid_model(10, 10, 10);
        // K = 10, a tile of 192: 2 v 192 > (192 + 20) 48.
        assert!(!model.complement_pays(26, 48, 192));
        assert!(model.complement_pays(27, 48, 192));
        // A short tile: 2 v 60 > (60 + 20) 48; none under a block.
        assert!(!model.complement_pays(32, 48, 60));
        assert!(model.complement_pays(33, 48, 60));
        assert!(!model.complement_pays(40, 40, 40));
        // With 96 classes, only a tile of more than 192 examples pays.
        let many = grid_model(20, 96, 96);
        assert!(!many.complement_pays(48, 48, 192));
        assert!(many.complement_pays(48, 48, 193));
    }
}
