//! Each kernel against a plain reference, on random lengths (most not
//! multiples of the lane count), on every instruction set this CPU has.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::kernels::LANES;
use super::*;

/// The documented structure, written as plainly as possible: lane `j %
/// LANES` accumulates with `mul_add` in element order, then the tree.
fn reference_dot(x: &[f64], y: &[f64]) -> f64 {
    let mut lanes = [0.0f64; LANES];
    for (j, (a, b)) in x.iter().zip(y).enumerate() {
        lanes[j % LANES] = a.mul_add(*b, lanes[j % LANES]);
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            lanes[l] += lanes[l + width];
        }
    }
    lanes[0]
}

/// The exact value of `<x, y>` to about 1e-30 relative, by compensated sums.
fn accurate_dot(x: &[f64], y: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for (a, b) in x.iter().zip(y) {
        let p = a * b;
        let pe = a.mul_add(*b, -p);
        let t = s + p;
        let e = if s.abs() >= p.abs() {
            (s - t) + p
        } else {
            (p - t) + s
        };
        s = t;
        c += e + pe;
    }
    s + c
}

fn random_vec(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

const LENGTHS: [usize; 14] = [0, 1, 3, 7, 15, 16, 17, 31, 33, 100, 785, 2047, 2049, 5003];

#[test]
fn dot_matches_the_reference_bit_for_bit_on_every_isa() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for &n in &LENGTHS {
        let x = random_vec(&mut rng, n);
        let y = random_vec(&mut rng, n);
        let want = reference_dot(&x, &y);
        let exact = accurate_dot(&x, &y);
        let scale: f64 = x.iter().zip(&y).map(|(a, b)| (a * b).abs()).sum();
        // The structure's worst-case error bound: (n/16 + 4) roundings.
        let bound = (n as f64 / 16.0 + 5.0) * f64::EPSILON * scale;
        assert!((want - exact).abs() <= bound, "n = {n}");
        for isa in Isa::available() {
            assert_eq!(
                dot_with(isa, &x, &y).to_bits(),
                want.to_bits(),
                "{isa:?} n = {n}"
            );
        }
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let xw: Vec<f64> = xf.iter().map(|&v| f64::from(v)).collect();
        let want_f = reference_dot(&xw, &y);
        for isa in Isa::available() {
            assert_eq!(
                dot_with(isa, &xf, &y).to_bits(),
                want_f.to_bits(),
                "{isa:?} f32 n = {n}"
            );
        }
    }
}

#[test]
fn non_finite_values_propagate() {
    for isa in Isa::available() {
        for n in [1usize, 5, 16, 17, 40] {
            for pos in [0, n / 2, n - 1] {
                let x = vec![1.0; n];
                let mut y = vec![2.0; n];
                y[pos] = f64::NAN;
                assert!(dot_with(isa, &x, &y).is_nan(), "{isa:?} n {n} pos {pos}");
                y[pos] = f64::INFINITY;
                assert_eq!(dot_with(isa, &x, &y), f64::INFINITY, "{isa:?}");
                let mut z = vec![0.0; n];
                axpy_with(isa, f64::NAN, &x, &mut z);
                assert!(z.iter().all(|v| v.is_nan()));
                let rows = [&y[..]];
                let mut out = [0.0];
                row_dots_with(isa, &[&x[..]], &rows, n, &mut out);
                assert_eq!(out[0], f64::INFINITY);
            }
        }
    }
}

#[test]
fn signed_zeros_and_padding_do_not_change_the_sum() {
    // All products -0: the plain left-to-right sum from +0 is +0.
    for isa in Isa::available() {
        for n in [1usize, 3, 16, 19] {
            let x = vec![-0.0; n];
            let y = vec![1.0; n];
            assert_eq!(dot_with(isa, &x, &y).to_bits(), 0.0f64.to_bits());
        }
    }
}

