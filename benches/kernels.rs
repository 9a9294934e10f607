//! The kernels against the machine's own peak, measured in the same run.
//!
//! The peak is a pure fused-multiply-add loop (independent chains in
//! registers, nothing loaded), compiled like the kernels for the best
//! instruction set this CPU has, on one thread. Then, on one thread:
//! - `dot` on rows that fit L1 and on a Fashion-MNIST-sized plane;
//! - the Gram update of P-BMRM: `P` new planes against `K` old ones
//!   (`linalg::row_dots`, what the bundle computes when it adds planes);
//! - the multiclass oracle pass over all examples (Fashion-MNIST when its
//!   files are there, else random data of the same shape): the scores alone
//!   (one product of the examples with the class blocks) and the whole pass
//!   of the bundle methods (scores, argmax, hinges and the summed psi), at
//!   a random `w` (every example violates its margin, so every row enters
//!   the subgradient) and at a trained one (Prox-P-BMRM at lambda 1e-3 to
//!   1 %, where the solver spends its later passes).
//!
//! GFLOP/s count 2 flops per multiply-add of the scores or dot products
//! (the pass's other work is counted as time, not flops). A benchmark
//! program, not a test:
//!     cargo bench --bench kernels -- --help

use std::sync::Arc;
use std::time::Instant;

use bmrm::linalg::{self, Isa};
use bmrm::models::Multiclass;
use bmrm::oracle::MaxOracle;
use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::Parser;
use multiversion::multiversion;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Parser)]
#[command(about = "GFLOP/s of the kernels against the measured FMA peak")]
struct Args {
    /// Directory of the Fashion-MNIST IDX files (random data when absent).
    #[arg(long, default_value = "/usr/share/datasets/fashion-mnist")]
    dir: String,
    /// Examples of the oracle pass.
    #[arg(long, default_value_t = 60_000)]
    examples: usize,
    /// Old planes of the Gram update.
    #[arg(long, default_value_t = 256)]
    old_planes: usize,
    /// New planes of the Gram update (P-BMRM's parts).
    #[arg(long, default_value_t = 16)]
    new_planes: usize,
    /// Repetitions of each measurement (the best and the median are printed).
    #[arg(long, default_value_t = 7)]
    repeats: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Chains of 8 doubles: 12 chains keep 12 registers busy, more than the
/// FMA latency times the number of FMA units on current cores.
const CHAINS: usize = 12;

#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
fn fma_loop(iters: usize, a: f64, b: f64) -> f64 {
    let mut acc = [[1.0f64; 8]; CHAINS];
    for _ in 0..iters {
        for chain in acc.iter_mut() {
            for v in chain.iter_mut() {
                *v = v.mul_add(a, b);
            }
        }
    }
    acc.iter().flatten().sum()
}

/// The sum of `x`, in 16 independent lanes: a pure streaming read.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
fn stream_sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    for c in x.chunks_exact(16) {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum()
}

/// Seconds of the fastest and the median of `repeats` runs of `f`.
fn time(repeats: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t: Vec<f64> = (0..repeats.max(1))
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2])
}

