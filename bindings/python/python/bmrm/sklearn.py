"""scikit-learn estimators on the bmrm engine."""

from __future__ import annotations

import numbers
import os
import warnings
from typing import Any, Optional

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._bmrm import MulticlassModel, Solver

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def _validate_data(est, *args, **kwargs):
        return est._validate_data(*args, **kwargs)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _cores() -> int:
    """The cores this process may run on (its CPU affinity where known)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _threads(n_jobs: Any) -> int:
    """scikit-learn's ``n_jobs`` as the engine's thread count (0 = all
    cores): None or -1 all cores, ``k > 0`` k threads, ``-k`` (k > 1) all
    cores but ``k - 1`` (at least one), as joblib reads it."""
    if n_jobs is None or (_is_int(n_jobs) and n_jobs == -1):
        return 0
    if not _is_int(n_jobs) or n_jobs == 0:
        raise ValueError(
            f"n_jobs must be None, -1 (all cores), a positive integer, or -k for all cores but "
            f"k-1; got {n_jobs!r}")
    if n_jobs > 0:
        return int(n_jobs)
    return max(_cores() + 1 + int(n_jobs), 1)


class LinearSSVMClassifier(ClassifierMixin, BaseEstimator):
    """Linear multiclass SVM of Crammer and Singer, trained by a bundle method.

    Minimises ``0.5 sum_k ||w_k||^2 + C sum_i max_y (1[y != y_i] + <w_y - w_{y_i}, x_i>)``,
    the objective of ``LinearSVC(multi_class='crammer_singer')`` with the
    same ``C`` (with ``fit_intercept`` the intercept is a regularised weight
    of a constant feature 1, as LinearSVC's ``intercept_scaling=1``). The
    engine solves ``lambda/2 ||w||^2 + (1/n) sum_i xi_i`` with
    ``lambda = 1/(C n)`` (the same minimiser) to a certified relative
    duality gap ``tol``.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, as LinearSVC's.
    fit_intercept : bool, default=True
        Learn one intercept per class.
    tol : float, default=1e-4
        Stop when ``(primal - lower_bound) <= tol * primal``.
    max_iter : int, default=1000
        Most iterations (a ``ConvergenceWarning`` when reached).
    algorithm : str, default='auto'
        'auto' lets the library pick, as ``bmrm train`` does: BCFW with
        exact block steps (dual coordinate ascent, permutation sampling, an
        exact pass when the shrunk problem's gap says so) on at least
        ``bmrm.MULTICLASS_BCFW_MIN_EXAMPLES`` (1000) rows whose condition
        ``mean |x_i|^2 / (lambda n)``, ``lambda = 1/(C n)``, is at most
        ``bmrm.MULTICLASS_BCFW_MAX_CONDITION`` (20), Prox-P-BMRM otherwise:
        the faster of the two to a certified gap there
        (docs/algorithms-and-settings.md). Or any algorithm of
        :class:`bmrm.Solver` that suits a max-oracle ('bmrm', 'prox-bmrm',
        'p-bmrm', 'prox-p-bmrm', 'bcfw', 'sgd'); ``max_iter`` counts passes
        over the data for 'bcfw' and 'sgd'.
    n_jobs : int, optional
        Threads of the oracle (None or -1: all cores; ``-k``: all cores but
        ``k - 1``, as joblib; 0 is an error). Results do not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_iter_ : int
    gap_ : float
        The duality gap of the engine's objective at the solution.
    certified_ : bool
        Whether ``gap_`` certifies (every oracle answer was a maximiser).
    algorithm_ : str
        The algorithm that ran ('bcfw-exact' or 'prox-p-bmrm' for 'auto').
    """

    def __init__(self, C: float = 1.0, fit_intercept: bool = True, tol: float = 1e-4,
                 max_iter: int = 1000, algorithm: str = "auto", n_jobs: Optional[int] = None) -> None:
        self.C = C
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.algorithm = algorithm
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"X_types": ["2darray", "sparse"]}

    def fit(self, X: Any, y: Any) -> "LinearSSVMClassifier":
        """Trains on ``X`` (dense or sparse, n_samples x n_features) and labels ``y``.

        Returns
        -------
        self
        """
        if not (_is_real(self.C) and np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be positive and finite, got {self.C!r}")
        if not (_is_real(self.tol) and np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be positive and finite, got {self.tol!r}")
        if not (_is_int(self.max_iter) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False, got {self.fit_intercept!r}")
        if not isinstance(self.algorithm, str):
            raise ValueError(f"algorithm must be a string, got {self.algorithm!r}")
        threads = _threads(self.n_jobs)
        X, y = _validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                "LinearSSVMClassifier needs samples of at least 2 classes; the data contains "
                f"only one class: {self.classes_[0]!r}")
        n, d = X.shape
        k = len(self.classes_)
        model = MulticlassModel(X, y_idx, num_classes=k, bias=bool(self.fit_intercept))
        lam = 1.0 / (self.C * n)
        algorithm, limits = self.algorithm, dict(max_iterations=int(self.max_iter))
        self.algorithm_ = algorithm.lower()
        if algorithm.lower() == "auto":
            picked = model.settings_for(lam)
            algorithm = self.algorithm_ = picked["algorithm"].lower()
            if picked["step_type"] == "exact":
                self.algorithm_ = "bcfw-exact"
                limits.update({k: picked[k] for k in ("step_type", "sampling", "gap_check")})
        if algorithm.lower() == "sgd":  # SGD runs sgd_passes passes (default 5)
            limits["sgd_passes"] = int(self.max_iter)
        solver = Solver(model, algorithm, lambda_=lam, tol_rel=float(self.tol),
                        num_threads=threads, **limits)
        w, info = solver.run()
        if info.exit == "max_iterations":
            warnings.warn(f"LinearSSVMClassifier stopped after max_iter={self.max_iter} iterations "
                          f"with relative gap {info.gap / max(info.primal, 1e-300):.2e}; "
                          "increase max_iter", ConvergenceWarning)
        W = w.reshape(k, d + int(bool(self.fit_intercept)))
        self.coef_ = W[:, :d].copy()
        self.intercept_ = W[:, d].copy() if self.fit_intercept else np.zeros(k)
        self.n_iter_ = info.iterations
        self.gap_ = info.gap
        self.certified_ = info.certified
        self.objective_ = info.primal
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``X coef_^T + intercept_`` (for two classes, the
        score of the second class minus the first's, as scikit-learn does)."""
        check_is_fitted(self)
        X = _validate_data(self, X, accept_sparse="csr", reset=False, dtype=[np.float64, np.float32])
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        if len(self.classes_) == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """The class of highest score for every row of ``X``."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]
