//! The `bmrm` command-line tool: train, predict, lambda paths, and the demo.
//! `bmrm --help` and `bmrm <command> --help` are the user documentation.

mod data;
mod demo;
mod graph;
mod graph_data;
mod model;
mod modelfile;
mod path;
mod predict;
mod progress;
mod train;

use std::path::PathBuf;

use bmrm::plot;
use bmrm::{Algorithm, Sampling, Settings, StepType};
use clap::{Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "Train linear multiclass and chain structured-output SVMs with bundle methods \
    (BMRM, Prox-BMRM, P-BMRM, Prox-P-BMRM) and block-coordinate Frank-Wolfe, with a certificate \
    of optimality";

const LONG_ABOUT: &str = "\
Train linear structured-output SVMs with bundle methods (BMRM, Prox-BMRM, P-BMRM, Prox-P-BMRM)
or block-coordinate Frank-Wolfe (BCFW), with a certificate of optimality: every run reports
the objective F(w) (the primal) and a lower bound on its minimum; their difference (the gap)
says how far from optimal the model is.

    F(w) = lambda/2 ||w||^2 + (1/m) sum_i max_y [ loss(y_i, y) + <w, phi(x_i, y) - phi(x_i, y_i)> ]

Two models:
  multiclass  one label per example, 0/1 loss: the Crammer-Singer SVM (LIBLINEAR's -s 4)
  chain       one label per token of a sequence (OCR words, CoNLL sentences), Viterbi,
              Hamming loss divided by the length

Give either --lambda or --c: C = 1/(m lambda), m the number of training examples (sequences
for chains): LIBLINEAR's and SVM-multiclass's C.

Start with `bmrm demo`: no data needed.";

const AFTER_LONG_HELP: &str = "\
Examples:
  bmrm demo                                       # generated data, BMRM vs Prox-P-BMRM vs BCFW, plot in bmrm-demo.svg
  bmrm train data.svm --c 1 -o model.txt          # LIBSVM/LIBLINEAR format, C as in LIBLINEAR
  bmrm predict model.txt test.svm -o pred.txt     # accuracy, and one predicted label a line
  bmrm path data.svm --validation val.svm --lambdas 1e-2,1e-3,1e-4
  bmrm train /usr/share/datasets/fashion-mnist --lambda 1e-4 -o fashion.txt
  bmrm predict fashion.txt /usr/share/datasets/fashion-mnist      # the t10k-* test set
  bmrm train ocr_letters.tsv.gz --lambda 0.01 -a bcfw -o ocr.txt  # chain model, OCR-large split
  bmrm predict ocr.txt ocr_letters.tsv.gz -o words.txt            # fold 0, one word a line

Exit status: 0 on success, 1 when the run fails (bad data, bad setting), 2 for a command-line
error. Use `bmrm <command> --help` for every option.";

#[derive(Parser)]
#[command(
    name = "bmrm",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_long_help = AFTER_LONG_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model on a data file and save it.
    #[command(
        long_about = "Train a linear multiclass SVM on a data file and save it (--output).\n\n\
            While it runs, a live line on stderr shows the iteration, the primal F(w), the gap \
            and the elapsed time; at the end the training error (and the test error with --test) \
            are printed. --json prints one JSON object a line instead (an `iteration` object \
            per iteration and one `summary`); --quiet prints nothing but errors.",
        after_long_help = "Examples:\n  \
            bmrm train train.svm --c 1 -o model.txt\n  \
            bmrm train train.svm --lambda 1e-4 --algorithm bmrm --tol-rel 1e-2 --test test.svm\n  \
            bmrm train /usr/share/datasets/fashion-mnist --lambda 1.667e-5 --threads 2 -o fashion.txt\n  \
            bmrm train train.svm --c 1 --json > log.jsonl"
    )]
    Train(train::TrainArgs),
    /// Predict with a saved model; report the accuracy.
    #[command(
        long_about = "Predict the labels of a data file with a model saved by `bmrm train`, \
            print the accuracy and error rate against the file's labels, and write the \
            predictions (one label a line, in the file's own labels) with --output.",
        after_long_help = "Examples:\n  \
            bmrm predict model.txt test.svm\n  \
            bmrm predict model.txt test.svm --output predictions.txt\n  \
            bmrm predict fashion.txt /usr/share/datasets/fashion-mnist   # the t10k-* files"
    )]
    Predict(predict::PredictArgs),
    /// Solve for a sequence of lambdas (warm starts); report validation error.
    #[command(
        long_about = "Solve for a decreasing sequence of lambdas, each run warm-started from \
            the previous solution (bundle methods also keep their cutting planes: they model the \
            risk, which lambda does not change), and report the training and validation error \
            at every lambda. The validation set is --validation FILE, or a seeded random \
            --holdout share of the training file. --output saves the model with the lowest \
            validation error.\n\n\
            With --algorithm bcfw the lambdas are not given: BCFW's epsilon-approximate \
            regularisation path starts at lambda_max (where w = 0 is optimal up to eps) and \
            picks its own breakpoints down to --lambda-min, so that every lambda in between has \
            a model within a duality gap of --eps; one row per breakpoint (--bcfw-grid: use \
            the --lambdas grid instead).",
        after_long_help = "Examples:\n  \
            bmrm path train.svm --validation val.svm --lambdas 1e-2,1e-3,1e-4,1e-5\n  \
            bmrm path train.svm --cs 0.01,0.1,1,10 --holdout 0.2 -o best.txt\n  \
            bmrm path ocr_letters.tsv.gz --validation ocr_letters.tsv.gz -a bcfw --eps 0.01 --lambda-min 1e-3"
    )]
    Path(path::PathArgs),
    /// Compare BMRM, Prox-P-BMRM and BCFW on generated data; plot their convergence.
    #[command(
        long_about = "Train a linear multiclass SVM on data generated in code (no download) \
            with BMRM, Prox-P-BMRM and BCFW (--algorithms for others), print their \
            iterations, time, primal value, gap and errors side by side, and write a \
            convergence plot (relative gap against iterations and against seconds, log scale) \
            as an SVG file. Every run stops at the same relative gap (--tol-rel), so the \
            primal values agree to that accuracy.",
        after_long_help = "Examples:\n  \
            bmrm demo\n  \
            bmrm demo --algorithms bmrm,prox-bmrm,p-bmrm,prox-p-bmrm,bcfw\n  \
            bmrm demo --examples 50000 --lambda 1e-4 --plot big.svg"
    )]
    Demo(demo::DemoArgs),
}

