//! The dense kernels the solvers and the built-in models need: dot products,
//! `axpy` and the product of two sets of rows (`A B^T`, the batched scores
//! of the multiclass model and the bundle's Gram columns).
//!
//! # Speed: chosen at run time
//!
//! Each kernel is compiled three times (`#[target_feature]` clones, each
//! called only on a CPU that has its features): for AVX-512, for AVX2 + FMA
//! and for the target's baseline. The process uses
//! the best its CPU has ([`isa::selected`]), so one `libbmrm.so` runs at the
//! machine's speed everywhere; `BMRM_KERNELS=portable|avx2|avx512` forces
//! one (benchmarks, tests).
//!
//! # Same bits everywhere
//!
//! Every dot product has one reduction structure (`kernels.rs`: 16 lanes of
//! fused multiply-adds in element order, then a fixed tree), written once in
//! plain Rust; the clones differ only in register width. So every kernel
//! gives the same bits on every CPU kind, every instruction set and every
//! thread count, and the batched product gives for each pair exactly the
//! bits of the single [`dot`] of that pair. (Without a hardware FMA the
//! portable clone computes `mul_add` in software: same bits, slower.)

pub mod isa;
mod kernels;
#[cfg(test)]
mod tests;
mod wide;

pub use isa::Isa;
pub use kernels::{Elem, LANES};

/// Declares `$name` for each instruction set: `$name::avx512`, `::avx2` and
/// `::portable`, all running the same body. The first two are compiled with
/// `#[target_feature]` for exactly the features [`Isa::supported`] checks
/// (AVX-512 F + VL with AVX2 and FMA; AVX2 with FMA) and run only when this
/// CPU has them, else fall back to the portable body (the same bits).
///
/// (The `multiversion` crate did this before, but its AVX-512 clones also
/// require the Ice Lake extensions (VBMI, GFNI, VAES, ...): on a Skylake-X
/// or Cascade Lake CPU, which `Isa::supported` accepts, every AVX-512 call
/// fell back to the baseline build and its software `mul_add`, about 100
/// times slower.)
macro_rules! clones {
    ($name:ident <$($g:ident : $b:path),*> ($($arg:ident : $ty:ty),*) -> $ret:ty $body:block) => {
        // The one `unsafe` here: calling a clone once its features are found.
        #[allow(unused_braces, unsafe_code)]
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
            fn avx512_body<$($g: $b),*>($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2_body<$($g: $b),*>($($arg: $ty),*) -> $ret $body
            #[inline]
            pub fn avx512<$($g: $b),*>($($arg: $ty),*) -> $ret {
                #[cfg(target_arch = "x86_64")]
                if Isa::Avx512.supported() {
                    // SAFETY: `avx512_body` needs exactly the features
                    // `Isa::Avx512.supported()` has just found on this CPU.
                    return unsafe { avx512_body($($arg),*) };
                }
                portable($($arg),*)
            }
            #[inline]
            pub fn avx2<$($g: $b),*>($($arg: $ty),*) -> $ret {
                #[cfg(target_arch = "x86_64")]
                if Isa::Avx2.supported() {
                    // SAFETY: `avx2_body` needs exactly the features
                    // `Isa::Avx2.supported()` has just found on this CPU.
                    return unsafe { avx2_body($($arg),*) };
                }
                portable($($arg),*)
            }
            pub fn portable<$($g: $b),*>($($arg: $ty),*) -> $ret $body
        }
    };
}

/// Calls the clone of `$name` for `$isa`.
macro_rules! call {
    ($isa:expr, $name:ident ($($arg:expr),*)) => {
        match $isa {
            Isa::Avx512 => $name::avx512($($arg),*),
            Isa::Avx2 => $name::avx2($($arg),*),
            Isa::Portable => $name::portable($($arg),*),
        }
    };
}

