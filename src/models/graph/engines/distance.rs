//! Tree max-sum with generalised distance transforms: exact max-sum on a
//! forest whose nodes' states are grid positions and whose edges score a
//! quadratic displacement, with each message in time linear in the
//! positions (Felzenszwalb & Huttenlocher, "Distance transforms of sampled
//! functions", Theory of Computing 8, 2012; the pictorial-structures use is
//! their "Pictorial structures for object recognition", IJCV 61, 2005).
//!
//! # The message
//!
//! From a child with belief `f` over its grid to a parent, with `D =
//! position_parent(a) - position_child(b)` (the edge's own `(dx, dy)` is `D`
//! or `-D` by the edge's direction, which flips the signs of the linear
//! coefficients `l`, not the quadratic ones `q`):
//!
//! ```text
//! m(a) = max_b f(b) - (lx Dx + ly Dy + qx Dx^2 + qy Dy^2)
//!      = max_{y_b} [ max_{x_b} f(x_b, y_b) - (lx Dx + qx Dx^2) ] - (ly Dy + qy Dy^2)
//! ```
//!
//! The cost is a sum of an x part and a y part, so the maximum is taken along
//! x for each source row, then along y for each target column: two passes of
//! the one-dimensional transform `m(p) = max_i f(i) - (l t + q t^2)`, `t = p
//! - i`, over integer source positions `i` and target positions `p`.
//!
//! With `q > 0` that is (sign flipped) the paper's `min_i q (p - i)^2 +
//! g(i)` with `g(i) = -f(i) - l i` plus `l p`: the lower envelope of the
//! parabolas rooted at each `i` (the paper's Algorithm 1, on `g / q`), built
//! left to right in `O(n)` and read at the targets in increasing order in
//! `O(m)`. With `q = 0` the best `i` maximises `f(i) + l i` whatever `p`.
//! With `q < 0` (a convex cost: the maximum has no envelope of this form)
//! or when `g / q` overflows, that axis is maximised by brute force, `O(n
//! m)`: still exact, and the other axis keeps its transform.
//!
//! Each maximiser is tracked through both passes, and each message value is
//! recomputed from the chosen position with the model's own formula, so the
//! messages are the scores [`Potentials::score`] adds. On exact ties the
//! transform may choose a different maximiser than the quadratic search.

use std::cell::RefCell;

use super::forest::{check_forest, check_potentials, MaxSum};
use crate::error::{Error, Result};
use crate::models::graph::{Engine, GraphShape, Grid, Pairwise, Potentials};
use crate::models::with_scratch;

const NAME: &str = "distance transform";

/// Tree max-sum with generalised distance transforms for displacement
/// pairwise terms on grid-position nodes: exact, `O(positions)` per message
/// on edges with positive quadratic coefficients.
#[derive(Debug, Clone, Copy, Default)]
pub struct DistanceTransform;

/// The tables of one message's two passes and of the 1-D transform.
#[derive(Default)]
struct Work {
    /// After the x pass: `rows[j * target_width + kx]`, the best over the
    /// child's row `j` for the parent's column `kx`, and that best's column.
    rows: Vec<f64>,
    rows_arg: Vec<u32>,
    /// One column of `rows`, and its transform along y with the best row.
    column: Vec<f64>,
    column_out: Vec<f64>,
    column_arg: Vec<u32>,
    /// The 1-D transform's envelope.
    envelope: Envelope,
}

/// The lower envelope of parabolas (the paper's `v`, `z`, and the scaled
/// source values).
#[derive(Default)]
struct Envelope {
    /// `g(i) / q + i^2` for each source `i`.
    height: Vec<f64>,
    /// The sources whose parabolas form the envelope, left to right.
    source: Vec<usize>,
    /// `bound[k]..bound[k + 1]`: where `source[k]`'s parabola is lowest.
    bound: Vec<f64>,
}

