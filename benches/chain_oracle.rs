//! The chain model's max-oracle on the real sequence data: seconds per full
//! pass (every example once, one thread and all threads) on OCR-large
//! (dense pixels, d = 4,082) and on the CoNLL-2000 training split (sparse
//! indicators, d = 1.7 million), at w = 0 and at a w after a short solve,
//! the size of the corners (sparse psi entries per example against the
//! dense dimension), the memory of the data, and a short Prox-P-BMRM run
//! with its training and test errors.
//!
//! This is a benchmark program, not a test:
//!     cargo bench --bench chain_oracle -- --help
//! Needs ../shared/data/ocr_letters.tsv.gz and conll2000_chunk_test.tsv.gz.

use std::time::Instant;

use bmrm::data::conll::read_conll;
use bmrm::data::ocr::{read_ocr, OcrSplit};
use bmrm::models::Chain;
use bmrm::oracle::{Corner, MaxOracle};
use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::Parser;
use rayon::prelude::*;

#[derive(Parser)]
#[command(about = "Oracle seconds per pass of the chain model on OCR and CoNLL")]
struct Args {
    /// Directory of the data files.
    #[arg(long, default_value = "../shared/data")]
    dir: String,
    /// Passes timed per setting (the median is printed).
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Iterations of the short Prox-P-BMRM run that gives the second w.
    #[arg(long, default_value_t = 30)]
    iterations: u64,
    /// Mean-risk lambda of that run (the BCFW demo's 0.01).
    #[arg(long, default_value_t = 0.01)]
    lambda: f64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Seconds of one pass over every example, serial or parallel, and the
/// mean number of psi entries per corner.
fn pass(model: &Chain, w: &[f64], parallel: bool) -> (f64, f64) {
    let m = model.num_examples();
    let start = Instant::now();
    let entries: usize = if parallel {
        (0..m)
            .into_par_iter()
            .map_init(
                || Corner::new(model.dim()),
                |c, i| {
                    c.clear();
                    model.max_oracle(i, w, c).unwrap();
                    c.sparse_entries().count()
                },
            )
            .sum()
    } else {
        let mut c = Corner::new(model.dim());
        (0..m)
            .map(|i| {
                c.clear();
                model.max_oracle(i, w, &mut c).unwrap();
                c.sparse_entries().count()
            })
            .sum()
    };
    (start.elapsed().as_secs_f64(), entries as f64 / m as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn report(name: &str, train: &Chain, test: &Chain, data_bytes: usize, args: &Args) {
    println!(
        "== {name}: {} train / {} test sequences, {} train tokens, dim {}, data {:.1} MB",
        train.num_examples(),
        test.num_examples(),
        train.num_tokens(),
        train.dim(),
        data_bytes as f64 / 1e6
    );
    let zero = vec![0.0; train.dim()];
    let mut s = Settings::new(Algorithm::ProxPBmrm, args.lambda);
    s.num_parts = 16;
    s.max_iterations = args.iterations;
    s.tol_rel = 1e-3;
    let mut solver = Solver::new(Problem::from_max_oracle(train.clone()), s).unwrap();
    let mut w = zero.clone();
    let info = solver.run(&mut w).unwrap();
    println!(
        "Prox-P-BMRM (P = 16) {} iterations, {:.1} s ({:.0} % in the oracle): F = {:.5}, gap {:.2e}, \
         train token error {:.4}, test token error {:.4}",
        info.iterations,
        info.elapsed_seconds,
        100.0 * info.oracle_seconds / info.elapsed_seconds.max(1e-12),
        info.primal,
        info.gap / info.primal.abs(),
        train.hamming_error(&w),
        test.hamming_error(&w)
    );
    for (label, wv) in [("w = 0", &zero), ("w after the run", &w)] {
        for parallel in [false, true] {
            let runs: Vec<(f64, f64)> = (0..args.passes)
                .map(|_| pass(train, wv, parallel))
                .collect();
            let secs = median(runs.iter().map(|r| r.0).collect());
            println!(
                "  oracle pass at {label:<16} {:<8}: {:.4} s ({:.2} us per sequence), {:.1} psi entries per corner ({:.2} % of dim)",
                if parallel { "threads" } else { "serial" },
                secs,
                1e6 * secs / train.num_examples() as f64,
                runs[0].1,
                100.0 * runs[0].1 / train.dim() as f64
            );
        }
    }
}

fn main() {
    let args = Args::parse();
    let dir = std::path::Path::new(&args.dir);
    let ocr = dir.join("ocr_letters.tsv.gz");
    if ocr.is_file() {
        let t = Instant::now();
        let words = read_ocr(&ocr).unwrap();
        println!(
            "read {} in {:.2} s",
            ocr.display(),
            t.elapsed().as_secs_f64()
        );
        let (train, test) = words.split(OcrSplit::Large);
        let bytes = train.pixels.len() * 4 + train.labels.len() * 4;
        report(
            "OCR-large",
            &train.chain().unwrap(),
            &test.chain().unwrap(),
            bytes,
            &args,
        );
    } else {
        println!("skipped OCR: {} is absent", ocr.display());
    }
    let conll = dir.join("conll2000_chunk_test.tsv.gz");
    if conll.is_file() {
        let t = Instant::now();
        let data = read_conll(&conll).unwrap();
        println!(
            "read {} in {:.2} s",
            conll.display(),
            t.elapsed().as_secs_f64()
        );
        let (train, test) = data.standard_split();
        let bytes = train.features.nnz() * 8 + train.num_tokens() * 12;
        report(
            "CoNLL (first 1500 sentences / last 512)",
            &train.chain(true).unwrap(),
            &test.chain(true).unwrap(),
            bytes,
            &args,
        );
    } else {
        println!("skipped CoNLL: {} is absent", conll.display());
    }
}