/// The algorithms of the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Alg {
    /// BMRM: one cutting-plane model of the whole risk.
    Bmrm,
    /// Proximal BMRM: steps kept short by a prox term.
    ProxBmrm,
    /// P-BMRM: one cutting-plane model per part of the examples (--parts).
    PBmrm,
    /// Proximal P-BMRM (usually the fastest for small lambda).
    ProxPBmrm,
    /// Stochastic subgradient descent alone (--sgd-passes passes).
    Sgd,
    /// Kelley's cutting-plane method on a ball (a baseline; slow).
    CuttingPlane,
    /// Block-coordinate Frank-Wolfe on the dual (one iteration = one pass over the
    /// examples; see the --sampling, --step-type, --cache options).
    Bcfw,
}

/// BCFW's block sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SamplingArg {
    /// Uniformly at random.
    Uniform,
    /// A new random permutation every pass.
    Permutation,
    /// Proportionally to the blocks' last gaps (gap sampling).
    Gap,
}

/// BCFW's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StepArg {
    /// Frank-Wolfe steps (BCFW).
    Fw,
    /// The better of a FW and a pairwise step (BCPFW).
    Pairwise,
    /// The better of a FW and an away step (BCAFW).
    Away,
    /// The block's sub-problem solved exactly over its simplex (multiclass),
    /// or over its kept corners (chains), with shrinking.
    Exact,
}

