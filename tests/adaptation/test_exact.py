import sys

import numpy as np
import pytest

from skhybrid.adaptation._data import adaptation_label, make_adaptation_data
from skhybrid.adaptation._discrepancy import discrepancy_matrix, second_moment, spectral_norm
from skhybrid.adaptation._exact import (
    discrepancy_objective,
    minimize_discrepancy,
    minimize_discrepancy_cvxpy,
    minimize_discrepancy_smoothed,
    project_simplex,
    weighted_ridge,
)


def _needs_cvxpy():
    """The SDP solver's tests: cvxpy is the optional ``skhybrid[exact]`` dependency."""
    return pytest.importorskip("cvxpy")


def _small_problem(seed, m=40, n=200, d=4):
    rng = np.random.default_rng(seed)
    X_src = rng.normal(size=(m, d)) / np.sqrt(d) + rng.normal(size=d) * 0.3
    T = rng.normal(size=(n, d)) / np.sqrt(d) - 0.2
    return second_moment(T), X_src


# ----------------------------------------------------------------- simplex projection


def test_project_simplex_kkt_and_fixed_points():
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=15) * 3
        q = project_simplex(v)
        assert q.min() >= 0 and q.sum() == pytest.approx(1.0)
        # KKT: v - q = theta on the support, <= theta off it
        theta = (v - q)[q > 0]
        np.testing.assert_allclose(theta, theta[0], atol=1e-12)
        assert np.all((v - q)[q == 0] <= theta[0] + 1e-12)
    p = rng.dirichlet(np.ones(6))
    np.testing.assert_allclose(project_simplex(p), p, atol=1e-15)
    np.testing.assert_allclose(project_simplex(np.array([5.0, 0.0, -1.0])), [1.0, 0.0, 0.0])


# ----------------------------------------------------------------- exact solver


def test_cvxpy_matches_numpy_fallback():
    _needs_cvxpy()
    for seed in (1, 2):
        M0, X_src = _small_problem(seed)
        q_cvx = minimize_discrepancy_cvxpy(M0, X_src, 1e-3)
        q_np = minimize_discrepancy_smoothed(M0, X_src, 1e-3)
        f_cvx = discrepancy_objective(q_cvx, M0, X_src, 1e-3)
        f_np = discrepancy_objective(q_np, M0, X_src, 1e-3)
        assert abs(f_cvx - f_np) <= 1e-3
        # the SDP is the exact optimum: the first-order method cannot beat it by more
        # than the solver tolerance
        assert f_cvx <= f_np + 1e-6
        for q in (q_cvx, q_np):
            assert q.min() >= 0 and q.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["smoothed", "cvxpy"])
def test_solution_beats_feasible_points(method):
    if method == "cvxpy":
        _needs_cvxpy()
    M0, X_src = _small_problem(3, m=25)
    lam = 0.01
    q = minimize_discrepancy(M0, X_src, lam, method=method)
    f = discrepancy_objective(q, M0, X_src, lam)
    rng = np.random.default_rng(3)
    others = [np.full(25, 1 / 25), *np.eye(25), *rng.dirichlet(np.ones(25) * 0.2, size=200)]
    assert all(f <= discrepancy_objective(p, M0, X_src, lam) + 1e-7 for p in others)


@pytest.mark.parametrize("solver", ["CLARABEL", "SCS"])
def test_sdp_solvers_agree(solver):
    cp = _needs_cvxpy()
    if solver not in cp.installed_solvers():
        pytest.skip(f"{solver} not installed")
    M0, X_src = _small_problem(4)
    ref = discrepancy_objective(minimize_discrepancy_smoothed(M0, X_src, 1e-3), M0, X_src, 1e-3)
    q = minimize_discrepancy_cvxpy(M0, X_src, 1e-3, solver=solver)
    assert discrepancy_objective(q, M0, X_src, 1e-3) == pytest.approx(ref, abs=1e-3)


def test_zero_discrepancy_when_target_is_reweighted_source():
    _needs_cvxpy()
    # M0 is exactly a convex combination of the x_i x_i^T: optimum ||M(q)|| = 0 at lam = 0
    rng = np.random.default_rng(5)
    X_src = rng.normal(size=(12, 3))
    p = rng.dirichlet(np.ones(12))
    M0 = second_moment(X_src, p)
    q = minimize_discrepancy_cvxpy(M0, X_src, 0.0)
    assert spectral_norm(discrepancy_matrix(M0, X_src, q)) <= 1e-6


def test_bad_inputs_exact():
    with pytest.raises(ValueError, match="method"):
        minimize_discrepancy(np.eye(2), np.ones((3, 2)), method="magic")
    with pytest.raises(ValueError, match="lam"):
        minimize_discrepancy(np.eye(2), np.ones((3, 2)), -1.0)
    with pytest.raises(ValueError, match="columns"):
        minimize_discrepancy(np.eye(2), np.ones((3, 4)))
    with pytest.raises(ValueError, match="alpha"):
        weighted_ridge(np.ones((3, 2)), np.ones(3), np.ones(3), -1.0)
    with pytest.raises(ValueError, match="sample_weight"):
        weighted_ridge(np.ones((3, 2)), np.ones(3), -np.ones(3), 1.0)


