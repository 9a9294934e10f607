"""GraphModel.positivity_coordinates: the Potts weights, which kept >= 0 make
every pairwise term submodular, so graph cut stays exact on every iterate
and agrees with exhaustive search."""

import numpy as np
import pytest

import bmrm


def potts_problem(engine, n=8, d=3, f=2, seed=4):
    """Binary 2 x 3 grids, d node features, f non-negative Potts features."""
    rng = np.random.RandomState(seed)
    nodes, edges = 6, [0, 1, 1, 2, 3, 4, 4, 5, 0, 3, 1, 4, 2, 5]
    labels = rng.randint(2, size=n * nodes)
    x = np.round((rng.randn(n * nodes, d) + labels[:, None]) * 64) / 64
    e = len(edges) // 2
    return bmrm.GraphModel(
        [nodes] * n, [2] * (n * nodes), labels, x, [e] * n, edges * n,
        edge_features=np.round(rng.rand(n * e, f) * 64) / 64, potts=True, engine=engine)


def test_positivity_coordinates_are_the_potts_weights():
    d, f = 3, 2
    model = potts_problem("graph-cut", d=d, f=f)
    assert model.dim == 2 * d + f
    coords = model.positivity_coordinates()
    # bmrm's layout: the 2 x d unary block, then one weight per Potts feature.
    assert coords.tolist() == list(range(2 * d, 2 * d + f))
    results = {}
    for engine in ("graph-cut", "exhaustive"):
        m = potts_problem(engine, d=d, f=f)
        s = bmrm.Solver(m, "bmrm", lambda_=1e-2, tol_rel=0.0, tol_abs=1e-9)
        lower = np.full(m.dim, -np.inf)
        lower[m.positivity_coordinates()] = 0.0
        s.set_bounds(lower=lower)
        w, info = s.run()
        assert np.all(w[coords] >= 0.0) and info.certified and info.gap <= 1e-9
        results[engine] = info
    a, b = results["graph-cut"], results["exhaustive"]
    assert a.lower_bound <= b.primal + 1e-12 and b.lower_bound <= a.primal + 1e-12
    assert a.primal == pytest.approx(b.primal, abs=2e-9)


def test_other_edges_have_no_positivity_coordinates_and_potts_needs_features():
    model = bmrm.GraphModel([2], [2, 2], [0, 1], np.eye(2), [1], [0, 1])
    assert model.positivity_coordinates().tolist() == []
    with pytest.raises(ValueError, match="potts edges need edge_features"):
        bmrm.GraphModel([2], [2, 2], [0, 1], np.eye(2), [1], [0, 1], potts=True)