/// The per-thread tables.
#[derive(Default)]
struct Scratch {
    max_sum: MaxSum,
    work: Work,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Engine for DistanceTransform {
    fn name(&self) -> &str {
        NAME
    }

    fn check_shape(&self, shape: &GraphShape) -> Result<()> {
        check_forest(shape, NAME)
    }

    fn maximize(&self, p: &Potentials, labels: &mut [u32]) -> Result<bool> {
        let Pairwise::Displacement { grids, cost } = p.pairwise else {
            return Err(Error::invalid_argument(format!(
                "the {NAME} engine needs displacement pairwise terms on grids, \
                 not tables (use tree max-sum)"
            )));
        };
        p.shape.check()?;
        check_potentials(p, labels)?;
        with_scratch(&SCRATCH, |s| {
            let work = &mut s.work;
            s.max_sum.run(p, labels, NAME, |edge, message, best| {
                let c = cost[edge.edge];
                // The edge's (dx, dy) is D when written [child, parent].
                let sign = if edge.child_first { 1.0 } else { -1.0 };
                let coef = [sign * c[0], sign * c[1], c[2], c[3]];
                let (from, to) = (&grids[edge.child], &grids[edge.parent]);
                transform_2d(edge.belief, from, to, coef, message, best, work)
            })
        })?;
        Ok(true)
    }
}

/// `out[a] = max_b f[b] - (c[0] Dx + c[1] Dy + c[2] Dx^2 + c[3] Dy^2)` with
/// `D = to.position(a) - from.position(b)`, `arg[a]` a maximising `b`.
/// Errors: the x pass's `from.height x to.width` cells cannot be held (a
/// tall grid beside a wide one: more than either grid's states).
fn transform_2d(
    f: &[f64],
    from: &Grid,
    to: &Grid,
    c: [f64; 4],
    out: &mut [f64],
    arg: &mut [u32],
    work: &mut Work,
) -> Result<()> {
    let (ws, hs) = (from.width as usize, from.height as usize);
    let (wt, ht) = (to.width as usize, to.height as usize);
    let shift = |k: usize| (i64::from(to.origin[k]) - i64::from(from.origin[k])) as f64;
    let (shift_x, shift_y) = (shift(0), shift(1));
    let cells = hs.saturating_mul(wt);
    let room = |have: usize| cells.saturating_sub(have);
    if work.rows.try_reserve(room(work.rows.len())).is_err()
        || work
            .rows_arg
            .try_reserve(room(work.rows_arg.len()))
            .is_err()
    {
        return Err(Error::out_of_memory(format!(
            "the {NAME} engine: the message from a {ws} x {hs} grid to a {wt} x {ht} grid needs \
             {hs} x {wt} cells of work space, which cannot be held in memory"
        )));
    }
    work.rows.resize(cells, 0.0);
    work.rows_arg.resize(cells, 0);
    for j in 0..hs {
        let span = j * wt..(j + 1) * wt;
        transform_1d(
            &f[j * ws..(j + 1) * ws],
            shift_x,
            c[0],
            c[2],
            &mut work.rows[span.clone()],
            &mut work.rows_arg[span],
            &mut work.envelope,
        );
    }
    work.column.resize(hs, 0.0);
    work.column_out.resize(ht, 0.0);
    work.column_arg.resize(ht, 0);
    for kx in 0..wt {
        for j in 0..hs {
            work.column[j] = work.rows[j * wt + kx];
        }
        transform_1d(
            &work.column,
            shift_y,
            c[1],
            c[3],
            &mut work.column_out,
            &mut work.column_arg,
            &mut work.envelope,
        );
        for ky in 0..ht {
            let j = work.column_arg[ky] as usize;
            let i = work.rows_arg[j * wt + kx] as usize;
            let b = j * ws + i;
            let a = ky * wt + kx;
            // The displacement in the model's own arithmetic.
            let dx = shift_x + (kx as f64 - i as f64);
            let dy = shift_y + (ky as f64 - j as f64);
            out[a] = f[b] - (c[0] * dx + c[1] * dy + c[2] * dx * dx + c[3] * dy * dy);
            arg[a] = b as u32;
        }
    }
    Ok(())
}

/// The 1-D transform: `out[k] = max_i f[i] - (l t + q t^2)` with `t = shift
/// + k - i`, `arg[k]` a maximising `i`: the lower envelope when `q > 0`, the
/// single best source when `q = 0`, else brute force.
fn transform_1d(
    f: &[f64],
    shift: f64,
    l: f64,
    q: f64,
    out: &mut [f64],
    arg: &mut [u32],
    envelope: &mut Envelope,
) {
    if q > 0.0 && envelope.transform(f, shift, l, q, out, arg) {
        return;
    }
    if q == 0.0 {
        // f(i) - l (p - i) = (f(i) + l i) - l p: one best i for every p.
        let mut best = 0;
        for i in 1..f.len() {
            if f[i] + l * i as f64 > f[best] + l * best as f64 {
                best = i;
            }
        }
        for (k, (o, a)) in out.iter_mut().zip(arg.iter_mut()).enumerate() {
            let t = shift + k as f64 - best as f64;
            *o = f[best] - l * t;
            *a = best as u32;
        }
        return;
    }
    brute_force_1d(f, shift, l, q, out, arg);
}

/// [`transform_1d`] by trying every source: `O(n m)`, the lowest maximising
/// source.
fn brute_force_1d(f: &[f64], shift: f64, l: f64, q: f64, out: &mut [f64], arg: &mut [u32]) {
    for (k, (o, a)) in out.iter_mut().zip(arg.iter_mut()).enumerate() {
        let p = shift + k as f64;
        let (mut best, mut best_i) = (f64::NEG_INFINITY, 0);
        for (i, &fi) in f.iter().enumerate() {
            let t = p - i as f64;
            let v = fi - (l * t + q * t * t);
            if v > best || i == 0 {
                best = v;
                best_i = i;
            }
        }
        *o = best;
        *a = best_i as u32;
    }
}

impl Envelope {
    /// [`transform_1d`] for `q > 0` by the lower envelope of the parabolas
    /// `(p - i)^2 + g(i) / q`, `g(i) = -f(i) - l i`; `false` (nothing
    /// written) when `g / q` is not finite.
    fn transform(
        &mut self,
        f: &[f64],
        shift: f64,
        l: f64,
        q: f64,
        out: &mut [f64],
        arg: &mut [u32],
    ) -> bool {
        let n = f.len();
        self.height.clear();
        for (i, &fi) in f.iter().enumerate() {
            let x = i as f64;
            let h = (-fi - l * x) / q + x * x;
            if !h.is_finite() {
                return false;
            }
            self.height.push(h);
        }
        let (height, source, bound) = (&self.height, &mut self.source, &mut self.bound);
        source.clear();
        source.resize(n, 0);
        bound.clear();
        bound.resize(n + 1, f64::INFINITY);
        bound[0] = f64::NEG_INFINITY;
        // `top`: the index of the envelope's rightmost parabola.
        let mut top = 0;
        for i in 1..n {
            loop {
                let r = source[top];
                // Where parabola i meets parabola r (r < i).
                let s = (height[i] - height[r]) / (2.0 * (i - r) as f64);
                if s <= bound[top] {
                    if top == 0 {
                        // r is nowhere lowest (only on overflow to -inf).
                        source[0] = i;
                        bound[1] = f64::INFINITY;
                        break;
                    }
                    top -= 1;
                    continue;
                }
                top += 1;
                source[top] = i;
                bound[top] = s;
                bound[top + 1] = f64::INFINITY;
                break;
            }
        }
        let mut k = 0;
        for (j, (o, a)) in out.iter_mut().zip(arg.iter_mut()).enumerate() {
            let p = shift + j as f64;
            while bound[k + 1] < p {
                k += 1;
            }
            let i = source[k];
            let t = p - i as f64;
            *o = f[i] - (l * t + q * t * t);
            *a = i as u32;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, Structure};
    use super::*;
    use crate::error::ErrorKind;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Whether `a` and `b` agree to 1e-9, relative.
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// A quadratic coefficient for the transform tests: positive, zero,
    /// negative, or so small that the envelope's heights overflow.
    fn quadratic(rng: &mut ChaCha8Rng, integer: bool) -> f64 {
        match rng.gen_range(0..8) {
            0 => 1e-310,
            _ => testing::random_quadratic(rng, integer),
        }
    }

    #[test]
    fn matches_exhaustive_search_on_random_forests() {
        let mut rng = ChaCha8Rng::seed_from_u64(2012);
        for structure in Structure::ALL {
            for round in 0..1000 {
                let g = testing::random_grids(&mut rng, structure);
                let p = g.potentials();
                let what = format!("{structure:?} {round}");
                testing::assert_optimal(&DistanceTransform, &p, &what);
            }
        }
    }

    #[test]
    fn the_1d_transform_is_the_quadratic_search() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut envelope = Envelope::default();
        for round in 0..20_000 {
            // Mostly short arrays (many ties, every branch of the envelope),
            // some long ones (long envelopes).
            let longest = if rng.gen_bool(0.1) { 60 } else { 10 };
            let (n, m) = (rng.gen_range(1..longest), rng.gen_range(1..longest));
            let integer = rng.gen_bool(0.5);
            let f: Vec<f64> = (0..n).map(|_| testing::draw(&mut rng, integer)).collect();
            let shift = f64::from(rng.gen_range(-12i32..=12));
            let l = testing::draw(&mut rng, integer) / 2.0;
            let q = quadratic(&mut rng, integer);
            let (mut out, mut arg) = (vec![0.0; m], vec![0; m]);
            transform_1d(&f, shift, l, q, &mut out, &mut arg, &mut envelope);
            let (mut want, mut want_arg) = (vec![0.0; m], vec![0; m]);
            brute_force_1d(&f, shift, l, q, &mut want, &mut want_arg);
            for k in 0..m {
                let what = format!("round {round}: f {f:?} shift {shift} l {l} q {q} at {k}");
                assert!(
                    close(out[k], want[k]),
                    "{what}: {} against {}",
                    out[k],
                    want[k]
                );
                // The value is that of the source it names.
                let t = shift + k as f64 - f64::from(arg[k]);
                let named = f[arg[k] as usize] - (l * t + q * t * t);
                assert!((arg[k] as usize) < n && named == out[k], "{what}");
            }
        }
    }

