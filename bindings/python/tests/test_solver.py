"""The low-level Solver: oracle levels, results, history, warm starts, BCFW extras."""

import re
import subprocess

import numpy as np
import pytest

import bmrm
from conftest import REPO, cli_path, multiclass_data, numpy_multiclass_oracle


def l1_risk(c):
    def risk(w):
        d = w - c
        return float(np.abs(d).sum()), np.sign(d)
    return risk


def test_full_risk_reaches_the_analytic_optimum():
    # F(w) = lambda/2 |w|^2 + sum_j |w_j - c_j|: w* = clip(c, -1/lambda, 1/lambda).
    c = np.array([0.5, -3.0, 2.0, 0.1])
    for algorithm, tol in [("bmrm", 1e-10), ("prox-bmrm", 1e-10)]:
        s = bmrm.Solver(bmrm.FullRisk(l1_risk(c), 4), algorithm, lambda_=1.0, tol_abs=tol,
                        tol_rel=0.0, max_iterations=5000)
        w, info = s.run()
        assert info.gap <= tol
        np.testing.assert_allclose(w, np.clip(c, -1, 1), atol=10 * np.sqrt(tol))


def test_partitioned_risk_sums_its_parts():
    c = np.array([[0.5, -3.0], [2.0, 0.25], [-0.5, 1.5]])

    def part(p, w):
        d = w - c[p]
        return float(np.abs(d).sum()), np.sign(d)

    s = bmrm.Solver(bmrm.PartitionedRisk(part, 2, 3), "p-bmrm", lambda_=0.5, tol_abs=1e-9, tol_rel=0.0)
    w, info = s.run()
    # Coordinate-wise: minimise 0.25 w^2 + sum_p |w - c_p|: the median when |w| <= 2.
    np.testing.assert_allclose(w, np.median(c, axis=0), atol=1e-6)
    assert info.gap <= 1e-9


def close_by_strong_convexity(w1, i1, w2, i2, lam):
    """Two runs on one problem: each certified interval holds the other's
    primal, and ||w - w*||^2 <= 2 gap / lambda bounds their distance. (The
    built-in multiclass model scores blocks of examples with its own
    kernels, so its bits differ from a Python oracle's in the last places.)"""
    assert i1.lower_bound <= i2.primal + 1e-12 and i2.lower_bound <= i1.primal + 1e-12
    reach = np.sqrt(2 * max(i1.gap, 0) / lam) + np.sqrt(2 * max(i2.gap, 0) / lam)
    assert np.linalg.norm(w1 - w2) <= reach * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("algorithm", ["bmrm", "p-bmrm", "prox-p-bmrm", "bcfw"])
def test_python_oracle_reaches_the_native_models_optimum(algorithm):
    X, y = multiclass_data()
    native = bmrm.MulticlassModel(X, y, num_classes=3)
    python = numpy_multiclass_oracle(X, y, 3)
    kw = dict(lambda_=1e-2, tol_rel=1e-9, tol_abs=1e-12, max_iterations=3000, num_threads=2)
    w1, i1 = bmrm.Solver(native, algorithm, **kw).run()
    w2, i2 = bmrm.Solver(python, algorithm, **kw).run()
    assert i1.iterations > 3 and i2.iterations > 3
    close_by_strong_convexity(w1, i1, w2, i2, 1e-2)
    # The Python oracle itself is deterministic to the bit.
    w3, i3 = bmrm.Solver(python, algorithm, **kw).run()
    assert w3.tobytes() == w2.tobytes() and i3.primal == i2.primal


