//! The distributed solver from C (feature `mpi`; in `bmrm.h` between
//! `#if defined(BMRM_MPI)` and `#endif`).

use std::time::Duration;

use mpi::ffi::MPI_Comm;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

use crate::distributed::{self, Layout, Options, Shard};
use crate::error::{Error, Result};
use crate::oracle::Problem;

use super::boundary::{non_null, status};
use super::callbacks::{engine_settings, observer};
use super::problem::bmrm_problem;
use super::solver::{bmrm_solver, Held};
use super::types::{bmrm_settings, bmrm_status};

/// The communicator of a Fortran handle, as a duplicate this library owns
/// (freed when the solver is freed).
fn communicator(comm: i32) -> Result<SimpleCommunicator> {
    let mut initialised = 0;
    // SAFETY: MPI_Initialized may be called at any time, also before
    // MPI_Init; it writes one int.
    unsafe { mpi::ffi::MPI_Initialized(&mut initialised) };
    if initialised == 0 {
        return Err(Error::invalid_argument(
            "MPI is not initialised: call MPI_Init first",
        ));
    }
    // SAFETY: MPI is initialised; MPI_Comm_f2c converts any integer (an
    // invalid one gives an invalid handle, which MPI_Comm_dup reports).
    let raw: MPI_Comm = unsafe { mpi::ffi::RSMPI_Comm_f2c(comm) };
    // SAFETY: `raw` is the caller's communicator; reading it as the null
    // handle is a plain comparison.
    if raw == unsafe { mpi::ffi::RSMPI_COMM_NULL } {
        return Err(Error::invalid_argument(format!(
            "comm = {comm} is MPI_COMM_NULL"
        )));
    }
    let mut dup: MPI_Comm = raw;
    // SAFETY: `raw` is a communicator of the caller (collective call, as
    // documented); MPI_Comm_dup writes a new handle into `dup`, which this
    // library then owns. The caller's handle is not taken over.
    let code = unsafe { mpi::ffi::MPI_Comm_dup(raw, &mut dup) };
    if code != 0 {
        return Err(Error::invalid_argument(format!(
            "MPI_Comm_dup failed with {code} for comm = {comm}"
        )));
    }
    // SAFETY: `dup` is a live intra-communicator made above, owned by
    // nobody else, neither MPI_COMM_WORLD nor MPI_COMM_SELF; the
    // `SimpleCommunicator` frees it when dropped.
    Ok(unsafe { SimpleCommunicator::from_raw(dup) })
}

