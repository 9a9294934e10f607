//! The cutting-plane bundle: plane storage, the Gram matrix kept up to date
//! one column per new plane, the dual weights, removal of planes that stay
//! inactive, and aggregation when the buffer is full.
//!
//! A plane of part `p` is `r(w) >= <a, w> + b`, valid for the part's risk
//! everywhere. Planes model the risk `R`, not `F`, so they stay valid when
//! lambda changes.

use rayon::prelude::*;

use crate::linalg::dot;
use crate::qp::Gram;

/// Old planes per task of the Gram update (a multiple of the kernel's
/// 3-row tile).
const GRAM_GROUP: usize = 12;

/// One cutting plane: `R_p(w) >= <a, w> + b`.
#[derive(Debug, Clone)]
pub struct Plane {
    /// The part of the risk this plane models.
    pub part: usize,
    /// The slope: a subgradient of the part.
    pub a: Vec<f64>,
    /// The offset: the plane is `<a, w> + b`.
    pub b: f64,
}

/// The planes, their Gram matrix and the dual weights of the last QP solves.
#[derive(Debug, Clone)]
pub struct Bundle {
    dim: usize,
    num_parts: usize,
    capacity: usize,
    planes: Vec<Plane>,
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
    /// The planes kept.
    pub fn planes(&self) -> &[Plane] {
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
        debug_assert!(new
            .iter()
            .all(|p| p.a.len() == self.dim && p.part < self.num_parts));
        if new.is_empty() {
            return;
        }
        if self.len() + new.len() > self.capacity {
            self.make_room(new.len());
        }
        let old = self.planes.len();
        let dim = self.dim;
        let planes = &self.planes;
        let new_rows: Vec<&[f64]> = new.iter().map(|p| &p.a[..]).collect();
        // Groups of old planes against all new ones, one cache-blocked
        // product each: every entry is the bits of `dot` of its two planes,
        // whatever the grouping and the number of threads.
        let cross: Vec<f64> = self.in_pool(|| {
            let groups: Vec<Vec<f64>> = planes
                .par_chunks(GRAM_GROUP)
                .map(|group| {
                    let rows: Vec<&[f64]> = group.iter().map(|q| &q.a[..]).collect();
                    let mut out = vec![0.0; rows.len() * new_rows.len()];
                    crate::linalg::row_dots(&rows, &new_rows, dim, &mut out);
                    out
                })
                .collect();
            groups.concat()
        });
        let mut among_new = vec![0.0; new.len() * new.len()];
        crate::linalg::row_dots(&new_rows, &new_rows, dim, &mut among_new);
        let n_new = new.len();
        for (row, dots) in self.gram.iter_mut().zip(cross.chunks_exact(n_new)) {
            row.extend_from_slice(dots);
        }
        for k in 0..n_new {
            let mut row: Vec<f64> = cross.chunks_exact(n_new).map(|dots| dots[k]).collect();
            row.extend_from_slice(&among_new[k * n_new..(k + 1) * n_new]);
            debug_assert_eq!(row.len(), old + n_new);
            self.gram.push(row);
        }
        let added = new.len();
        self.planes.extend(new);
        self.beta.resize(old + added, 0.0);
        self.beta_prox.resize(old + added, 0.0);
        self.idle.resize(old + added, 0);
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
        let mut it = keep.iter();
        self.planes.retain(|_| *it.next().unwrap());
        let mut it = keep.iter();
        self.gram.retain(|_| *it.next().unwrap());
        for row in &mut self.gram {
            let mut it = keep.iter();
            row.retain(|_| *it.next().unwrap());
        }
        for v in [&mut self.beta, &mut self.beta_prox] {
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
            let mut b = 0.0;
            for (&i, &c) in members.iter().zip(&coef) {
                if c != 0.0 {
                    crate::linalg::axpy(c, &self.planes[i].a, &mut a);
                    b += c * self.planes[i].b;
                }
            }
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
            aggregates.push((Plane { part, a, b }, row, diag, beta, beta_prox));
        }
        // Append the aggregates (rows against the old planes), then drop the members.
        for (plane, row, diag, beta, beta_prox) in aggregates {
            let k = self.planes.len();
            let mut full = row;
            // Against aggregates appended before this one.
            full.extend(self.planes[n..k].iter().map(|q| dot(&q.a, &plane.a)));
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
        }
        self.retain(&keep);
    }

    /// `A beta` (the weighted sum of plane vectors), computed in parallel over
    /// blocks of coordinates, each summed over planes in plane order.
    pub fn combine(&self, beta: &[f64]) -> Vec<f64> {
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
                        let a = &planes[i].a[start..start + chunk.len()];
                        crate::linalg::axpy(b, a, chunk);
                    }
                })
        });
        out
    }

    /// `A^T c`: every plane's dot product with `c`, in parallel over planes.
    pub fn dots(&self, c: &[f64]) -> Vec<f64> {
        let planes = &self.planes;
        self.in_pool(|| planes.par_iter().map(|p| dot(&p.a, c)).collect())
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

    /// Bytes held by plane vectors and the Gram matrix.
    pub fn memory_bytes(&self) -> usize {
        8 * (self.len() * self.dim + self.len() * self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(part: usize, a: Vec<f64>, b: f64) -> Plane {
        Plane { part, a, b }
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
                    let d = dot(&b.planes()[i].a, &b.planes()[j].a);
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
                let d = dot(&bundle.planes()[i].a, &bundle.planes()[j].a);
                assert!((bundle.column(j)[i] - d).abs() < 1e-12);
            }
        }
    }
}