#[test]
fn axpy_matches_the_plain_loop_on_every_isa() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for &n in &LENGTHS {
        let x = random_vec(&mut rng, n);
        let y0 = random_vec(&mut rng, n);
        let alpha = rng.gen_range(-3.0..3.0);
        let want: Vec<u64> = y0
            .iter()
            .zip(&x)
            .map(|(y, x)| (y + alpha * x).to_bits())
            .collect();
        for isa in Isa::available() {
            let mut y = y0.clone();
            axpy_with(isa, alpha, &x, &mut y);
            let got: Vec<u64> = y.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{isa:?} n = {n}");
        }
    }
}

#[test]
fn axpy_rows_are_the_axpys_in_row_order_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for &n in &LENGTHS {
        let nr = rng.gen_range(0..7);
        // Rows may be longer than y (only the first n count); signs and
        // general factors; a NaN in one row must reach y.
        let mut rows: Vec<Vec<f32>> = (0..nr)
            .map(|_| {
                let extra = rng.gen_range(0..3);
                (0..n + extra).map(|_| rng.gen_range(-2.0..2.0)).collect()
            })
            .collect();
        if nr > 0 && n > 0 && rng.gen_bool(0.3) {
            let j = rng.gen_range(0..n);
            rows[0][j] = f32::NAN;
        }
        let alpha: Vec<f64> = (0..nr)
            .map(|_| match rng.gen_range(0..3) {
                0 => -1.0,
                1 => 1.0,
                _ => rng.gen_range(-3.0..3.0),
            })
            .collect();
        let y0 = random_vec(&mut rng, n);
        let mut want = y0.clone();
        for (&a, r) in alpha.iter().zip(&rows) {
            for (w, &x) in want.iter_mut().zip(r) {
                *w += a * f64::from(x);
            }
        }
        // Bits, with every NaN the same (its payload is the hardware's).
        let bits = |v: &f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
        let want: Vec<u64> = want.iter().map(bits).collect();
        let refs: Vec<&[f32]> = rows.iter().map(|r| &r[..]).collect();
        for isa in Isa::available() {
            let mut y = y0.clone();
            axpy_rows_with(isa, &alpha, &refs, &mut y);
            let got: Vec<u64> = y.iter().map(bits).collect();
            assert_eq!(got, want, "{isa:?} n = {n}");
        }
    }
}

#[test]
fn row_dots_are_the_single_dots_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..40 {
        let n = rng.gen_range(0..5000);
        // Up to two groups of left rows and a partial third.
        let na = if rng.gen_bool(0.2) {
            rng.gen_range(0..130)
        } else {
            rng.gen_range(0..9)
        };
        let nb = rng.gen_range(0..12);
        let a: Vec<Vec<f64>> = (0..na).map(|_| random_vec(&mut rng, n)).collect();
        // Right rows may be longer than n: only the first n count.
        let b: Vec<Vec<f64>> = (0..nb)
            .map(|_| {
                let extra = rng.gen_range(0..3);
                random_vec(&mut rng, n + extra)
            })
            .collect();
        let ar: Vec<&[f64]> = a.iter().map(|r| &r[..]).collect();
        let br: Vec<&[f64]> = b.iter().map(|r| &r[..]).collect();
        let af: Vec<Vec<f32>> = a
            .iter()
            .map(|r| r.iter().map(|&v| v as f32).collect())
            .collect();
        let afr: Vec<&[f32]> = af.iter().map(|r| &r[..]).collect();
        for isa in Isa::available() {
            let mut out = vec![f64::NAN; na * nb];
            row_dots_with(isa, &ar, &br, n, &mut out);
            let mut out_f = vec![f64::NAN; na * nb];
            row_dots_with(isa, &afr, &br, n, &mut out_f);
            for i in 0..na {
                for k in 0..nb {
                    let want = reference_dot(&a[i], &b[k][..n]);
                    assert_eq!(out[i * nb + k].to_bits(), want.to_bits(), "{isa:?} n {n}");
                    let want_f = dot_with(Isa::Portable, &af[i][..], &b[k][..n]);
                    assert_eq!(out_f[i * nb + k].to_bits(), want_f.to_bits(), "{isa:?}");
                }
            }
        }
    }
}

#[test]
fn the_selected_isa_is_available() {
    assert!(isa::selected().supported());
    assert!(Isa::available().contains(&Isa::Portable));
}

