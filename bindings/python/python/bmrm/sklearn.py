"""scikit-learn estimators on the bmrm engine."""

from __future__ import annotations

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
    algorithm : str, default='bmrm'
        Any algorithm of :class:`bmrm.Solver` that suits a max-oracle
        ('bmrm', 'prox-bmrm', 'p-bmrm', 'prox-p-bmrm', 'bcfw').
    n_jobs : int, optional
        Threads of the oracle (None or -1: all cores). Results do not depend
        on it.

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
    """

    def __init__(self, C: float = 1.0, fit_intercept: bool = True, tol: float = 1e-4,
                 max_iter: int = 1000, algorithm: str = "bmrm", n_jobs: Optional[int] = None) -> None:
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
        if not (np.isscalar(self.C) and np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be positive and finite, got {self.C!r}")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be positive, got {self.tol!r}")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be at least 1, got {self.max_iter!r}")
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
        threads = 0 if self.n_jobs in (None, -1) else int(self.n_jobs)
        solver = Solver(model, self.algorithm, lambda_=1.0 / (self.C * n), tol_rel=float(self.tol),
                        max_iterations=int(self.max_iter), num_threads=threads)
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
