//! The kernel bodies, written once as plain Rust over fixed-size lane arrays
//! and compiled for each instruction set (`mod.rs` declares the clones and
//! picks one). The arithmetic is spelled out element by element (`mul_add`
//! is one rounding on every target; Rust never reassociates or contracts
//! floating point), so each clone computes the same bits; the compiler only
//! chooses how many lanes fit a register.
//!
//! The reduction structure of every dot product of length `n`: lane `l`
//! (`0 <= l < LANES`) accumulates `x[j] y[j]` for `j = l, l + LANES, ...`
//! in increasing `j` with one fused multiply-add each, starting from `+0`;
//! then the lanes are summed as a fixed binary tree (`l` with `l + 8`, then
//! `l + 4`, `l + 2`, `l + 1`).

// Index loops over the fixed-size lane and tile arrays say which lane meets
// which: clearer here than zipped iterators, and they vectorise the same.
#![allow(clippy::needless_range_loop)]

/// Accumulator lanes of every dot product (two AVX-512 registers, four AVX2
/// registers: enough independent chains to hide the FMA latency in a tile).
pub const LANES: usize = 16;

/// Elements the kernels read: `f64`, and `f32` features widened exactly.
pub trait Elem: Copy + Send + Sync + 'static {
    /// Whether rows of this type are features streamed from memory once
    /// per pass (`f32`), which `row_dots` fetches a group at a time.
    const STREAMED: bool;
    /// The value as an `f64` (exact for both types).
    fn wide(self) -> f64;
}

impl Elem for f64 {
    const STREAMED: bool = false;
    #[inline(always)]
    fn wide(self) -> f64 {
        self
    }
}

impl Elem for f32 {
    const STREAMED: bool = true;
    #[inline(always)]
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

/// One chunk of `LANES` elements widened to `f64`; the tail of a row is
/// padded with zeros (which add `+0` to a lane: the lanes never hold `-0`,
/// so the sum is unchanged, and non-finite values still propagate).
#[inline(always)]
pub(super) fn chunk<A: Elem>(row: &[A], start: usize) -> [f64; LANES] {
    let mut out = [0.0; LANES];
    let end = (start + LANES).min(row.len());
    if end - start == LANES {
        let c: &[A; LANES] = row[start..end].try_into().expect("a full chunk");
        for l in 0..LANES {
            out[l] = c[l].wide();
        }
    } else {
        for (o, &v) in out.iter_mut().zip(&row[start..end]) {
            *o = v.wide();
        }
    }
    out
}

/// `acc[l] += x[l] y[l]` with one rounding, lane by lane.
#[inline(always)]
fn fma_lanes(acc: &mut [f64; LANES], x: &[f64; LANES], y: &[f64; LANES]) {
    for l in 0..LANES {
        acc[l] = x[l].mul_add(y[l], acc[l]);
    }
}

/// The fixed tree over the lanes.
#[inline(always)]
pub fn reduce(acc: &[f64; LANES]) -> f64 {
    let mut v = *acc;
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            v[l] += v[l + half];
        }
        half /= 2;
    }
    v[0]
}

/// `<x, y>` in the fixed structure.
#[inline(always)]
pub fn dot<A: Elem>(x: &[A], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    let mut acc = [0.0f64; LANES];
    let full = n / LANES * LANES;
    let xc = x[..full].chunks_exact(LANES);
    let yc = y[..full].chunks_exact(LANES);
    for (a, b) in xc.zip(yc) {
        let a: &[A; LANES] = a.try_into().expect("a full chunk");
        let b: &[f64; LANES] = b.try_into().expect("a full chunk");
        for l in 0..LANES {
            acc[l] = a[l].wide().mul_add(b[l], acc[l]);
        }
    }
    if full < n {
        let a = chunk(&x[..n], full);
        let b = chunk(&y[..n], full);
        for l in 0..LANES {
            acc[l] = a[l].mul_add(b[l], acc[l]);
        }
    }
    reduce(&acc)
}

