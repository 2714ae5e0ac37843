"""DiscrepancyAdaptationRegressor with its defaults on a real covariate shift (diabetes)."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge

from skhybrid.adaptation import DiscrepancyAdaptationRegressor


def _bmi_shift(seed):
    """Source: BMI at or below the median (labelled, public); target: above (private)."""
    X, y = load_diabetes(return_X_y=True)
    source = X[:, 2] <= np.median(X[:, 2])
    target = np.flatnonzero(~source)
    np.random.default_rng(seed).shuffle(target)
    test, fit_rows = target[: len(target) // 2], target[len(target) // 2:]
    X_fit = np.vstack([X[source], X[fit_rows]])
    y_fit = np.r_[y[source], np.full(len(fit_rows), np.nan)]
    public = np.r_[np.ones(source.sum(), bool), np.zeros(len(fit_rows), bool)]
    return X_fit, y_fit, public, X[test], y[test]


def test_defaults_beat_the_public_mean_and_approach_source_ridge():
    mse = {"mean": [], "ridge": [], "dp": []}
    for seed in range(8):
        X, y, public, X_te, y_te = _bmi_shift(seed)
        err = lambda pred: float(np.mean((pred - y_te) ** 2))  # noqa: E731
        mse["mean"].append(err(np.full(len(y_te), y[public].mean())))
        mse["ridge"].append(err(Ridge(alpha=1e-3).fit(X[public], y[public]).predict(X_te)))
        for rep in range(4):  # four noise draws per split; the noise has a heavy tail
            reg = DiscrepancyAdaptationRegressor(epsilon=1.0, random_state=100 + 10 * seed + rep)
            mse["dp"].append(err(reg.fit(X, y, public_mask=public).predict(X_te)))
    m = {k: np.median(v) for k, v in mse.items()}
    # Measured over these 8 splits x 4 draws (medians): public mean 11,990, source Ridge
    # 4,750, the defaults at epsilon = 1 6,250 (without noise 4,954). The old defaults (no
    # intercept, data_norm=1) gave ~47,000, four times worse than the mean.
    assert m["dp"] < 0.6 * m["mean"]
    assert m["dp"] < 1.5 * m["ridge"]


def test_data_norm_none_is_a_public_statistic():
    X, y, public, _, _ = _bmi_shift(0)
    src = X[public] - X[public].mean(axis=0)
    reg = DiscrepancyAdaptationRegressor(epsilon=1.0, random_state=0).fit(X, y, public_mask=public)
    assert reg.solver_info_["r"] == pytest.approx(np.sqrt(np.max(np.sum(src**2, axis=1))))
    X2 = X.copy()
    X2[np.flatnonzero(~public)[0]] *= 50  # a private row far outside: r must not move
    reg2 = DiscrepancyAdaptationRegressor(epsilon=1.0, random_state=0).fit(X2, y, public_mask=public)
    assert reg2.solver_info_["r"] == reg.solver_info_["r"]
    assert reg2.privacy_spent_ == reg.privacy_spent_


def test_warnings_read_public_rows_only():
    X, y, public, _, _ = _bmi_shift(0)
    with pytest.warns(UserWarning, match="fit_intercept=True"):
        DiscrepancyAdaptationRegressor(epsilon=1.0, fit_intercept=False, random_state=0).fit(
            X, y, public_mask=public)
    with pytest.warns(UserWarning, match="over twice data_norm"):
        DiscrepancyAdaptationRegressor(epsilon=1.0, data_norm=0.01, random_state=0).fit(
            X, y, public_mask=public)
    # The same public rows with wildly different private rows give the same warnings.
    X2 = X.copy()
    X2[~public] = 1e3
    import warnings
    with warnings.catch_warnings(record=True) as a:
        warnings.simplefilter("always")
        DiscrepancyAdaptationRegressor(epsilon=1.0, random_state=0).fit(X, y, public_mask=public)
    with warnings.catch_warnings(record=True) as b:
        warnings.simplefilter("always")
        DiscrepancyAdaptationRegressor(epsilon=1.0, random_state=0).fit(X2, y, public_mask=public)
    assert [str(w.message) for w in a] == [str(w.message) for w in b]
