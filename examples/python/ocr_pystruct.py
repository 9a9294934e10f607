"""pystruct's OneSlackSSVM and FrankWolfeSSVM on the OCR words beside bmrm's,
in one run, on one objective scale.

Needs pystruct 0.3.2 importable next to bmrm (see docs/python.md for how it
was built on Python 3.11). Training words: fold 1 (pystruct's plot_letters),
C = 0.1. Every fit runs in a child process with a wall-time limit.

Two problems:

- pystruct's ChainCRF: unary ``n_states x n_features`` and a directed
  ``n_states x n_states`` transition table, unnormalised Hamming loss.
  bmrm's ``ChainCRF`` is the same problem (the Rust graph model on the
  chain's edges, tree max-sum).
- bmrm's native chain, ``ChainCRF(start_end=True, normalized_loss=True)``:
  start and end weights, Hamming loss divided by
  the word length (another problem; its rows are not comparable with
  pystruct's objective, only with each other).

For each returned ``w`` the script computes the true objective
``|w|^2/2 + C sum_i hinge_i`` with its own numpy Viterbi (independent of both
libraries). Tolerances: pystruct's OneSlackSSVM stops when the newest
constraint's violation exceeds the working set's slack by less than ``tol``,
in units of the mean loss, i.e. at a gap of ``tol * C * n`` of its
objective (uncertified); bmrm's ``tol`` is a certified gap of that
objective, so ``tol = 1e-3 * C * n`` is pystruct's default stop and
``tol = 1e-3`` is bmrm's (C * n times tighter).

Usage::

    python examples/python/ocr_pystruct.py --ocr /work/shared/data/ocr_letters.tsv.gz
        [--limit 1200] [--only NAME ...]
"""

import argparse
import multiprocessing as mp
import os
import queue
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmark import read_ocr  # noqa: E402

K = 26
PYSTRUCT_TOL = 1e-3  # pystruct's OneSlackSSVM default


def objective(w, X, Y, C, ends, normalised):
    """``|w|^2/2 + C sum_i max_y [loss_i(y) + <w, phi(x_i, y) - phi(x_i, y_i)>]``
    by exact Viterbi. Layout: unary ``K x d`` (label-major), transitions
    ``K x K`` [previous, next], then (``ends``) K start and K end weights."""
    d = X[0].shape[1]
    emit = w[:K * d].reshape(K, d)
    trans = w[K * d:K * d + K * K].reshape(K, K)
    start = w[K * d + K * K:K * d + K * K + K] if ends else np.zeros(K)
    end = w[K * d + K * K + K:K * d + K * K + 2 * K] if ends else np.zeros(K)
    hinge = 0.0
    for x, y in zip(X, Y):
        n = len(y)
        s = x @ emit.T
        truth = s[np.arange(n), y].sum() + trans[y[:-1], y[1:]].sum() + start[y[0]] + end[y[-1]]
        a = s + (1.0 / n if normalised else 1.0)
        a[np.arange(n), y] -= 1.0 / n if normalised else 1.0
        best = a[0] + start
        for t in range(1, n):
            best = (best[:, None] + trans).max(axis=0) + a[t]
        hinge += max((best + end).max() - truth, 0.0)
    return 0.5 * float(w @ w) + C * hinge


def fit(name, path, C, out):
    X, Y = read_ocr(path, folds={1})
    n = len(X)
    if name.startswith("pystruct"):
        from pystruct.learners import FrankWolfeSSVM as PFW
        from pystruct.learners import OneSlackSSVM as POS
        from pystruct.models import ChainCRF as PChain
        est = (POS(PChain(), C=C) if "OneSlack" in name
               else PFW(PChain(), C=C, max_iter=11))
        data = X
    else:
        from bmrm.learners import FrankWolfeSSVM, OneSlackSSVM
        from bmrm.models import ChainCRF
        native = "StartEnd" in name
        model = (ChainCRF(n_states=K, start_end=True, normalized_loss=True) if native
                 else ChainCRF(n_states=K))
        data = X
        if "FrankWolfe" in name:
            est = FrankWolfeSSVM(model, C=C, max_iter=11)
        else:
            tol = PYSTRUCT_TOL * C * n if "pystruct's stop" in name else 1e-3
            est = OneSlackSSVM(model, C=C, tol=tol, max_iter=100000)
    wall, cpu = time.time(), time.process_time()
    est.fit(data, Y)
    wall, cpu = time.time() - wall, time.process_time() - cpu
    if name.startswith("pystruct"):
        iters = len(est.objective_curve_) if "OneSlack" in name else est.max_iter
        reported = (est.primal_objective_curve_[-1], est.objective_curve_[-1])
    else:
        iters = est.info_.iterations
        scale = C * n
        reported = (est.info_.primal * scale, est.info_.lower_bound * scale)
    out.put((iters, wall, cpu, np.asarray(est.w, dtype=np.float64), reported))