/// Makes a solver whose risk is spread over the ranks of the MPI
/// communicator `comm`, given as its Fortran handle (`MPI_Comm_c2f(comm)`,
/// e.g. `MPI_Comm_c2f(MPI_COMM_WORLD)`), so that this header does not depend
/// on the MPI implementation's C types. **Collective**: every rank of `comm`
/// calls it, with its own problem `p` holding its shard:
///
/// - a partitioned risk: this rank's parts, any number (also 0); the
///   global parts are the ranks' parts in rank order;
/// - a max-oracle: this rank's examples only, those of
///   `bmrm_mpi_examples_of` (contiguous example blocks, the ranks' blocks in
///   rank order); for BMRM_ALGORITHM_BCFW rank 0 holds every example (it
///   makes the block steps) and the others their blocks of the exact gap
///   passes, which are spread over the ranks.
///
/// Rank 0 keeps the cutting planes and solves the reduced problem with its
/// settings `*s` (the other ranks use only `num_threads`); every iteration
/// it sends w to every rank and gathers the risk and subgradient of every
/// part. The iterates are bit-identical to a single process's with the
/// same parts. `bmrm_solver_run` and `bmrm_solver_set_lambda` on the solver
/// made here are collective too; every rank's run ends with the same w, the
/// same `bmrm_info` and the same status and message (`bmrm_solver_history`
/// has rows on rank 0 only; `bmrm_solver_bcfw_path` is collective too and
/// returns the path on rank 0, an empty one elsewhere). A rank whose oracle fails ends the run on every
/// rank with BMRM_ERROR_ORACLE_FAILED naming the rank; a rank that does not
/// answer within `timeout_seconds` (0: 600 s; INFINITY: no limit) ends it
/// with BMRM_ERROR_RANK_LOST naming that rank: it cannot take part in MPI any
/// more, so end the job (exit with a non-zero status without MPI_Finalize,
/// or MPI_Abort). MPI must be initialised; MPI is called only from the
/// thread that calls these functions: use the solver on the thread that made
/// it (a call from another thread fails with BMRM_ERROR_INVALID_ARGUMENT
/// and makes no MPI call) and free it there, before MPI_Finalize.
/// Errors: those of `bmrm_solver_new`, BMRM_ERROR_NO_ORACLE for a full risk,
/// BMRM_ERROR_INVALID_ARGUMENT when the ranks' shards do not fit together
/// (the message names the rank and the examples it should hold).
///
/// # Safety
/// `p` is NULL or a live problem, `s` NULL or a readable `bmrm_settings`,
/// `out` NULL or valid for writing one pointer; MPI is initialised.
#[no_mangle]
pub unsafe extern "C" fn bmrm_solver_new_mpi(
    p: *const bmrm_problem,
    s: *const bmrm_settings,
    comm: i32,
    timeout_seconds: f64,
    out: *mut *mut bmrm_solver,
) -> bmrm_status {
    status("bmrm_solver_new_mpi", || {
        let comm = communicator(comm)?;
        // Everything that can fail on this rank is an error of the set-up,
        // which every rank then returns (no rank is left waiting).
        let mut progress = None;
        let local = (|| -> Result<(Shard, crate::solver::Settings)> {
            // SAFETY: forwarded from this function's contract.
            let problem = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
            non_null(s, "the settings s")?;
            non_null(out, "out")?;
            // SAFETY: `s` is not NULL and readable by the contract; every
            // bit pattern of its fields is valid (see bmrm_solver_new).
            let c_settings = unsafe { s.read() };
            let settings = engine_settings(&c_settings)?;
            if let Some(f) = c_settings.progress {
                progress = Some((f, c_settings.progress_user));
            }
            let shard = match problem.engine()? {
                Problem::Partitioned(r) => Shard::Parts(r),
                Problem::Examples(o) => Shard::Examples(o),
                Problem::Risk(_) => {
                    return Err(Error::no_oracle(
                        "a distributed solver needs a partitioned risk or a max-oracle, but \
                         the problem has a full risk",
                    ))
                }
            };
            Ok((shard, settings))
        })();
        let options = match timeout_seconds {
            0.0 => Ok(Options::default()),
            t if t == f64::INFINITY => Ok(Options {
                reply_timeout: None,
                command_timeout: None,
            }),
            t if t.is_finite() && t > 0.0 => Ok(Options {
                reply_timeout: Some(Duration::from_secs_f64(t)),
                command_timeout: None,
            }),
            t => Err(Error::invalid_argument(format!(
                "timeout_seconds must be positive, 0 or INFINITY, got {t}"
            ))),
        };
        let (local, options) = match options {
            Ok(o) => (local, o),
            Err(e) => (Err(e), Options::default()),
        };
        let (shard, settings) = match local {
            Ok((sh, st)) => (Ok(sh), st),
            Err(e) => (
                Err(e),
                crate::solver::Settings::new(crate::Algorithm::Bmrm, 1.0),
            ),
        };
        let mut node = distributed::join(&comm, shard, settings, options)?;
        if let (Some((f, user)), Some(solver)) = (progress, node.solver_mut()) {
            solver.set_observer(observer(f, user));
        }
        let handle = bmrm_solver::boxed(node.dim(), Held::Mpi(node));
        // SAFETY: `out` is not NULL (checked in the set-up, which failed
        // otherwise) and valid for writing by the contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// The examples rank `rank` of `num_ranks` must hold in its max-oracle for
/// `bmrm_solver_new_mpi` with settings `*s`, when the whole problem has
/// `num_examples` examples: examples `*first .. *first + *count` (global
/// numbers; its oracle's example j is example `*first + j`). P-BMRM and
/// Prox-P-BMRM split the examples into `num_parts` blocks (0: 16, or m when
/// smaller), the other algorithms into `num_parts` blocks if set, else one
/// per rank; rank r holds blocks `floor(r P / R) .. floor((r+1) P / R)`.
/// Not collective, needs no MPI. Out-parameters are written only on success.
///
/// # Safety
/// `s` is NULL or a readable `bmrm_settings`; `first` and `count` are NULL
/// or valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn bmrm_mpi_examples_of(
    num_examples: usize,
    s: *const bmrm_settings,
    num_ranks: usize,
    rank: usize,
    first: *mut usize,
    count: *mut usize,
) -> bmrm_status {
    status("bmrm_mpi_examples_of", || {
        non_null(s, "the settings s")?;
        non_null(first, "first")?;
        non_null(count, "count")?;
        // SAFETY: `s` is not NULL and readable by the contract.
        let c_settings = unsafe { s.read() };
        let algorithm = crate::Algorithm::from_i32(c_settings.algorithm).ok_or_else(|| {
            Error::invalid_argument(format!(
                "algorithm = {} is not a bmrm_algorithm",
                c_settings.algorithm
            ))
        })?;
        let mut settings = crate::solver::Settings::new(algorithm, 1.0);
        settings.num_parts = usize::try_from(c_settings.num_parts).unwrap_or(usize::MAX);
        if rank >= num_ranks {
            return Err(Error::invalid_argument(format!(
                "rank = {rank} but num_ranks = {num_ranks}"
            )));
        }
        let range = Layout::for_settings(&settings, num_examples, num_ranks)?.examples_of(rank);
        // SAFETY: not NULL and valid for writing by the contract.
        unsafe {
            first.write(range.start);
            count.write(range.len());
        }
        Ok(())
    })
}