impl Alg {
    pub fn algorithm(self) -> Algorithm {
        match self {
            Alg::Bmrm => Algorithm::Bmrm,
            Alg::ProxBmrm => Algorithm::ProxBmrm,
            Alg::PBmrm => Algorithm::PBmrm,
            Alg::ProxPBmrm => Algorithm::ProxPBmrm,
            Alg::Sgd => Algorithm::Sgd,
            Alg::CuttingPlane => Algorithm::CuttingPlane,
            Alg::Bcfw => Algorithm::Bcfw,
        }
    }
}

/// Where the data comes from, and the model.
#[derive(Args, Debug)]
pub struct DataArgs {
    /// The data: a LIBSVM-format file (`label index:value ...`, 1-based indices, .gz fine),
    /// a directory of MNIST/Fashion-MNIST IDX files, an OCR words file or a CoNLL file.
    #[arg(value_name = "DATA")]
    pub data: PathBuf,
    /// Data format.
    #[arg(long, value_enum, default_value_t = data::Format::Auto)]
    pub format: data::Format,
    /// Which part of an idx, ocr or conll data set to use (default: train).
    #[arg(long, value_enum)]
    pub split: Option<data::Split>,
    /// OCR data: train on these folds (0..9, comma-separated), e.g. --folds 0 for OCR-small.
    #[arg(long, value_delimiter = ',', value_name = "FOLDS")]
    pub folds: Option<Vec<u8>>,
    /// Use only the first N examples (words or sentences for ocr and conll).
    #[arg(long, value_name = "N")]
    pub examples: Option<usize>,
    /// The model.
    #[arg(long, value_enum, default_value_t = model::Kind::Auto)]
    pub model: model::Kind,
}

impl DataArgs {
    /// The training data.
    pub fn source(&self) -> data::Source<'_> {
        data::Source {
            path: &self.data,
            format: self.format,
            split: self.split,
            default_split: data::Split::Train,
            folds: self.folds.as_deref(),
            limit: self.examples,
        }
    }
    /// Held-out data in the same format: the test part of a standard split
    /// unless --split or --folds say otherwise (then the rest of the folds).
    pub fn held_out<'a>(
        &self,
        path: &'a std::path::Path,
        folds: Option<&'a [u8]>,
    ) -> data::Source<'a> {
        data::Source {
            path,
            format: self.format,
            split: None,
            default_split: data::Split::Test,
            folds,
            limit: None,
        }
    }
}