clones!(dot_k<A: Elem>(x: &[A], y: &[f64]) -> f64 { kernels::dot(x, y) });
clones!(axpy_k<A: Elem>(alpha: f64, x: &[A], y: &mut [f64]) -> () { kernels::axpy(alpha, x, y) });
clones!(axpy_scatter_k<A: Elem>(targets: &[(f64, usize)], x: &[A], y: &mut [f64]) -> () {
    kernels::axpy_scatter(targets, x, y)
});
clones!(axpy_rows_k<A: Elem>(alpha: &[f64], rows: &[&[A]], y: &mut [f64]) -> () {
    kernels::axpy_rows(alpha, rows, y)
});
clones!(sub_scaled_diff_k<>(s: f64, a: &[f64], b: &[f64], y: &mut [f64]) -> () {
    kernels::sub_scaled_diff(s, a, b, y)
});
clones!(max_plus_k<>(prev: &[f64], trans: &[f64], cur: &mut [f64], from: &mut [u32]) -> () {
    kernels::max_plus(prev, trans, cur, from)
});
clones!(sparse_dot_k<>(index: &[u32], value: &[f64], y: &[f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    for (&j, &v) in index.iter().zip(value) {
        let l = j as usize % LANES;
        acc[l] = v.mul_add(y[j as usize], acc[l]);
    }
    kernels::reduce(&acc)
});
clones!(sparse_sparse_dot_k<>(ia: &[u32], va: &[f64], ib: &[u32], vb: &[f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let (mut p, mut q) = (0, 0);
    while p < ia.len() && q < ib.len() {
        match ia[p].cmp(&ib[q]) {
            std::cmp::Ordering::Less => p += 1,
            std::cmp::Ordering::Greater => q += 1,
            std::cmp::Ordering::Equal => {
                let l = ia[p] as usize % LANES;
                acc[l] = va[p].mul_add(vb[q], acc[l]);
                p += 1;
                q += 1;
            }
        }
    }
    kernels::reduce(&acc)
});
/// The register tile of [`row_dots`]: `Wide` is 2 left rows against up to
/// 10 right rows, one half of each pair's lanes at a time (`wide.rs`), for
/// streamed `f32` rows (the multiclass scores, the chain's emissions) on
/// AVX-512, whose 32 registers hold its 20 accumulators. `Square` is 3 x 4
/// pairs over blocks of 2048 (two zmm accumulators each on AVX-512, 24 of
/// 32 registers; on AVX2 the 12 pairs of four ymm spill, yet measured
/// faster there than 1 x 3 or 1 x 4 tiles: Gram columns of 7,850, about 30
/// against 25 GFLOP/s). Every choice gives the same bits.
#[derive(Clone, Copy)]
enum Tile {
    Wide,
    Square,
}

clones!(row_dots_k<A: Elem>(rows: (&[&[A]], &[&[f64]]), n: usize, out: &mut [f64], store: &mut Vec<f64>, next: &[A]) -> () {
    kernels::row_dots::<A, 3, 4>(rows, (n, kernels::BLOCK), out, store, next)
});
clones!(row_dots_wide_k<A: Elem>(rows: (&[&[A]], &[&[f64]]), n: usize, out: &mut [f64], scratch: &mut wide::Scratch, next: &[A], given: Option<&wide::Packed>) -> () {
    wide::row_dots(rows, n, out, scratch, next, given)
});

/// The tile for rows of `A` on `isa`: the wide one for streamed rows where
/// its 20 accumulators fit the registers (AVX-512).
fn tile_for<A: Elem>(isa: Isa) -> Tile {
    if A::STREAMED && isa == Isa::Avx512 {
        Tile::Wide
    } else {
        Tile::Square
    }
}

clones!(fma_chains_k<>(iters: usize, a: f64, b: f64, width: usize) -> f64 {
    match width {
        96 => kernels::fma_chains::<96>(iters, a, b),
        48 => kernels::fma_chains::<48>(iters, a, b),
        _ => kernels::fma_chains::<24>(iters, a, b),
    }
});
clones!(stream_sum_k<>(x: &[f32]) -> f32 { kernels::stream_sum(x) });

/// `iters` rounds of `v = v a + b` over 12 registers of independent values
/// on the selected instruction set: the fused multiply-add rate the
/// benchmarks compare the kernels with. Returns the sum of the values and
/// the number of fused multiply-adds done.
pub fn fma_peak_loop(iters: usize, a: f64, b: f64) -> (f64, usize) {
    let isa = isa::selected();
    // 12 registers of 8, 4 or 2 doubles: more independent chains than the
    // FMA latency times the FMA units on current cores.
    let width = match isa {
        Isa::Avx512 => 96,
        Isa::Avx2 => 48,
        Isa::Portable => 24,
    };
    (call!(isa, fma_chains_k(iters, a, b, width)), iters * width)
}

/// The sum of `x` (16 lanes) on the selected instruction set: a streaming
/// read, the rate a pass over the same bytes is compared with.
pub fn stream_sum(x: &[f32]) -> f32 {
    call!(isa::selected(), stream_sum_k(x))
}

thread_local! {
    /// The accumulators [`row_dots`] carries between length blocks, kept
    /// per thread: the multiclass oracle's product of every block of 48
    /// examples would otherwise allocate and clear 60 KB (3 % of a
    /// Prox-P-BMRM run on Fashion-MNIST was that `memset`).
    static ROW_DOTS_STORE: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The packed right rows and the accumulators of the wide tile
    /// (`wide.rs`), likewise reused.
    static WIDE_SCRATCH: std::cell::RefCell<wide::Scratch> = std::cell::RefCell::new(wide::Scratch::default());
}

/// One step of the max-plus (Viterbi) recursion over `k = cur.len()`
/// labels, `prev` and `trans` (`k x k`, row `p` for predecessor `p`) given:
/// `cur[y] = max_p prev[p] + trans[p k + y]`, `from[y]` the lowest maximising
/// `p` (ties go to the lower label; a NaN candidate never wins).
pub fn max_plus(prev: &[f64], trans: &[f64], cur: &mut [f64], from: &mut [u32]) {
    max_plus_with(isa::selected(), prev, trans, cur, from)
}

/// [`max_plus`] with the given instruction set's clone.
pub fn max_plus_with(isa: Isa, prev: &[f64], trans: &[f64], cur: &mut [f64], from: &mut [u32]) {
    let k = cur.len();
    assert!(k > 0 && prev.len() >= k && trans.len() >= k * k && from.len() >= k);
    call!(isa, max_plus_k(prev, trans, cur, from))
}

/// `<x, y>` (the shorter length if they differ, which callers avoid).
#[inline]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    dot_with(isa::selected(), x, y)
}

/// `<x, y>` for `f32` `x` (features) and `f64` `y` (weights), in `f64`.
#[inline]
pub fn dot_f32(x: &[f32], y: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    dot_with(isa::selected(), x, y)
}

/// [`dot`] on a given instruction set (the same bits on each).
pub fn dot_with<A: Elem>(isa: Isa, x: &[A], y: &[f64]) -> f64 {
    call!(isa, dot_k(x, y))
}

/// `<a, y>` for a sparse `a` (indices increasing, values `value`) and a
/// dense `y`, in the kernels' structure (entry `j` in lane `j % LANES`,
/// then the tree): the bits of [`dot`] of the densified `a` with `y` when
/// `y` is finite (a skipped zero adds exactly nothing to a lane). Cloned per
/// instruction set like the dense kernels, so that `mul_add` is one
/// instruction and not a call into the software FMA.
pub fn sparse_dot(index: &[u32], value: &[f64], y: &[f64]) -> f64 {
    call!(isa::selected(), sparse_dot_k(index, value, y))
}

/// `<a, b>` for two sparse vectors (indices increasing), in the kernels'
/// structure: the bits of [`dot`] of the two densified vectors.
pub fn sparse_sparse_dot(ia: &[u32], va: &[f64], ib: &[u32], vb: &[f64]) -> f64 {
    call!(isa::selected(), sparse_sparse_dot_k(ia, va, ib, vb))
}

/// `||x||^2`.
#[inline]
pub fn norm2(x: &[f64]) -> f64 {
    dot(x, x)
}

/// `y += alpha * x`.
#[inline]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    axpy_with(isa::selected(), alpha, x, y)
}

