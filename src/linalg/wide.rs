//! The product `A B^T` for streamed `f32` left rows (the multiclass scores,
//! the chain's emissions): the register tile is 2 left rows x 10 right
//! rows, for AVX-512's 32 registers.
//!
//! Each pair's 16 lanes (the reduction structure of `kernels.rs`) are two
//! independent halves of 8: lanes `0..8` see the elements `16 c + l`, lanes
//! `8..16` the elements `16 c + 8 + l`. A tile advances one half of its 20
//! pairs at a time (20 registers, and the two widened half-rows), so each
//! weight load serves two examples and each widened feature ten classes:
//! per 20 fused multiply-adds, 10 weight loads and 2 feature loads, where
//! the 1 x 10 tile of both halves needed 20 and 2. Each lane still takes
//! its elements in increasing order from `+0`, and the halves are joined
//! into the same 16 lanes before the same tree: every entry is the bits of
//! `dot` of its two rows.
//!
//! The right rows' full chunks are copied once per call, when enough left
//! rows share them, into cache-line-aligned runs ([`Line`]): a row of 785
//! doubles starts 8 bytes further into a line than the one before, so
//! nearly every 64-byte load of the rows as given spans two lines (two
//! reads each). The copy runs, for each tile of right rows and each half,
//! chunk after chunk: a length block of one tile is one contiguous run.
//!
//! The loops, per group of 48 left rows: each tile of right rows, each
//! half, each length block (at most 20 KB of packed lines: they stay in L1
//! while every pair of left rows passes over them), each pair of left rows.
//! The accumulators wait between length blocks in a store. The rows the
//! caller will pass next are prefetched into L2 one line per chunk of the
//! sweeps ([`Stream`]), a steady trickle as fast as the sweeps consume
//! their own rows; so the left rows are not first read all at once (as
//! `kernels::row_dots` does), which measured slower here. Each sweep also
//! asks for its own left rows' lines a few chunks ahead into L1.
//!
//! A caller that multiplies many blocks of left rows by the same right
//! rows (a pass's class blocks) packs them once ([`Packed`], the public
//! `linalg::PackedRows`) instead of once per call.

// The sweeps read through raw pointers (no bounds check in the inner loop,
// which would split it); each `unsafe` block says why its reads are in
// bounds. Index loops over the fixed-size lane arrays say which lane meets
// which (as in kernels.rs).
#![allow(unsafe_code, clippy::needless_range_loop)]

use super::kernels::{self, Elem, LANES};

/// Lanes of one half of a pair's accumulators (one AVX-512 register).
const HALF: usize = LANES / 2;

/// One half-chunk of doubles, alone on its cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f64; HALF]);

const ZERO: Line = Line([0.0; HALF]);

/// The per-thread buffers of [`row_dots`]: the packed right rows and the
/// accumulators of a group of left rows (both reused between calls).
#[derive(Default)]
pub struct Scratch {
    packed: Vec<Line>,
    acc: Vec<Line>,
}

/// Right rows per register tile (then 4, 2 and 1 for the rest).
const TK: usize = 10;

/// Bytes of packed lines one length block of one half of a tile may span:
/// up to 32 chunks of a 10-row tile (20 KB), which stay in L1 while every
/// left row of the group passes over them. The full chunks are cut into
/// equal blocks (Fashion-MNIST's 49: 25 and 24). Measured best of 8, 12, 20
/// and 40 KB.
const BLOCK_BYTES: usize = 20 * 1024;

/// Fewest left rows for which the right rows are packed. With 48 rows the
/// packing halves the time (45 against 27 us in cache); where the two cross
/// was not measured, and 8 is a guess.
const PACK_MIN_ROWS: usize = 8;

/// Left rows whose accumulators are kept at once.
const GROUP: usize = 48;

/// Chunks ahead of the sweep whose left-row lines are prefetched into L1.
/// The L2 prefetch ([`Stream`]) brings the rows near, but each line is then
/// read twice from L2 (one half of it per sweep) and a sweep waited on its
/// feature loads: with this hint the wide kernel took about 7 % less CPU
/// time in the oracle pass (perf samples; 4 and 8 measured alike, 16 less
/// well).
const X_AHEAD: usize = 8;