RUNS = [
    # (name, problem): "pystruct" = pystruct's ChainCRF problem
    ("pystruct OneSlackSSVM defaults (tol 1e-3)", "pystruct"),
    ("bmrm OneSlackSSVM ChainCRF, pystruct's stop", "pystruct"),
    ("bmrm OneSlackSSVM ChainCRF, tol 1e-3", "pystruct"),
    ("pystruct FrankWolfeSSVM max_iter=11 (plot_letters)", "pystruct"),
    ("bmrm FrankWolfeSSVM ChainCRF max_iter=11", "pystruct"),
    ("bmrm OneSlackSSVM StartEndChainCRF, pystruct's stop", "native"),
    ("bmrm OneSlackSSVM StartEndChainCRF, tol 1e-3", "native"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ocr", required=True)
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--limit", type=float, default=1200.0, help="wall seconds per fit")
    ap.add_argument("--only", nargs="*", help="run only the rows whose name contains one of these")
    args = ap.parse_args()
    rows = [(name, problem) for name, problem in RUNS
            if not args.only or any(s in name for s in args.only)]
    if any(name.startswith("pystruct") for name, _ in rows):
        try:
            import pystruct  # noqa: F401
        except ImportError:
            sys.exit("ocr_pystruct.py: pystruct is not importable here (docs/python.md says "
                     "how it was built); --only bmrm runs bmrm's rows alone")
    X, Y = read_ocr(args.ocr, folds={1})
    n, C = len(X), args.C
    print(f"OCR fold 1: {n} words, {sum(len(y) for y in Y)} letters, C={C}; "
          f"pystruct's stop = certified gap {PYSTRUCT_TOL * C * n:.4g} for bmrm")
    print(f"{'run':52s} {'iter':>6s} {'wall s':>8s} {'CPU s':>8s} {'objective':>12s} "
          f"{'reported primal, lower':>24s}")
    results = {}
    for name, problem in rows:
        out = mp.Queue()
        proc = mp.Process(target=fit, args=(name, args.ocr, C, out))
        proc.start()
        res, deadline = None, time.time() + args.limit
        while res is None and time.time() < deadline:
            try:
                res = out.get(timeout=1.0)
            except queue.Empty:
                if not proc.is_alive() and out.empty():
                    break  # the child failed (its traceback is on stderr)
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
            proc.join()
        if res is None:
            print(f"{name:52s} not finished in {args.limit:g} s (stopped) or failed")
            continue
        iters, wall, cpu, w, rep = res
        obj = objective(w, X, Y, C, ends=problem == "native", normalised=problem == "native")
        results[name] = (wall, cpu, obj)
        print(f"{name:52s} {iters:6d} {wall:8.2f} {cpu:8.2f} {obj:12.6f} "
              f"{rep[0]:11.5g}, {rep[1]:11.5g}", flush=True)
    one_slack = "pystruct OneSlackSSVM defaults (tol 1e-3)"
    pairs = [(one_slack, "bmrm OneSlackSSVM ChainCRF, pystruct's stop"),
             (one_slack, "bmrm OneSlackSSVM ChainCRF, tol 1e-3"),
             ("pystruct FrankWolfeSSVM max_iter=11 (plot_letters)",
              "bmrm FrankWolfeSSVM ChainCRF max_iter=11")]
    for a, b in pairs:
        if a in results and b in results:
            ra, rb = results[a], results[b]
            print(f"ratio pystruct/bmrm: wall {ra[0] / rb[0]:6.1f}, CPU {ra[1] / rb[1]:6.1f}, "
                  f"objective difference {ra[2] - rb[2]:+.3g}  ({b})")


if __name__ == "__main__":
    main()
