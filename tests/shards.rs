//! The engine hooks the distributed solvers (feature `mpi`) are built on,
//! checked without MPI:
//! - `ExampleParts::shard`: a range of the parts of a split, over an oracle
//!   holding only their examples, gives each part the same bits as the whole;
//! - `PartitionedRisk::eval_all`: a risk that evaluates all its parts at
//!   once is asked to, and the solvers' results are the same bits;
//! - `MaxOracle::eval_pass`: BCFW's exact passes go through it, with the
//!   same bits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bmrm::models::{synthetic, Multiclass};
use bmrm::oracle::{Corner, ExampleParts, MaxOracle, PartValues, PartitionedRisk};
use bmrm::{Algorithm, Problem, Settings, Solver};
use bmrm::{PassItem, SparseVec};

fn model() -> Arc<Multiclass> {
    let (x, y) = synthetic::gaussian_multiclass(300, 6, 3, 2.0, 3);
    Arc::new(Multiclass::new(x, 6, y, 3, true).unwrap())
}

/// Examples `range` of a max-oracle.
struct Range {
    all: Arc<Multiclass>,
    range: std::ops::Range<usize>,
}

impl MaxOracle for Range {
    fn dim(&self) -> usize {
        self.all.dim()
    }
    fn num_examples(&self) -> usize {
        self.range.len()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.all.max_oracle(self.range.start + i, w, out)
    }
    // Forwarded, as a wrapper must for the bits of the whole: the block
    // methods' hinges are the corners' up to rounding only.
    fn max_oracle_block(
        &self,
        first: usize,
        w: &[f64],
        out: &mut [Corner],
    ) -> Option<bmrm::Result<()>> {
        self.all.max_oracle_block(self.range.start + first, w, out)
    }
    fn block_risk(
        &self,
        first: usize,
        n: usize,
        w: &[f64],
        grad: &mut [f64],
    ) -> Option<bmrm::Result<f64>> {
        self.all.block_risk(self.range.start + first, n, w, grad)
    }
}