/// `acc[l] += x[l] y[l]` with one rounding, lane by lane.
#[inline(always)]
fn fma_half(acc: &mut [f64; HALF], x: &[f64; HALF], y: &[f64; HALF]) {
    for l in 0..HALF {
        acc[l] = x[l].mul_add(y[l], acc[l]);
    }
}

/// `HALF` elements of `A` from `p`, widened.
///
/// # Safety
/// `p..p + HALF` must be readable elements of one slice.
#[inline(always)]
unsafe fn widen_at<A: Elem>(p: *const A) -> [f64; HALF] {
    // SAFETY: the caller's promise; any alignment is read.
    let v: [A; HALF] = unsafe { p.cast::<[A; HALF]>().read_unaligned() };
    let mut out = [0.0; HALF];
    for l in 0..HALF {
        out[l] = v[l].wide();
    }
    out
}

/// A register tile: the accumulators `r` of `TI x TK` pairs advanced over
/// `count` chunks, one half of each.
trait Sweep<A, const TI: usize, const TK: usize> {
    /// Left row `i`'s half-chunk `c` is at `xs[i] + c LANES`, right row
    /// `k`'s at `ws[k] + c w_step`.
    ///
    /// Meanwhile the line at `pf + c pf_step` is prefetched into L2, and
    /// each left row's line [`X_AHEAD`] chunks ahead into L1 (hints: any
    /// address).
    ///
    /// # Safety
    /// For every `c < count`, those `HALF` elements are readable, each run
    /// within one slice.
    unsafe fn sweep(
        xs: [*const A; TI],
        ws: [*const f64; TK],
        w_step: usize,
        r: &mut [[[f64; HALF]; TK]; TI],
        count: usize,
        pf: (*const A, usize),
    );
}

/// The implementor of [`Sweep`] for the shapes the product uses.
struct Tiles;

/// One right row of a tile against each left row of `$is`.
macro_rules! sweep_col {
    ($acc:ident, $xv:ident, $wv:ident, $k:tt, [$($i:tt),*]) => {
        $( fma_half(&mut $acc[$i][$k], &$xv[$i], &$wv); )*
    };
}

/// [`Sweep`] for one shape, pair by pair with constant indices (so the
/// accumulators live in registers).
macro_rules! sweep {
    ($ti:literal, $tk:literal, $is:tt, [$($k:tt),*]) => {
        impl<A: Elem> Sweep<A, $ti, $tk> for Tiles {
            #[inline(always)]
            unsafe fn sweep(
                xs: [*const A; $ti],
                ws: [*const f64; $tk],
                w_step: usize,
                r: &mut [[[f64; HALF]; $tk]; $ti],
                count: usize,
                (pf, pf_step): (*const A, usize),
            ) {
                let mut acc = *r;
                for c in 0..count {
                    prefetch_l2(pf.wrapping_add(c * pf_step));
                    for i in 0..$ti {
                        prefetch_l1(xs[i].wrapping_add((c + X_AHEAD) * LANES));
                    }
                    // SAFETY: the caller's promise for chunk `c`.
                    let xv: [[f64; HALF]; $ti] =
                        std::array::from_fn(|i| unsafe { widen_at(xs[i].add(c * LANES)) });
                    $(
                        // SAFETY: as above.
                        let wv: [f64; HALF] = unsafe {
                            ws[$k].add(c * w_step).cast::<[f64; HALF]>().read_unaligned()
                        };
                        sweep_col!(acc, xv, wv, $k, $is);
                    )*
                }
                *r = acc;
            }
        }
    };
}

