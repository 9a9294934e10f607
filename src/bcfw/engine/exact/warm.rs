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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