    #[test]
    fn the_2d_transform_is_the_quadratic_search() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut work = Work::default();
        for round in 0..5_000 {
            let (mut from, to) = (
                testing::random_grid(&mut rng),
                testing::random_grid(&mut rng),
            );
            if round % 10 == 0 {
                // Far apart: displacements of about 1e9.
                from.origin = [rng.gen_range(-1 << 30..1 << 30), 1 << 30];
            }
            let integer = rng.gen_bool(0.5);
            let f: Vec<f64> = (0..from.width * from.height)
                .map(|_| testing::draw(&mut rng, integer))
                .collect();
            let c = [
                testing::draw(&mut rng, integer) / 2.0,
                testing::draw(&mut rng, integer) / 2.0,
                quadratic(&mut rng, integer),
                quadratic(&mut rng, integer),
            ];
            let size = (to.width * to.height) as usize;
            let (mut out, mut arg) = (vec![0.0; size], vec![0; size]);
            transform_2d(&f, &from, &to, c, &mut out, &mut arg, &mut work).unwrap();
            let value = |a: u32, b: u32| {
                let ([xa, ya], [xb, yb]) = (to.position(a), from.position(b));
                let (dx, dy) = ((xa - xb) as f64, (ya - yb) as f64);
                f[b as usize] - (c[0] * dx + c[1] * dy + c[2] * dx * dx + c[3] * dy * dy)
            };
            for a in 0..size as u32 {
                let best = (0..f.len() as u32)
                    .map(|b| value(a, b))
                    .fold(f64::NEG_INFINITY, f64::max);
                let what = format!("round {round}: {from:?} -> {to:?}, c {c:?}, target {a}");
                let got = out[a as usize];
                assert!(close(got, best), "{what}: {got} against {best}");
                assert_eq!(value(a, arg[a as usize]), got, "{what}");
            }
        }
    }

