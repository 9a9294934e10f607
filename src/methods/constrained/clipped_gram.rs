//! `H = K - Z_S Z_S^T`: the Gram matrix of the box dual's QP once the
//! clipped coordinates `S` are held at their bounds (`dual::Reduced`'s
//! active-set rounds), with `Z_S` the planes (and rows) on `S`.
//!
//! `H` depends on the planes and on `S` only: not on the prox constant, the
//! centre, or which bound a coordinate is clipped at. So it is kept between
//! the active-set rounds and between the solves on the same planes (the
//! `alpha = 0` problem, the prox step and every alpha of the prox search),
//! keyed by the bundle's generation and the rows' caps. When `S` changes by
//! fewer coordinates than a rebuild would sum, each changed coordinate `j`
//! costs one rank-one term, `- z_j z_j^T` when it joins `S` and `+ z_j
//! z_j^T` when it leaves (`O(planes^2)`), instead of a rebuild (`O(planes^2
//! |S|)`). After [`MAX_UPDATES`] such terms `H` is rebuilt, so rounding
//! does not pile up. When every coordinate is bounded and fewer are free
//! than clipped, the rebuild sums the free ones, `H = Z_F Z_F^T` (fewer
//! terms, no cancellation); the rank-one terms have the same signs.

/// Rank-one terms applied since the last rebuild before `H` is rebuilt.
const MAX_UPDATES: usize = 64;

/// A Gram matrix held as its columns.
pub(super) struct DenseGram(pub(super) Vec<Vec<f64>>);

impl crate::qp::Gram for DenseGram {
    fn size(&self) -> usize {
        self.0.len()
    }
    fn column(&self, j: usize) -> &[f64] {
        &self.0[j]
    }
}

/// What `H` is computed from: `K` (`m x m`, row-major), the planes on the
/// bounded coordinates (`m x nb`, row-major), whether every coordinate of
/// `w` is bounded, and the key of the planes they came from.
pub(super) struct Source<'a> {
    pub(super) key: (u64, &'a [f64]),
    pub(super) k: &'a [f64],
    pub(super) z: &'a [f64],
    pub(super) m: usize,
    pub(super) nb: usize,
    pub(super) all_bounded: bool,
}

/// `H` for the last set asked for, and what it was built from.
#[derive(Default)]
pub(super) struct ClippedGram {
    key: Option<(u64, Vec<f64>)>,
    /// Per bounded coordinate: whether it is in `S`.
    members: Vec<bool>,
    h: Option<DenseGram>,
    updates: usize,
    /// Rebuilds and rank-one terms so far (for tests).
    pub(super) rebuilds: u64,
    pub(super) rank_one: u64,
}

impl ClippedGram {
    /// `H` for the clipped set `set` (one flag per bounded coordinate),
    /// updated from the last one when the planes are the same.
    pub(super) fn sync(&mut self, src: &Source<'_>, set: &[bool]) -> &DenseGram {
        debug_assert_eq!(set.len(), src.nb);
        let same_planes = self
            .key
            .as_ref()
            .is_some_and(|(g, caps)| *g == src.key.0 && caps.as_slice() == src.key.1)
            && self.h.as_ref().is_some_and(|h| h.0.len() == src.m)
            && self.members.len() == src.nb;
        let changed: Vec<usize> = if same_planes {
            (0..src.nb).filter(|&j| self.members[j] != set[j]).collect()
        } else {
            Vec::new()
        };
        let clipped = set.iter().filter(|&&s| s).count();
        let direct = src.all_bounded && src.nb - clipped < clipped;
        let rebuild_terms = if direct { src.nb - clipped } else { clipped };
        if !same_planes
            || changed.len() >= rebuild_terms.max(1)
            || self.updates + changed.len() > MAX_UPDATES
        {
            self.h = Some(build(src, set, direct));
            self.key = Some((src.key.0, src.key.1.to_vec()));
            self.updates = 0;
            self.rebuilds += 1;
        } else if let Some(h) = self.h.as_mut() {
            for &j in &changed {
                let sign = if set[j] { -1.0 } else { 1.0 };
                rank_one(&mut h.0, src.z, src.nb, j, sign);
            }
            self.updates += changed.len();
            self.rank_one += changed.len() as u64;
        }
        self.members.clear();
        self.members.extend_from_slice(set);
        self.h.as_ref().expect("built above")
    }
}

