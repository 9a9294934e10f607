//! The cutting-plane bundle: plane storage, the Gram matrix kept up to date
//! one column per new plane, the dual weights, removal of planes that stay
//! inactive, and aggregation when the buffer is full.
//!
//! A plane of part `p` is `r(w) >= <a, w> + b`, valid for the part's risk
//! everywhere. Planes model the risk `R`, not `F`, so they stay valid when
//! lambda changes.

mod certify;
mod slope;

use rayon::prelude::*;

use crate::rounding::gamma;
pub use certify::{Certified, PlaneError};
pub(crate) use slope::release_thread_scratch;
pub use slope::Slope;

use crate::qp::Gram;

/// Old planes per task of the Gram update (a multiple of the kernel's
/// 3-row tile).
const GRAM_GROUP: usize = 12;

/// A plane as the bundle keeps it: its slope dense or sparse ([`Slope`]).
#[derive(Debug, Clone)]
pub struct Kept {
    /// The part of the risk this plane models.
    pub part: usize,
    /// The slope `a`.
    pub slope: Slope,
    /// The offset: the plane is `<a, w> + b`.
    pub b: f64,
    /// How far the plane may lie above an exact minorant (rounding).
    pub err: PlaneError,
}

/// One cutting plane: `R_p(w) >= <a, w> + b`.
#[derive(Debug, Clone)]
pub struct Plane {
    /// The part of the risk this plane models.
    pub part: usize,
    /// The slope: a subgradient of the part (sparse when most of it is 0).
    pub a: Slope,
    /// The offset: the plane is `<a, w> + b`.
    pub b: f64,
    /// How far the plane may lie above an exact minorant (rounding).
    pub err: PlaneError,
}

/// A point and every kept plane's dot product with it, in plane order.
#[derive(Debug, Clone)]
struct PointDots {
    point: Vec<f64>,
    dots: Vec<f64>,
}

/// The planes, their Gram matrix and the dual weights of the last QP solves.
#[derive(Debug, Clone)]
pub struct Bundle {
    dim: usize,
    num_parts: usize,
    capacity: usize,
    planes: Vec<Kept>,
    /// `gram[i][j] = <a_i, a_j>`; row `i` is also column `i`.
    gram: Vec<Vec<f64>>,
    /// Dual weights of the lambda-only (alpha = 0) reduced problem.
    pub beta: Vec<f64>,
    /// Dual weights of the last proximal reduced problem.
    pub beta_prox: Vec<f64>,
    /// Iterations since the plane last had a positive weight.
    idle: Vec<u32>,
    /// Planes removed or aggregated so far (for the history).
    pub removed: u64,
    /// How many times a full bundle aggregated planes.
    pub aggregations: u64,
    /// Changes whenever the planes change (added, removed, aggregated):
    /// what a cache of anything computed from the planes is keyed by.
    generation: u64,
    /// Every plane's dot product with one point (the prox-centre), taken
    /// during the Gram update by [`Bundle::add_and_dot`] at no extra read of
    /// the planes; [`Bundle::dots`] of that point then costs nothing.
    point_dots: Option<Box<PointDots>>,
    /// The solver's pool for the parallel dot products. The solver may run on
    /// the caller's thread (oracles that must stay there, e.g. MATLAB's), so
    /// the bundle enters the pool itself; `None` uses rayon's current pool.
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
}

impl Gram for Bundle {
    fn size(&self) -> usize {
        self.planes.len()
    }
    fn column(&self, j: usize) -> &[f64] {
        &self.gram[j]
    }
}

impl Bundle {
    /// An empty bundle for `num_parts` parts holding at most `capacity`
    /// planes (raised to `4 * num_parts` so aggregation always makes room).
    pub fn new(dim: usize, num_parts: usize, capacity: usize) -> Self {
        Bundle {
            dim,
            num_parts,
            capacity: capacity.max(4 * num_parts),
            planes: Vec::new(),
            gram: Vec::new(),
            beta: Vec::new(),
            beta_prox: Vec::new(),
            idle: Vec::new(),
            removed: 0,
            aggregations: 0,
            generation: 0,
            point_dots: None,
            pool: None,
        }
    }

    /// Runs the parallel dot products in `pool`.
    pub fn set_pool(&mut self, pool: std::sync::Arc<rayon::ThreadPool>) {
        self.pool = Some(pool);
    }

