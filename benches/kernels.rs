//! The kernels against the machine's own peak, measured in the same run.
//!
//! The peak is a pure fused-multiply-add loop (independent chains in
//! registers, nothing loaded; `linalg::fma_peak_loop`, dispatched like the
//! kernels to the selected instruction set), on one thread. Then, on one
//! thread:
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
//! (the pass's other work is counted as time, not flops). Each line is the
//! fastest, the median and the slowest of `--repeats` runs.
//!
//! The oracle pass is then set against its two floors, measured in the same
//! run: the time to stream the features' bytes (`linalg::stream_sum` over
//! the same buffer) and the time of its `m K d` fused multiply-adds at the
//! measured peak; the goal is a pass within 2x of the larger. A benchmark
//! program, not a test:
//!     cargo bench --bench kernels -- --help

use std::sync::Arc;
use std::time::Instant;

use bmrm::linalg::{self, Isa};
use bmrm::models::Multiclass;
use bmrm::oracle::MaxOracle;
use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::Parser;
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
    /// The parts a pass, its scores and its stream read are cut into for the
    /// loaded-machine estimate (the sum of each piece's fastest run; more
    /// and shorter pieces when other jobs leave few runs uninterrupted).
    #[arg(long, default_value_t = 16)]
    pieces: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The sum over `pieces` pieces of each one's fastest of `repeats` runs
/// (`f(p)` runs piece `p`), in seconds. On a machine shared with other jobs
/// a whole pass of 10-20 ms is rarely left to run uninterrupted, but a
/// piece of about 1 ms often is: the sum estimates the uninterrupted pass.
fn piecewise(repeats: usize, pieces: usize, mut f: impl FnMut(usize)) -> f64 {
    let mut best = vec![f64::INFINITY; pieces];
    for _ in 0..repeats.max(1) {
        for (p, b) in best.iter_mut().enumerate() {
            let s = Instant::now();
            f(p);
            *b = b.min(s.elapsed().as_secs_f64());
        }
    }
    best.iter().sum()
}

/// Seconds of the fastest, the median and the slowest of `repeats` runs of
/// `f`.
fn time(repeats: usize, mut f: impl FnMut()) -> (f64, f64, f64) {
    let mut t: Vec<f64> = (0..repeats.max(1))
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2], t[t.len() - 1])
}