/// `H` from scratch: `K - sum_{j in S} z_j z_j^T`, or `sum_{j not in S}
/// z_j z_j^T` (`direct`).
fn build(src: &Source<'_>, set: &[bool], direct: bool) -> DenseGram {
    let m = src.m;
    let mut cols: Vec<Vec<f64>> = (0..m)
        .map(|i| {
            if direct {
                vec![0.0; m]
            } else {
                src.k[i * m..(i + 1) * m].to_vec()
            }
        })
        .collect();
    let sign = if direct { 1.0 } else { -1.0 };
    for j in (0..src.nb).filter(|&j| set[j] != direct) {
        rank_one(&mut cols, src.z, src.nb, j, sign);
    }
    DenseGram(cols)
}

/// `cols += sign z_j z_j^T`, `z_j` column `j` of the row-major `m x nb`
/// matrix `z`.
fn rank_one(cols: &mut [Vec<f64>], z: &[f64], nb: usize, j: usize, sign: f64) {
    for (i, col) in cols.iter_mut().enumerate() {
        let zi = sign * z[i * nb + j];
        if zi != 0.0 {
            for (k, h) in col.iter_mut().enumerate() {
                *h += zi * z[k * nb + j];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `K = Z Z^T` of random planes whose first `nb` coordinates are the
    /// bounded ones.
    fn planes(m: usize, dim: usize, nb: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let a: Vec<Vec<f64>> = (0..m)
            .map(|_| (0..dim).map(|_| rng.gen_range(-1.0..1.0)).collect())
            .collect();
        let mut k = vec![0.0; m * m];
        for i in 0..m {
            for l in 0..m {
                k[i * m + l] = a[i].iter().zip(&a[l]).map(|(x, y)| x * y).sum();
            }
        }
        let z = a.iter().flat_map(|r| r[..nb].to_vec()).collect();
        (k, z)
    }

    fn largest_difference(a: &DenseGram, b: &DenseGram) -> f64 {
        a.0.iter()
            .flatten()
            .zip(b.0.iter().flatten())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    }

    /// A run of sets, each a few coordinates from the last: `H` updated by
    /// rank-one terms agrees with `H` rebuilt for the same set (to
    /// rounding), the updates are taken when cheaper, and new planes or
    /// caps rebuild.
    #[test]
    fn rank_one_updates_agree_with_a_rebuilt_h() {
        for (dim, nb) in [(12, 9), (9, 9)] {
            let m = 15;
            let (k, z) = planes(m, dim, nb, 3);
            let caps = [1.0];
            let src = Source {
                key: (7, &caps),
                k: &k,
                z: &z,
                m,
                nb,
                all_bounded: nb == dim,
            };
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut kept = ClippedGram::default();
            let mut set = vec![false; nb];
            (0..nb).step_by(2).for_each(|j| set[j] = true);
            for round in 0..40 {
                if round > 0 {
                    let j = rng.gen_range(0..nb);
                    set[j] = !set[j];
                }
                let updated = kept.sync(&src, &set);
                let clipped = set.iter().filter(|&&s| s).count();
                let rebuilt = build(&src, &set, false);
                let diff = largest_difference(updated, &rebuilt);
                assert!(
                    diff <= 1e-12 * nb as f64,
                    "{dim} {nb} round {round}: {diff}"
                );
                assert!(clipped <= nb);
            }
            assert!(kept.rank_one >= 20, "{}", kept.rank_one);
            assert!(kept.rebuilds < 10, "{}", kept.rebuilds);
            // New planes (another generation) rebuild.
            let before = kept.rebuilds;
            let src2 = Source {
                key: (8, &caps),
                ..src
            };
            kept.sync(&src2, &set);
            assert_eq!(kept.rebuilds, before + 1);
        }
    }
}