/// `y += alpha * x` (a multiply and an add, each rounded, per element).
#[inline(always)]
pub fn axpy<A: Elem>(alpha: f64, x: &[A], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi.wide();
    }
}

/// Elements of `x` widened at a time by [`axpy_scatter`].
const SCATTER_COLS: usize = 16;

/// `y[o..o + x.len()] += a * x` for every `(a, o)` of `targets` in turn
/// (the bits of one [`axpy`] per target: the ranges are disjoint, so each
/// element of `y` sees one multiply and one add), each chunk of `x` widened
/// once for all targets (a chain token's row into the label blocks of `v`).
/// The caller checks that every range lies in `y`.
#[inline(always)]
pub fn axpy_scatter<A: Elem>(targets: &[(f64, usize)], x: &[A], y: &mut [f64]) {
    let n = x.len();
    let full = n / SCATTER_COLS * SCATTER_COLS;
    for (c, xc) in x[..full].chunks_exact(SCATTER_COLS).enumerate() {
        let start = c * SCATTER_COLS;
        let xc: &[A; SCATTER_COLS] = xc.try_into().expect("a full chunk");
        let xw: [f64; SCATTER_COLS] = std::array::from_fn(|l| xc[l].wide());
        for &(a, o) in targets {
            let yc: &mut [f64; SCATTER_COLS] = (&mut y[o + start..o + start + SCATTER_COLS])
                .try_into()
                .expect("a full chunk");
            for l in 0..SCATTER_COLS {
                yc[l] += a * xw[l];
            }
        }
    }
    for (j, xj) in x.iter().enumerate().skip(full) {
        let xj = xj.wide();
        for &(a, o) in targets {
            y[o + j] += a * xj;
        }
    }
}

/// Columns of `y` kept in registers while [`axpy_rows`] adds the rows.
const AXPY_COLS: usize = 64;

/// `y += alpha[r] * rows[r]` for every row `r` in turn, each element the
/// bits of the plain sequence of [`axpy`] calls (the same multiply and add
/// per row, in row order; a factor of +-1 as an exact add or subtract), but
/// each block of `y` loaded and stored once rather than once per row.
#[inline(always)]
pub fn axpy_rows<A: Elem>(alpha: &[f64], rows: &[&[A]], y: &mut [f64]) {
    let n = y.len();
    let full = n / AXPY_COLS * AXPY_COLS;
    for (c, yc) in y[..full].chunks_exact_mut(AXPY_COLS).enumerate() {
        let start = c * AXPY_COLS;
        let yc: &mut [f64; AXPY_COLS] = yc.try_into().expect("a full block");
        let mut acc = *yc;
        for (&s, r) in alpha.iter().zip(rows) {
            let x: &[A; AXPY_COLS] = r[start..start + AXPY_COLS]
                .try_into()
                .expect("a full block");
            // A factor of +-1 (the multiclass subgradient's) multiplies
            // exactly, so adding or subtracting the row gives the same bits
            // without the multiply (a NaN's sign bit aside, which Rust
            // leaves unspecified anyway).
            if s == 1.0 {
                for l in 0..AXPY_COLS {
                    acc[l] += x[l].wide();
                }
            } else if s == -1.0 {
                for l in 0..AXPY_COLS {
                    acc[l] -= x[l].wide();
                }
            } else {
                for l in 0..AXPY_COLS {
                    acc[l] += s * x[l].wide();
                }
            }
        }
        *yc = acc;
    }
    for (&s, r) in alpha.iter().zip(rows) {
        for (yi, xi) in y[full..].iter_mut().zip(&r[full..n]) {
            *yi += s * xi.wide();
        }
    }
}