def test_solver_reaches_the_rust_clis_optimum(tmp_path):
    """The CLI (Rust API, its own data reader, the built-in model) and the
    Python Solver over a numpy oracle, on one LIBSVM file: the same optimum."""
    cli = cli_path()
    if cli is None:
        pytest.skip("the Rust CLI is not built (cargo build --release, or set BMRM_CLI)")
    X, y = multiclass_data(n=40, d=4, k=3, seed=5)
    X[0, -1] = 0.5  # every feature index occurs
    path = tmp_path / "data.svm"
    with open(path, "w") as f:
        for xi, yi in zip(X, y):
            f.write(f"{yi} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(xi) if v != 0) + "\n")
    model = tmp_path / "model.txt"
    lam = 0.01
    subprocess.run([cli, "train", str(path), "--model", "multiclass", "--lambda", repr(lam),
                    "-a", "bmrm", "--tol-rel", "1e-12", "--no-bias", "--threads", "1",
                    "--quiet", "-o", str(model)], check=True)
    text = model.read_text().splitlines()
    start = next(i for i, l in enumerate(text) if l.startswith("weights "))
    w_cli = np.array([float(v) for v in text[start + 1:start + 1 + int(text[start].split()[1])]])
    Xf = X.astype(np.float32).astype(np.float64)
    oracle = numpy_multiclass_oracle(Xf, y, 3)
    w_py, info = bmrm.Solver(oracle, "bmrm", lambda_=lam, tol_rel=1e-12, tol_abs=1e-14).run()
    assert info.iterations > 3
    # The CLI's w is a point of the same problem: its objective lies in the
    # Python run's certified interval, and both are near the minimiser.
    scores = Xf @ w_cli.reshape(3, -1).T
    margins = scores + (np.arange(3)[None, :] != y[:, None]) - scores[np.arange(len(y)), y][:, None]
    risk_cli = float(margins.max(axis=1).mean())
    f_cli = risk_cli + 0.5 * lam * float(w_cli @ w_cli)
    assert info.lower_bound <= f_cli + 1e-12
    assert f_cli - info.lower_bound <= 1e-10 * abs(f_cli) + 1e-12
    reach = np.sqrt(2 * (f_cli - info.lower_bound) / lam) + np.sqrt(2 * info.gap / lam)
    assert np.linalg.norm(w_cli - w_py) <= reach * (1 + 1e-9) + 1e-12


def test_info_has_every_field_of_the_c_bmrm_info():
    header = (REPO / "include" / "bmrm.h").read_text()
    body = re.search(r"typedef struct bmrm_info \{(.*?)\} bmrm_info;", header, re.S).group(1)
    fields = re.findall(r"^\s*[\w ]+?\b(\w+);", re.sub(r"/\*.*?\*/", "", body, flags=re.S), re.M)
    assert len(fields) >= 12
    s = bmrm.Solver(bmrm.FullRisk(l1_risk(np.ones(2)), 2), lambda_=1.0)
    _, info = s.run()
    for f in fields:
        assert hasattr(info, f), f
    codes = {"converged_rel": 1, "converged_abs": 2}
    assert codes[info.exit] == info.exit_code


def test_history_is_numpy_and_consistent():
    X, y = multiclass_data()
    s = bmrm.Solver(bmrm.MulticlassModel(X, y), "bmrm", lambda_=1e-2, tol_rel=1e-6)
    _, info = s.run()
    h = s.history
    assert len(h["primal"]) == info.iterations
    assert isinstance(h["lower_bound"], np.ndarray) and h["iteration"].dtype == np.uint64
    assert np.all(np.diff(h["primal"]) <= 0) and np.all(np.diff(h["lower_bound"]) >= 0)
    assert h["primal"][-1] == info.primal


def test_set_lambda_warm_start_matches_a_cold_solve():
    X, y = multiclass_data()
    model = bmrm.MulticlassModel(X, y)
    s = bmrm.Solver(model, "bmrm", lambda_=1e-1, tol_rel=1e-8)
    w, _ = s.run()
    s.set_lambda(1e-2)
    assert s.lambda_ == 1e-2
    w_warm, warm = s.run(w)
    _, cold = bmrm.Solver(model, "bmrm", lambda_=1e-2, tol_rel=1e-8).run()
    assert warm.iterations < cold.iterations
    assert abs(warm.primal - cold.primal) <= 1e-7 * cold.primal
    # Each run's certificate covers the other's value.
    assert warm.lower_bound <= cold.primal and cold.lower_bound <= warm.primal


def test_progress_callback_sees_every_iteration_and_can_stop():
    X, y = multiclass_data()
    seen = []
    s = bmrm.Solver(bmrm.MulticlassModel(X, y), "bmrm", lambda_=1e-3, tol_rel=1e-9,
                    progress=lambda info: (seen.append(info.primal), len(seen) < 4)[1])
    _, info = s.run()
    assert info.exit == "stopped_by_user" and len(seen) == 4 and info.iterations == 4


def test_bcfw_bounds_path_and_stats():
    X, y = multiclass_data()
    model = bmrm.MulticlassModel(X, y)
    s = bmrm.Solver(model, "bcfw", lambda_=1e-2, tol_abs=1e-6, tol_rel=0.0)
    dim = model.dim
    s.set_bounds(lower=np.zeros(dim))
    w, info = s.run()
    assert np.all(w >= 0) and info.gap <= 1e-6
    stats = s.bcfw_stats()
    assert stats["passes"] >= 1 and stats["dual"] <= info.primal
    # The bounded optimum is above the free one's certified lower bound.
    free = bmrm.Solver(model, "bmrm", lambda_=1e-2, tol_abs=1e-8)
    _, finfo = free.run()
    assert info.primal >= finfo.lower_bound - 1e-12
    p = bmrm.Solver(model, "bcfw", lambda_=1e-2, tol_rel=1e-3)
    eps = 1e-2
    points = p.regularization_path(eps=eps, lambda_min=1e-2)
    assert len(points) >= 2 and points[-1]["lambda_low"] <= 1e-2
    for b in points:
        assert b["gap"] <= eps and b["w"].shape == (dim,)
    # Each breakpoint's w is eps-optimal down to its lambda_low: check against
    # BMRM's certified lower bound there.
    for b in points[len(points) // 2::max(1, len(points) // 6)]:
        lam = b["lambda_low"]
        value = model.risk(b["w"])[0] + 0.5 * lam * float(b["w"] @ b["w"])
        _, ref = bmrm.Solver(model, "bmrm", lambda_=lam, tol_abs=1e-9, tol_rel=0.0).run()
        assert value - ref.lower_bound <= eps
    # The bundle methods honour the same box: the same optimum, certified.
    for alg in ("bmrm", "p-bmrm"):
        boxed = bmrm.Solver(model, alg, lambda_=1e-2, tol_abs=1e-9, tol_rel=0.0)
        boxed.set_bounds(lower=np.zeros(dim))
        wb, ib = boxed.run()
        assert np.all(wb >= 0) and ib.gap <= 1e-9
        assert ib.lower_bound <= info.primal + 1e-12 and info.lower_bound <= ib.primal + 1e-12
        assert ib.primal == pytest.approx(info.primal, abs=2e-6)
    # SGD projects its steps onto the box; the cutting-plane method refuses it.
    sgd = bmrm.Solver(model, "sgd", lambda_=1e-2)
    sgd.set_bounds(lower=np.zeros(dim))
    ws, si = sgd.run()
    assert np.all(ws >= 0) and si.lower_bound <= info.primal + 1e-12
    with pytest.raises(ValueError, match="box constraints"):
        bmrm.Solver(model, "cutting-plane", lambda_=1e-2).set_bounds(lower=np.zeros(dim))


def test_sparse_and_dense_chain_models_have_the_same_optimum():
    import scipy.sparse as sp

    from conftest import chain_data

    X, Y = chain_data()
    feats, lengths = np.vstack(X), [len(y) for y in Y]
    labels = np.concatenate(Y)
    dense = bmrm.ChainModel(feats, lengths, labels, num_labels=3, bias=True)
    sparse = bmrm.ChainModel(sp.csr_matrix(feats), lengths, labels, num_labels=3, bias=True)
    assert dense.dim == sparse.dim == 3 * 5 + 9 + 6
    runs = [bmrm.Solver(m, "bmrm", lambda_=0.05, tol_abs=1e-10, tol_rel=0.0).run()[1]
            for m in (dense, sparse)]
    # The same problem with the weights stored in another order: one optimum.
    assert runs[0].lower_bound <= runs[1].primal + 1e-12
    assert runs[1].lower_bound <= runs[0].primal + 1e-12
    assert abs(runs[0].primal - runs[1].primal) <= 1e-9


def test_multi_plane_and_mini_batch_bcfw_by_name():
    # Multi-plane and mini-batch BCFW through the keyword settings: honoured (their
    # figures show it), read back, and certified against BMRM's optimum.
    X, y = multiclass_data()
    model = bmrm.MulticlassModel(X, y)
    _, ref = bmrm.Solver(model, "bmrm", lambda_=1e-2, tol_abs=1e-9, tol_rel=0.0).run()
    for extra in [dict(multi_plane=True, mp_approx_passes=5, step_type="pairwise"),
                  dict(mini_batch=8, use_cache=False)]:
        s = bmrm.Solver(model, "bcfw", lambda_=1e-2, tol_abs=1e-6, tol_rel=0.0, **extra)
        for k, v in extra.items():
            assert s.settings[k] == v
        w, info = s.run()
        assert info.gap <= 1e-6
        assert info.lower_bound <= ref.primal + 1e-12 and ref.lower_bound <= info.primal + 1e-12
        if "multi_plane" in extra:
            assert s.bcfw_stats()["approx_passes"] > 0
    with pytest.raises(ValueError, match="use_cache"):
        bmrm.Solver(model, "bcfw", lambda_=1e-2, mini_batch=8, use_cache=True).run()


@pytest.mark.parametrize("algorithm", ["bmrm", "prox-p-bmrm", "bcfw"])
def test_an_oracle_below_the_ground_truth_is_clipped_and_not_certified(algorithm):
    # An answer with loss -1 and psi 0 has H = -1 < 0, the truth's
    # H: it is clipped to the truth (H = 0) and the run says its gap
    # certifies nothing; the exact oracle certifies.
    X, y = multiclass_data(n=30, d=4, k=3)
    exact = numpy_multiclass_oracle(X, y, 3)
    _, info = bmrm.Solver(exact, algorithm, lambda_=0.1).run()
    assert info.certified is True

    def below(i, w):
        return -1.0, (np.array([], dtype=np.int64), np.array([])), int(y[i])

    s = bmrm.Solver(bmrm.MaxOracle(below, 12, 30), algorithm, lambda_=0.1)
    w, info = s.run()
    assert info.certified is False
    # Every hinge is clipped to 0: F(0) = 0 = the bound, and w stays 0.
    assert info.primal == 0.0 and info.lower_bound <= 0.0
    assert not w.any()