/// `y += alpha * x` for `f32` `x` (features), in `f64`.
#[inline]
pub fn axpy_f32(alpha: f64, x: &[f32], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    axpy_with(isa::selected(), alpha, x, y)
}

/// [`axpy`] on a given instruction set (the same bits on each).
pub fn axpy_with<A: Elem>(isa: Isa, alpha: f64, x: &[A], y: &mut [f64]) {
    call!(isa, axpy_k(alpha, x, y))
}

/// `y[o..o + x.len()] += a * x` for every `(a, o)` of `targets`: the bits
/// of one [`axpy_with`] per target, each chunk of `x` read and widened once
/// (a chain token's feature row added to the label blocks of `v`).
///
/// # Panics
/// When the ranges are not increasing and disjoint or one passes the end
/// of `y`.
pub fn axpy_scatter_with<A: Elem>(isa: Isa, targets: &[(f64, usize)], x: &[A], y: &mut [f64]) {
    let mut free = 0;
    for &(_, o) in targets {
        assert!(
            o >= free && o.checked_add(x.len()).is_some_and(|e| e <= y.len()),
            "axpy_scatter: the target at {o} overlaps another or passes the end ({})",
            y.len()
        );
        free = o + x.len();
    }
    call!(isa, axpy_scatter_k(targets, x, y))
}