    #[test]
    fn matches_tree_max_sum_on_larger_grids() {
        // Tree max-sum's quadratic messages are an exact reference where
        // exhaustive search is out of reach.
        let mut rng = ChaCha8Rng::seed_from_u64(2005);
        for round in 0..200 {
            let structure = Structure::ALL[round % 4];
            let mut g = testing::random_grids(&mut rng, structure);
            g.enlarge_grids(&mut rng, 12, 10);
            let p = g.potentials();
            let n = p.shape.num_nodes();
            let (mut got, mut want) = (vec![0; n], vec![0; n]);
            assert!(DistanceTransform.maximize(&p, &mut got).unwrap());
            super::super::TreeMaxSum.maximize(&p, &mut want).unwrap();
            let (a, b) = (p.score(&got), p.score(&want));
            assert!(close(a, b), "round {round}: {a} against {b}");
        }
    }

    #[test]
    fn tables_are_refused() {
        let states = [2];
        let p = Potentials {
            example: 0,
            shape: GraphShape {
                states: &states,
                edges: &[],
            },
            unary: &[0.0, 1.0],
            unary_start: &[0, 2],
            pairwise: Pairwise::Tables {
                values: &[],
                start: &[0],
            },
        };
        let err = DistanceTransform.maximize(&p, &mut [0]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("tables"), "{err}");
    }

    #[test]
    fn a_cycle_is_refused_and_a_forest_accepted() {
        let states = [4, 4, 4, 4, 4];
        let edges = [[0, 1], [2, 3], [3, 4], [4, 2]];
        let shape = GraphShape {
            states: &states,
            edges: &edges,
        };
        let err = DistanceTransform.check_shape(&shape).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(
            err.message().contains("edge 3 (4, 2) closes a cycle"),
            "{err}"
        );
        let shape = GraphShape {
            states: &states,
            edges: &edges[..3],
        };
        DistanceTransform.check_shape(&shape).unwrap();
    }
}