    fn in_pool<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }

    /// Runs `a` and `b` at the same time on the solver's pool (one after
    /// the other on one thread).
    pub fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        self.in_pool(|| rayon::join(a, b))
    }

    /// The length of the planes' slopes.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The number of parts the model has.
    pub fn num_parts(&self) -> usize {
        self.num_parts
    }
    /// The number of planes kept.
    pub fn len(&self) -> usize {
        self.planes.len()
    }
    /// Whether no plane is kept.
    pub fn is_empty(&self) -> bool {
        self.planes.is_empty()
    }
    /// The most planes kept before aggregation.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// A number that changes whenever the planes do (the same number means
    /// the same planes in the same order).
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// The planes kept.
    pub fn planes(&self) -> &[Kept] {
        &self.planes
    }
    /// The part of every plane, in plane order.
    pub fn parts_of_planes(&self) -> Vec<usize> {
        self.planes.iter().map(|p| p.part).collect()
    }
    /// The offsets `b`, in plane order.
    pub fn offsets(&self) -> Vec<f64> {
        self.planes.iter().map(|p| p.b).collect()
    }
    /// Planes with a positive weight in either dual.
    pub fn active(&self) -> usize {
        (0..self.len()).filter(|&i| self.is_active(i)).count()
    }

    fn is_active(&self, i: usize) -> bool {
        self.beta[i] > 0.0 || self.beta_prox[i] > 0.0
    }

    /// Adds planes (their weights start at 0), making room first. The new
    /// Gram entries are computed in parallel over the existing planes, each
    /// old plane read once against all new ones (P-BMRM adds P planes at a
    /// time: this reads the bundle from memory once instead of P times).
    pub fn add(&mut self, new: Vec<Plane>) {
        self.add_impl(new, None);
    }

    /// [`Bundle::add`], and every plane's dot product with `point` (old and
    /// new planes alike) taken in the same pass over the planes as the Gram
    /// update: the prox methods' centre is the point, and its dots would
    /// otherwise read every plane again, once or twice per iteration. Each
    /// dot has the bits of [`Bundle::dots`].
    pub fn add_and_dot(&mut self, new: Vec<Plane>, point: &[f64]) {
        self.add_impl(new, Some(point));
    }

    fn add_impl(&mut self, new: Vec<Plane>, point: Option<&[f64]>) {
        debug_assert!(new
            .iter()
            .all(|p| p.a.dim() == self.dim && p.part < self.num_parts));
        debug_assert!(point.is_none_or(|c| c.len() == self.dim));
        self.point_dots = None;
        if new.is_empty() {
            return;
        }
        self.generation += 1;
        if self.len() + new.len() > self.capacity {
            self.make_room(new.len());
        }
        let old = self.planes.len();
        let n_new = new.len();
        // The point rides along as one more column of the products, after
        // the new planes (and is taken off again below).
        let columns: Vec<Kept> = new
            .into_iter()
            .map(|p| Kept {
                part: p.part,
                slope: p.a,
                b: p.b,
                err: p.err,
            })
            .chain(point.map(|c| Kept {
                part: 0,
                slope: Slope::new(c.to_vec()),
                b: 0.0,
                err: PlaneError::default(),
            }))
            .collect();
        let width = columns.len();
        let new = &columns[..n_new];
        let planes = &self.planes;
        // Groups of old planes against all new ones, the dense pairs as one
        // cache-blocked product each: every entry is the bits of the dense
        // `dot` of its two planes, whatever their storage, the grouping and
        // the number of threads.
        let cross: Vec<f64> = self.in_pool(|| {
            let groups: Vec<Vec<f64>> = planes
                .par_chunks(GRAM_GROUP)
                .map(|group| gram_block(group, &columns))
                .collect();
            groups.concat()
        });
        let among_new = gram_block(new, &columns);
        for (row, dots) in self.gram.iter_mut().zip(cross.chunks_exact(width)) {
            row.extend_from_slice(&dots[..n_new]);
        }
        for k in 0..n_new {
            let mut row: Vec<f64> = cross.chunks_exact(width).map(|dots| dots[k]).collect();
            row.extend_from_slice(&among_new[k * width..k * width + n_new]);
            debug_assert_eq!(row.len(), old + n_new);
            self.gram.push(row);
        }
        let mut columns = columns;
        if let Some(column) = point.and_then(|_| columns.pop()) {
            let dots = cross
                .chunks_exact(width)
                .chain(among_new.chunks_exact(width))
                .map(|d| d[n_new])
                .collect();
            // The point's column is the copy kept for `dots` to compare.
            self.point_dots = Some(Box::new(PointDots {
                point: column.slope.into_dense(),
                dots,
            }));
        }
        self.planes.extend(columns);
        self.beta.resize(old + n_new, 0.0);
        self.beta_prox.resize(old + n_new, 0.0);
        self.idle.resize(old + n_new, 0);
    }

    /// Counts one more iteration of idleness for planes with zero weight in
    /// both duals, and resets the count of active ones.
    pub fn tick_idle(&mut self) {
        for i in 0..self.len() {
            if self.is_active(i) {
                self.idle[i] = 0;
            } else {
                self.idle[i] = self.idle[i].saturating_add(1);
            }
        }
    }

    /// Removes planes idle for at least `after` iterations, keeping at least
    /// one plane per part. Returns how many were removed.
    pub fn clean(&mut self, after: u32) -> usize {
        if after == 0 {
            return 0;
        }
        let keep = self.keep_mask(|b, i| b.idle[i] < after);
        self.retain(&keep)
    }

    /// A mask of planes to keep: those `pred` keeps, plus the newest plane of
    /// any part that would otherwise lose all of its planes.
    fn keep_mask(&self, pred: impl Fn(&Self, usize) -> bool) -> Vec<bool> {
        let mut keep: Vec<bool> = (0..self.len()).map(|i| pred(self, i)).collect();
        let mut has = vec![false; self.num_parts];
        for (i, p) in self.planes.iter().enumerate() {
            has[p.part] |= keep[i];
        }
        for i in (0..self.len()).rev() {
            let p = self.planes[i].part;
            if !has[p] {
                keep[i] = true;
                has[p] = true;
            }
        }
        keep
    }

    /// Keeps the planes whose mask entry is true, in their order.
    fn retain(&mut self, keep: &[bool]) -> usize {
        let removed = keep.iter().filter(|k| !**k).count();
        if removed == 0 {
            return 0;
        }
        self.generation += 1;
        let mut it = keep.iter();
        self.planes.retain(|_| *it.next().unwrap());
        let mut it = keep.iter();
        self.gram.retain(|_| *it.next().unwrap());
        for row in &mut self.gram {
            let mut it = keep.iter();
            row.retain(|_| *it.next().unwrap());
        }
        let point_dots = self.point_dots.as_mut().map(|p| &mut p.dots);
        for v in [&mut self.beta, &mut self.beta_prox]
            .into_iter()
            .chain(point_dots)
        {
            let mut it = keep.iter();
            v.retain(|_| *it.next().unwrap());
        }
        let mut it = keep.iter();
        self.idle.retain(|_| *it.next().unwrap());
        self.removed += removed as u64;
        removed
    }

    /// Frees room for `need` planes: first drops planes with zero weight in
    /// both duals (most idle first); if that is not enough, aggregates, part
    /// by part, all planes but the newest into their `beta`-weighted
    /// combination. The aggregate is a convex combination of valid planes, so
    /// it is valid, and the current dual solution stays feasible with the
    /// same value: the lower bound cannot drop and convergence is kept.
    fn make_room(&mut self, need: usize) {
        let excess = (self.len() + need).saturating_sub(self.capacity);
        let mut inactive: Vec<usize> = (0..self.len()).filter(|&i| !self.is_active(i)).collect();
        // Most idle first; ties: oldest first.
        inactive.sort_by(|&x, &y| self.idle[y].cmp(&self.idle[x]).then(x.cmp(&y)));
        let drop: std::collections::HashSet<usize> = inactive.into_iter().take(excess).collect();
        let keep = self.keep_mask(|_, i| !drop.contains(&i));
        self.retain(&keep);
        if self.len() + need <= self.capacity {
            return;
        }
        self.aggregate_all_but_newest();
    }

    fn aggregate_all_but_newest(&mut self) {
        let n = self.len();
        let mut newest = vec![usize::MAX; self.num_parts];
        for (i, p) in self.planes.iter().enumerate() {
            newest[p.part] = i;
        }
        let mut keep = vec![true; n];
        let mut aggregates = Vec::new();
        for (part, &newest_of_part) in newest.iter().enumerate() {
            let members: Vec<usize> = (0..n)
                .filter(|&i| self.planes[i].part == part && i != newest_of_part)
                .collect();
            if members.len() < 2 {
                continue;
            }
            let mut weight: f64 = members.iter().map(|&i| self.beta[i]).sum();
            let uniform = weight <= 0.0;
            if uniform {
                weight = members.len() as f64;
            }
            let coef: Vec<f64> = members
                .iter()
                .map(|&i| if uniform { 1.0 } else { self.beta[i] } / weight)
                .collect();
            let mut a = vec![0.0; self.dim];
            let mut abs_a = vec![0.0; self.dim];
            let mut b = 0.0;
            let mut abs_b = 0.0;
            let mut coef_sum = 0.0;
            let mut err = PlaneError::default();
            for (&i, &c) in members.iter().zip(&coef) {
                if c != 0.0 {
                    let plane = &self.planes[i];
                    plane.slope.add_block_to(c, 0, &mut a);
                    plane.slope.add_abs_block_to(c, 0, &mut abs_a);
                    b += c * plane.b;
                    abs_b += c * plane.b.abs();
                    coef_sum += c;
                    err.offset += c * plane.err.offset;
                    err.slope += c * plane.err.slope;
                }
            }
            // The aggregate stands for the exact convex combination with
            // weights c / sum(c): its sums round, and sum(c) is 1 only to
            // rounding (docs in certify.rs).
            let k = members.len();
            let s_err = (coef_sum - 1.0).abs() + gamma(k) * coef_sum;
            let eta = s_err / (1.0 - s_err).max(0.5);
            let norm_abs_a = crate::linalg::norm2(&abs_a).sqrt();
            err.offset = (err.offset + gamma(k) * abs_b) * (1.0 + eta) + eta * b.abs();
            err.slope = (err.slope + gamma(k) * norm_abs_a) * (1.0 + eta)
                + eta * norm_abs_a * (1.0 + gamma(k));
            let err = PlaneError {
                offset: err.offset * (1.0 + gamma(4)),
                slope: err.slope * (1.0 + gamma(self.dim + 4)),
            };
            // Gram entries of the aggregate from the Gram matrix, no n-dim work.
            let row: Vec<f64> = (0..n)
                .map(|j| {
                    members
                        .iter()
                        .zip(&coef)
                        .map(|(&i, &c)| c * self.gram[i][j])
                        .sum()
                })
                .collect();
            let diag: f64 = members.iter().zip(&coef).map(|(&i, &c)| c * row[i]).sum();
            let beta = if uniform { 0.0 } else { weight };
            let beta_prox: f64 = members.iter().map(|&i| self.beta_prox[i]).sum();
            for &i in &members {
                keep[i] = false;
            }
            let slope = Slope::new(a);
            aggregates.push((
                Kept {
                    part,
                    slope,
                    b,
                    err,
                },
                row,
                diag,
                beta,
                beta_prox,
            ));
        }
        // Append the aggregates (rows against the old planes), then drop the members.
        for (plane, row, diag, beta, beta_prox) in aggregates {
            let k = self.planes.len();
            let mut full = row;
            // Against aggregates appended before this one.
            full.extend(self.planes[n..k].iter().map(|q| q.slope.dot(&plane.slope)));
            for (r, &v) in self.gram.iter_mut().zip(&full) {
                r.push(v);
            }
            full.push(diag);
            self.gram.push(full);
            self.planes.push(plane);
            self.beta.push(beta);
            self.beta_prox.push(beta_prox);
            self.idle.push(0);
            keep.push(true);
            self.aggregations += 1;
            self.generation += 1;
        }
        self.retain(&keep);
    }

    /// `A beta` (the weighted sum of plane vectors), computed in parallel over
    /// blocks of coordinates, each summed over planes in plane order.
    pub fn combine(&self, beta: &[f64]) -> Vec<f64> {
        self.sum_blocks(beta, |slope, b, start, chunk| {
            slope.add_block_to(b, start, chunk)
        })
    }

    /// `A beta` as [`Bundle::combine`] makes it, and `|A| beta` (the same
    /// sum of the slopes' absolute values), which bounds its rounding.
    pub fn combine_with_abs(&self, beta: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let abs = self.sum_blocks(beta, |slope, b, start, chunk| {
            slope.add_abs_block_to(b.abs(), start, chunk)
        });
        (self.combine(beta), abs)
    }

    /// `sum_i add(a_i, beta_i)` over the planes with a non-zero weight, in
    /// parallel over blocks of coordinates, each summed in plane order (the
    /// bits do not depend on the number of threads).
    fn sum_blocks(
        &self,
        beta: &[f64],
        add: impl Fn(&Slope, f64, usize, &mut [f64]) + Sync,
    ) -> Vec<f64> {
        let active: Vec<(usize, f64)> = beta
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != 0.0)
            .map(|(i, &b)| (i, b))
            .collect();
        let mut out = vec![0.0; self.dim];
        const BLOCK: usize = 4096;
        let planes = &self.planes;
        self.in_pool(|| {
            out.par_chunks_mut(BLOCK)
                .enumerate()
                .for_each(|(blk, chunk)| {
                    let start = blk * BLOCK;
                    for &(i, b) in &active {
                        add(&planes[i].slope, b, start, chunk);
                    }
                })
        });
        out
    }

    /// `A^T c`: every plane's dot product with `c`, in parallel over planes,
    /// or, when `c` is the point of the last [`Bundle::add_and_dot`] (the
    /// same bits), the dots taken then.
    pub fn dots(&self, c: &[f64]) -> Vec<f64> {
        if let Some(p) = &self.point_dots {
            let same = p.point.len() == c.len()
                && p.point
                    .iter()
                    .zip(c)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            if same && p.dots.len() == self.len() {
                return p.dots.clone();
            }
        }
        let planes = &self.planes;
        self.in_pool(|| planes.par_iter().map(|p| p.slope.dot_dense(c)).collect())
    }

    /// `H beta`.
    pub fn gram_times(&self, beta: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.len()];
        for (i, &b) in beta.iter().enumerate() {
            if b != 0.0 {
                crate::linalg::axpy(b, &self.gram[i], &mut out);
            }
        }
        out
    }

    /// Bytes held by the planes' slopes and the Gram matrix.
    pub fn memory_bytes(&self) -> usize {
        self.slope_bytes() + 8 * self.len() * self.len()
    }

    /// Bytes held by the planes' slopes (dense: `8 dim` each; sparse: 12
    /// per non-zero).
    pub fn slope_bytes(&self) -> usize {
        self.planes.iter().map(|p| p.slope.bytes()).sum()
    }
}

