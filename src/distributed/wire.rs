//! The wire: the messages between rank 0 and the other ranks, their
//! encoding, and point-to-point MPI calls with deadlines on the
//! distributed solver's own (duplicated) communicator.
//!
//! MPI has no timeout on a blocking receive or a collective, so every wait
//! here is a loop of non-blocking matched probes (`MPI_Improbe`) with a
//! deadline, sleeping a little between polls (a waiting rank leaves the CPU
//! to the ranks that compute, which matters when ranks share cores). A
//! message is received only once it has been probed, so nothing is left
//! pending when a wait gives up.
//!
//! Rank 0 sends only to ranks that answered its previous message and are
//! therefore waiting in their own probe loop, so its (blocking) sends
//! complete; a rank that hangs inside its oracle is found by the deadline of
//! the wait for its answer.
//!
//! Every message is a vector of `f64` (`TAG_CMD` from rank 0, `TAG_DATA` to
//! rank 0; integers are sent as `f64`, exact below 2^53) or an error
//! (`TAG_ERROR`, bytes: the status code, then the UTF-8 message).
//!
//! | message | numbers |
//! |---|---|
//! | set-up report, rank r to 0 | `[kind, dim, count]` |
//! | set-up verdict, 0 to r | `[CMD_SETUP, 0, examples, parts, first part, parts of r]` |
//! | evaluate parts | `[CMD_EVAL_PARTS, seq, w...]`, answer `[seq, risks..., subgradients...]` |
//! | pass over examples | `[CMD_EVAL_EXAMPLES, seq, keep_psi, w...]`, answer [`encode_items`] |
//! | end of a call | `[CMD_END, seq, ok, info (INFO_LEN)..., w...]`, then the error if not ok |

use std::time::{Duration, Instant};

use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, Rank, SimpleCommunicator};
use mpi::Tag;

use crate::error::{Error, ErrorKind, Result};
use crate::oracle::{PassItem, SparseVec};
use crate::solver::{Exit, Info};

/// Commands from rank 0: `[kind, seq, payload...]`.
pub const TAG_CMD: Tag = 0x6d01;
/// Answers to rank 0: `[seq, payload...]`.
pub const TAG_DATA: Tag = 0x6d02;
/// An error, in either direction: `[status code, UTF-8 message...]`.
pub const TAG_ERROR: Tag = 0x6d03;

/// Command kind (the first entry of a `TAG_CMD` message): rank 0's verdict
/// on the set-up and the rank's place in the plan.
pub const CMD_SETUP: f64 = 1.0;
/// Command kind: evaluate your parts at `w`.
pub const CMD_EVAL_PARTS: f64 = 2.0;
/// Command kind: the collective call ended (its outcome, info and `w`).
pub const CMD_END: f64 = 3.0;
/// Command kind: answer for your examples at `w` (BCFW's passes).
pub const CMD_EVAL_EXAMPLES: f64 = 4.0;

/// What a rank reports about its shard in the set-up (`[kind, dim, count]`):
/// parts of a partitioned risk.
pub const KIND_PARTS: f64 = 1.0;
/// Set-up report kind: examples of a max-oracle.
pub const KIND_EXAMPLES: f64 = 2.0;

/// A message received: numbers or an error.
pub enum Message {
    /// A `TAG_CMD` or `TAG_DATA` message.
    Numbers(Vec<f64>),
    /// A `TAG_ERROR` message (or one with an unknown tag).
    Failed(Error),
}

/// Sleeps between polls: a few yields first (a fast answer is taken at
/// once), then sleeps growing to half a millisecond.
struct Backoff(u32);

impl Backoff {
    fn pause(&mut self) {
        if self.0 < 32 {
            std::thread::yield_now();
        } else {
            let micros = (5u64 << ((self.0 - 32) / 8).min(7)).min(500);
            std::thread::sleep(Duration::from_micros(micros));
        }
        self.0 = self.0.saturating_add(1);
    }
}

