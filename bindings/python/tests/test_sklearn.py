"""bmrm.sklearn.LinearSSVMClassifier: scikit-learn's own checks, model
selection, and LinearSVC(crammer_singer)'s objective."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import check_estimator

from bmrm.sklearn import LinearSSVMClassifier
from conftest import multiclass_data


def test_check_estimator():
    failures = check_estimator(LinearSSVMClassifier(), on_fail=None)
    bad = [f for f in failures if f["status"] == "failed"]
    assert not bad, "\n".join(f"{f['check_name']}: {f['exception']}" for f in bad)


def crammer_singer_objective(clf_coef, intercept, X, y, C):
    """0.5 |W|^2 + C sum_i max_k (1[k != y_i] + s_k - s_{y_i}), intercept regularised."""
    s = X @ clf_coef.T + intercept
    margins = s + 1.0 - s[np.arange(len(y)), y][:, None]
    margins[np.arange(len(y)), y] = 0.0
    return 0.5 * (np.sum(clf_coef ** 2) + np.sum(intercept ** 2)) + C * np.sum(margins.max(axis=1))


def test_matches_linear_svc_crammer_singer_objective():
    X, y = multiclass_data(n=200, d=6, k=4, seed=2)
    for C in [0.01, 1.0]:
        ours = LinearSSVMClassifier(C=C, tol=1e-8, max_iter=10000).fit(X, y)
        ref = LinearSVC(multi_class="crammer_singer", C=C, tol=1e-10, max_iter=100000).fit(X, y)
        f_ours = crammer_singer_objective(ours.coef_, ours.intercept_, X, y, C)
        f_ref = crammer_singer_objective(ref.coef_, ref.intercept_, X, y, C)
        # Our certified lower bound (scaled to this objective) is below LinearSVC's value,
        # and our value is within the tolerance of it.
        lower = (ours.objective_ - ours.gap_) * C * len(y)
        assert lower <= f_ref * (1 + 1e-9)
        assert f_ours <= f_ref * (1 + 1e-6)
        assert f_ours == pytest.approx(ours.objective_ * C * len(y), rel=1e-6)


def test_sparse_and_dense_give_the_same_model():
    X, y = multiclass_data()
    # The dense and CSR models score with different kernels (the same values
    # up to rounding): solved tightly, both reach the one minimiser.
    a = LinearSSVMClassifier(C=0.5, tol=1e-12, max_iter=5000).fit(X, y)
    b = LinearSSVMClassifier(C=0.5, tol=1e-12, max_iter=5000).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(a.predict(X), b.predict(sp.csr_matrix(X)))


def test_grid_search_and_pipeline():
    X, y = multiclass_data(n=90)
    labels = np.array(["a", "b", "c"])[y]
    pipe = make_pipeline(StandardScaler(), LinearSSVMClassifier())
    search = GridSearchCV(pipe, {"linearssvmclassifier__C": [0.01, 0.1, 1.0]}, cv=3).fit(X, labels)
    assert search.best_params_["linearssvmclassifier__C"] in (0.01, 0.1, 1.0)
    assert search.score(X, labels) > 0.8
    assert set(search.predict(X)) <= set(labels)


def test_max_iter_warns_and_bad_parameters_raise():
    X, y = multiclass_data()
    with pytest.warns(ConvergenceWarning):
        LinearSSVMClassifier(max_iter=1, tol=1e-12).fit(X, y)
    with pytest.raises(ValueError, match="C must be positive"):
        LinearSSVMClassifier(C=-1).fit(X, y)
    with pytest.raises(ValueError, match="unknown algorithm"):
        LinearSSVMClassifier(algorithm="newton").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LinearSSVMClassifier(algorithm="bcfw", tol=1e-3).fit(X, y)


@pytest.mark.parametrize("sparse", [False, True])
def test_auto_picks_by_condition_and_reaches_the_same_certified_optimum(sparse):
    """algorithm='auto' (the default) runs BCFW with exact steps on at least
    MULTICLASS_BCFW_MIN_EXAMPLES rows whose condition mean |x|^2 / (lambda
    n) is at most MULTICLASS_BCFW_MAX_CONDITION, Prox-P-BMRM otherwise (as
    `bmrm train` does); either way the certified optimum is BMRM's."""
    import bmrm

    rng = np.random.RandomState(4)
    n, d, k = 1200, 5, 3
    y = rng.randint(k, size=n)
    X = rng.randn(n, d) + 2.0 * np.eye(k, d)[y]
    norm2 = np.mean(np.sum(X ** 2, axis=1) + 1.0)
    cases = [(1e-2, "bcfw-exact"),  # condition about 0.7
             (1e-5, "prox-p-bmrm"),  # about 700
             (1e-2, "prox-p-bmrm")]  # 100 rows: too few for BCFW
    for lam, picked in cases:
        rows = slice(0, 100) if picked == "prox-p-bmrm" and lam == 1e-2 else slice(None)
        Xr, yr = X[rows], y[rows]
        m = len(yr)
        want_bcfw = (m >= bmrm.MULTICLASS_BCFW_MIN_EXAMPLES
                     and norm2 / (lam * m) <= bmrm.MULTICLASS_BCFW_MAX_CONDITION)
        assert want_bcfw == (picked == "bcfw-exact")
        Xs = sp.csr_matrix(Xr) if sparse else Xr
        C = 1.0 / (lam * m)
        auto = LinearSSVMClassifier(C=C, tol=1e-5, max_iter=20000).fit(Xs, yr)
        ref = LinearSSVMClassifier(C=C, tol=1e-5, max_iter=20000, algorithm="bmrm").fit(Xs, yr)
        assert auto.algorithm_ == picked and ref.algorithm_ == "bmrm"
        assert auto.certified_ and ref.certified_
        # Each lower bound lies below the other's primal; both within tol.
        assert auto.objective_ - auto.gap_ <= ref.objective_ * (1 + 1e-12)
        assert ref.objective_ - ref.gap_ <= auto.objective_ * (1 + 1e-12)
        assert auto.gap_ <= 1e-5 * auto.objective_ * (1 + 1e-9)