/// `y -= s (a - b)`, element by element (a subtraction, a multiply and a
/// subtraction, each rounded).
#[inline(always)]
pub fn sub_scaled_diff(s: f64, a: &[f64], b: &[f64], y: &mut [f64]) {
    for ((yi, &ai), &bi) in y.iter_mut().zip(a).zip(b) {
        *yi -= s * (ai - bi);
    }
}

/// One step of the max-plus (Viterbi) recursion over `k = cur.len()`
/// labels: `cur[y] = max_p prev[p] + trans[p k + y]` and `from[y]` the
/// lowest maximising `p`. Labels are taken 8 at a time, their running maxima
/// kept in registers over all predecessors (stored back once: a masked store
/// that the next load must wait for costs more than the whole comparison),
/// and the comparisons are selects, so the lanes need no branch. When 8 does
/// not divide `k`, the last 8 labels are taken again (each label's result
/// does not depend on its neighbours, so the overlap writes the same
/// values); fewer than 8 labels go one at a time. A maximum takes no
/// rounding, so every clone gives the same bits.
#[inline(always)]
pub fn max_plus(prev: &[f64], trans: &[f64], cur: &mut [f64], from: &mut [u32]) {
    const W: usize = 8;
    let k = cur.len();
    if k < W {
        for y in 0..k {
            let (mut best, mut arg) = (prev[0] + trans[y], 0u32);
            for p in 1..k {
                let v = prev[p] + trans[p * k + y];
                let better = v > best;
                best = if better { v } else { best };
                arg = if better { p as u32 } else { arg };
            }
            cur[y] = best;
            from[y] = arg;
        }
        return;
    }
    let mut y0 = 0;
    loop {
        let mut best = [0.0f64; W];
        let mut arg = [0u32; W];
        for l in 0..W {
            best[l] = prev[0] + trans[y0 + l];
        }
        for p in 1..k {
            let (sp, row) = (prev[p], &trans[p * k + y0..p * k + y0 + W]);
            for l in 0..W {
                let v = sp + row[l];
                let better = v > best[l];
                best[l] = if better { v } else { best[l] };
                arg[l] = if better { p as u32 } else { arg[l] };
            }
        }
        cur[y0..y0 + W].copy_from_slice(&best);
        from[y0..y0 + W].copy_from_slice(&arg);
        if y0 + W == k {
            break;
        }
        y0 = (y0 + W).min(k - W);
    }
}

/// Length of the blocks the product walks the rows in: a block of the
/// right-hand rows (up to a few dozen rows of 2048 doubles) stays in L2
/// while every left-hand row passes over it.
pub const BLOCK: usize = 2048;

/// Left rows whose accumulators are kept at once (a multiple of the tiles'
/// 3 rows).
pub const GROUP: usize = 48;

/// Accumulators of every (left row, right row) pair of a product, kept
/// between length blocks: pair `(i, k)` owns `acc[(i * nb + k) * LANES..]`.
pub struct Acc<'a> {
    pub acc: &'a mut [f64],
    pub nb: usize,
}

/// The register tile: `TI x TK` accumulators advanced over `chunks` whole
/// chunks of `TI` left and `TK` right rows.
pub trait Kernel<A, const TI: usize, const TK: usize> {
    fn run(
        xs: &[&[[A; LANES]]; TI],
        ys: &[&[[f64; LANES]]; TK],
        t: &mut [&mut [[f64; LANES]; TK]; TI],
        chunks: usize,
    );
}

/// The implementor of [`Kernel`] for every tile shape the products use.
pub struct Micro;

/// One row of a tile: left row `$i` against every right row of `$ks`.
macro_rules! micro_row {
    ($acc:ident, $xa:ident, $ys:ident, $c:ident, $i:tt, [$($k:tt),*]) => {
        $( fma_lanes(&mut $acc[$i][$k], &$xa[$i], &$ys[$k][$c]); )*
    };
}

