"""The squared-hinge support guess that starts HardMarginLinearSVC's warm fits."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from skhybrid.transfer import HardMarginLinearSVC
from skhybrid.transfer._squared_hinge import squared_hinge_support


def _signed_rows(n, d, seed):
    # KS App. C-like data: N(0, I) rows, a halfspace on 5 coordinates near the origin
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[:5] = 1 / np.sqrt(5)
    s = np.where(X @ w > 0.02 * norm.ppf(0.02), 1.0, -1.0)
    return X, s


def _penalty_minimiser(R, mu, free_last):
    # an independent solve of min ½‖w‖² + (μ/2)∑(1 − rᵢv)₊² (smooth: L-BFGS to tight tol)
    reg = np.ones(R.shape[1])
    if free_last:
        reg[-1] = 0.0

    def fun(v):
        slack = np.maximum(1.0 - R @ v, 0.0)
        return 0.5 * v @ (reg * v) + 0.5 * mu * slack @ slack, reg * v - mu * R.T @ slack

    res = minimize(fun, np.zeros(R.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "gtol": 1e-12, "ftol": 1e-15})
    return res.x


@pytest.mark.parametrize("free_last", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_guess_is_the_penalty_minimisers_violated_set(free_last, seed):
    X, s = _signed_rows(400, 8, seed)
    R = s[:, None] * (np.c_[X, np.ones(len(s))] if free_last else X)
    mu = 50.0
    v0 = np.random.default_rng(seed).normal(size=R.shape[1])
    rows, n_iter = squared_hinge_support(R, v0, penalty=mu, free_last=free_last)
    v = _penalty_minimiser(R, mu, free_last)
    slack = 1.0 - R @ v
    clear = np.abs(slack) > 1e-6  # rows on the boundary may go either way
    assert set(rows[clear[rows]]) == set(np.flatnonzero((slack > 0) & clear))
    assert np.all(np.diff(slack[rows]) <= 1e-9)  # most violated first
    assert 1 <= n_iter < 20  # Newton stopped on its own (finite termination)


def test_guess_holds_the_support_once_the_penalty_is_large():
    X, s = _signed_rows(3000, 20, 2)
    clf = HardMarginLinearSVC().fit(X, s)
    support = set(clf.support_)
    R = s[:, None] * np.c_[X, np.ones(len(s))]
    mean_sq = np.einsum("ij,ij->", R, R) / len(s)
    sizes = []
    for kappa in (1e2, 1e4, 1e6):
        rows, n_iter = squared_hinge_support(R, np.zeros(R.shape[1]), penalty=kappa / mean_sq,
                                             max_iter=100)
        assert n_iter < 100
        sizes.append(rows.size)
        if kappa == 1e6:
            # the support's multipliers are positive, so at a large μ its rows stay violated
            assert support <= set(rows)
            assert rows.size <= len(support) + 5
    assert sizes[0] > sizes[1] > sizes[2]  # fewer wrong rows as μ grows


def test_guess_on_degenerate_input():
    R = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
    rows, _ = squared_hinge_support(R, np.array([-20.0, -20.0, 30.0]), penalty=1e4)
    assert sorted(rows.tolist()) == [0, 1, 2]  # all three rows bind this toy problem
    rows, n_iter = squared_hinge_support(np.zeros((0, 3)), np.zeros(3), penalty=1.0)
    assert rows.size == 0 and n_iter == 1


def test_warm_fit_starts_from_most_of_the_final_support(monkeypatch):
    # STR-like successive subsamples: the guess made from the previous hyperplane holds
    # most of the new fit's support, and the warm fit is the cold fit's unique optimum
    from skhybrid.transfer import _hard_margin

    X, s = _signed_rows(20000, 60, 3)
    guessed = []
    guess = _hard_margin.HardMarginLinearSVC._support_guess

    def spy(self, X_pool, s_pool, w, b):
        rows = guess(self, X_pool, s_pool, w, b)
        guessed.append({r.tobytes() for r in X_pool[rows]})
        return rows

    monkeypatch.setattr(_hard_margin.HardMarginLinearSVC, "_support_guess", spy)
    rng = np.random.default_rng(0)
    warm = HardMarginLinearSVC(warm_start=True)
    shares = []
    for fit in range(3):
        idx = np.unique(rng.choice(len(s), 10000))
        warm.fit(X[idx], s[idx])
        cold = HardMarginLinearSVC().fit(X[idx], s[idx])
        np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(warm.intercept_, cold.intercept_, rtol=1e-9, atol=1e-9)
        assert set(warm.support_) == set(cold.support_)
        if fit:  # (the first fit is cold)
            support = {r.tobytes() for r in X[idx][warm.support_]}
            shares.append(len(support & guessed[-1]) / len(support))
    assert len(guessed) == 2
    assert min(shares) >= 0.9