/// [`axpy_scatter_with`] on the selected instruction set.
#[inline]
pub fn axpy_scatter<A: Elem>(targets: &[(f64, usize)], x: &[A], y: &mut [f64]) {
    axpy_scatter_with(isa::selected(), targets, x, y)
}

/// `y += alpha[r] * rows[r]` for each row in turn: the bits of one
/// [`axpy_with`] per row in that order, each block of `y` loaded and stored
/// once (the multiclass subgradient of a block of examples).
///
/// # Panics
/// When `alpha` and `rows` differ in length or a row is shorter than `y`.
pub fn axpy_rows_with<A: Elem>(isa: Isa, alpha: &[f64], rows: &[&[A]], y: &mut [f64]) {
    assert_eq!(alpha.len(), rows.len(), "axpy_rows: one alpha per row");
    assert!(
        rows.iter().all(|r| r.len() >= y.len()),
        "axpy_rows: a row is shorter than y"
    );
    call!(isa, axpy_rows_k(alpha, rows, y))
}

/// [`axpy_rows_with`] on the selected instruction set.
#[inline]
pub fn axpy_rows<A: Elem>(alpha: &[f64], rows: &[&[A]], y: &mut [f64]) {
    axpy_rows_with(isa::selected(), alpha, rows, y)
}

/// `y -= s (a - b)` (the QP's gradient update of a pair step), the bits
/// of the plain loop.
#[inline]
pub fn sub_scaled_diff(s: f64, a: &[f64], b: &[f64], y: &mut [f64]) {
    call!(isa::selected(), sub_scaled_diff_k(s, a, b, y))
}

/// `out[i b.len() + k] = <a[i][..n], b[k][..n]>`: the product `A B^T` of
/// two sets of rows, cache-blocked and register-tiled, each entry the same
/// bits as [`dot`] of its two rows.
///
/// # Panics
/// When a row is shorter than `n` or `out.len() != a.len() * b.len()`.
pub fn row_dots<A: Elem>(a: &[&[A]], b: &[&[f64]], n: usize, out: &mut [f64]) {
    row_dots_ahead(a, b, n, out, &[])
}

/// [`row_dots`], prefetching `next` (the rows the caller will pass to its
/// next call, e.g. the next block of examples) into L2 while it computes:
/// a hint, which changes no result.
///
/// # Panics
/// As [`row_dots`].
pub fn row_dots_ahead<A: Elem>(a: &[&[A]], b: &[&[f64]], n: usize, out: &mut [f64], next: &[A]) {
    let isa = isa::selected();
    row_dots_impl(isa, (a, b), n, out, next, tile_for::<A>(isa))
}

/// [`row_dots`] on a given instruction set (the same bits on each).
pub fn row_dots_with<A: Elem>(isa: Isa, a: &[&[A]], b: &[&[f64]], n: usize, out: &mut [f64]) {
    row_dots_impl(isa, (a, b), n, out, &[], tile_for::<A>(isa))
}

/// [`row_dots_with`] with the tile forced (the tests check both on every
/// instruction set).
#[cfg(test)]
fn row_dots_tiled<A: Elem>(
    isa: Isa,
    (a, b): (&[&[A]], &[&[f64]]),
    n: usize,
    out: &mut [f64],
    next: &[A],
    wide: bool,
) {
    let tile = if wide { Tile::Wide } else { Tile::Square };
    row_dots_impl(isa, (a, b), n, out, next, tile)
}

fn row_dots_impl<A: Elem>(
    isa: Isa,
    (a, b): (&[&[A]], &[&[f64]]),
    n: usize,
    out: &mut [f64],
    next: &[A],
    tile: Tile,
) {
    check_left(a, n, out.len(), b.len());
    assert!(
        b.iter().all(|r| r.len() >= n),
        "row_dots: a right row is shorter than {n}"
    );
    match tile {
        Tile::Wide => WIDE_SCRATCH
            .with_borrow_mut(|s| call!(isa, row_dots_wide_k((a, b), n, out, s, next, None))),
        Tile::Square => ROW_DOTS_STORE
            .with_borrow_mut(|store| call!(isa, row_dots_k((a, b), n, out, store, next))),
    }
}