/// The deadline `timeout` from now (`None`: none).
pub fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Receives the message `from` has ready, if it has one.
fn try_receive(comm: &SimpleCommunicator, from: Rank) -> Option<Message> {
    let (msg, status) = comm.process_at_rank(from).immediate_matched_probe()?;
    if status.tag() == TAG_ERROR {
        let n = status.count(u8::equivalent_datatype()).max(0) as usize;
        let mut bytes = vec![0u8; n];
        msg.matched_receive_into(&mut bytes[..]);
        Some(Message::Failed(decode_error(&bytes)))
    } else {
        let n = status.count(f64::equivalent_datatype()).max(0) as usize;
        let mut data = vec![0.0f64; n];
        msg.matched_receive_into(&mut data[..]);
        if status.tag() == TAG_CMD || status.tag() == TAG_DATA {
            Some(Message::Numbers(data))
        } else {
            Some(Message::Failed(Error::internal(format!(
                "unexpected message tag {} from rank {from}",
                status.tag()
            ))))
        }
    }
}

/// Waits for one message from `from`, until `deadline`; `None` when none
/// came in time.
pub fn receive(
    comm: &SimpleCommunicator,
    from: Rank,
    deadline: Option<Instant>,
) -> Option<Message> {
    let mut backoff = Backoff(0);
    loop {
        if let Some(m) = try_receive(comm, from) {
            return Some(m);
        }
        if past(deadline) {
            return None;
        }
        backoff.pause();
    }
}

/// Waits for one message from each of `ranks`, until `deadline`. Returns
/// the messages in the order of `ranks` (`None` for a rank that did not
/// answer in time).
pub fn gather(
    comm: &SimpleCommunicator,
    ranks: &[Rank],
    deadline: Option<Instant>,
) -> Vec<Option<Message>> {
    let mut got: Vec<Option<Message>> = ranks.iter().map(|_| None).collect();
    let mut pending = ranks.len();
    let mut backoff = Backoff(0);
    while pending > 0 {
        let mut progress = false;
        for (k, &r) in ranks.iter().enumerate() {
            if got[k].is_none() {
                if let Some(m) = try_receive(comm, r) {
                    got[k] = Some(m);
                    pending -= 1;
                    progress = true;
                }
            }
        }
        if pending == 0 || past(deadline) {
            break;
        }
        if progress {
            backoff = Backoff(0);
        } else {
            backoff.pause();
        }
    }
    got
}

/// Sends numbers (blocking; see the module's doc for why it completes).
pub fn send(comm: &SimpleCommunicator, to: Rank, tag: Tag, data: &[f64]) {
    comm.process_at_rank(to).send_with_tag(data, tag);
}

/// Sends an error.
pub fn send_error(comm: &SimpleCommunicator, to: Rank, e: &Error) {
    let bytes = encode_error(e);
    comm.process_at_rank(to)
        .send_with_tag(&bytes[..], TAG_ERROR);
}

/// An error as bytes: its status code (the crate's one table,
/// [`Error::status_code`]), then its UTF-8 message.
fn encode_error(e: &Error) -> Vec<u8> {
    let code = u8::try_from(e.status_code()).unwrap_or(u8::MAX);
    let mut bytes = vec![code];
    bytes.extend_from_slice(e.message().as_bytes());
    bytes
}

/// The inverse of [`encode_error`].
fn decode_error(bytes: &[u8]) -> Error {
    match bytes.split_first() {
        Some((&code, text)) => {
            let kind = ErrorKind::from_code(i32::from(code)).unwrap_or(ErrorKind::Internal);
            Error::new(kind, String::from_utf8_lossy(text))
        }
        None => Error::internal("an empty error message"),
    }
}

/// Number of entries of an encoded [`Info`].
pub const INFO_LEN: usize = 13;

