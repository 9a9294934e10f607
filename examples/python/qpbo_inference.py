"""QPBO ('qpbo') beside the other engines on grids with arbitrary tables.

Decodes random energies on 4-connected grids (random unary scores, one
random table per edge, so binary tables are often not submodular and
multi-state tables not metric) with each engine through
``bmrm._bmrm.decode_potentials``, and prints per engine: the mean and the
largest shortfall from the exact optimum (AD3 with branch and bound, checked
to say exact), relative to the optimum's magnitude, how often it reaches the
optimum, how often it says it is exact (an answer that says so but is not
optimal stops the script), and the CPU seconds, with the ratio to
alpha-expansion's.

Usage::

    python examples/python/qpbo_inference.py [--grids 50] [--size 6] [--coupling 1.0]
"""

import argparse
import time

import numpy as np

from bmrm._bmrm import decode_potentials
from bmrm.inference import compute_energy
from bmrm.utils import make_grid_edges

ENGINES = ["qpbo", "alpha-expansion", "loopy-max-product", "ad3", "ad3-branch-and-bound"]


def problems(n, size, k, coupling, seed):
    rng = np.random.RandomState(seed)
    edges = make_grid_edges(np.zeros((size, size, k)))
    for _ in range(n):
        unary = rng.randn(size * size, k)
        pairwise = coupling * rng.randn(len(edges), k, k)
        yield unary, pairwise, edges


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grids", type=int, default=50)
    parser.add_argument("--size", type=int, default=6)
    parser.add_argument("--coupling", type=float, default=1.0)
    args = parser.parse_args()
    for k in (2, 3, 4):
        rows = {e: {"energy": [], "optimal": 0, "exact": 0, "seconds": 0.0} for e in ENGINES}
        for unary, pairwise, edges in problems(args.grids, args.size, k, args.coupling, k):
            found = {}
            for engine in ENGINES:
                t = time.process_time()
                y, exact = decode_potentials(unary.ravel(), pairwise.ravel(), edges.ravel(),
                                             len(unary), k, engine)
                rows[engine]["seconds"] += time.process_time() - t
                found[engine] = (compute_energy(unary, pairwise, edges, np.array(y)), exact)
            best, proven = found["ad3-branch-and-bound"]
            assert proven, "branch and bound ran out of branches"
            for engine, (energy, exact) in found.items():
                r = rows[engine]
                optimal = energy >= best - 1e-9 * abs(best)
                if exact and not optimal:
                    raise SystemExit(f"{engine} says exact at {energy}, optimum {best}")
                r["energy"].append((best - energy) / abs(best))
                r["optimal"] += optimal
                r["exact"] += exact
        print(f"{k} states, {args.grids} grids of {args.size}x{args.size}, "
              f"coupling {args.coupling}:")
        base = rows["alpha-expansion"]["seconds"]
        for engine, r in rows.items():
            print(f"  {engine:22s} shortfall mean {np.mean(r['energy']):.4f} max "
                  f"{np.max(r['energy']):.4f}  optimal {r['optimal']:3d}/{args.grids}  "
                  f"says exact {r['exact']:3d}/{args.grids}  {r['seconds']:.3f} s "
                  f"({r['seconds'] / base:.2f}x alpha-expansion)")


if __name__ == "__main__":
    main()