#[test]
fn a_shard_gives_each_part_the_bits_of_the_whole() {
    let all = model();
    let whole = ExampleParts::new(all.clone(), 7);
    let w: Vec<f64> = (0..all.dim()).map(|j| (j as f64 * 0.37).sin()).collect();
    for parts in [0..2, 2..5, 5..7, 3..3] {
        let first = whole.block(parts.start).start;
        let last = if parts.is_empty() {
            first
        } else {
            whole.block(parts.end - 1).end
        };
        let oracle = Range {
            all: all.clone(),
            range: first..last,
        };
        let shard = ExampleParts::shard(Arc::new(oracle), 300, 7, parts.clone()).unwrap();
        assert_eq!(shard.num_parts(), parts.len());
        for k in 0..parts.len() {
            let (mut g1, mut g2) = (vec![0.0; all.dim()], vec![0.0; all.dim()]);
            let r1 = whole.partial_risk(parts.start + k, &w, &mut g1).unwrap();
            let r2 = shard.partial_risk(k, &w, &mut g2).unwrap();
            assert_eq!(r1.to_bits(), r2.to_bits());
            assert!(g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
    // An oracle with the wrong examples is refused, naming the range.
    let wrong = Range {
        all: all.clone(),
        range: 0..10,
    };
    let e = ExampleParts::shard(Arc::new(wrong), 300, 7, 0..2)
        .err()
        .unwrap();
    assert!(e.to_string().contains("examples 0..85"), "{e}");
}

/// A partitioned risk that evaluates all its parts in one call.
struct AllAtOnce {
    inner: ExampleParts,
    calls: AtomicUsize,
}

impl PartitionedRisk for AllAtOnce {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn num_parts(&self) -> usize {
        self.inner.num_parts()
    }
    fn partial_risk(&self, _p: usize, _w: &[f64], _g: &mut [f64]) -> bmrm::Result<f64> {
        Err(bmrm::Error::internal("only all at once"))
    }
    fn eval_all(&self, w: &[f64]) -> Option<bmrm::Result<PartValues>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut risks = vec![];
        let mut grads = vec![];
        for p in 0..self.inner.num_parts() {
            let mut g = vec![0.0; w.len()];
            match self.inner.partial_risk(p, w, &mut g) {
                Ok(r) => risks.push(r),
                Err(e) => return Some(Err(e)),
            }
            grads.push(bmrm::oracle::Subgradient::Dense(g));
        }
        Some(Ok((risks, grads)))
    }
}

#[test]
fn eval_all_replaces_the_part_by_part_evaluation() {
    let all = model();
    for alg in [Algorithm::Bmrm, Algorithm::ProxPBmrm] {
        let mut s = Settings::new(alg, 1e-2);
        s.tol_rel = 1e-4;
        let mut plain = Solver::new(
            Problem::from_partitioned(ExampleParts::new(all.clone(), 5)),
            s.clone(),
        )
        .unwrap();
        let risk = Arc::new(AllAtOnce {
            inner: ExampleParts::new(all.clone(), 5),
            calls: AtomicUsize::new(0),
        });
        let mut hooked = Solver::new(Problem::Partitioned(risk.clone()), s).unwrap();
        let (mut w1, mut w2) = (vec![0.0; all.dim()], vec![0.0; all.dim()]);
        let i1 = plain.run(&mut w1).unwrap();
        let i2 = hooked.run(&mut w2).unwrap();
        assert_eq!(i1.iterations, i2.iterations);
        assert_eq!(i1.primal.to_bits(), i2.primal.to_bits());
        assert!(w1.iter().zip(&w2).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(risk.calls.load(Ordering::SeqCst) as u64, i2.iterations + 1);
    }
}

/// A max-oracle whose passes are made in one call (as the distributed one).
struct PassAtOnce {
    all: Arc<Multiclass>,
    passes: AtomicUsize,
}

impl MaxOracle for PassAtOnce {
    fn dim(&self) -> usize {
        self.all.dim()
    }
    fn num_examples(&self) -> usize {
        self.all.num_examples()
    }
    fn max_oracle(&self, i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        self.all.max_oracle(i, w, out)
    }
    // A wrapper forwards the class-factored corners (BCFW's steps then are
    // the wrapped model's, bit for bit).
    fn factoring(&self) -> bmrm::oracle::Factoring {
        self.all.factoring()
    }
    fn eval_pass(&self, w: &[f64], keep_psi: bool) -> Option<bmrm::Result<Vec<PassItem>>> {
        self.passes.fetch_add(1, Ordering::SeqCst);
        let mut corner = Corner::new(self.dim());
        let mut scratch = bmrm::CornerScratch::default();
        let mut items = vec![];
        for i in 0..self.num_examples() {
            corner.clear();
            if let Err(e) = self.all.max_oracle(i, w, &mut corner) {
                return Some(Err(e));
            }
            items.push(PassItem {
                hinge: corner.hinge(w),
                exact: corner.is_exact(),
                loss: corner.loss(),
                label: corner.label(),
                psi: keep_psi.then(|| SparseVec::from_corner(&corner, &mut scratch)),
            });
        }
        Some(Ok(items))
    }
}

#[test]
fn bcfw_passes_go_through_eval_pass() {
    let all = model();
    let mut s = Settings::new(Algorithm::Bcfw, 1e-2);
    s.tol_rel = 1e-3;
    s.gap_check = 2;
    s.num_threads = 1;
    let mut plain = Solver::new(Problem::Examples(all.clone()), s.clone()).unwrap();
    let oracle = Arc::new(PassAtOnce {
        all: all.clone(),
        passes: AtomicUsize::new(0),
    });
    let mut hooked = Solver::new(Problem::Examples(oracle.clone()), s).unwrap();
    let (mut w1, mut w2) = (vec![0.0; all.dim()], vec![0.0; all.dim()]);
    let i1 = plain.run(&mut w1).unwrap();
    let i2 = hooked.run(&mut w2).unwrap();
    assert_eq!(i1.iterations, i2.iterations);
    assert!(w1.iter().zip(&w2).all(|(a, b)| a.to_bits() == b.to_bits()));
    assert!(oracle.passes.load(Ordering::SeqCst) > 0);
    let p1 = plain.bcfw_mut().unwrap().path(0.05, 1e-3, 3).unwrap();
    let p2 = hooked.bcfw_mut().unwrap().path(0.05, 1e-3, 3).unwrap();
    assert_eq!(p1.len(), p2.len());
    for (a, b) in p1.iter().zip(&p2) {
        assert_eq!(a.lambda.to_bits(), b.lambda.to_bits());
        assert!(a
            .w
            .iter()
            .zip(&b.w)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}