#[test]
fn sparse_dots_are_the_dense_dot_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for &n in &LENGTHS {
        let sparse = |rng: &mut ChaCha8Rng| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    if rng.gen_bool(0.7) {
                        0.0
                    } else {
                        rng.gen_range(-1.0..1.0)
                    }
                })
                .collect()
        };
        let a = sparse(&mut rng);
        let b = sparse(&mut rng);
        let y = random_vec(&mut rng, n);
        let nz = |v: &[f64]| -> (Vec<u32>, Vec<f64>) {
            v.iter()
                .enumerate()
                .filter(|(_, x)| **x != 0.0)
                .map(|(j, x)| (j as u32, *x))
                .unzip()
        };
        let (ia, va) = nz(&a);
        let (ib, vb) = nz(&b);
        assert_eq!(
            sparse_dot(&ia, &va, &y).to_bits(),
            dot(&a, &y).to_bits(),
            "n {n}"
        );
        assert_eq!(
            sparse_sparse_dot(&ia, &va, &ib, &vb).to_bits(),
            dot(&a, &b).to_bits(),
            "n {n}"
        );
    }
}

#[test]
fn sub_scaled_diff_matches_the_plain_loop() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for &n in &LENGTHS {
        let a = random_vec(&mut rng, n);
        let b = random_vec(&mut rng, n);
        let y0 = random_vec(&mut rng, n);
        let s = rng.gen_range(-2.0..2.0);
        let mut want = y0.clone();
        for i in 0..n {
            want[i] -= s * (a[i] - b[i]);
        }
        let mut got = y0.clone();
        sub_scaled_diff(s, &a, &b, &mut got);
        assert!(got
            .iter()
            .zip(&want)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

#[test]
fn max_plus_is_the_plain_viterbi_step_on_every_isa() {
    // The recursion as first written: predecessor 0, then strict
    // improvements only (ties to the lowest label, NaN never wins).
    fn reference(prev: &[f64], trans: &[f64], cur: &mut [f64], from: &mut [u32]) {
        let k = cur.len();
        for y in 0..k {
            cur[y] = prev[0] + trans[y];
            from[y] = 0;
        }
        for p in 1..k {
            for y in 0..k {
                let v = prev[p] + trans[p * k + y];
                if v > cur[y] {
                    cur[y] = v;
                    from[y] = p as u32;
                }
            }
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for k in [1usize, 2, 3, 7, 8, 9, 16, 17, 26, 33] {
        for round in 0..20 {
            // Small integers make ties; some rounds hold a NaN or an infinity.
            let mut draw = |_| f64::from(rng.gen_range(-3i32..4));
            let mut prev: Vec<f64> = (0..k).map(&mut draw).collect();
            let mut trans: Vec<f64> = (0..k * k).map(&mut draw).collect();
            if round % 5 == 1 {
                trans[(round * 7) % (k * k)] = f64::NAN;
            }
            if round % 5 == 2 {
                prev[round % k] = f64::NEG_INFINITY;
            }
            if round % 5 == 3 {
                prev[0] = f64::NAN;
            }
            let (mut want, mut want_from) = (vec![0.0; k], vec![0u32; k]);
            reference(&prev, &trans, &mut want, &mut want_from);
            for isa in Isa::available() {
                let (mut got, mut got_from) = (vec![1.0; k], vec![9u32; k]);
                max_plus_with(isa, &prev, &trans, &mut got, &mut got_from);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{isa:?} k {k} round {round}");
                assert_eq!(got_from, want_from, "{isa:?} k {k} round {round}");
            }
        }
    }
}

#[test]
fn both_tiles_give_the_scalar_dots_bit_for_bit_on_every_isa() {
    // The wide tile (wide.rs): lengths across its length blocks (about 25
    // chunks of 16) and not multiples of 16 (the padded last chunk), right
    // rows in tiles of 10, 4, 2 and 1, left rows in pairs and an odd one,
    // fewer than 8 (right rows read as given) and more (packed), more than
    // a group of 48; rows longer than `n` whose extra entries are NaN or
    // infinite (they must not be read); and a prefetch hint (any slice; it
    // changes nothing).
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for round in 0..40 {
        let n = match round % 4 {
            0 => rng.gen_range(0..40),
            1 => rng.gen_range(200..1100),
            2 => rng.gen_range(385..420),
            _ => 784,
        };
        let na = match round % 5 {
            0 => rng.gen_range(49..110),
            1 => rng.gen_range(8..20),
            _ => rng.gen_range(0..12),
        };
        let nb = rng.gen_range(0..31);
        let poison = |rng: &mut ChaCha8Rng| {
            if rng.gen_bool(0.5) {
                f64::NAN
            } else {
                f64::INFINITY
            }
        };
        let a: Vec<Vec<f32>> = (0..na)
            .map(|_| {
                let extra = rng.gen_range(0..20);
                let mut r: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
                r.extend((0..extra).map(|_| poison(&mut rng) as f32));
                r
            })
            .collect();
        let b: Vec<Vec<f64>> = (0..nb)
            .map(|_| {
                let extra = rng.gen_range(0..20);
                let mut r = random_vec(&mut rng, n);
                r.extend((0..extra).map(|_| poison(&mut rng)));
                r
            })
            .collect();
        let next: Vec<f32> = (0..rng.gen_range(0..5000)).map(|j| j as f32).collect();
        let ar: Vec<&[f32]> = a.iter().map(|r| &r[..]).collect();
        let br: Vec<&[f64]> = b.iter().map(|r| &r[..]).collect();
        let want: Vec<u64> = a
            .iter()
            .flat_map(|r| {
                let wide: Vec<f64> = r[..n].iter().map(|&v| f64::from(v)).collect();
                b.iter()
                    .map(move |c| reference_dot(&wide, &c[..n]).to_bits())
                    .collect::<Vec<_>>()
            })
            .collect();
        for isa in Isa::available() {
            for wide in [true, false] {
                let mut out = vec![f64::NAN; na * nb];
                row_dots_tiled(isa, (&ar, &br), n, &mut out, &next, wide);
                let got: Vec<u64> = out.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{isa:?} wide {wide} n {n} na {na} nb {nb}");
            }
            // Packed once, then used by several calls: all the left rows,
            // then each half of them (the packing is read, not consumed).
            let packed = PackedRows::with(isa, &br, n);
            assert_eq!(packed.len(), nb);
            let mut out = vec![f64::NAN; na * nb];
            row_dots_packed(&ar, &packed, &mut out, &next);
            let got: Vec<u64> = out.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{isa:?} packed n {n} na {na} nb {nb}");
            let half = na / 2;
            for (rows, want) in [
                (&ar[..half], &want[..half * nb]),
                (&ar[half..], &want[half * nb..]),
            ] {
                let mut out = vec![f64::NAN; rows.len() * nb];
                row_dots_packed(rows, &packed, &mut out, &[]);
                let got: Vec<u64> = out.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{isa:?} packed, part of {na}, n {n} nb {nb}");
            }
        }
    }
}

#[test]
fn the_wide_tile_propagates_non_finite_features_and_weights() {
    // A NaN or an infinity inside the first `n` entries reaches the score
    // (the reference's value, NaNs compared as NaN), on each side, in a
    // full chunk and in the padded last one, packed and as given.
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let bits = |v: f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
    for (n, na) in [(100usize, 3usize), (100, 9), (784, 12), (37, 10)] {
        let nb = 11;
        for pos in [0, n / 2, n - 1] {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut a: Vec<Vec<f32>> = (0..na)
                    .map(|_| (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect())
                    .collect();
                let mut b: Vec<Vec<f64>> = (0..nb).map(|_| random_vec(&mut rng, n)).collect();
                a[na - 1][pos] = bad as f32;
                b[nb - 1][pos] = bad;
                let ar: Vec<&[f32]> = a.iter().map(|r| &r[..]).collect();
                let br: Vec<&[f64]> = b.iter().map(|r| &r[..]).collect();
                let want: Vec<u64> = a
                    .iter()
                    .flat_map(|r| {
                        let wide: Vec<f64> = r.iter().map(|&v| f64::from(v)).collect();
                        b.iter()
                            .map(move |c| bits(reference_dot(&wide, c)))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                assert!(want.contains(&u64::MAX) || bad.is_infinite());
                for isa in Isa::available() {
                    let mut out = vec![0.0; na * nb];
                    row_dots_tiled(isa, (&ar, &br), n, &mut out, &[], true);
                    let got: Vec<u64> = out.iter().map(|&v| bits(v)).collect();
                    assert_eq!(got, want, "{isa:?} n {n} na {na} pos {pos} {bad}");
                    // Packed beforehand (`PackedRows`), whatever the count
                    // of left rows.
                    let mut out = vec![0.0; na * nb];
                    row_dots_packed(&ar, &PackedRows::with(isa, &br, n), &mut out, &[]);
                    let got: Vec<u64> = out.iter().map(|&v| bits(v)).collect();
                    assert_eq!(got, want, "{isa:?} packed n {n} na {na} pos {pos} {bad}");
                }
            }
        }
    }
}

#[test]
fn the_floors_probes_compute_what_they_say() {
    // The FMA loop: every value follows v = v a + b from 1.
    let (a, b, iters) = (0.999_f64, 1e-3, 1000);
    let mut v = 1.0f64;
    for _ in 0..iters {
        v = v.mul_add(a, b);
    }
    let (sum, fmas) = fma_peak_loop(iters, a, b);
    let width = fmas / iters;
    assert!([96, 48, 24].contains(&width), "width {width}");
    assert_eq!(sum.to_bits(), vec![v; width].iter().sum::<f64>().to_bits());
    // The stream sum: 16 lanes in order, the tail into the first lanes,
    // then the lanes in order.
    for n in [0usize, 5, 16, 33, 1000] {
        let x: Vec<f32> = (0..n).map(|j| (j % 7) as f32 * 0.25).collect();
        let mut lanes = [0.0f32; 16];
        for (j, &v) in x.iter().enumerate() {
            lanes[j % 16] += v;
        }
        assert_eq!(
            stream_sum(&x).to_bits(),
            lanes.iter().sum::<f32>().to_bits(),
            "n {n}"
        );
    }
}

#[test]
fn axpy_scatter_is_one_axpy_per_target_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for &n in &LENGTHS {
        let x: Vec<f32> = (0..n).map(|_| rng.gen_range(-2.0..2.0)).collect();
        // Up to 5 targets at increasing, disjoint offsets with gaps.
        let mut targets = Vec::new();
        let mut at = rng.gen_range(0..3);
        for _ in 0..rng.gen_range(0..6) {
            targets.push((rng.gen_range(-3.0..3.0), at));
            at += n + rng.gen_range(0..3);
        }
        let y0 = random_vec(&mut rng, at + 2);
        let mut want = y0.clone();
        for &(a, o) in &targets {
            axpy_with(Isa::Portable, a, &x, &mut want[o..o + n]);
        }
        let want: Vec<u64> = want.iter().map(|v| v.to_bits()).collect();
        for isa in Isa::available() {
            let mut y = y0.clone();
            axpy_scatter_with(isa, &targets, &x, &mut y);
            let got: Vec<u64> = y.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{isa:?} n = {n}");
        }
    }
}

#[test]
fn axpy_scatter_refuses_overlapping_or_outside_targets() {
    let x = [1.0f32; 4];
    let mut y = vec![0.0; 10];
    let overlap = std::panic::catch_unwind(|| {
        let mut y = vec![0.0; 10];
        axpy_scatter(&[(1.0, 0), (1.0, 3)], &x, &mut y);
    });
    assert!(overlap.is_err());
    let outside = std::panic::catch_unwind(|| {
        let mut y = vec![0.0; 10];
        axpy_scatter(&[(1.0, 7)], &x, &mut y);
    });
    assert!(outside.is_err());
    axpy_scatter(&[(2.0, 0), (1.0, 6)], &x, &mut y);
    assert_eq!(y, [2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
}