/// The right rows of [`row_dots`] prepared once for many products with
/// them: a pass's class blocks, the same for every block of examples of
/// the pass. On AVX-512 their full chunks are copied here once into the
/// cache-line-aligned layout the wide tile reads (`wide.rs`), which
/// [`row_dots`] otherwise redoes on every call (a tenth of the multiclass
/// pass, blocks of 48 examples). Read-only once built: threads may share
/// it.
pub struct PackedRows<'a> {
    rows: Vec<&'a [f64]>,
    n: usize,
    isa: Isa,
    /// The wide tile's layout, on AVX-512.
    wide: Option<wide::Packed>,
}

impl<'a> PackedRows<'a> {
    /// The first `n` elements of each of `rows`, for the selected
    /// instruction set.
    ///
    /// # Panics
    /// When a row is shorter than `n`.
    pub fn new(rows: &[&'a [f64]], n: usize) -> Self {
        Self::with(isa::selected(), rows, n)
    }

    /// [`PackedRows::new`] for a given instruction set (the same bits on
    /// each).
    ///
    /// # Panics
    /// As [`PackedRows::new`].
    pub fn with(isa: Isa, rows: &[&'a [f64]], n: usize) -> Self {
        assert!(
            rows.iter().all(|r| r.len() >= n),
            "PackedRows: a row is shorter than {n}"
        );
        let wide = (isa == Isa::Avx512).then(|| wide::Packed::new(rows, n));
        PackedRows {
            rows: rows.to_vec(),
            n,
            isa,
            wide,
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// The panics of the products: a left row shorter than `n`, or `out` not
/// `a.len() x right` long.
fn check_left<A>(a: &[&[A]], n: usize, out_len: usize, right: usize) {
    assert!(
        a.iter().all(|r| r.len() >= n),
        "row_dots: a left row is shorter than {n}"
    );
    assert_eq!(
        out_len,
        a.len() * right,
        "row_dots: out has the wrong length"
    );
}

/// [`row_dots_ahead`] against rows packed once ([`PackedRows`]), on their
/// instruction set: `out[i b.len() + k] = <a[i][..n], b_k[..n]>`, each
/// entry the bits of [`dot`] of its two rows.
///
/// # Panics
/// When a left row is shorter than `b`'s `n` or `out.len() != a.len() *
/// b.len()`.
pub fn row_dots_packed<A: Elem>(a: &[&[A]], b: &PackedRows<'_>, out: &mut [f64], next: &[A]) {
    let (isa, n) = (b.isa, b.n);
    check_left(a, n, out.len(), b.len());
    let rows = (a, &b.rows[..]);
    match (tile_for::<A>(isa), &b.wide) {
        (Tile::Wide, Some(packed)) => WIDE_SCRATCH
            .with_borrow_mut(|s| call!(isa, row_dots_wide_k(rows, n, out, s, next, Some(packed)))),
        _ => ROW_DOTS_STORE
            .with_borrow_mut(|store| call!(isa, row_dots_k(rows, n, out, store, next))),
    }
}

/// Asks for every cache line of `data` to be brought into the caches, for
/// data the caller reads soon in an order the hardware cannot guess (a
/// randomly drawn block's row). A hint: nothing is read, no result changes.
pub fn prefetch<T>(data: &[T]) {
    each_line(data, |p| wide::prefetch_l1(p));
}

/// [`prefetch`] into L2 only, for lines read after other work that would
/// evict them from L1: BCFW's next chain block, read after the oracle call
/// (measured on the OCR words: with the L1 hint the oracle took 0.8 s
/// longer of 11 s).
pub fn prefetch_l2<T>(data: &[T]) {
    each_line(data, |p| wide::prefetch_l2(p));
}

/// Calls `hint` with a pointer into every cache line of `data`.
#[inline(always)]
fn each_line<T>(data: &[T], hint: impl Fn(*const T)) {
    const LINE: usize = 64;
    let start = data.as_ptr() as usize;
    let end = start + std::mem::size_of_val(data);
    let mut line = start & !(LINE - 1);
    while line < end {
        hint(data.as_ptr().wrapping_byte_add(line.wrapping_sub(start)));
        line += LINE;
    }
}

/// `||x - y||`.
#[inline]
pub fn dist(x: &[f64], y: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt()
}

/// The index and value of the first non-finite entry, if any.
pub fn first_non_finite(x: &[f64]) -> Option<(usize, f64)> {
    x.iter().position(|v| !v.is_finite()).map(|j| (j, x[j]))
}