sweep!(2, 10, [0, 1], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
sweep!(1, 10, [0], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
sweep!(2, 4, [0, 1], [0, 1, 2, 3]);
sweep!(1, 4, [0], [0, 1, 2, 3]);
sweep!(2, 2, [0, 1], [0, 1]);
sweep!(1, 2, [0], [0, 1]);
sweep!(2, 1, [0, 1], [0]);
sweep!(1, 1, [0], [0]);

/// `kernels::reduce` of the lanes `lo` then `hi`, in vectors: the same
/// additions of the same pairs.
#[inline(always)]
fn reduce_halves(lo: &[f64; HALF], hi: &[f64; HALF]) -> f64 {
    let mut v8 = [0.0; HALF];
    for l in 0..HALF {
        v8[l] = lo[l] + hi[l];
    }
    let mut v4 = [0.0; 4];
    for l in 0..4 {
        v4[l] = v8[l] + v8[l + 4];
    }
    let v2 = [v4[0] + v4[2], v4[1] + v4[3]];
    v2[0] + v2[1]
}

/// The rows the caller will pass next, prefetched into L2 a line per
/// chunk of the sweeps (a steady trickle: a burst of more lines than the
/// core tracks stalls it until memory answers).
struct Stream<'a, A> {
    rest: &'a [A],
}

impl<A> Stream<'_, A> {
    /// Elements per cache line.
    const STRIDE: usize = 64 / std::mem::size_of::<A>();

    /// The start and step of the next `lines` lines to prefetch; step 0
    /// (the line `idle`, in cache) when fewer are left, which
    /// [`Stream::finish`] fetches.
    #[inline(always)]
    fn take(&mut self, lines: usize, idle: &[A]) -> (*const A, usize) {
        let len = lines * Self::STRIDE;
        if self.rest.len() >= len {
            let (now, rest) = self.rest.split_at(len);
            self.rest = rest;
            (now.as_ptr(), Self::STRIDE)
        } else {
            (idle.as_ptr(), 0)
        }
    }

    /// The lines left, at once.
    fn finish(&mut self) {
        for line in self.rest.chunks(Self::STRIDE) {
            prefetch_l2(line.as_ptr());
        }
        self.rest = &[];
    }
}

/// Asks for the cache line holding `p` to be brought into L2 (not L1: the
/// next rows would evict the weights the tiles are reading). A hint only:
/// any address, valid or not, is accepted and nothing is read.
#[inline(always)]
pub(super) fn prefetch_l2<A>(p: *const A) {
    prefetch_hint::<A, 2>(p);
}

/// Asks for the cache line holding `p` to be brought into L1 (and L2):
/// for data the caller reads next (a sweep's left rows, a drawn block's
/// row). A hint, as [`prefetch_l2`].
#[inline(always)]
pub(super) fn prefetch_l1<A>(p: *const A) {
    prefetch_hint::<A, 1>(p);
}

