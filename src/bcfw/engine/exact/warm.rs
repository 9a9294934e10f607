//! Rows read ahead by a second thread. A pass of exact steps with draws
//! made before its steps knows which blocks it will step; with two threads
//! or more, a second thread reads those blocks' rows ([`ClassRows::warm`])
//! a few blocks ahead of the steps, and the steps find them in the cache
//! the cores share instead of memory. A step at lambda 1e-3 on
//! Fashion-MNIST otherwise waits on its row's 49 lines for about half its
//! time; the same steps from the stepping thread's own prefetches were
//! slower (they wait for its fill buffers), from another core they are not.
//!
//! The second thread only reads, so every result is the same with and
//! without it, for any number of threads.
//!
//! Whether it helps depends on where the two threads run: on two cores
//! that share a last-level cache the steps at lambda 1e-3 took 2.4-2.5 s;
//! on a host whose two virtual CPUs land on cores that do not (runs
//! alternated between the two on the same machine), 3.9-4.3 s, where the
//! steps alone with their own prefetch of the next row took 2.8-2.9 s.
//! [`WarmChoice`] times both and keeps the faster per step.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::oracle::ClassRows;

/// Blocks ahead of the steps whose rows may be read: far enough that a row
/// is read before its step, near enough that it is still cached then.
/// Measured at lambda 1e-3 (all 60,000 Fashion-MNIST images, 2 threads,
/// three runs each): 4, 16 and 64 alike (5.0-5.3 s), 256 slower (5.4-5.7
/// s), against 5.7-6.0 s without the second thread.
const AHEAD: usize = 16;

/// How far the steps are: the number of `live` blocks they have reached.
pub(super) struct Progress(AtomicUsize);

impl Progress {
    /// The steps have reached `count` blocks of the pass's `live` ones.
    pub(super) fn reached(&self, count: usize) {
        self.0.store(count, Ordering::Relaxed);
    }
}

/// Sets the flag when dropped: the reading thread stops, also when the
/// steps end with an error or a panic.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `steps` on this thread while another thread of `pool` reads the
/// rows of `live` (the blocks the steps will visit, in order) ahead of
/// them; `steps` reports its progress through the [`Progress`] it is
/// given. Without `rows`, with one thread or no `live` blocks, just runs
/// `steps`.
pub(super) fn with_rows_ahead<R>(
    pool: &rayon::ThreadPool,
    rows: Option<&dyn ClassRows>,
    live: &[usize],
    steps: impl FnOnce(&Progress) -> R,
) -> R {
    let progress = Progress(AtomicUsize::new(0));
    let rows = match rows {
        Some(rows) if pool.current_num_threads() > 1 && !live.is_empty() => rows,
        _ => return steps(&progress),
    };
    let done = AtomicBool::new(false);
    pool.in_place_scope(|scope| {
        let (progress, done) = (&progress, &done);
        scope.spawn(move |_| read_ahead(rows, live, &progress.0, done));
        let _done = Done(done);
        steps(progress)
    })
}

/// Reads the rows of `live` in order, at most [`AHEAD`] blocks ahead of
/// the `reached` ones, until all are read, `done` is set, or the rows have
/// nothing to read.
fn read_ahead(rows: &dyn ClassRows, live: &[usize], reached: &AtomicUsize, done: &AtomicBool) {
    let mut sum = 0.0;
    for (j, &i) in live.iter().enumerate() {
        let mut spins = 0u32;
        while j >= reached.load(Ordering::Relaxed) + AHEAD {
            if done.load(Ordering::Relaxed) {
                std::hint::black_box(sum);
                return;
            }
            // Spins while the steps catch up; yields on a long wait (a
            // busy host, a slow step).
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if done.load(Ordering::Relaxed) {
            break;
        }
        match rows.warm(i) {
            Some(x) => sum += x,
            None => break,
        }
    }
    std::hint::black_box(sum);
}

/// Passes between two tries of the way not in use (the placement of the
/// threads may change during a run).
const RETRY_EVERY: u64 = 8;

/// Chooses, pass by pass, between the second thread reading rows ahead
/// and the steps prefetching their next row themselves, by the time per
/// step each took when last used. Only timing depends on the choice.
#[derive(Default)]
pub(crate) struct WarmChoice {
    /// Seconds per step of the last pass with the second thread, without.
    per_step: [Option<f64>; 2],
    passes: u64,
}

impl WarmChoice {
    /// Whether this pass reads rows from the second thread: each way once
    /// first, then the faster, the other every [`RETRY_EVERY`] passes.
    pub(super) fn pick(&mut self) -> bool {
        self.passes += 1;
        match self.per_step {
            [None, _] => true,
            [_, None] => false,
            [Some(with), Some(without)] => {
                let faster = with <= without;
                if self.passes.is_multiple_of(RETRY_EVERY) {
                    !faster
                } else {
                    faster
                }
            }
        }
    }

    /// A pass made `steps` steps in `elapsed`, with the second thread or not.
    pub(super) fn record(&mut self, warm: bool, elapsed: Duration, steps: u64) {
        if steps > 0 {
            self.per_step[usize::from(!warm)] = Some(elapsed.as_secs_f64() / steps as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_choice_tries_both_then_keeps_the_faster_and_retries_the_other() {
        let ms = Duration::from_millis;
        let mut c = WarmChoice::default();
        assert!(c.pick(), "the second thread first");
        c.record(true, ms(30), 10);
        assert!(!c.pick(), "then without it");
        c.record(false, ms(20), 10);
        // Without is faster per step: kept, but for every 8th pass.
        let picks: Vec<bool> = (3..=16).map(|_| c.pick()).collect();
        for (pass, &warm) in (3..=16u64).zip(&picks) {
            assert_eq!(warm, pass % RETRY_EVERY == 0, "pass {pass}");
        }
        // A pass without steps says nothing; a faster retry switches.
        c.record(false, ms(5), 0);
        c.record(true, ms(10), 10);
        assert!(c.pick());
    }
}