/// `info` as numbers (counts below 2^53 are exact).
pub fn encode_info(info: &Info) -> [f64; INFO_LEN] {
    [
        info.exit as i32 as f64,
        info.iterations as f64,
        info.oracle_calls as f64,
        info.primal,
        info.lower_bound,
        info.gap,
        info.risk,
        info.num_planes as f64,
        info.active_planes as f64,
        info.elapsed_seconds,
        info.oracle_seconds,
        info.qp_seconds,
        f64::from(u8::from(info.certified)),
    ]
}

/// The inverse of [`encode_info`].
pub fn decode_info(v: &[f64]) -> Info {
    Info {
        exit: match v[0] as i32 {
            1 => Exit::ConvergedRel,
            2 => Exit::ConvergedAbs,
            3 => Exit::MaxIterations,
            4 => Exit::TimeLimit,
            5 => Exit::StoppedByUser,
            _ => Exit::NotRun,
        },
        iterations: v[1] as u64,
        oracle_calls: v[2] as u64,
        primal: v[3],
        lower_bound: v[4],
        gap: v[5],
        risk: v[6],
        num_planes: v[7] as u64,
        active_planes: v[8] as u64,
        elapsed_seconds: v[9],
        oracle_seconds: v[10],
        qp_seconds: v[11],
        certified: v[12] != 0.0,
    }
}

/// "rank 2" or "ranks 2, 3".
pub fn name_ranks(ranks: &[Rank]) -> String {
    let list: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
    if ranks.len() == 1 {
        format!("rank {}", list[0])
    } else {
        format!("ranks {}", list.join(", "))
    }
}

/// "600 s" or "forever".
pub fn seconds(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!("{} s", d.as_secs_f64()),
        None => "forever".into(),
    }
}

/// A rank's answers of a pass as numbers: `[seq, count, per example: hinge,
/// loss, label bits, exact (1 or 0), and with psi: nnz, indices, values]`.
pub fn encode_items(seq: f64, items: &[PassItem], keep_psi: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(2 + 4 * items.len());
    out.extend_from_slice(&[seq, items.len() as f64]);
    for it in items {
        out.extend_from_slice(&[
            it.hinge,
            it.loss,
            f64::from_bits(it.label),
            f64::from(u8::from(it.exact)),
        ]);
        if keep_psi {
            let p = it.psi.as_ref();
            out.push(p.map_or(0, |p| p.idx.len()) as f64);
            if let Some(p) = p {
                out.extend(p.idx.iter().map(|&j| f64::from(j)));
                out.extend_from_slice(&p.val);
            }
        }
    }
    out
}

/// The inverse of [`encode_items`], checking the sequence and the count.
pub fn decode_items(v: &[f64], seq: u64, n: usize, keep_psi: bool) -> Result<Vec<PassItem>> {
    let bad = |what: &str| Error::internal(format!("a malformed pass answer: {what}"));
    if v.len() < 2 || v[0] != seq as f64 || v[1] as usize != n {
        return Err(bad("sequence or count"));
    }
    let mut items = Vec::with_capacity(n);
    let mut k = 2;
    for _ in 0..n {
        let head = v.get(k..k + 4).ok_or_else(|| bad("short"))?;
        let (hinge, loss, label, exact) = (head[0], head[1], head[2].to_bits(), head[3] != 0.0);
        k += 4;
        let psi = if keep_psi {
            let nnz = *v.get(k).ok_or_else(|| bad("short"))? as usize;
            let idx = v.get(k + 1..k + 1 + nnz).ok_or_else(|| bad("short"))?;
            let val = v
                .get(k + 1 + nnz..k + 1 + 2 * nnz)
                .ok_or_else(|| bad("short"))?;
            k += 1 + 2 * nnz;
            Some(SparseVec {
                idx: idx.iter().map(|&j| j as u32).collect(),
                val: val.to_vec(),
            })
        } else {
            None
        };
        items.push(PassItem {
            hinge,
            exact,
            loss,
            label,
            psi,
        });
    }
    if k != v.len() {
        return Err(bad("trailing numbers"));
    }
    Ok(items)
}
