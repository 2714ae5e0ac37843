"""
============================================================================
Private adaptation on real data: diabetes, from low-BMI to high-BMI patients
============================================================================

A clinic has labelled records of one population (the *source*: public, e.g. a published
study) and unlabelled, sensitive records of the population it serves (the *target*). Here
the source is scikit-learn's diabetes data with BMI at or below the median and the target
is the patients above it: a real covariate shift. The labels are disease progression
scores around 150, nowhere near 0.

:class:`~skhybrid.adaptation.DiscrepancyAdaptationRegressor` reweights the source rows so
that their second moment matches the target's (released once with the Gaussian mechanism)
and fits a weighted ridge regression on the source. With its defaults it centres features
and labels with the *public* source rows and takes the bound on a target row's norm from
them too — both free — so nothing has to be tuned on the private side. We compare it with
predicting the source label mean, non-private ridge on the source, the same learner
without noise, and the paper's setting (no intercept, unit norm bound), which is what
the estimator used to default to.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge

from skhybrid.adaptation import DiscrepancyAdaptationRegressor

X, y = load_diabetes(return_X_y=True)
bmi = X[:, 2]


def split(seed):
    """Source rows (public, labelled) and target rows (private: half to fit, half to test)."""
    source = bmi <= np.median(bmi)
    target = np.flatnonzero(~source)
    np.random.default_rng(seed).shuffle(target)
    test, fit_rows = target[: len(target) // 2], target[len(target) // 2:]
    X_fit = np.vstack([X[source], X[fit_rows]])
    y_fit = np.r_[y[source], np.full(len(fit_rows), np.nan)]  # target labels unknown
    public = np.r_[np.ones(source.sum(), bool), np.zeros(len(fit_rows), bool)]
    return X_fit, y_fit, public, X[test], y[test]


# %%
# Target error against the budget
# -------------------------------
# Eight splits of the target rows; mean test MSE and one standard deviation.

epsilons = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
n_splits = 8
curves = {"defaults": np.zeros((n_splits, len(epsilons))),
          "paper setting": np.zeros((n_splits, len(epsilons)))}
flat = {"source label mean": [], "Ridge on the source (non-private)": [],
        "adaptation without noise": []}
for s in range(n_splits):
    X_fit, y_fit, public, X_test, y_test = split(s)
    mse = lambda pred, y_test=y_test: float(np.mean((pred - y_test) ** 2))  # noqa: E731
    flat["source label mean"].append(mse(np.full(len(y_test), y_fit[public].mean())))
    ridge = Ridge(alpha=1e-3).fit(X_fit[public], y_fit[public])
    flat["Ridge on the source (non-private)"].append(mse(ridge.predict(X_test)))
    exact = DiscrepancyAdaptationRegressor(epsilon=np.inf).fit(X_fit, y_fit, public_mask=public)
    flat["adaptation without noise"].append(mse(exact.predict(X_test)))
    for j, eps in enumerate(epsilons):
        reg = DiscrepancyAdaptationRegressor(epsilon=eps, random_state=100 * s + j)
        curves["defaults"][s, j] = mse(reg.fit(X_fit, y_fit, public_mask=public).predict(X_test))
        paper = DiscrepancyAdaptationRegressor(epsilon=eps, fit_intercept=False, data_norm=1.0,
                                               random_state=100 * s + j)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # it warns, rightly, about the uncentred labels
            paper.fit(X_fit, y_fit, public_mask=public)
        curves["paper setting"][s, j] = mse(paper.predict(X_test))

for name, values in flat.items():
    print(f"{name:<36} MSE {np.mean(values):8.0f}")
for name, values in curves.items():
    print(f"{name:<36} " + "  ".join(f"eps={e:g}: {m:,.0f}"
                                       for e, m in zip(epsilons, values.mean(axis=0))))

fig, ax = plt.subplots(figsize=(7, 4.3))
for name, values in curves.items():
    m, sd = values.mean(axis=0), values.std(axis=0)
    ax.errorbar(epsilons, m, yerr=sd, marker="o", capsize=3, label=f"private, {name}")
for (name, values), style in zip(flat.items(), (":", "--", "-.")):
    ax.axhline(np.mean(values), color="gray", linestyle=style, label=name)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("epsilon (target rows)")
ax.set_ylabel("target test MSE")
ax.set_title("Diabetes, source BMI <= median, target above")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()

# %%
# Reading the figure
# ------------------
# With the defaults the private learner is at the level of non-private ridge on the
# source at every budget, less than half the error of predicting the source mean.
# Without noise, reweighting does better than source ridge on this shift; the private
# learner does not collect that gain at these budgets: with about 220 target rows the
# noise of the released moment is as large as the shift, and the default stage-1
# regulariser (``noise_shrinkage``, sized from the noise alone) then keeps the weights
# near uniform — i.e. near source ridge — instead of chasing the noise. The paper's
# setting — hypotheses through the origin, a unit norm bound far larger than these rows —
# is several times *worse than the mean*: the labels are not centred, and the noise,
# scaled by the square of the norm bound, swamps the target moment.