/// [`Kernel`] for one shape, written out pair by pair with constant
/// indices: the accumulators then live in registers (a loop over the pairs
/// is not unrolled for the larger tiles, which leaves them on the stack).
macro_rules! micro {
    ($ti:literal, $tk:literal, [$($i:tt),*], $ks:tt) => {
        impl<A: Elem> Kernel<A, $ti, $tk> for Micro {
            #[inline(always)]
            fn run(
                xs: &[&[[A; LANES]]; $ti],
                ys: &[&[[f64; LANES]]; $tk],
                t: &mut [&mut [[f64; LANES]; $tk]; $ti],
                chunks: usize,
            ) {
                // Loaded straight from the accumulator store and stored
                // back once: no copy between (a tile may run 1 chunk).
                let mut acc: [[[f64; LANES]; $tk]; $ti] = [$(*t[$i]),*];
                for c in 0..chunks {
                    let xa: [[f64; LANES]; $ti] = [$(widen(&xs[$i][c])),*];
                    $( micro_row!(acc, xa, ys, c, $i, $ks); )*
                }
                $( *t[$i] = acc[$i]; )*
            }
        }
    };
}

micro!(3, 4, [0, 1, 2], [0, 1, 2, 3]);
micro!(3, 2, [0, 1, 2], [0, 1]);
micro!(3, 1, [0, 1, 2], [0]);
micro!(1, 4, [0], [0, 1, 2, 3]);
micro!(1, 3, [0], [0, 1, 2]);
micro!(1, 2, [0], [0, 1]);
micro!(1, 1, [0], [0]);

/// A chunk widened to `f64`.
#[inline(always)]
fn widen<A: Elem>(c: &[A; LANES]) -> [f64; LANES] {
    let mut out = [0.0; LANES];
    for l in 0..LANES {
        out[l] = c[l].wide();
    }
    out
}

/// Advances the accumulators of the `TI x TK` pairs `(i0 + i, k0 + k)`
/// over the elements `start..end` of the rows (`start` a multiple of
/// `LANES`).
#[inline(always)]
fn tile<A: Elem, const TI: usize, const TK: usize>(
    a: &[&[A]],
    b: &[&[f64]],
    (i0, k0): (usize, usize),
    (start, end): (usize, usize),
    acc: &mut Acc<'_>,
) where
    Micro: Kernel<A, TI, TK>,
{
    // The tile's pairs in the store: for each of its left rows, `TK`
    // consecutive pairs. The first length block starts them from `+0` (the
    // store is not cleared between calls); later ones carry them on.
    let nb = acc.nb;
    let mut band = acc.acc[i0 * nb * LANES..(i0 + TI) * nb * LANES].chunks_exact_mut(nb * LANES);
    let mut t: [&mut [[f64; LANES]; TK]; TI] = std::array::from_fn(|_| {
        let row = band.next().expect("a left row of the tile");
        row[k0 * LANES..(k0 + TK) * LANES]
            .as_chunks_mut::<LANES>()
            .0
            .try_into()
            .expect("TK pairs")
    });
    if start == 0 {
        for r in t.iter_mut() {
            **r = [[0.0; LANES]; TK];
        }
    }
    let full_end = start + (end - start) / LANES * LANES;
    let chunks = (full_end - start) / LANES;
    // Every row cut to exactly `chunks` whole chunks, so the loop below
    // indexes without bounds checks (which would split it into blocks the
    // vectoriser cannot join).
    let xs: [&[[A; LANES]]; TI] =
        std::array::from_fn(|i| &a[i0 + i][start..full_end].as_chunks::<LANES>().0[..chunks]);
    let ys: [&[[f64; LANES]]; TK] =
        std::array::from_fn(|k| &b[k0 + k][start..full_end].as_chunks::<LANES>().0[..chunks]);
    <Micro as Kernel<A, TI, TK>>::run(&xs, &ys, &mut t, chunks);
    if full_end < end {
        let mut xa = [[0.0f64; LANES]; TI];
        for i in 0..TI {
            xa[i] = chunk(&a[i0 + i][..end], full_end);
        }
        for k in 0..TK {
            let yb = chunk(&b[k0 + k][..end], full_end);
            for i in 0..TI {
                fma_lanes(&mut t[i][k], &xa[i], &yb);
            }
        }
    }
}

