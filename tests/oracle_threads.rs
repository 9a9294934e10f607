//! Callbacks that are not thread-safe (MATLAB's, Python's) run only on the
//! thread that called the solver: for every algorithm, every oracle level,
//! BCFW's exact, averaged and traced passes, warm starts and the
//! regularisation path, with a thread pool of several threads available.

use std::sync::Mutex;
use std::thread::{self, ThreadId};

use bmrm::models::{synthetic, Multiclass};
use bmrm::oracle::{Corner, FullRisk, MaxOracle, PartitionedRisk};
use bmrm::{Algorithm, Problem, Settings, Solver};

/// Records the threads it is called on; declares itself not thread-safe.
struct Recorder<T> {
    inner: T,
    threads: Mutex<Vec<ThreadId>>,
}

impl<T> Recorder<T> {
    fn record(&self) {
        self.threads.lock().unwrap().push(thread::current().id());
    }
}

fn model() -> Multiclass {
    let (x, y) = synthetic::gaussian_multiclass(90, 4, 3, 1.5, 11);
    Multiclass::new(x, 4, y, 3, true).unwrap()
}

struct Examples(Multiclass);
impl MaxOracle for Recorder<Examples> {
    fn dim(&self) -> usize {
        self.inner.0.dim()
    }
    fn num_examples(&self) -> usize {
        self.inner.0.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.record();
        self.inner.0.max_oracle(i, w, out)
    }
    fn thread_safe(&self) -> bool {
        false
    }
}

/// The multiclass risk as `parts` contiguous example blocks.
struct Parts(Multiclass, usize);
impl Parts {
    fn block(&self, p: usize) -> std::ops::Range<usize> {
        let m = self.0.num_examples();
        p * m / self.1..(p + 1) * m / self.1
    }
    fn risk_of(
        &self,
        range: std::ops::Range<usize>,
        w: &[f64],
        g: &mut [f64],
    ) -> bmrm::Result<f64> {
        let m = self.0.num_examples() as f64;
        g.iter_mut().for_each(|x| *x = 0.0);
        let mut corner = Corner::new(self.0.dim());
        let mut r = 0.0;
        for i in range {
            corner.clear();
            self.0.max_oracle(i, w, &mut corner)?;
            r += corner.loss() - corner.dot(w);
            corner.add_to(-1.0 / m, g);
        }
        Ok(r / m)
    }
}
impl PartitionedRisk for Recorder<Parts> {
    fn dim(&self) -> usize {
        self.inner.0.dim()
    }
    fn num_parts(&self) -> usize {
        self.inner.1
    }
    fn partial_risk(&self, p: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        self.record();
        self.inner.risk_of(self.inner.block(p), w, g)
    }
    fn thread_safe(&self) -> bool {
        false
    }
}
impl FullRisk for Recorder<Parts> {
    fn dim(&self) -> usize {
        self.inner.0.dim()
    }
    fn risk(&self, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        self.record();
        self.inner.risk_of(0..self.inner.0.num_examples(), w, g)
    }
    fn thread_safe(&self) -> bool {
        false
    }
}

fn recorder<T>(inner: T) -> std::sync::Arc<Recorder<T>> {
    std::sync::Arc::new(Recorder {
        inner,
        threads: Mutex::new(Vec::new()),
    })
}

/// Checks that every recorded call ran on this thread, and that there were calls.
fn all_on_this_thread<T>(r: &Recorder<T>, what: &str) {
    let me = thread::current().id();
    let threads = r.threads.lock().unwrap();
    assert!(!threads.is_empty(), "{what}: no oracle call recorded");
    let off = threads.iter().filter(|&&t| t != me).count();
    assert_eq!(
        off,
        0,
        "{what}: {off} of {} calls off the caller's thread",
        threads.len()
    );
}

fn settings(algorithm: Algorithm) -> Settings {
    let mut s = Settings::new(algorithm, 0.05);
    s.num_threads = 4;
    s.max_iterations = 30;
    s
}

fn solve_twice(problem: Problem, s: Settings) {
    let mut solver = Solver::new(problem, s).unwrap();
    let mut w = vec![0.0; solver.dim()];
    solver.run(&mut w).unwrap();
    solver.set_lambda(0.02).unwrap();
    solver.run(&mut w).unwrap();
}

#[test]
fn bundle_methods_and_sgd_call_every_oracle_level_on_the_callers_thread() {
    let bundle = [
        Algorithm::Bmrm,
        Algorithm::ProxBmrm,
        Algorithm::PBmrm,
        Algorithm::ProxPBmrm,
        Algorithm::CuttingPlane,
        Algorithm::Sgd,
    ];
    for algorithm in bundle {
        for sgd_start in [0, 2] {
            if algorithm == Algorithm::CuttingPlane && sgd_start > 0 {
                continue; // no SGD start: the setting is refused
            }
            let what = format!("{algorithm:?}, sgd_passes {sgd_start}");
            let mut s = settings(algorithm);
            s.sgd_passes = if algorithm == Algorithm::Sgd {
                3
            } else {
                sgd_start
            };
            let examples = recorder(Examples(model()));
            solve_twice(Problem::Examples(examples.clone()), s.clone());
            all_on_this_thread(&examples, &format!("{what}, max-oracle"));
            let parts = recorder(Parts(model(), 6));
            solve_twice(Problem::Partitioned(parts.clone()), s.clone());
            all_on_this_thread(&parts, &format!("{what}, partitioned risk"));
            if !algorithm.is_partitioned() {
                let full = recorder(Parts(model(), 1));
                let mut s = s.clone();
                if algorithm == Algorithm::Sgd || sgd_start > 0 {
                    continue; // SGD samples parts: a full risk has none.
                }
                s.sgd_passes = 0;
                solve_twice(Problem::Risk(full.clone()), s);
                all_on_this_thread(&full, &format!("{what}, full risk"));
            }
        }
    }
}

#[test]
fn bcfw_passes_and_path_call_the_oracle_on_the_callers_thread() {
    for (averaging, trace) in [(false, false), (true, false), (false, true), (true, true)] {
        let what = format!("BCFW, averaging {averaging}, trace_gap {trace}");
        let mut s = settings(Algorithm::Bcfw);
        s.gap_check = 2; // several exact passes
        s.weighted_averaging = averaging;
        s.trace_gap = trace;
        let examples = recorder(Examples(model()));
        solve_twice(Problem::Examples(examples.clone()), s);
        all_on_this_thread(&examples, &what);
    }
    let examples = recorder(Examples(model()));
    let mut s = settings(Algorithm::Bcfw);
    s.gap_check = 2;
    let mut solver = Solver::new(Problem::Examples(examples.clone()), s).unwrap();
    let path = solver.bcfw_mut().unwrap().path(0.05, 0.01, 20).unwrap();
    assert!(!path.is_empty());
    all_on_this_thread(&examples, "BCFW regularisation path");
}
