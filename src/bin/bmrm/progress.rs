//! How a run reports: a live line on stderr (indicatif; drawn only when
//! stderr is a terminal), JSON lines on stdout, or nothing.

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bmrm::{Info, Solver};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};

/// The output mode chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Tables and a live progress line.
    Human,
    /// One JSON object a line on stdout, nothing else there.
    Json,
    /// Only errors.
    Quiet,
}

impl Mode {
    pub fn new(json: bool, quiet: bool) -> Mode {
        if json {
            Mode::Json
        } else if quiet {
            Mode::Quiet
        } else {
            Mode::Human
        }
    }
    pub fn human(self) -> bool {
        self == Mode::Human
    }
}

/// Prints a line in human mode.
#[macro_export]
macro_rules! say {
    ($mode:expr, $($arg:tt)*) => {
        if $mode.human() {
            println!($($arg)*);
        }
    };
}

/// Writes one JSON object as a line on stdout.
pub fn emit(v: &Value) {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`bmrm ... --json | head`) is not an error worth a panic.
    let _ = writeln!(out, "{v}");
}

/// What the summaries say of a run whose gap certifies nothing
/// (`Info::certified` false).
pub const NOT_CERTIFIED: &str = "gap not certified: an oracle answer was not known to be a \
    maximiser (below the ground truth, or marked inexact); the lower bound is valid, the primal \
    is F(w) with the risk as the oracle answered it";

/// The relative gap `gap / |primal|` (the quantity `tol_rel` bounds).
pub fn rel_gap(info: &Info) -> f64 {
    info.gap / info.primal.abs().max(f64::MIN_POSITIVE)
}

/// The JSON object of one iteration.
pub fn iteration_json(info: &Info, extra: &[(&str, Value)]) -> Value {
    let mut v = json!({
        "type": "iteration",
        "iteration": info.iterations,
        "primal": info.primal,
        "lower_bound": info.lower_bound,
        "gap": info.gap,
        "rel_gap": rel_gap(info),
        "certified": info.certified,
        "risk": info.risk,
        "planes": info.num_planes,
        "elapsed_seconds": info.elapsed_seconds,
    });
    for (k, x) in extra {
        v[*k] = x.clone();
    }
    v
}

/// The JSON fields of a finished run.
pub fn info_json(info: &Info) -> Value {
    json!({
        "exit": format!("{:?}", info.exit),
        "iterations": info.iterations,
        "oracle_calls": info.oracle_calls,
        "primal": info.primal,
        "lower_bound": info.lower_bound,
        "gap": info.gap,
        "rel_gap": rel_gap(info),
        "risk": info.risk,
        "planes": info.num_planes,
        "active_planes": info.active_planes,
        "elapsed_seconds": info.elapsed_seconds,
        "oracle_seconds": info.oracle_seconds,
        "qp_seconds": info.qp_seconds,
        "certified": info.certified,
    })
}

/// Fields added to every JSON line of a run.
pub type Extra = Vec<(&'static str, Value)>;

/// A live progress line for one solve, or the JSON lines of its iterations.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// JSON mode: the last iteration printed, and the extra fields.
    json: Option<(Arc<AtomicU64>, Extra)>,
}

impl Progress {
    /// Installs the observer on `solver`. `label` starts the live line (e.g.
    /// the algorithm and lambda); `extra` fields are added to every JSON line.
    pub fn attach(
        solver: &mut Solver,
        mode: Mode,
        label: String,
        tol_rel: f64,
        extra: Extra,
    ) -> Progress {
        match mode {
            Mode::Quiet => {
                solver.clear_observer();
                Progress {
                    bar: None,
                    json: None,
                }
            }
            Mode::Json => {
                let last = Arc::new(AtomicU64::new(0));
                let (l, x) = (last.clone(), extra.clone());
                solver.set_observer(move |info: &Info| {
                    emit(&iteration_json(info, &x));
                    l.store(info.iterations, Ordering::Relaxed);
                    ControlFlow::Continue(())
                });
                Progress {
                    bar: None,
                    json: Some((last, extra)),
                }
            }
            Mode::Human => {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} {msg}")
                        .expect("a valid template"),
                );
                bar.set_prefix(label);
                bar.enable_steady_tick(Duration::from_millis(200));
                let b = bar.clone();
                solver.set_observer(move |info: &Info| {
                    b.set_message(format!(
                        "iteration {:>5} | primal {:.6e} | gap {:.2e} (rel {:.2e}, target {:.0e}) | {:.1} s",
                        info.iterations,
                        info.primal,
                        info.gap,
                        rel_gap(info),
                        tol_rel,
                        info.elapsed_seconds
                    ));
                    ControlFlow::Continue(())
                });
                Progress {
                    bar: Some(bar),
                    json: None,
                }
            }
        }
    }

    /// Removes the live line. In JSON mode, prints the last iteration when
    /// the observer did not see it (the solver does not call the observer
    /// on the iteration that converges), so that there is one object per
    /// iteration.
    pub fn finish(self, last: Option<&Info>) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
        if let (Some((printed, extra)), Some(info)) = (self.json, last) {
            if printed.load(Ordering::Relaxed) < info.iterations {
                emit(&iteration_json(info, &extra));
            }
        }
    }
}

/// A number in short scientific form: `1e-2`, `1.6667e-4`, `0.1` stays `1e-1`.
pub fn short(x: f64) -> String {
    let s = format!("{x:.4e}");
    match s.split_once('e') {
        Some((m, e)) if m.contains('.') => {
            let m = m.trim_end_matches('0').trim_end_matches('.');
            format!("{m}e{e}")
        }
        _ => s,
    }
}