/// All pairs with left rows `i0..i0 + TI` over `start..end`: right rows in
/// tiles of `TK`, then 4, 2 and 1.
#[inline(always)]
fn row_band<A: Elem, const TI: usize, const TK: usize>(
    a: &[&[A]],
    b: &[&[f64]],
    i0: usize,
    span: (usize, usize),
    acc: &mut Acc<'_>,
) where
    Micro: Kernel<A, TI, TK> + Kernel<A, TI, 4> + Kernel<A, TI, 2> + Kernel<A, TI, 1>,
{
    let nb = b.len();
    let mut k = 0;
    while k + TK <= nb {
        tile::<A, TI, TK>(a, b, (i0, k), span, acc);
        k += TK;
    }
    while k + 4 <= nb {
        tile::<A, TI, 4>(a, b, (i0, k), span, acc);
        k += 4;
    }
    while k + 2 <= nb {
        tile::<A, TI, 2>(a, b, (i0, k), span, acc);
        k += 2;
    }
    while k < nb {
        tile::<A, TI, 1>(a, b, (i0, k), span, acc);
        k += 1;
    }
}

/// `out[i nb + k] = <a[i], b[k]>` for rows of one length `n`, every entry
/// the same bits as [`dot`]`(a[i], b[k])`: the accumulators are carried
/// across the length blocks (of `block` elements, a multiple of `LANES`)
/// unchanged, so the order of the fused multiply-adds in each lane is the
/// same whatever the tile and the block. `TI x TK` is the register tile.
/// The lines of `next` (rows the caller will pass next) are prefetched into
/// L2 a few at a time between the tiles, so that the next call's rows
/// arrive while this one computes.
#[inline(always)]
pub fn row_dots<A: Elem, const TI: usize, const TK: usize>(
    (a, b): (&[&[A]], &[&[f64]]),
    (n, block): (usize, usize),
    out: &mut [f64],
    store: &mut Vec<f64>,
    next: &[A],
) where
    Micro: Kernel<A, TI, TK> + Kernel<A, TI, 4> + Kernel<A, TI, 2> + Kernel<A, TI, 1>,
    Micro: Kernel<A, 1, TK> + Kernel<A, 1, 4> + Kernel<A, 1, 2> + Kernel<A, 1, 1>,
{
    let (na, nb) = (a.len(), b.len());
    debug_assert!(a.iter().all(|r| r.len() >= n) && b.iter().all(|r| r.len() >= n));
    debug_assert_eq!(out.len(), na * nb);
    debug_assert!(block >= LANES && block % LANES == 0);
    if na == 0 || nb == 0 {
        return;
    }
    if n == 0 {
        // No length block runs, so none would clear the store: every dot
        // of nothing is the sum of 16 lanes of +0.
        out.fill(0.0);
        return;
    }
    // Left rows in groups, so the accumulators kept between length blocks
    // stay small (and in cache) however many rows there are.
    let group = GROUP.min(na);
    if store.len() < group * nb * LANES {
        store.resize(group * nb * LANES, 0.0);
    }
    let bands_per_block = group.div_ceil(TI);
    let steps = na.div_ceil(group) * n.div_ceil(block).max(1) * bands_per_block;
    let mut ahead = Ahead::new(next, steps);
    for (g, out_g) in a.chunks(group).zip(out.chunks_mut(group * nb)) {
        let store = &mut store[..g.len() * nb * LANES];
        let mut acc = Acc { acc: store, nb };
        // Streamed (f32) rows are all fetched at once before the tiles run;
        // rows of f64 (planes) are mostly in cache already.
        if A::STREAMED {
            touch(g, (0, n));
        }
        let mut start = 0;
        while start < n {
            let end = (start + block).min(n);
            let mut i = 0;
            while i + TI <= g.len() {
                ahead.step();
                row_band::<A, TI, TK>(g, b, i, (start, end), &mut acc);
                i += TI;
            }
            while i < g.len() {
                ahead.step();
                row_band::<A, 1, TK>(g, b, i, (start, end), &mut acc);
                i += 1;
            }
            start = end;
        }
        for (o, lanes) in out_g.iter_mut().zip(acc.acc.chunks_exact(LANES)) {
            *o = reduce(lanes.try_into().expect("a full chunk"));
        }
    }
    ahead.finish();
}

