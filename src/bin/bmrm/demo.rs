//! `bmrm demo`: the algorithms side by side on generated data, and a
//! convergence plot.

use std::path::PathBuf;
use std::sync::Arc;

use bmrm::models::{synthetic, Multiclass};
use bmrm::{Algorithm, Problem, Settings, Solver};
use clap::Args;

use crate::plot::{write_svg, Panel, Series};
use crate::progress::{Mode, Progress};
use crate::Alg;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Training examples (a quarter as many more are generated for the test set).
    #[arg(long, default_value_t = 10_000)]
    examples: usize,
    /// Features per example.
    #[arg(long, default_value_t = 64)]
    features: usize,
    /// Classes.
    #[arg(long, default_value_t = 10)]
    classes: usize,
    /// Regularisation constant of the mean risk (LIBLINEAR's C = 1/(m lambda)).
    #[arg(long, default_value_t = 2e-3, allow_negative_numbers = true)]
    lambda: f64,
    /// Relative tolerance of the stopping rule.
    #[arg(long, default_value_t = 1e-3, allow_negative_numbers = true)]
    tol_rel: f64,
    /// Parts of the P-BMRM variants.
    #[arg(long, default_value_t = 16)]
    parts: usize,
    /// Threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the convergence plot (SVG).
    #[arg(long, value_name = "FILE", default_value = "bmrm-demo.svg")]
    plot: PathBuf,
    /// Do not write the plot.
    #[arg(long, conflicts_with = "plot")]
    no_plot: bool,
    /// The algorithms to compare, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "bmrm,prox-p-bmrm,bcfw"
    )]
    algorithms: Vec<Alg>,
}

pub fn run(a: DemoArgs) -> Result<(), String> {
    if !(a.lambda.is_finite() && a.lambda > 0.0) {
        return Err(format!(
            "--lambda must be a positive number, got {}",
            a.lambda
        ));
    }
    if a.examples == 0 || a.features == 0 || a.classes < 2 {
        return Err("--examples and --features must be at least 1, --classes at least 2".into());
    }
    let (m, d, k) = (a.examples, a.features, a.classes);
    let (x, y) = synthetic::gaussian_multiclass(m + m / 4, d, k, 4.0, a.seed);
    let (train_x, test_x) = x.split_at(m * d);
    let (train_y, test_y) = y.split_at(m);
    let err = |e: bmrm::Error| e.to_string();
    let train =
        Arc::new(Multiclass::new(train_x.to_vec(), d, train_y.to_vec(), k, true).map_err(err)?);
    let test = if test_y.is_empty() {
        None
    } else {
        Some(Multiclass::new(test_x.to_vec(), d, test_y.to_vec(), k, true).map_err(err)?)
    };
    println!(
        "multiclass SVM on generated data: {m} training / {} test examples, {d} features, {k} classes, \
         lambda = {:e} (C = {:.3e}), tol_rel = {:e}",
        test_y.len(),
        a.lambda,
        1.0 / (m as f64 * a.lambda),
        a.tol_rel
    );
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>14} {:>11} {:>10} {:>10}",
        "algorithm", "iters", "seconds", "oracle %", "primal", "rel. gap", "train err", "test err"
    );
    let mut by_iteration = Vec::new();
    let mut by_time = Vec::new();
    for alg in a.algorithms.iter().map(|x| x.algorithm()) {
        let mut s = Settings::new(alg, a.lambda);
        s.tol_rel = a.tol_rel;
        s.num_threads = a.threads;
        if alg.is_partitioned() {
            s.num_parts = a.parts;
        }
        let mut solver = Solver::new(Problem::Examples(train.clone()), s).map_err(err)?;
        let progress = Progress::attach(
            &mut solver,
            Mode::Human,
            alg.name().into(),
            a.tol_rel,
            vec![],
        );
        let mut w = vec![0.0; solver.dim()];
        let result = solver.run(&mut w);
        progress.finish(result.as_ref().ok());
        let info = result.map_err(err)?;
        let name = match alg {
            Algorithm::PBmrm | Algorithm::ProxPBmrm => {
                format!("{} (P={})", alg.name(), solver.num_parts())
            }
            _ => alg.name().to_string(),
        };
        println!(
            "{:<12} {:>6} {:>9.3} {:>8.1}% {:>14.8} {:>11.2e} {:>9.2}% {:>9}",
            alg.name(),
            info.iterations,
            info.elapsed_seconds,
            100.0 * info.oracle_seconds / info.elapsed_seconds.max(1e-12),
            info.primal,
            info.gap / info.primal.abs(),
            100.0 * train.error_rate(&w),
            match &test {
                Some(t) => format!("{:.2}%", 100.0 * t.error_rate(&w)),
                None => "-".into(),
            }
        );
        let rel = |r: &bmrm::Iteration| (r.primal - r.lower_bound) / r.primal.abs();
        by_iteration.push(Series {
            name: name.clone(),
            points: solver
                .history()
                .iter()
                .map(|r| (r.iteration as f64, rel(r)))
                .collect(),
        });
        by_time.push(Series {
            name,
            points: solver
                .history()
                .iter()
                .map(|r| (r.elapsed_seconds, rel(r)))
                .collect(),
        });
    }
    if !a.no_plot {
        let y_label = "relative gap (primal - lower bound) / primal";
        write_svg(
            &a.plot,
            &format!(
                "Multiclass SVM, m = {m}, d = {d}, K = {k}, lambda = {:e}",
                a.lambda
            ),
            &[
                Panel {
                    title: "relative gap vs iteration".into(),
                    x_label: "iteration (BCFW: pass over the examples)".into(),
                    y_label: y_label.into(),
                    log_x: false,
                    log_y: true,
                    series: by_iteration,
                },
                Panel {
                    title: "relative gap vs time".into(),
                    x_label: "seconds".into(),
                    y_label: y_label.into(),
                    log_x: false,
                    log_y: true,
                    series: by_time,
                },
            ],
            640,
            480,
        )?;
        println!("convergence plot written to {}", a.plot.display());
    }
    Ok(())
}
