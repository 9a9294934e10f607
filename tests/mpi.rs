//! The distributed solvers (feature `mpi`) against the single-process ones,
//! run under `mpirun --allow-run-as-root --oversubscribe -np 3` on localhost.
//!
//! This test program is its own MPI program (`harness = false`): run by
//! `cargo test --features mpi --test mpi`, it starts `mpirun` on itself
//! once per scenario (with `BMRM_MPI_SCENARIO` set), with a time limit, and
//! checks what the ranks print:
//!
//! - `agree`: BMRM, Prox-BMRM, P-BMRM and Prox-P-BMRM over a max-oracle whose
//!   examples are spread over 3 ranks (7 parts: 2, 2 and 3 per rank), and
//!   P-BMRM over a partitioned risk whose ranks hold 1, 2 and 3 parts, give
//!   bit-identical `w`, iterations and figures to the single-process run
//!   with the same parts, on every rank, also on a warm start after
//!   `set_lambda`; distributed BMRM and single-process BMRM over the
//!   max-oracle (one block) sum in another order, so their paths part by
//!   rounding: both certify their tolerance and agree within it; rank 0's
//!   solver run from another thread than the one that joined is refused
//!   (MPI stays on that thread) with the same error on every rank;
//! - `bcfw`: BCFW with rank 0 holding every example (its block steps) and
//!   the exact gap passes and the regularisation path's lambda_max passes
//!   spread over the 3 ranks gives the single-process `w`, passes and path
//!   to the bit;
//! - `oracle_fails`: the oracle of rank 1 fails at the third evaluation:
//!   every rank ends with the same `oracle failed` error naming rank 1 and
//!   the iteration, and the job finishes normally;
//! - `rank_hangs`: rank 2 hangs in its oracle: rank 0 ends the run after its
//!   2 s reply timeout with a "rank lost" error naming rank 2 (the typed
//!   kind `distributed::ranks_lost` recognises), and every rank that gets
//!   it ends the job;
//! - `rank_exits`: rank 2 exits in its oracle: the job ends (mpirun ends
//!   every rank), no hang;
//! - `c_abi`: tests/c/mpi_test.c, built with mpicc against the static
//!   library, runs P-BMRM through `bmrm_solver_new_mpi` on MPI_COMM_WORLD
//!   and gets the single-process `w` to the bit on every rank; a layout that
//!   does not fit gives every rank BMRM_ERROR_INVALID_ARGUMENT naming the
//!   rank.
//!
//! `BMRM_MPI_ONLY=<scenario>` runs one scenario.

mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bmrm::distributed::{join, join_whole, ExampleRange, Layout, Node, Options, Shard};
use bmrm::models::{synthetic, Multiclass};
use bmrm::oracle::{Corner, ExampleParts, MaxOracle, PartitionedRisk};
use bmrm::{Algorithm, Error, Info, Problem, Settings, Solver};
use mpi::topology::Communicator;

const RANKS: usize = 3;
const SCENARIO: &str = "BMRM_MPI_SCENARIO";

fn main() {
    match std::env::var(SCENARIO) {
        Ok(s) => child(&s),
        Err(_) => driver(),
    }
}

// ---------------------------------------------------------------------------
// The driver: mpirun per scenario, checks on the output.

struct Outcome {
    status: Option<i32>,
    output: String,
    seconds: f64,
    timed_out: bool,
}

/// `target/<profile>/mpi-c/mpi_test`.
fn c_test_path() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test program's path");
    let profile = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    profile.join("mpi-c").join("mpi_test")
}

