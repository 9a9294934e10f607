"""The scikit-learn estimator: LinearSSVMClassifier in a Pipeline and GridSearchCV."""

from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

from bmrm.sklearn import LinearSSVMClassifier

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
pipe = make_pipeline(MinMaxScaler(), LinearSSVMClassifier(tol=1e-4))
search = GridSearchCV(pipe, {"linearssvmclassifier__C": [0.01, 0.1, 1.0, 10.0]}, cv=3)
search.fit(X_train, y_train)
best = search.best_estimator_[-1]
print("best C:", search.best_params_["linearssvmclassifier__C"])
print("test accuracy: %.3f" % search.score(X_test, y_test))
print("iterations: %d, certified gap: %.2e" % (best.n_iter_, best.gap_))