fn report(what: &str, flops: f64, (best, median): (f64, f64), peak: f64) {
    let g = flops / best * 1e-9;
    println!(
        "{what:<44} {:>9.3} ms {:>9.3} ms {g:>8.1} GFLOP/s {:>6.1} %",
        best * 1e3,
        median * 1e3,
        100.0 * g / peak
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let isa = linalg::isa::selected();
    println!(
        "kernels: {} (available: {:?})",
        isa.name(),
        Isa::available()
    );

    // The peak: 2 flops per FMA, one thread.
    let iters = 20_000_000;
    let mut sink = 0.0;
    let (best, _) = time(args.repeats, || {
        sink += fma_loop(iters, 0.999_999_9, 1e-9);
    });
    let peak = 2.0 * (iters * CHAINS * 8) as f64 / best * 1e-9;
    println!("FMA peak (1 thread): {peak:.1} GFLOP/s   (checksum {sink:.3e})");
    println!(
        "{:<44} {:>12} {:>12} {:>16} {:>8}",
        "kernel (1 thread)", "best", "median", "speed", "of peak"
    );

    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for n in [512usize, 7850] {
        let x: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let y: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let reps = 20_000_000 / n;
        let mut s = 0.0;
        let t = time(args.repeats, || {
            for _ in 0..reps {
                s += linalg::dot(std::hint::black_box(&x), &y);
            }
        });
        report(&format!("dot, n = {n}"), 2.0 * (n * reps) as f64, t, peak);
    }

    // The Gram update: every new plane against every old one.
    let dim = 7850;
    let plane =
        |rng: &mut ChaCha8Rng| -> Vec<f64> { (0..dim).map(|_| rng.gen_range(-1.0..1.0)).collect() };
    let old: Vec<Vec<f64>> = (0..args.old_planes).map(|_| plane(&mut rng)).collect();
    let new: Vec<Vec<f64>> = (0..args.new_planes).map(|_| plane(&mut rng)).collect();
    let old_rows: Vec<&[f64]> = old.iter().map(|r| &r[..]).collect();
    let new_rows: Vec<&[f64]> = new.iter().map(|r| &r[..]).collect();
    let mut gram = vec![0.0; old.len() * new.len()];
    let t = time(args.repeats, || {
        linalg::row_dots(&old_rows, &new_rows, dim, &mut gram)
    });
    report(
        &format!("Gram update, {} x {} planes of {dim}", old.len(), new.len()),
        2.0 * (old.len() * new.len() * dim) as f64,
        t,
        peak,
    );

    // The multiclass oracle pass.
    let (x, d, y) = match bmrm::data::idx::fashion_mnist(&args.dir, true, Some(args.examples)) {
        Ok(data) => data,
        Err(e) => {
            println!("(Fashion-MNIST not read: {e}; random data of its shape)");
            let d = 784;
            let x = (0..args.examples * d)
                .map(|_| {
                    if rng.gen_bool(0.5) {
                        0.0
                    } else {
                        rng.gen_range(0.0..1.0)
                    }
                })
                .collect();
            let y = (0..args.examples).map(|_| rng.gen_range(0..10)).collect();
            (x, d, y)
        }
    };
    let m = y.len();
    let model = Arc::new(Multiclass::new(x.clone(), d, y, 10, true)?);
    let dp = d + 1;
    let w: Vec<f64> = (0..10 * dp).map(|_| rng.gen_range(-0.01..0.01)).collect();
    let flops = 2.0 * (m * 10 * dp) as f64;
    let rows: Vec<&[f32]> = x.chunks_exact(d).collect();
    let classes: Vec<&[f64]> = w.chunks_exact(dp).map(|c| &c[..d]).collect();
    // The features are read once per pass: their streaming rate bounds
    // the pass from below, whatever the arithmetic.
    let mut sink = 0.0f32;
    let (best, median) = time(args.repeats, || {
        sink += stream_sum(std::hint::black_box(&x))
    });
    let bytes = (x.len() * 4) as f64;
    println!(
        "{:<44} {:>9.3} ms {:>9.3} ms {:>8.1} GB/s  (a pass reading them at this rate does at most \
         {:.1} GFLOP/s = {:.1} % of peak; checksum {sink:.3e})",
        format!("stream read of the {:.0} MB of features", bytes * 1e-6),
        best * 1e3,
        median * 1e3,
        bytes / best * 1e-9,
        flops / best * 1e-9,
        100.0 * flops / best * 1e-9 / peak
    );
    let mut scores = vec![0.0; m * 10];
    let t = time(args.repeats, || {
        linalg::row_dots(&rows, &classes, d, &mut scores)
    });
    report(
        &format!("multiclass scores, {m} x 10 x {dp}"),
        flops,
        t,
        peak,
    );
    // The pass at two points: the random `w` above, where every example
    // violates its margin (all rows enter the subgradient), and a trained
    // `w` (Prox-P-BMRM at lambda 1e-3 to 1 % of the optimum), where the
    // solver spends its later passes.
    let mut trained = vec![0.0; model.dim()];
    let mut s = Settings::new(Algorithm::ProxPBmrm, 1e-3);
    s.tol_rel = 1e-2;
    s.num_threads = 2;
    Solver::new(Problem::Examples(model.clone()), s)?.run(&mut trained)?;
    for (at, point) in [("random w", &w), ("trained w", &trained)] {
        let mut c = bmrm::oracle::Corner::new(model.dim());
        let violators = (0..m)
            .filter(|&i| {
                c.clear();
                model.max_oracle(i, point, &mut c).expect("the oracle");
                c.loss() > 0.0
            })
            .count();
        for parts in [1usize, 16] {
            let risk = Problem::Examples(model.clone()).parts(parts)?;
            let mut g = vec![0.0; risk.dim()];
            let t = time(args.repeats, || {
                pool.install(|| {
                    for p in 0..parts {
                        risk.partial_risk(p, point, &mut g)
                            .expect("the oracle pass");
                    }
                })
            });
            report(
                &format!(
                    "oracle pass, {at} ({:.0} % viol.), {parts} part(s)",
                    100.0 * violators as f64 / m as f64
                ),
                flops,
                t,
                peak,
            );
        }
    }
    Ok(())
}