def test_gap_stop_keeps_the_smoothing_accuracy():
    # the Frank-Wolfe gap stop ends a stage within a tenth of its smoothing error
    # log(2d)/mu; the final stage's is 1e-4 of the uniform weights' discrepancy (default
    # mu_final), so stopping early costs at most ~1.1e-4 of it against running every stage
    # to max_iter
    for seed in (1, 7):
        M0, X_src = _small_problem(seed, m=60)
        disc_uniform = spectral_norm(discrepancy_matrix(M0, X_src, np.full(60, 1 / 60)))
        f_stop = discrepancy_objective(minimize_discrepancy_smoothed(M0, X_src), M0, X_src, 1e-3)
        f_full = discrepancy_objective(minimize_discrepancy_smoothed(M0, X_src, gap_tol=0.0),
                                       M0, X_src, 1e-3)
        assert abs(f_stop - f_full) <= 1.1e-4 * disc_uniform


def test_cvxpy_solver_without_cvxpy_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # `import cvxpy` now raises ImportError
    M0, X_src = _small_problem(6, m=10)
    with pytest.raises(ImportError, match=r"pip install \"skhybrid\[exact\]\""):
        minimize_discrepancy(M0, X_src, method="cvxpy")
    q = minimize_discrepancy(M0, X_src)  # the default needs nothing extra
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0)


# ----------------------------------------------------------------- weighted ridge


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_weighted_ridge_matches_sklearn(fit_intercept):
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 4))
    y = X @ rng.normal(size=4) + 0.5 + rng.normal(size=30) * 0.1
    q = rng.dirichlet(np.ones(30))
    coef, b = weighted_ridge(X, y, q, 0.05, fit_intercept=fit_intercept)
    ref = Ridge(alpha=0.05, fit_intercept=fit_intercept, solver="cholesky").fit(X, y, sample_weight=q)
    np.testing.assert_allclose(coef, ref.coef_, rtol=1e-10, atol=1e-12)
    assert b == pytest.approx(ref.intercept_, abs=1e-10)


# ----------------------------------------------------------------- §7 data


def test_data_generator_matches_section_7():
    D = make_adaptation_data(4000, 3000, 100, random_state=0)
    d = 10
    sigma2 = 1 / (9 * d)
    assert D.X_source.shape == (4000, d) and D.X_target.shape == (3000, d)
    assert D.X_test.shape == (100, d) and D.y_test.shape == (100,)
    np.testing.assert_allclose(D.mean_target, np.tile([-1, 1], 5) / np.sqrt(20))
    np.testing.assert_allclose(D.mean_other, np.ones(d) / np.sqrt(20))
    assert D.sigma**2 == pytest.approx(sigma2)
    # target: mean and spherical covariance sigma^2 I
    np.testing.assert_allclose(D.X_target.mean(0), D.mean_target, atol=4 * np.sqrt(sigma2 / 3000))
    cov = np.cov(D.X_target.T)
    np.testing.assert_allclose(cov, sigma2 * np.eye(d), atol=0.15 * sigma2)
    # source: 25 % from the target Gaussian, the component means are right
    assert D.source_from_target.mean() == pytest.approx(0.25, abs=0.03)
    np.testing.assert_allclose(
        D.X_source[D.source_from_target].mean(0), D.mean_target, atol=0.02
    )
    np.testing.assert_allclose(
        D.X_source[~D.source_from_target].mean(0), D.mean_other, atol=0.02
    )
    # noise-free labels
    np.testing.assert_array_equal(D.y_target, adaptation_label(D.X_target))
    # seeded: reproducible
    D2 = make_adaptation_data(4000, 3000, 100, random_state=0)
    np.testing.assert_array_equal(D.X_source, D2.X_source)


def test_label_function_by_hand():
    X = np.array([[1.0, 3.0, 0.0, 0.0], [-1.0, -3.0, 0.0, 0.0]])
    # u.x = 4 / 2 = 2 > 0 -> 2 ; u.x = -2 -> -1
    np.testing.assert_allclose(adaptation_label(X), [2.0, -1.0])


def test_exact_adaptation_on_section_7_data():
    D = make_adaptation_data(300, 1000, 5000, random_state=1)
    M0 = second_moment(D.X_target)
    m = 300
    uniform = np.full(m, 1 / m)
    q = minimize_discrepancy(M0, D.X_source, 1e-3)
    disc_uniform = spectral_norm(discrepancy_matrix(M0, D.X_source, uniform))
    disc_exact = spectral_norm(discrepancy_matrix(M0, D.X_source, q))
    assert disc_exact < 0.05 * disc_uniform
    # the weight moves onto the source rows drawn from the target Gaussian
    assert q[D.source_from_target].sum() > 0.9

    def mse(coef):
        return np.mean((D.X_test @ coef - D.y_test) ** 2)

    alpha = 1e-4
    mse_public = mse(weighted_ridge(D.X_source, D.y_source, uniform, alpha)[0])
    mse_exact = mse(weighted_ridge(D.X_source, D.y_source, q, alpha)[0])
    mse_oracle = mse(weighted_ridge(D.X_target, D.y_target, np.full(1000, 1e-3), alpha)[0])
    assert mse_oracle < mse_exact < 0.8 * mse_public