/// Every setting of the solver except lambda.
#[derive(Args, Debug, Clone)]
pub struct SolverArgs {
    /// Optimisation algorithm [default: prox-p-bmrm; `bmrm train` on a multiclass model lets
    /// the library pick: bcfw with exact steps and permutation sampling on at least 1000
    /// examples with mean |x|^2 / (lambda n) <= 20, prox-p-bmrm otherwise (the run prints
    /// its pick)].
    #[arg(short, long, value_enum)]
    pub algorithm: Option<Alg>,
    /// Stop when primal - lower bound <= tol_rel * |primal|.
    #[arg(long, default_value_t = 1e-3, allow_negative_numbers = true)]
    pub tol_rel: f64,
    /// Stop when primal - lower bound <= tol_abs (0: off).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub tol_abs: f64,
    /// Stop after this many iterations (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub max_iterations: u64,
    /// Stop after this many seconds (0: no limit).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub time_limit: f64,
    /// Worker threads (0: all cores). Results are bit-identical for any number.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Parts of P-BMRM / Prox-P-BMRM (0: 16, or m when m < 16).
    #[arg(long, default_value_t = 0)]
    pub parts: usize,
    /// Most cutting planes kept (then aggregated; the run never fails for lack of room).
    #[arg(long, default_value_t = 2000)]
    pub buffer_size: usize,
    /// Remove a plane unused for this many iterations (0: never).
    #[arg(long, default_value_t = 10)]
    pub clean_after: u32,
    /// Prox-BMRM's T (how much decrease an iteration must bring).
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub prox_t: f64,
    /// Prox-BMRM's K, the step length bound (0: automatic).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub prox_k: f64,
    /// Passes of SGD before the bundle method (0: none; sgd: default 5).
    #[arg(long)]
    pub sgd_passes: Option<u32>,
    /// Radius of the cutting-plane method's ball (0: automatic).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub cp_radius: f64,
    /// Most coordinate updates of one inner QP solve (0: no limit).
    #[arg(long, default_value_t = 10_000_000)]
    pub qp_max_updates: u64,
    /// Seed of every random choice (SGD order, holdout split).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Do not append the constant bias feature (default: appended, like LIBLINEAR's -B 1).
    #[arg(long)]
    pub no_bias: bool,
    /// BCFW: how the next block (example) is chosen [default: gap; permutation when
    /// `bmrm train` picks BCFW by lambda].
    #[arg(long, value_enum)]
    pub sampling: Option<SamplingArg>,
    /// BCFW: the kind of step.
    #[arg(long, value_enum, default_value_t = StepArg::Fw)]
    pub step_type: StepArg,
    /// BCFW: step 2n/(k + 2n) instead of the exact line search.
    #[arg(long)]
    pub no_line_search: bool,
    /// BCFW: weighted averaging of the iterates (rho = 2/(k + 2)).
    #[arg(long)]
    pub weighted_averaging: bool,
    /// BCFW: an exact pass (all gaps, the certificate, the stopping test) every N passes
    /// [default: 10; 1000 with --step-type exact, whose exact passes also come when the
    /// gap estimate calls them].
    #[arg(long, value_name = "N")]
    pub gap_check: Option<u32>,
    /// BCFW: an exact pass as soon as every example's gap estimate is known and their sum is
    /// <= this times --tol-abs, not only every --gap-check passes (0: off; needs --tol-abs).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub early_exact_factor: f64,
    /// BCFW gap sampling: examples drawn with probability proportional to gap^degree.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub gap_degree: f64,
    /// BCFW: keep a cache of oracle answers per example.
    #[arg(long)]
    pub cache: bool,
    /// BCFW: most inactive corners cached per example.
    #[arg(long, default_value_t = 50)]
    pub cache_size: usize,
    /// BCFW: a cache hit needs a gap >= cache_nu * (last total gap) / n ...
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    pub cache_nu: f64,
    /// ... and >= cache_factor * the example's last gap.
    #[arg(long, default_value_t = 0.25, allow_negative_numbers = true)]
    pub cache_factor: f64,
    /// BCFW: most passes (0: no limit; --max-iterations counts passes too).
    #[arg(long, default_value_t = 0)]
    pub num_passes: u64,
    /// BCFW regularisation path (`bmrm path --algorithm bcfw`): each breakpoint is solved
    /// to a gap of path_a * eps.
    #[arg(long, default_value_t = 0.9, allow_negative_numbers = true)]
    pub path_a: f64,
    /// BCFW: multi-plane BCFW: after each pass of oracle steps, approximate passes towards
    /// the best kept corner of each example (no oracle call).
    #[arg(long)]
    pub multi_plane: bool,
    /// Multi-plane: most approximate passes after each oracle pass.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub mp_approx_passes: u32,
    /// Multi-plane: stop the approximate passes once their dual increase per second falls
    /// below the oracle pass's (results then depend on timing).
    #[arg(long)]
    pub mp_timed: bool,
    /// Multi-plane: drop a corner without weight unused for N oracle passes (N >= 1).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub mp_inactive_passes: u32,
    /// Multi-plane: approximate steps on an example right after its oracle call.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub mp_block_steps: u32,
    /// BCFW: mini-batch size (0: one example at a time): the oracle answers N examples at
    /// one w in parallel, their steps follow in a fixed order; N >= the examples: every pass
    /// is an exact pass with its certificate.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub mini_batch: u32,
}

