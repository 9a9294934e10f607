"""The low-level interface: bmrm.Solver over a Python max-oracle and a built-in model.

A Crammer-Singer multiclass SVM on generated data, trained twice: once with a
max-oracle written in numpy, once with the built-in MulticlassModel (oracle in
Rust, no GIL). Then a warm-started lambda path, a progress callback that
stops the solve, and BCFW with positivity bounds.
"""

import numpy as np

import bmrm

rng = np.random.RandomState(0)
n, d, k = 300, 8, 4
y = np.arange(n) % k
X = rng.randn(k, d)[y] * 1.5 + rng.randn(n, d)


def oracle(i, w):
    """Loss-augmented argmax of example i: (loss, psi, label id)."""
    scores = w.reshape(k, d) @ X[i] + 1.0
    scores[y[i]] -= 1.0
    y_hat = int(np.argmax(scores))
    if scores[y_hat] <= scores[y[i]]:
        return 0.0, np.zeros(k * d), int(y[i])
    psi = np.zeros(k * d)
    psi[y[i] * d:(y[i] + 1) * d] = X[i]
    psi[y_hat * d:(y_hat + 1) * d] -= X[i]
    return 1.0, psi, y_hat


lam = 1e-2
w_py, info_py = bmrm.Solver(bmrm.MaxOracle(oracle, k * d, n), "bmrm", lambda_=lam,
                            tol_rel=1e-6).run()
model = bmrm.MulticlassModel(X, y, num_classes=k)
solver = bmrm.Solver(model, "bmrm", lambda_=lam, tol_rel=1e-6)
w, info = solver.run()
print("Python oracle:", info_py)
print("native model: ", info)
print("max |w_python - w_native| =", np.abs(w_py - w).max())
print("history columns:", sorted(solver.history))

# Warm starts along a lambda path: the cutting planes model R and stay valid.
for lam_next in [3e-3, 1e-3]:
    solver.set_lambda(lam_next)
    w, info = solver.run(w)
    print(f"lambda={lam_next:g}: {info.iterations} iterations, gap {info.gap:.2e}")

# A progress callback sees every iteration; returning False stops the solve.
s = bmrm.Solver(model, "prox-p-bmrm", lambda_=1e-4, tol_rel=1e-9,
                progress=lambda i: i.iterations < 5)
print("stopped:", s.run()[1].exit)

# BCFW with w >= 0, and its figures.
b = bmrm.Solver(model, "bcfw", lambda_=lam, tol_rel=1e-4)
b.set_bounds(lower=np.zeros(model.dim))
w, info = b.run()
print("BCFW with w >= 0:", info.exit, "min w =", w.min(), "ell =", b.bcfw_stats()["ell"])
