"""
=======================================================================
Subsample-Test-Reweigh: transferring a regularised learner to a target
=======================================================================

The curator holds labelled rows from a source S = N(0, I₂₀); the local agents come
from a target T that shrinks three coordinates to standard deviation 0.02, and the
labelling halfspace lives on those coordinates (Kohen & Sheffet, App. C, in the
regularised setting of :ref:`notes_transfer`). A strongly regularised linear SVM trained on
the source rows alone misplaces the boundary where the target's mass is. Non-private STR
(Algorithm 1) reweights the curator's rows by multiplicative weights until a hypothesis
passes the test on the local agents.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import LinearSVC

from skhybrid.datasets import make_shifted_gaussians
from skhybrid.transfer import SubsampleTestReweigh

X, y, curator, X_test, y_test = make_shifted_gaussians(
    5000, 4000, n_features=20, n_shifted=3, target_scale=0.02, minority=0.05, n_test=20000,
    random_state=0)

# A regularised learner (small C): DP learners are regularised, which is where STR matters.
svc = LinearSVC(loss="hinge", C=0.001, intercept_scaling=10, max_iter=5000)
source_only = svc.fit(X[curator], y[curator])
err_source = np.mean(source_only.predict(X_test) != y_test)

clf = SubsampleTestReweigh(svc, epsilon=np.inf, alpha=0.05, max_iter=600, classes=[-1, 1],
                           random_state=1)
clf.fit(X, y, curator_mask=curator)
err_str = np.mean(clf.predict(X_test) != y_test)
print(f"target error: source-only {err_source:.3f}, STR {err_str:.3f} "
      f"after {clf.n_iter_} iterations (stopping threshold "
      f"{clf.privacy_params_['threshold']:.3f})")

fig, ax = plt.subplots(figsize=(6, 4))
it = np.arange(1, clf.n_iter_ + 1)
ax.plot(it, clf.target_error_estimates_, label="STR: error on the local rows")
ax.axhline(err_source, color="k", ls="--", label="source-only (test error)")
ax.axhline(clf.privacy_params_["threshold"], color="gray", ls=":", label="stopping threshold")
ax.set(xlabel="STR iteration", ylabel="target error",
       title="Subsample-Test-Reweigh, d = 20, k = 3")
ax.legend()
plt.show()