/// Compiles tests/c/mpi_test.c with mpicc against the static library cargo
/// built for this test run (with the `mpi` feature, next to this program).
fn build_c_test() -> (bool, String) {
    let exe = std::env::current_exe().expect("the test program's path");
    let lib = exe.parent().expect("deps").join("libbmrm.a");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = c_test_path();
    std::fs::create_dir_all(out.parent().unwrap()).expect("create the C build directory");
    let result = Command::new("mpicc")
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join("tests/c/mpi_test.c"))
        .arg(&lib)
        .args(support::static_lib_deps())
        .arg("-o")
        .arg(&out)
        .output();
    match result {
        Ok(o) if o.status.success() => (true, String::new()),
        Ok(o) => (
            false,
            format!(
                "mpicc failed for {}:\n{}",
                lib.display(),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (false, format!("cannot run mpicc: {e}")),
    }
}

fn mpirun(scenario: &str, limit: Duration) -> Outcome {
    let exe = std::env::current_exe().expect("the test program's path");
    mpirun_program(scenario, &exe, limit)
}

fn mpirun_program(scenario: &str, exe: &std::path::Path, limit: Duration) -> Outcome {
    mpirun_with_args(scenario, exe, &[], limit)
}

fn mpirun_with_args(
    scenario: &str,
    exe: &std::path::Path,
    args: &[String],
    limit: Duration,
) -> Outcome {
    let started = Instant::now();
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(RANKS.to_string())
        .arg(exe)
        .args(args)
        .env(SCENARIO, scenario)
        // Shared-memory transfers without process_vm_readv, which containers
        // often forbid (it needs ptrace rights).
        .env(
            "OMPI_MCA_btl_vader_single_copy_mechanism",
            std::env::var("OMPI_MCA_btl_vader_single_copy_mechanism")
                .unwrap_or_else(|_| "none".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start mpirun (apt-get install openmpi-bin)");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for mpirun") {
            break s.code();
        }
        if started.elapsed() > limit {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = reader.join().unwrap_or_default() + &err_reader.join().unwrap_or_default();
    Outcome {
        status,
        output,
        seconds: started.elapsed().as_secs_f64(),
        timed_out,
    }
}

/// Whether to run scenario `name` (all, unless `BMRM_MPI_ONLY` names one).
fn wanted(name: &str) -> bool {
    std::env::var("BMRM_MPI_ONLY").map_or(true, |only| only == name)
}

fn driver() {
    let mut passed = 0;
    let mut failed = 0;
    let mut check = |name: &str, ok: bool, why: String| {
        if ok {
            passed += 1;
            println!("test mpi::{name} ... ok");
        } else {
            failed += 1;
            println!("test mpi::{name} ... FAILED\n{why}");
        }
    };

    if wanted("agree") {
        let o = mpirun("agree", Duration::from_secs(300));
        let lines: Vec<&str> = o.output.lines().collect();
        let checks: Vec<&&str> = lines.iter().filter(|l| l.starts_with("CHECK ")).collect();
        let bad: Vec<&&&str> = checks.iter().filter(|l| !l.contains(" ok ")).collect();
        for c in &checks {
            println!("    {c}");
        }
        check(
            "agree",
            o.status == Some(0) && !o.timed_out && checks.len() >= 8 && bad.is_empty(),
            format!(
                "status {:?}, {} checks, failing: {bad:?}\n{}",
                o.status,
                checks.len(),
                o.output
            ),
        );
        // Every rank ends every run with the same w and info.
        let mut ends: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for l in &lines {
            if let Some(rest) = l.strip_prefix("END ") {
                let mut it = rest.splitn(3, ' ');
                let (rank, run, what) = (it.next(), it.next(), it.next());
                if let (Some(_), Some(run), Some(what)) = (rank, run, what) {
                    ends.entry(run.to_string())
                        .or_default()
                        .push(what.to_string());
                }
            }
        }
        let same = !ends.is_empty()
            && ends
                .values()
                .all(|v| v.len() == RANKS && v.iter().all(|x| x == &v[0]));
        check(
            "every_rank_gets_the_same_result",
            same,
            format!("{ends:#?}"),
        );
    }

    if wanted("bcfw") {
        let o = mpirun("bcfw", Duration::from_secs(300));
        let checks: Vec<&str> = o
            .output
            .lines()
            .filter(|l| l.starts_with("CHECK "))
            .collect();
        for c in &checks {
            println!("    {c}");
        }
        let ends: Vec<&str> = o
            .output
            .lines()
            .filter_map(|l| l.strip_prefix("END "))
            .map(|l| l.split_once(' ').map_or("", |x| x.1))
            .collect();
        check(
            "bcfw_exact_passes_over_ranks",
            o.status == Some(0)
                && checks.len() == 2
                && checks.iter().all(|c| c.contains(" ok "))
                && ends.len() == RANKS
                && ends.iter().all(|e| *e == ends[0]),
            format!("status {:?}\n{}", o.status, o.output),
        );
    }

    if wanted("oracle_fails") {
        let o = mpirun("oracle_fails", Duration::from_secs(120));
        let errors: Vec<&str> = o
            .output
            .lines()
            .filter(|l| l.starts_with("ERROR "))
            .collect();
        let named = errors.iter().all(|l| {
            l.contains("oracle failed") && l.contains("(rank 1)") && l.contains("at iteration 2")
        });
        check(
            "oracle_fails_on_one_rank",
            o.status == Some(0) && !o.timed_out && errors.len() == RANKS && named,
            format!("status {:?}, errors {errors:#?}\n{}", o.status, o.output),
        );
    }

    if wanted("rank_hangs") {
        // A generous wait: under load, mpirun takes long to end a hung rank.
        let o = mpirun("rank_hangs", Duration::from_secs(400));
        check(
            "rank_hangs",
            !o.timed_out
                && o.status != Some(0)
                && o.output.contains("ERROR 0 rank lost: ")
                && o.output.contains("rank 2 did not answer within 2 s"),
            format!(
                "status {:?} after {:.1} s\n{}",
                o.status, o.seconds, o.output
            ),
        );
    }

    if wanted("rank_exits") {
        let o = mpirun("rank_exits", Duration::from_secs(400));
        check(
            "rank_exits",
            !o.timed_out && o.status != Some(0),
            format!(
                "status {:?} after {:.1} s\n{}",
                o.status, o.seconds, o.output
            ),
        );
    }

    if wanted("c_abi") {
        let (built, why) = build_c_test();
        if built {
            let o = mpirun_program("c_abi", &c_test_path(), Duration::from_secs(120));
            let runs: Vec<&str> = o
                .output
                .lines()
                .filter(|l| l.starts_with("C RUN "))
                .collect();
            let hashes: Vec<&str> = runs
                .iter()
                .filter_map(|l| l.split(" w ").nth(1))
                .map(|r| r.split(' ').next().unwrap_or(""))
                .collect();
            let bad_layout = o
                .output
                .lines()
                .filter(|l| l.starts_with("C BADLAYOUT ") && l.ends_with("status 2 named 1"))
                .count();
            check(
                "c_abi",
                o.status == Some(0)
                    && runs.len() == RANKS
                    && runs.iter().all(|l| l.contains("status 0"))
                    && hashes.iter().all(|h| *h == hashes[0])
                    && o.output.contains("C CHECK ok")
                    && bad_layout == RANKS,
                format!("status {:?}\n{}", o.status, o.output),
            );
            for l in o.output.lines().filter(|l| l.starts_with("C ")) {
                println!("    {l}");
            }
        } else {
            check("c_abi", false, why);
        }
    }

    if wanted("cli") {
        // `bmrm train --distributed` under mpirun writes the same model file
        // as one process with the same parts.
        let dir = std::env::temp_dir().join(format!("bmrm-mpi-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let data = dir.join("train.svm");
        let mut text = String::new();
        for i in 0..600usize {
            let y = i % 3;
            text += &y.to_string();
            for j in 0..8usize {
                let noise = ((i * 7919 + j * 104_729) % 1000) as f64 / 500.0 - 1.0;
                let v = noise + if j == y { 1.5 } else { 0.0 };
                text += &format!(" {}:{v:.4}", j + 1);
            }
            text += "\n";
        }
        std::fs::write(&data, text).expect("write the data");
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_bmrm"));
        let common = |out: &std::path::Path| -> Vec<String> {
            vec![
                "train".into(),
                data.to_string_lossy().into_owned(),
                "--lambda".into(),
                "0.01".into(),
                "-a".into(),
                "p-bmrm".into(),
                "--parts".into(),
                "6".into(),
                "--quiet".into(),
                "-o".into(),
                out.to_string_lossy().into_owned(),
            ]
        };
        let one = dir.join("one.txt");
        let single = Command::new(bin)
            .args(common(&one))
            .output()
            .expect("bmrm runs");
        let many = dir.join("many.txt");
        let mut args = common(&many);
        args.push("--distributed".into());
        let o = mpirun_with_args("cli", bin, &args, Duration::from_secs(120));
        let same = std::fs::read(&one)
            .ok()
            .is_some_and(|a| Some(a) == std::fs::read(&many).ok());
        check(
            "cli_train_distributed",
            single.status.success() && o.status == Some(0) && same,
            format!(
                "single {:?}, mpirun {:?}, same model file: {same}\n{}",
                single.status, o.status, o.output
            ),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    println!(
        "\ntest result: {}. {passed} passed; {failed} failed",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    if failed > 0 {
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------
// The MPI program.

fn model() -> Arc<Multiclass> {
    let (x, y) = synthetic::gaussian_multiclass(600, 10, 4, 2.0, 7);
    Arc::new(Multiclass::new(x, 10, y, 4, true).unwrap())
}

fn settings(a: Algorithm, parts: usize) -> Settings {
    let mut s = Settings::new(a, 1e-2);
    s.tol_rel = 1e-4;
    s.num_parts = parts;
    s.num_threads = 1;
    s.max_iterations = 500;
    s
}

fn bits(w: &[f64]) -> u64 {
    // FNV-1a over the bits of w.
    let mut h: u64 = 0xcbf29ce484222325;
    for x in w {
        for b in x.to_bits().to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}

fn same_info(a: &Info, b: &Info) -> bool {
    // oracle_calls counts examples for a max-oracle and parts for a
    // partitioned risk, so it is compared by the callers where they match.
    a.exit == b.exit
        && a.iterations == b.iterations
        && a.primal.to_bits() == b.primal.to_bits()
        && a.lower_bound.to_bits() == b.lower_bound.to_bits()
        && a.risk.to_bits() == b.risk.to_bits()
        && a.num_planes == b.num_planes
}

fn report(rank: i32, name: &str, ok: bool, detail: String) {
    if rank == 0 {
        println!("CHECK {} {name} {detail}", if ok { "ok" } else { "FAIL" });
    }
}

/// Reports under `name` whether a distributed run (`info`, `w`) equals the
/// single-process run of `problem` with `s` to the bit.
fn report_same_as_one(
    rank: i32,
    name: &str,
    problem: Problem,
    s: Settings,
    info: &Info,
    w: &[f64],
) {
    let mut one = Solver::new(problem, s).unwrap();
    let mut w1 = vec![0.0; w.len()];
    let i1 = one.run(&mut w1).unwrap();
    report(
        rank,
        name,
        same_info(info, &i1) && bits(w) == bits(&w1),
        format!(
            "iterations {} (one process {})",
            info.iterations, i1.iterations
        ),
    );
}

fn end_line(rank: i32, run: &str, w: &[f64], info: &Info) {
    println!(
        "END {rank} {run} w={:016x} iterations={} primal={:e}",
        bits(w),
        info.iterations,
        info.primal
    );
}

/// Parts `range` of a partitioned risk.
struct PartRange {
    all: Arc<ExampleParts>,
    range: std::ops::Range<usize>,
}

impl PartitionedRisk for PartRange {
    fn dim(&self) -> usize {
        self.all.dim()
    }
    fn num_parts(&self) -> usize {
        self.range.len()
    }
    fn partial_risk(&self, part: usize, w: &[f64], g: &mut [f64]) -> bmrm::Result<f64> {
        self.all.partial_risk(self.range.start + part, w, g)
    }
}

/// An oracle that fails, hangs or exits once it has been called `after`
/// times.
struct Faulty {
    inner: ExampleRange,
    calls: AtomicUsize,
    after: usize,
    fault: &'static str,
}

impl MaxOracle for Faulty {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_examples(&self) -> usize {
        self.inner.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.after {
            match self.fault {
                "fail" => return Err(Error::oracle("the test oracle fails")),
                "hang" => loop {
                    std::thread::sleep(Duration::from_secs(1));
                },
                _ => std::process::exit(9),
            }
        }
        self.inner.max_oracle(i, w, out)
    }
}

fn child(scenario: &str) {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let rank = world.rank();
    let size = world.size() as usize;
    assert_eq!(size, RANKS, "run with -np {RANKS}");
    let full = model();
    let m = full.num_examples();

    match scenario {
        "agree" => {
            for (a, name) in [
                (Algorithm::Bmrm, "bmrm"),
                (Algorithm::ProxBmrm, "prox_bmrm"),
                (Algorithm::PBmrm, "p_bmrm"),
                (Algorithm::ProxPBmrm, "prox_p_bmrm"),
            ] {
                let parts = 7;
                let s = settings(a, parts);
                let layout = Layout::for_settings(&s, m, size).unwrap();
                let mine = layout.examples_of(rank as usize);
                let shard = Shard::from_max_oracle(ExampleRange::new(full.clone(), mine).unwrap());
                let mut d = join(&world, Ok(shard), s.clone(), Options::default()).unwrap();
                let mut w = vec![0.0; full.dim()];
                let info = d.run(&mut w).unwrap();
                end_line(rank, name, &w, &info);
                // Warm start at a smaller lambda, planes kept: rank 0's
                // ordinary solver.
                if let Some(solver) = d.solver_mut() {
                    solver.set_lambda(3e-3).unwrap();
                }
                let info2 = d.run(&mut w).unwrap();
                end_line(rank, &format!("{name}_warm"), &w, &info2);
                let stats = d.stats();
                drop(d);
                if rank != 0 {
                    continue;
                }
                // The single-process run with the same parts.
                let problem = if a.is_partitioned() {
                    Problem::Examples(full.clone())
                } else {
                    Problem::from_partitioned(ExampleParts::new(full.clone(), parts))
                };
                let mut one = Solver::new(problem, s.clone()).unwrap();
                let mut w1 = vec![0.0; full.dim()];
                let i1 = one.run(&mut w1).unwrap();
                let same = bits(&w) != 0
                    && same_info(&info, &i1)
                    && if a.is_partitioned() {
                        info.oracle_calls == i1.oracle_calls
                    } else {
                        // Examples against parts.
                        info.oracle_calls * parts as u64 == i1.oracle_calls * m as u64
                    };
                one.set_lambda(3e-3).unwrap();
                let i1b = one.run(&mut w1).unwrap();
                report(
                    rank,
                    name,
                    same && same_info(&info2, &i1b) && bits(&w) == bits(&w1),
                    format!(
                        "iterations {} / {} (one process {} / {}), primal {:e}, bits equal {}, \
                         {} evaluations, {} bytes sent",
                        info.iterations,
                        info2.iterations,
                        i1.iterations,
                        i1b.iterations,
                        info2.primal,
                        bits(&w) == bits(&w1),
                        stats.evaluations,
                        stats.bytes_sent
                    ),
                );
                if a == Algorithm::Bmrm {
                    // Against plain BMRM over the max-oracle: one block of
                    // examples (num_parts is the distributed layout's).
                    let one_block = Settings {
                        num_parts: 0,
                        ..s.clone()
                    };
                    let mut plain =
                        Solver::new(Problem::Examples(full.clone()), one_block).unwrap();
                    let mut wp = vec![0.0; full.dim()];
                    let ip = plain.run(&mut wp).unwrap();
                    let mut w_dist = vec![0.0; full.dim()];
                    let mut again = Solver::new(
                        Problem::from_partitioned(ExampleParts::new(full.clone(), parts)),
                        s.clone(),
                    )
                    .unwrap();
                    let ia = again.run(&mut w_dist).unwrap();
                    let diff = wp
                        .iter()
                        .zip(&w_dist)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0, f64::max);
                    // Sums in another order: the paths part by rounding, and
                    // both runs certify their own tolerance.
                    let tol = s.tol_rel * ip.primal.abs().max(ia.primal.abs());
                    let certified = ip.lower_bound.max(ia.lower_bound)
                        <= ip.primal.min(ia.primal) + 1e-12
                        && (ip.primal - ia.primal).abs() <= tol;
                    report(
                        rank,
                        "bmrm_vs_one_block",
                        certified && ip.exit == ia.exit,
                        format!(
                            "iterations {} vs {}, primal {:e} vs {:e}, max |w - w'| = {diff:e}",
                            ia.iterations, ip.iterations, ia.primal, ip.primal
                        ),
                    );
                }
            }
            // A partitioned risk, ranks holding 1, 2 and 3 parts.
            let all = Arc::new(ExampleParts::new(full.clone(), 6));
            let first = [0, 1, 3, 6];
            let r = rank as usize;
            let shard = Shard::from_parts(PartRange {
                all: all.clone(),
                range: first[r]..first[r + 1],
            });
            let s = settings(Algorithm::PBmrm, 0);
            let mut d = join(&world, Ok(shard), s.clone(), Options::default()).unwrap();
            let mut w = vec![0.0; full.dim()];
            let info = d.run(&mut w).unwrap();
            end_line(rank, "parts", &w, &info);
            let local = d.local_parts();
            drop(d);
            println!("PARTS {rank} {local:?}");
            if rank == 0 {
                report_same_as_one(
                    rank,
                    "uneven_parts",
                    Problem::Partitioned(all.clone()),
                    s,
                    &info,
                    &w,
                );
            }
            // The same from a partitioned risk every rank has whole.
            let s = settings(Algorithm::PBmrm, 0);
            let mut d = join_whole(
                &world,
                &Problem::Partitioned(all.clone()),
                s.clone(),
                Options::default(),
            )
            .unwrap();
            let mut w = vec![0.0; full.dim()];
            let info = d.run(&mut w).unwrap();
            end_line(rank, "from_problem", &w, &info);
            drop(d);
            if rank == 0 {
                report_same_as_one(
                    rank,
                    "from_problem_parts",
                    Problem::Partitioned(all.clone()),
                    s,
                    &info,
                    &w,
                );
            }
            // A layout that does not fit is refused on every rank.
            let s = settings(Algorithm::PBmrm, 7);
            let wrong = (rank as usize * 200)..(rank as usize * 200 + 200);
            let shard = Shard::from_max_oracle(ExampleRange::new(full.clone(), wrong).unwrap());
            let e = join(&world, Ok(shard), s, Options::default()).err();
            let ok = matches!(&e, Some(Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("rank 0 holds 200 examples"));
            report(rank, "bad_layout", ok, format!("{e:?}"));
            println!("LAYOUT {rank} {ok}");
            // Rank 0's solver run from a thread other than the one that
            // joined cannot reach MPI: its oracle refuses (no MPI call from
            // that thread), and the coordinator ends the call on every rank
            // with that error.
            let all = Problem::Partitioned(Arc::new(ExampleParts::new(full.clone(), 6)));
            let s = settings(Algorithm::PBmrm, 0);
            let mut w = vec![0.0; full.dim()];
            let e = match join_whole(&world, &all, s, Options::default()).unwrap() {
                Node::Root(mut solver, coordinator) => {
                    let got = std::thread::scope(|t| t.spawn(|| solver.run(&mut w)).join());
                    let got = got.expect("no panic");
                    let e = got.as_ref().err().cloned();
                    coordinator
                        .finish(got.as_ref().map(|_| ()), solver.info(), &w)
                        .unwrap();
                    e
                }
                Node::Worker(mut worker) => worker.serve(&mut w).err(),
            };
            let ok = matches!(&e, Some(Error { kind: bmrm::ErrorKind::InvalidArgument, message: m, .. }) if m.contains("from a thread other than"));
            report(rank, "other_thread", ok, format!("{e:?}"));
            println!("END {rank} other_thread {e:?}");
        }
        "bcfw" => {
            // Rank 0 holds every example (block steps), the others their share
            // of the exact passes.
            let mut s = Settings::new(Algorithm::Bcfw, 1e-2);
            s.tol_rel = 1e-3;
            s.num_threads = 1;
            s.gap_check = 2;
            s.max_iterations = 200;
            // Every rank has the whole problem; join_whole keeps its share.
            let mut d = join_whole(
                &world,
                &Problem::Examples(full.clone()),
                s.clone(),
                Options::default(),
            )
            .unwrap();
            let mut w = vec![0.0; full.dim()];
            let info = d.run(&mut w).unwrap();
            end_line(rank, "bcfw", &w, &info);
            let path = d.bcfw_path(0.05, 1e-3, 4).unwrap();
            let stats = d.stats();
            drop(d);
            if rank == 0 {
                let mut one = Solver::new(Problem::Examples(full.clone()), s).unwrap();
                let mut w1 = vec![0.0; full.dim()];
                let i1 = one.run(&mut w1).unwrap();
                report(
                    rank,
                    "bcfw",
                    same_info(&info, &i1)
                        && info.oracle_calls == i1.oracle_calls
                        && bits(&w) == bits(&w1),
                    format!(
                        "{} passes (one process {}), primal {:e}, {} distributed passes, {} \
                         bytes received",
                        info.iterations,
                        i1.iterations,
                        info.primal,
                        stats.evaluations,
                        stats.bytes_received
                    ),
                );
                let p1 = one.bcfw_mut().unwrap().path(0.05, 1e-3, 4).unwrap();
                let same_path = path.len() == p1.len()
                    && path.iter().zip(&p1).all(|(a, b)| {
                        a.lambda.to_bits() == b.lambda.to_bits()
                            && bits(&a.w) == bits(&b.w)
                            && a.passes == b.passes
                    });
                report(
                    rank,
                    "bcfw_path",
                    same_path && !path.is_empty(),
                    format!(
                        "{} breakpoints (one process {}), first lambda {:e}",
                        path.len(),
                        p1.len(),
                        path.first().map_or(f64::NAN, |b| b.lambda)
                    ),
                );
            } else {
                println!("PATH {rank} {}", path.len());
            }
        }
        "oracle_fails" | "rank_hangs" | "rank_exits" => {
            let s = settings(Algorithm::PBmrm, 6);
            let layout = Layout::for_settings(&s, m, size).unwrap();
            let mine = layout.examples_of(rank as usize);
            let n = mine.len();
            let (who, fault) = match scenario {
                "oracle_fails" => (1, "fail"),
                "rank_hangs" => (2, "hang"),
                _ => (2, "exit"),
            };
            let oracle = Faulty {
                inner: ExampleRange::new(full.clone(), mine).unwrap(),
                calls: AtomicUsize::new(0),
                after: if rank == who { 2 * n } else { usize::MAX },
                fault,
            };
            let options = Options {
                reply_timeout: Some(Duration::from_secs(2)),
                command_timeout: None,
            };
            let mut d = join(&world, Ok(Shard::from_max_oracle(oracle)), s, options).unwrap();
            let mut w = vec![0.0; full.dim()];
            match d.run(&mut w) {
                Ok(info) => println!("OK {rank} {} iterations", info.iterations),
                Err(e) => {
                    println!("ERROR {rank} {e}");
                    if bmrm::distributed::ranks_lost(&e) {
                        // A rank that does not answer cannot finalise: every
                        // rank that learns it ends the job. Exiting without
                        // MPI_Finalize makes mpirun end every rank (Open MPI
                        // 4.1's mpirun sometimes crashes or hangs after
                        // MPI_Abort in containers).
                        std::process::exit(3);
                    }
                }
            }
        }
        other => panic!("unknown scenario {other}"),
    }
}
