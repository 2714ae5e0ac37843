"""
=====================================================================
An exact hard-margin SVM for STR's Appendix C, and how fast it fits
=====================================================================

Kohen & Sheffet's Appendix C runs Subsample-Test-Reweigh with a "near-hard-margin" linear
SVM (C = 10³⁰) on ≈48k × 500 subsamples, ≈1,200 times per run. On separable data that
learner *is* the hard-margin SVM, which :class:`~skhybrid.transfer.HardMarginLinearSVC`
solves exactly. This example fits one App. C-like subsample (d = 60 here, to keep the
example short) three ways and compares time and margins:

* ``solver="active-set"`` (default): the Goldfarb–Idnani dual active-set method;
* ``solver="interior-point"``: working-set rounds of a dense interior-point QP;
* ``LinearSVC(loss="hinge", C=1e4)``: liblinear's soft-margin SVM with a large C, the
  naive stand-in for C = 10³⁰.

The two exact solvers return the same hyperplane; LinearSVC leaves margins below 1 (it
does not reach the hard-margin solution) and takes longer.
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from skhybrid.datasets import make_shifted_gaussians
from skhybrid.transfer import HardMarginLinearSVC

# App. C geometry: S = N(0, I_d); the label is a halfspace on k = 10 coordinates.
X, y, curator, _, _ = make_shifted_gaussians(
    8000, 0, n_features=60, n_shifted=10, target_scale=0.02, minority=0.01, random_state=0)

learners = {
    "active-set": HardMarginLinearSVC(solver="active-set"),
    "interior-point": HardMarginLinearSVC(solver="interior-point"),
    "LinearSVC C=1e4": LinearSVC(loss="hinge", C=1e4, max_iter=20000, tol=1e-6),
}
seconds, margins = {}, {}
for name, clf in learners.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        clf.fit(X, y)
        seconds[name] = time.perf_counter() - t0
    margins[name] = y * clf.decision_function(X)
    print(f"{name:>16}: {seconds[name]:6.2f} s, smallest margin {margins[name].min():.4f}, "
          f"|w| = {np.linalg.norm(clf.coef_):.3f}")

exact = learners["active-set"]
same = np.allclose(exact.coef_, learners["interior-point"].coef_, atol=1e-6)
print(f"exact solvers agree: {same}; {exact.support_.size} support vectors "
      f"(n_features + 1 = {X.shape[1] + 1})")

fig, ax = plt.subplots(1, 2, figsize=(11, 4))
ax[0].barh(list(seconds), list(seconds.values()), color=["C0", "C1", "C7"])
ax[0].set(xlabel="fit time (s)", title="One fit on 8,000 × 60")
for name, color in zip(learners, ["C0", "C1", "C7"]):
    ax[1].hist(np.clip(margins[name], 0, 3), bins=60, histtype="step", color=color,
               label=name)
ax[1].axvline(1.0, color="k", ls=":")
ax[1].set(xlabel="margin y·f(x) (clipped to [0, 3])", ylabel="rows", yscale="log",
          title="Hard margin: every row at ≥ 1")
ax[1].legend()
plt.tight_layout()
plt.show()