/// The prefetch of the line holding `p` into cache level `LEVEL` (1 or 2).
#[inline(always)]
fn prefetch_hint<A, const LEVEL: u8>(p: *const A) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory, whatever the
    // address. SSE, which the instruction needs, is part of every x86-64
    // CPU.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T1};
        if LEVEL == 1 {
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
        } else {
            _mm_prefetch::<_MM_HINT_T1>(p.cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The right rows' tiles `(first, width)`: of 10, then 4, 2 and 1.
fn class_tiles(nb: usize) -> impl Iterator<Item = (usize, usize)> {
    let mut k = 0;
    std::iter::from_fn(move || {
        let width = [TK, 4, 2, 1].into_iter().find(|&t| k + t <= nb)?;
        k += width;
        Some((k - width, width))
    })
}

/// The right rows' `full` chunks, for each tile of rows, each half and
/// each chunk, the tile's rows' half-chunks in order.
fn pack(b: &[&[f64]], full: usize, packed: &mut Vec<Line>) {
    packed.resize(b.len() * 2 * full, ZERO);
    for (k0, tk) in class_tiles(b.len()) {
        let tile = &mut packed[k0 * 2 * full..(k0 + tk) * 2 * full];
        // Row by row, so that each is read in order (the lines written
        // are `tk` apart).
        for (k, row) in b[k0..k0 + tk].iter().enumerate() {
            for (c, chunk) in row[..full * LANES].chunks_exact(LANES).enumerate() {
                let (lo, hi) = chunk.split_at(HALF);
                tile[c * tk + k].0 = lo.try_into().expect("a half-chunk");
                tile[(full + c) * tk + k].0 = hi.try_into().expect("a half-chunk");
            }
        }
    }
}

/// The right rows' full chunks packed once ([`pack`]), for many calls of
/// [`row_dots`] with the same right rows (a pass's class blocks, fixed for
/// the whole pass): each call then reads them as packed, for any number of
/// left rows, and copies nothing.
pub struct Packed {
    lines: Vec<Line>,
    full: usize,
}

impl Packed {
    /// The full chunks of the first `n` elements of the rows `b`.
    pub fn new(b: &[&[f64]], n: usize) -> Self {
        let full = n / LANES;
        let mut lines = Vec::new();
        if full > 0 {
            pack(b, full, &mut lines);
        }
        Packed { lines, full }
    }
}

/// Where the sweeps read the right rows.
#[derive(Clone, Copy)]
enum Right<'a> {
    /// As given: row `k`'s chunk `c` at `16 c`.
    Rows(&'a [&'a [f64]]),
    /// Packed ([`pack`]) over `full` chunks.
    Packed(&'a [Line], usize),
}

/// The tile of left rows `i0..i0 + TI` (of `g`) and right rows `k0..k0 +
/// TK` over the full chunks `c0..c0 + count`, both halves, its
/// accumulators in `acc` (group layout of [`row_dots`]).
#[inline(always)]
fn tile<A: Elem, const TI: usize, const TK: usize>(
    g: &[&[A]],
    right: Right<'_>,
    (i0, k0, nb): (usize, usize, usize),
    (c0, count, h): (usize, usize, usize),
    acc: &mut [Line],
    pf: (*const A, usize),
) where
    Tiles: Sweep<A, TI, TK>,
{
    {
        let rows: [&[A]; TI] = std::array::from_fn(|i| g[i0 + i]);
        let offset = c0 * LANES + h * HALF;
        // Every read of the sweep lies in the full chunks, which every row
        // has (checked here once, not in the loop).
        let end = (c0 + count) * LANES;
        assert!(rows.iter().all(|r| r.len() >= end));
        let xs: [*const A; TI] = std::array::from_fn(|i| rows[i][offset..].as_ptr());
        // The first block starts the lanes from +0 (the store is not
        // cleared), later ones carry them on.
        let mut r = [[[0.0; HALF]; TK]; TI];
        if c0 > 0 {
            for i in 0..TI {
                for k in 0..TK {
                    r[i][k] = acc[((i0 + i) * 2 + h) * nb + k0 + k].0;
                }
            }
        }
        // One sweep per case, so that the packed one sees its rows' lines
        // side by side (one base register).
        match right {
            Right::Rows(b) => {
                assert!(b[k0..k0 + TK].iter().all(|r| r.len() >= end));
                let ws = std::array::from_fn(|k| b[k0 + k][offset..].as_ptr());
                // SAFETY: chunk `c < count` reads the elements `offset + c
                // LANES .. + HALF` of each left and right row, below `end`,
                // which each has (asserted).
                unsafe { <Tiles as Sweep<A, TI, TK>>::sweep(xs, ws, LANES, &mut r, count, pf) };
            }
            Right::Packed(p, full) => {
                let first = (k0 * 2 + h * TK) * full + c0 * TK;
                assert!(p.len() >= first + count * TK);
                let base = p[first..].as_ptr();
                // SAFETY: line `k < TK` of `first..`, below the length.
                let ws = std::array::from_fn(|k| unsafe { base.add(k) }.cast::<f64>());
                // SAFETY: left rows as above; chunk `c` of right row `k` is
                // line `first + c TK + k`, below the packing's length
                // (asserted).
                unsafe { <Tiles as Sweep<A, TI, TK>>::sweep(xs, ws, TK * HALF, &mut r, count, pf) };
            }
        }
        for i in 0..TI {
            for k in 0..TK {
                acc[((i0 + i) * 2 + h) * nb + k0 + k].0 = r[i][k];
            }
        }
    }
}

/// All left rows of the group against the right tile `k0..k0 + TK` over
/// one length block: tiles of 2 left rows, then 1.
#[inline(always)]
fn band<A: Elem, const TK: usize>(
    g: &[&[A]],
    right: Right<'_>,
    (k0, nb): (usize, usize),
    span: (usize, usize, usize),
    acc: &mut [Line],
    ahead: &mut Stream<'_, A>,
) where
    Tiles: Sweep<A, 2, TK> + Sweep<A, 1, TK>,
{
    let mut i = 0;
    while i + 2 <= g.len() {
        let pf = ahead.take(span.1, g[i]);
        tile::<A, 2, TK>(g, right, (i, k0, nb), span, acc, pf);
        i += 2;
    }
    if i < g.len() {
        let pf = ahead.take(span.1, g[i]);
        tile::<A, 1, TK>(g, right, (i, k0, nb), span, acc, pf);
    }
}

/// `out[i nb + k] = <a[i], b[k]>` over the first `n` elements, each the
/// bits of `dot`; prefetches `next` into L2 meanwhile (as
/// `kernels::row_dots`). `given`, when set, is `b` packed ([`Packed::new`]
/// of the same rows and `n`), read instead of packing them again.
#[inline(always)]
pub fn row_dots<A: Elem>(
    (a, b): (&[&[A]], &[&[f64]]),
    n: usize,
    out: &mut [f64],
    scratch: &mut Scratch,
    next: &[A],
    given: Option<&Packed>,
) {
    let (na, nb) = (a.len(), b.len());
    debug_assert_eq!(out.len(), na * nb);
    if na == 0 || nb == 0 {
        return;
    }
    let full = n / LANES;
    let Scratch { packed, acc: store } = scratch;
    let right = match given {
        Some(p) if full > 0 => {
            assert!(p.full == full && p.lines.len() == nb * 2 * full);
            Right::Packed(&p.lines, full)
        }
        Some(_) => Right::Rows(b),
        None if na >= PACK_MIN_ROWS && full > 0 => {
            pack(b, full, packed);
            Right::Packed(packed, full)
        }
        None => Right::Rows(b),
    };
    // Equal length blocks of at most BLOCK_BYTES of one half of a tile.
    let blocks = full.div_ceil((BLOCK_BYTES / (TK * HALF * 8)).max(1)).max(1);
    let block = full.div_ceil(blocks).max(1);
    let group = GROUP.min(na);
    let acc_len = group * 2 * nb;
    if store.len() < acc_len {
        store.resize(acc_len, ZERO);
    }
    let mut ahead = Stream { rest: next };
    for (g, out_g) in a.chunks(group).zip(out.chunks_mut(group * nb)) {
        let acc = &mut store[..g.len() * 2 * nb];
        if full == 0 {
            acc.fill(ZERO);
        }
        for (k0, tk) in class_tiles(nb) {
            for h in 0..2 {
                let mut c0 = 0;
                while c0 < full {
                    let span = (c0, block.min(full - c0), h);
                    let at = (k0, nb);
                    match tk {
                        TK => band::<A, TK>(g, right, at, span, acc, &mut ahead),
                        4 => band::<A, 4>(g, right, at, span, acc, &mut ahead),
                        2 => band::<A, 2>(g, right, at, span, acc, &mut ahead),
                        _ => band::<A, 1>(g, right, at, span, acc, &mut ahead),
                    }
                    c0 += block;
                }
            }
        }
        // The last, partial chunk, zero-padded (as `dot` pads it).
        if full * LANES < n {
            for (i, row) in g.iter().enumerate() {
                let x = kernels::chunk(&row[..n], full * LANES);
                for (k, col) in b.iter().enumerate() {
                    let y = kernels::chunk(&col[..n], full * LANES);
                    for h in 0..2 {
                        let (xh, yh) = (&x[h * HALF..][..HALF], &y[h * HALF..][..HALF]);
                        fma_half(
                            &mut acc[(i * 2 + h) * nb + k].0,
                            xh.try_into().expect("a half"),
                            yh.try_into().expect("a half"),
                        );
                    }
                }
            }
        }
        for (i, out_i) in out_g.chunks_exact_mut(nb).enumerate() {
            let (lo, hi) = (&acc[i * 2 * nb..][..nb], &acc[(i * 2 + 1) * nb..][..nb]);
            for ((o, lo), hi) in out_i.iter_mut().zip(lo).zip(hi) {
                // One pair at a time (`black_box`): vectorised across the
                // pairs, the loop gathered each lane (a fifth of the time).
                *o = reduce_halves(std::hint::black_box(&lo.0), &hi.0);
            }
        }
    }
    ahead.finish();
}