/// The lines of a slice still to prefetch, a share of them at each step.
struct Ahead<'a, A> {
    rest: &'a [A],
    per_step: usize,
}

impl<'a, A> Ahead<'a, A> {
    /// Elements per cache line.
    const STRIDE: usize = 64 / std::mem::size_of::<A>();

    fn new(rows: &'a [A], steps: usize) -> Self {
        let lines = rows.len().div_ceil(Self::STRIDE);
        Ahead {
            rest: rows,
            per_step: lines.div_ceil(steps.max(1)),
        }
    }

    #[inline(always)]
    fn step(&mut self) {
        for _ in 0..self.per_step {
            let Some(first) = self.rest.first() else {
                return;
            };
            prefetch_l2(first);
            self.rest = &self.rest[Self::STRIDE.min(self.rest.len())..];
        }
    }

    /// Whatever the steps left (rounding), at once.
    fn finish(&mut self) {
        while !self.rest.is_empty() {
            self.step();
        }
    }
}

/// Asks for the cache line holding `v` to be brought into L2 (not L1: the
/// next rows would evict the weights the tiles are reading). A hint only.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_l2<A>(v: &A) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory; the pointer
    // comes from a reference, so it is valid anyway. SSE, which the
    // instruction needs, is part of every x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        _mm_prefetch::<_MM_HINT_T1>((v as *const A).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// Reads one element per cache line of `rows` over `start..end`, so all
/// their loads from memory are under way at once, in one sequential burst
/// the hardware prefetcher follows: the tiles read a few lines at a time
/// between many fused multiply-adds and would otherwise wait for each line
/// in turn (measured: the multiclass scores of Fashion-MNIST about 20 %
/// faster; fetching a band ahead instead gained less). Rows that [`Ahead`]
/// brought into L2 during the previous call are read here from L2.
#[inline(always)]
fn touch<A: Elem>(rows: &[&[A]], (start, end): (usize, usize)) {
    let step = 64 / std::mem::size_of::<A>();
    // Eight independent sums: one chain of additions starts one line per
    // add latency (in a profile, about a tenth of the wide tile's time).
    let mut sums = [0.0f64; 8];
    for r in rows {
        for (j, v) in r[start..end].iter().step_by(step).enumerate() {
            sums[j % 8] += v.wide();
        }
    }
    std::hint::black_box(sums);
}

/// `iters` rounds of `v = v a + b` on `W` independent values (chains of
/// fused multiply-adds in registers, nothing loaded): the FMA rate the
/// benchmarks compare the kernels with. Returns the sum of the values.
#[inline(always)]
pub fn fma_chains<const W: usize>(iters: usize, a: f64, b: f64) -> f64 {
    let mut v = [1.0f64; W];
    for _ in 0..iters {
        for x in v.iter_mut() {
            *x = x.mul_add(a, b);
        }
    }
    v.iter().sum()
}

/// The sum of `x` in 16 independent lanes: a pure streaming read, the rate
/// the benchmarks compare a pass over the same bytes with.
#[inline(always)]
pub fn stream_sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    for (a, v) in acc.iter_mut().zip(tail) {
        *a += v;
    }
    acc.iter().sum()
}