fn report(what: &str, flops: f64, (best, median, worst): (f64, f64, f64), peak: f64) {
    let g = flops / best * 1e-9;
    println!(
        "{what:<44} {:>9.3} {:>9.3} {:>9.3} ms {g:>8.1} GFLOP/s {:>6.1} %",
        best * 1e3,
        median * 1e3,
        worst * 1e3,
        100.0 * g / peak
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if args.pieces == 0 {
        return Err("--pieces must be at least 1".into());
    }
    let pieces = args.pieces;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let isa = linalg::isa::selected();
    println!(
        "kernels: {} (available: {:?})",
        isa.name(),
        Isa::available()
    );

    // The peak: 2 flops per FMA, one thread; runs of about 1 ms, many of
    // them, so that some run uninterrupted on a shared machine.
    let iters = 500_000;
    let mut sink = 0.0;
    let mut fmas = 0;
    let peak_t = time(args.repeats * 20, || {
        let (sum, n) = linalg::fma_peak_loop(iters, 0.999_999_9, 1e-9);
        sink += sum;
        fmas = n;
    });
    let peak = 2.0 * fmas as f64 / peak_t.0 * 1e-9;
    println!(
        "FMA peak (1 thread): {peak:.1} GFLOP/s, median {:.1}, slowest {:.1}   (checksum \
         {sink:.3e})",
        2.0 * fmas as f64 / peak_t.1 * 1e-9,
        2.0 * fmas as f64 / peak_t.2 * 1e-9
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>19} {:>8}",
        "kernel (1 thread)", "best", "median", "slowest", "speed (best)", "of peak"
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
    let stream = time(args.repeats, || {
        sink += linalg::stream_sum(std::hint::black_box(&x))
    });
    let bytes = (x.len() * 4) as f64;
    let slices: Vec<&[f32]> = x.chunks(x.len().div_ceil(pieces)).collect();
    let stream_pieces = piecewise(args.repeats, slices.len(), |p| {
        sink += linalg::stream_sum(std::hint::black_box(slices[p]))
    });
    println!(
        "{:<44} {:>9.3} {:>9.3} {:>9.3} ms {:>8.1} GB/s  (checksum {sink:.3e})",
        format!("stream read of the {:.0} MB of features", bytes * 1e-6),
        stream.0 * 1e3,
        stream.1 * 1e3,
        stream.2 * 1e3,
        bytes / stream.0 * 1e-9,
    );
    // The two floors of a pass: streaming its bytes, and its `m K d` fused
    // multiply-adds at the peak (the best of each, as for the pass).
    let fma_floor = 2.0 * (m * 10 * d) as f64 / (peak * 1e9);
    let floors = Floors {
        bytes,
        flops: 2.0 * (m * 10 * d) as f64,
        stream: stream.0.min(stream_pieces),
        fma: fma_floor,
    };
    let mut passes = Vec::new();
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
    passes.push((format!("scores alone, {m} x 10 x {d}"), t));
    let mut bands: Vec<(&[&[f32]], &mut [f64])> = rows
        .chunks(m.div_ceil(pieces))
        .zip(scores.chunks_mut(m.div_ceil(pieces) * 10))
        .collect();
    let t = piecewise(args.repeats, bands.len(), |p| {
        let (r, out) = &mut bands[p];
        linalg::row_dots(r, &classes, d, out)
    });
    passes.push((format!("scores alone, {pieces} pieces' bests"), (t, t, t)));
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
        for parts in [1usize, pieces] {
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
            let what = format!(
                "oracle pass, {at} ({:.0} % viol.), {parts} part(s)",
                100.0 * violators as f64 / m as f64
            );
            report(&what, flops, t, peak);
            passes.push((what, t));
            if parts > 1 {
                let t = piecewise(args.repeats, parts, |p| {
                    pool.install(|| {
                        risk.partial_risk(p, point, &mut g)
                            .expect("the oracle pass");
                    })
                });
                passes.push((format!("  the same, the {parts} parts' bests"), (t, t, t)));
            }
        }
    }
    floors.print(&passes);
    Ok(())
}

/// What bounds a pass from below, measured in this run.
struct Floors {
    /// Bytes of features a pass reads.
    bytes: f64,
    /// Flops of its scores (2 per fused multiply-add).
    flops: f64,
    /// Seconds to stream the bytes (fastest run, or the sum of the pieces'
    /// fastest if less).
    stream: f64,
    /// Seconds of the flops at the measured FMA peak.
    fma: f64,
}

impl Floors {
    /// Each pass beside both floors: its rates, and its time as a multiple
    /// of each floor and of the larger (the goal: at most 2).
    fn print(&self, passes: &[(String, (f64, f64, f64))]) {
        let bound = self.stream.max(self.fma);
        println!();
        println!(
            "floors of a pass: stream {:.2} ms ({:.1} GB/s), FMA {:.2} ms ({:.1} GFLOP/s); the \
             larger {:.2} ms",
            self.stream * 1e3,
            self.bytes / self.stream * 1e-9,
            self.fma * 1e3,
            self.flops / self.fma * 1e-9,
            bound * 1e3
        );
        println!(
            "{:<44} {:>21} {:>8} {:>7} {:>9} {:>9} {:>9}",
            "pass (1 thread)",
            "best-median-slowest",
            "GFLOP/s",
            "GB/s",
            "x stream",
            "x FMA",
            "x larger"
        );
        for (what, (best, median, worst)) in passes {
            println!(
                "{what:<44} {:>6.2}-{:>6.2}-{:>6.2} {:>8.1} {:>7.1} {:>9.2} {:>9.2} {:>9.2}",
                best * 1e3,
                median * 1e3,
                worst * 1e3,
                self.flops / best * 1e-9,
                self.bytes / best * 1e-9,
                best / self.stream,
                best / self.fma,
                best / bound
            );
        }
    }
}