impl SolverArgs {
    /// With no `--algorithm`, the library's pick for a multiclass model of
    /// `examples` rows of mean squared norm `mean_row_norm2`
    /// ([`bmrm::Settings::for_multiclass`]): BCFW with exact steps (and
    /// permutation sampling unless given) on well-conditioned problems,
    /// Prox-P-BMRM otherwise. Returns the pick's description when a pick
    /// was made.
    pub fn pick_for_multiclass(
        &mut self,
        lambda: f64,
        examples: usize,
        mean_row_norm2: f64,
    ) -> Option<String> {
        if self.algorithm.is_some() {
            return None;
        }
        let picked = Settings::for_multiclass(lambda, examples, mean_row_norm2);
        let condition = mean_row_norm2 / (lambda * examples as f64);
        let why = format!(
            "{examples} examples, mean |x|^2 / (lambda n) = {condition:.3e}; the rule: at least \
             {} examples and at most {:e}; -a to choose",
            bmrm::MULTICLASS_BCFW_MIN_EXAMPLES,
            bmrm::MULTICLASS_BCFW_MAX_CONDITION
        );
        if picked.step_type == StepType::Exact {
            self.algorithm = Some(Alg::Bcfw);
            self.step_type = StepArg::Exact;
            self.sampling.get_or_insert(SamplingArg::Permutation);
            Some(format!("bcfw with exact steps ({why})"))
        } else {
            self.algorithm = Some(Alg::ProxPBmrm);
            Some(format!("prox-p-bmrm ({why})"))
        }
    }

    pub fn settings(&self, lambda: f64) -> Result<Settings, String> {
        let alg = self.algorithm.unwrap_or(Alg::ProxPBmrm);
        let mut s = Settings::new(alg.algorithm(), lambda);
        s.tol_rel = self.tol_rel;
        s.tol_abs = self.tol_abs;
        s.max_iterations = self.max_iterations;
        s.time_limit_seconds = self.time_limit;
        s.num_threads = self.threads;
        s.num_parts = self.parts;
        s.buffer_size = self.buffer_size;
        s.clean_after = self.clean_after;
        s.prox_t = self.prox_t;
        s.prox_k = self.prox_k;
        if let Some(p) = self.sgd_passes {
            s.sgd_passes = p;
        }
        s.cp_radius = self.cp_radius;
        s.qp_max_updates = self.qp_max_updates;
        s.seed = self.seed;
        s.sampling = match self.sampling.unwrap_or(SamplingArg::Gap) {
            SamplingArg::Uniform => Sampling::Uniform,
            SamplingArg::Permutation => Sampling::Permutation,
            SamplingArg::Gap => Sampling::Gap,
        };
        s.step_type = match self.step_type {
            StepArg::Fw => StepType::FrankWolfe,
            StepArg::Pairwise => StepType::Pairwise,
            StepArg::Away => StepType::Away,
            StepArg::Exact => StepType::Exact,
        };
        s.line_search = !self.no_line_search;
        s.weighted_averaging = self.weighted_averaging;
        s.gap_check = self.gap_check.unwrap_or(if s.step_type == StepType::Exact {
            1000
        } else {
            10
        });
        s.early_exact_factor = self.early_exact_factor;
        s.gap_degree = self.gap_degree;
        s.use_cache = self.cache;
        s.cache_size = self.cache_size;
        s.cache_nu = self.cache_nu;
        s.cache_factor = self.cache_factor;
        s.num_passes = self.num_passes;
        s.path_a = self.path_a;
        s.multi_plane = self.multi_plane;
        s.mp_approx_passes = self.mp_approx_passes;
        s.mp_timed = self.mp_timed;
        s.mp_inactive_passes = self.mp_inactive_passes;
        s.mp_block_steps = self.mp_block_steps;
        s.mini_batch = self.mini_batch;
        s.validate().map_err(|e| option_names(&e.to_string()))?;
        Ok(s)
    }
}