/// `out[i n + k] = <a_i, b_k>` for the planes `a` and `b` (`n = b.len()`):
/// the dense pairs as one [`crate::linalg::row_dots`], the others by the
/// sparse products; every entry the bits of the dense `dot`.
fn gram_block(a: &[Kept], b: &[Kept]) -> Vec<f64> {
    let n = b.len();
    let mut out = vec![0.0; a.len() * n];
    let dense_a: Vec<usize> = (0..a.len())
        .filter(|&i| a[i].slope.as_dense().is_some())
        .collect();
    let dense_b: Vec<usize> = (0..n)
        .filter(|&k| b[k].slope.as_dense().is_some())
        .collect();
    if !dense_a.is_empty() && !dense_b.is_empty() {
        let rows_a: Vec<&[f64]> = dense_a
            .iter()
            .filter_map(|&i| a[i].slope.as_dense())
            .collect();
        let rows_b: Vec<&[f64]> = dense_b
            .iter()
            .filter_map(|&k| b[k].slope.as_dense())
            .collect();
        let dim = rows_a[0].len();
        let mut dots = vec![0.0; rows_a.len() * rows_b.len()];
        crate::linalg::row_dots(&rows_a, &rows_b, dim, &mut dots);
        for (r, &i) in dense_a.iter().enumerate() {
            for (c, &k) in dense_b.iter().enumerate() {
                out[i * n + k] = dots[r * rows_b.len() + c];
            }
        }
    }
    // Sparse pairs: each sparse column scattered once, the sparse rows
    // gathered along it (the bits of the dense `dot`, like every product of
    // `Slope`).
    let sparse_a: Vec<usize> = (0..a.len())
        .filter(|&i| a[i].slope.as_dense().is_none())
        .collect();
    if !sparse_a.is_empty() {
        for (k, q) in b.iter().enumerate() {
            if q.slope.as_dense().is_none() {
                q.slope.with_dense(|column| {
                    for &i in &sparse_a {
                        out[i * n + k] = a[i].slope.dot_dense(column);
                    }
                });
            }
        }
    }
    // Pairs of a dense and a sparse plane.
    for (i, p) in a.iter().enumerate() {
        for (k, q) in b.iter().enumerate() {
            if p.slope.as_dense().is_some() != q.slope.as_dense().is_some() {
                out[i * n + k] = p.slope.dot(&q.slope);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::dot;

    fn plane(part: usize, a: Vec<f64>, b: f64) -> Plane {
        Plane {
            part,
            a: Slope::new(a),
            b,
            err: PlaneError::default(),
        }
    }

    #[test]
    fn gram_is_kept_and_cleaned_consistently() {
        let mut bundle = Bundle::new(3, 2, 100);
        bundle.add(vec![
            plane(0, vec![1.0, 2.0, 3.0], 0.0),
            plane(1, vec![0.0, 1.0, 0.0], 1.0),
            plane(0, vec![-1.0, 0.5, 2.0], 2.0),
        ]);
        let check = |b: &Bundle| {
            for i in 0..b.len() {
                for j in 0..b.len() {
                    let d = dot(
                        &b.planes()[i].slope.to_dense(),
                        &b.planes()[j].slope.to_dense(),
                    );
                    assert_eq!(b.column(j)[i], d);
                }
            }
        };
        check(&bundle);
        bundle.beta = vec![0.0, 1.0, 1.0];
        for _ in 0..3 {
            bundle.tick_idle();
        }
        assert_eq!(bundle.clean(3), 1);
        assert_eq!(bundle.len(), 2);
        assert_eq!(bundle.planes()[0].b, 1.0);
        check(&bundle);
    }

    #[test]
    fn a_part_never_loses_its_last_plane() {
        let mut bundle = Bundle::new(2, 2, 100);
        bundle.add(vec![
            plane(0, vec![1.0, 0.0], 0.0),
            plane(1, vec![0.0, 1.0], 0.0),
        ]);
        for _ in 0..5 {
            bundle.tick_idle();
        }
        assert_eq!(bundle.clean(1), 0);
        assert_eq!(bundle.len(), 2);
    }

    #[test]
    fn aggregation_keeps_the_dual_solution() {
        // Capacity 4 (the minimum for one part); all planes active.
        let mut bundle = Bundle::new(2, 1, 4);
        bundle.add(vec![
            plane(0, vec![1.0, 0.0], 0.5),
            plane(0, vec![0.0, 1.0], 0.25),
            plane(0, vec![1.0, 1.0], -1.0),
            plane(0, vec![2.0, -1.0], 0.0),
        ]);
        bundle.beta = vec![0.25, 0.25, 0.25, 0.25];
        let a_beta = bundle.combine(&bundle.beta.clone());
        let b_beta: f64 = bundle
            .offsets()
            .iter()
            .zip(&bundle.beta)
            .map(|(b, w)| b * w)
            .sum();
        bundle.add(vec![plane(0, vec![5.0, 5.0], 3.0)]);
        assert_eq!(bundle.aggregations, 1);
        assert_eq!(bundle.len(), 3);
        let a_after = bundle.combine(&bundle.beta.clone());
        let b_after: f64 = bundle
            .offsets()
            .iter()
            .zip(&bundle.beta)
            .map(|(b, w)| b * w)
            .sum();
        for (x, y) in a_beta.iter().zip(&a_after) {
            assert!((x - y).abs() < 1e-12);
        }
        assert!((b_beta - b_after).abs() < 1e-12);
        let s: f64 = bundle.beta.iter().sum();
        assert!((s - 1.0).abs() < 1e-12);
        for i in 0..bundle.len() {
            for j in 0..bundle.len() {
                let d = dot(
                    &bundle.planes()[i].slope.to_dense(),
                    &bundle.planes()[j].slope.to_dense(),
                );
                assert!((bundle.column(j)[i] - d).abs() < 1e-12);
            }
        }
    }
}

#[cfg(test)]
mod sparse_tests {
    use super::*;
    use crate::linalg::dot;

    /// Planes with 2 % non-zeros (kept sparse) and dense ones, mixed: the
    /// Gram matrix, `A beta` and `A^T c` are the bits of the dense
    /// computations, and the sparse planes take a fraction of the memory.
    #[test]
    fn sparse_planes_give_the_dense_bits_in_less_memory() {
        let dim = 5003;
        let plane = |part: usize, seed: u64, density: f64| -> Plane {
            let mut x = seed;
            let mut next = || {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64
            };
            let a = (0..dim)
                .map(|_| if next() < density { next() - 0.5 } else { 0.0 })
                .collect();
            Plane {
                part,
                a: Slope::new(a),
                b: next(),
                err: PlaneError::default(),
            }
        };
        let planes: Vec<Plane> = (0..9)
            .map(|i| plane(i % 3, i as u64 + 1, if i % 3 == 0 { 1.0 } else { 0.02 }))
            .collect();
        let dense: Vec<Vec<f64>> = planes.iter().map(|p| p.a.to_dense()).collect();
        let mut bundle = Bundle::new(dim, 3, 100);
        bundle.add(planes[..4].to_vec());
        bundle.add(planes[4..].to_vec());
        let sparse = bundle
            .planes()
            .iter()
            .filter(|p| p.slope.as_dense().is_none())
            .count();
        assert_eq!(sparse, 6);
        assert!(bundle.slope_bytes() < 3 * 8 * dim + 6 * 12 * dim / 20);
        for i in 0..9 {
            for j in 0..9 {
                assert_eq!(
                    bundle.column(j)[i].to_bits(),
                    dot(&dense[i], &dense[j]).to_bits()
                );
            }
        }
        let beta: Vec<f64> = (0..9)
            .map(|i| if i % 4 == 1 { 0.0 } else { 0.1 * i as f64 })
            .collect();
        let mut want = vec![0.0; dim];
        for (a, &b) in dense.iter().zip(&beta) {
            if b != 0.0 {
                crate::linalg::axpy(b, a, &mut want);
            }
        }
        let got = bundle.combine(&beta);
        assert!(got
            .iter()
            .zip(&want)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
        let dots = bundle.dots(&want);
        for (d, a) in dots.iter().zip(&dense) {
            assert_eq!(d.to_bits(), dot(a, &want).to_bits());
        }
    }

    /// The dots with a point taken during the Gram update are the bits of
    /// direct dot products, for old and new planes, dense and sparse, also
    /// after planes are removed; another point is computed afresh.
    #[test]
    fn dots_taken_with_the_gram_update_are_the_direct_ones() {
        let dim = 777;
        let mut x = 3u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut plane = |part: usize, sparse: bool| Plane {
            part,
            a: Slope::new(
                (0..dim)
                    .map(|j| if sparse && j % 37 != 0 { 0.0 } else { next() })
                    .collect(),
            ),
            b: 0.0,
            err: PlaneError::default(),
        };
        let mut bundle = Bundle::new(dim, 2, 100);
        let first: Vec<Plane> = (0..5).map(|i| plane(i % 2, i % 3 == 0)).collect();
        bundle.add(first);
        let point: Vec<f64> = plane(0, false).a.into_dense();
        let other: Vec<f64> = plane(0, false).a.into_dense();
        let second: Vec<Plane> = (0..4).map(|i| plane(i % 2, i % 2 == 0)).collect();
        bundle.add_and_dot(second, &point);
        let direct = |b: &Bundle, c: &[f64]| -> Vec<u64> {
            b.planes()
                .iter()
                .map(|p| dot(&p.slope.to_dense(), c).to_bits())
                .collect()
        };
        let bits = |v: Vec<f64>| -> Vec<u64> { v.iter().map(|d| d.to_bits()).collect() };
        assert!(bundle.point_dots.is_some());
        assert_eq!(bits(bundle.dots(&point)), direct(&bundle, &point));
        assert_eq!(bits(bundle.dots(&other)), direct(&bundle, &other));
        let keep: Vec<bool> = (0..bundle.len()).map(|i| i % 3 != 1).collect();
        assert!(bundle.retain(&keep) > 0);
        assert_eq!(bundle.point_dots.as_ref().unwrap().dots.len(), bundle.len());
        assert_eq!(bits(bundle.dots(&point)), direct(&bundle, &point));
        // A plain add forgets the point (its dots would miss the new planes).
        bundle.add(vec![plane(1, false)]);
        assert!(bundle.point_dots.is_none());
        assert_eq!(bits(bundle.dots(&point)), direct(&bundle, &point));
    }
}
