"""The Goldfarb–Idnani solver behind HardMarginLinearSVC: exact optimum, any pool, failures."""

import numpy as np
import pytest

from skhybrid.transfer._dual_active_set import min_norm_dual_active_set


def _rows(m, p, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    y = np.sign(X @ rng.normal(size=p))
    return y[:, None] * X


def _cvxpy_min_norm(Z):
    # the reference solver is optional (skhybrid[exact]); only these comparisons need it
    cp = pytest.importorskip("cvxpy")
    v = cp.Variable(Z.shape[1])
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), [Z @ v >= 1]).solve(solver=cp.CLARABEL)
    return v.value


@pytest.mark.parametrize("m, p, pool", [(60, 4, "all"), (500, 12, "one"), (2000, 30, "all"),
                                        (2000, 30, "one")])
def test_exact_optimum_and_kkt(m, p, pool):
    Z = _rows(m, p, seed=m + p)
    start = np.arange(m) if pool == "all" else [0]
    v, active, u, steps, scans = min_norm_dual_active_set(Z, pool=start, growth=7)
    np.testing.assert_allclose(v, _cvxpy_min_norm(Z), atol=1e-5)
    # KKT: feasible, tight and u ≥ 0 on the active set, v = Z_Aᵀu
    assert (Z @ v).min() >= 1 - 1e-9
    np.testing.assert_allclose(Z[active] @ v, 1.0, atol=1e-9)
    assert np.all(u >= 0)
    np.testing.assert_allclose(Z[active].T @ u, v, atol=1e-9)
    assert steps >= active.size and scans >= 1
    if pool == "one":
        assert scans > 1  # the rows outside the pool were pulled in by full scans


def test_pool_changes_path_not_answer():
    Z = _rows(1500, 20, seed=3)
    a = min_norm_dual_active_set(Z, pool=np.arange(1500))
    b = min_norm_dual_active_set(Z, pool=np.arange(5), growth=3)
    np.testing.assert_allclose(a[0], b[0], atol=1e-10)
    assert set(a[1]) == set(b[1])


def test_infeasible_and_caps_raise():
    Z = np.array([[1.0, 0.0], [-1.0, 0.0]])  # v₁ ≥ 1 and −v₁ ≥ 1
    with pytest.raises(ValueError, match="infeasible"):
        min_norm_dual_active_set(Z, pool=[0, 1])
    Z = _rows(400, 10, seed=1)
    with pytest.raises(ValueError, match="1 scans"):
        min_norm_dual_active_set(Z, pool=[0], growth=1, max_scans=1)
    with pytest.raises(ValueError, match="3 steps"):
        min_norm_dual_active_set(Z, pool=np.arange(400), max_steps=3)