/// The library's setting names in a message, as the command line spells them
/// (whole names only: `cache_size` is not `--cache` followed by `_size`).
pub fn option_names(msg: &str) -> String {
    const FLAGS: [(&str, &str); 32] = [
        ("time_limit_seconds", "--time-limit"),
        ("tol_rel", "--tol-rel"),
        ("tol_abs", "--tol-abs"),
        ("max_iterations", "--max-iterations"),
        ("num_parts", "--parts"),
        ("buffer_size", "--buffer-size"),
        ("clean_after", "--clean-after"),
        ("prox_t", "--prox-t"),
        ("prox_k", "--prox-k"),
        ("cp_radius", "--cp-radius"),
        ("qp_max_updates", "--qp-max-updates"),
        ("sgd_passes", "--sgd-passes"),
        ("sampling", "--sampling"),
        ("step_type", "--step-type"),
        ("line_search", "--no-line-search"),
        ("weighted_averaging", "--weighted-averaging"),
        ("gap_check", "--gap-check"),
        ("early_exact_factor", "--early-exact-factor"),
        ("gap_degree", "--gap-degree"),
        ("use_cache", "--cache"),
        ("cache_size", "--cache-size"),
        ("cache_nu", "--cache-nu"),
        ("cache_factor", "--cache-factor"),
        ("num_passes", "--num-passes"),
        ("path_a", "--path-a"),
        ("multi_plane", "--multi-plane"),
        ("mp_approx_passes", "--mp-approx-passes"),
        ("mp_timed", "--mp-timed"),
        ("mp_inactive_passes", "--mp-inactive-passes"),
        ("mp_block_steps", "--mp-block-steps"),
        ("mini_batch", "--mini-batch"),
        ("num_threads", "--threads"),
    ];
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(start) = rest.find(|c: char| ident(c)) {
        out.push_str(&rest[..start]);
        let word_len = rest[start..]
            .find(|c: char| !ident(c))
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        match FLAGS.iter().find(|(field, _)| *field == word) {
            Some((_, flag)) => out.push_str(flag),
            None => out.push_str(word),
        }
        rest = &rest[start + word_len..];
    }
    out.push_str(rest);
    out
}

/// --lambda or --c, checked.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct RegArgs {
    /// Regularisation constant of F(w) = lambda/2 ||w||^2 + mean risk.
    #[arg(long, allow_negative_numbers = true)]
    pub lambda: Option<f64>,
    /// LIBLINEAR's C instead of lambda: lambda = 1/(m C), m the training examples.
    #[arg(short = 'c', long = "c", allow_negative_numbers = true)]
    pub c: Option<f64>,
}

impl RegArgs {
    /// Checks the sign before any data is read.
    pub fn check(&self) -> Result<(), String> {
        match (self.lambda, self.c) {
            (Some(l), _) if !(l.is_finite() && l > 0.0) => {
                Err(format!("--lambda must be a positive number, got {l}"))
            }
            (_, Some(c)) if !(c.is_finite() && c > 0.0) => {
                Err(format!("--c must be a positive number, got {c}"))
            }
            _ => Ok(()),
        }
    }
    /// lambda for `m` training examples.
    pub fn lambda(&self, m: usize) -> f64 {
        match (self.lambda, self.c) {
            (Some(l), _) => l,
            (_, Some(c)) => 1.0 / (m as f64 * c),
            _ => unreachable!("clap requires one of --lambda and --c"),
        }
    }
}

/// --json and --quiet.
#[derive(Args, Debug, Clone, Copy)]
pub struct OutputArgs {
    /// Print JSON lines on stdout instead of text (train, path: one object per iteration; then a summary).
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

impl OutputArgs {
    pub fn mode(&self) -> progress::Mode {
        progress::Mode::new(self.json, self.quiet)
    }
}

/// The exit status of a run stopped by SIGINT (128 + 2, the shells' own).
const EXIT_INTERRUPTED: i32 = 130;

fn main() {
    // Ctrl-C would end the tool with no word: say what happened. A
    // model being written is left whole (modelfile.rs writes atomically).
    let _ = ctrlc::set_handler(|| {
        eprintln!("\nbmrm: interrupted (SIGINT): stopped before the end of the run");
        std::process::exit(EXIT_INTERRUPTED);
    });
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Train(a) => train::run(a),
        Command::Predict(a) => predict::run(a),
        Command::Path(a) => path::run(a),
        Command::Demo(a) => demo::run(a),
    };
    if let Err(e) = result {
        eprintln!("bmrm: error: {e}");
        std::process::exit(1);
    }
}
