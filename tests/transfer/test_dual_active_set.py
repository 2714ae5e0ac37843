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


def test_warm_factor_is_dual_feasible_and_exact():
    from skhybrid.transfer._dual_active_set import _warm_factor

    Z = _rows(800, 15, seed=5)
    # more rows than dimensions, duplicates and rows with negative multipliers
    start = np.r_[np.arange(40), [3, 3, 7]]
    u = np.zeros(Z.shape[1] + 1)
    fac, active = _warm_factor(Z, start, u)
    q = len(active)
    assert 0 < q <= Z.shape[1] and fac.q == q and len(set(active)) == q
    assert set(active) <= set(start)
    np.testing.assert_allclose(fac.J.T @ fac.J, np.eye(Z.shape[1]), atol=1e-12)
    np.testing.assert_allclose(fac.J[:, :q] @ fac.R[:q, :q], Z[active].T, atol=1e-10)
    assert np.all(u[:q] >= 0)
    v = Z[active].T @ u[:q]
    np.testing.assert_allclose(Z[active] @ v, 1.0, atol=1e-9)  # the active rows are tight


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_warm_start_changes_path_not_answer(seed):
    # a related problem (overlapping rows, as STR's successive subsamples) gives the start
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4000, 25))
    y = np.sign(X @ rng.normal(size=25))
    Zall = y[:, None] * X
    old = rng.choice(4000, 2500, replace=False)
    new = rng.choice(4000, 2500, replace=False)
    _, act_old, *_ = min_norm_dual_active_set(Zall[old], pool=np.arange(100), growth=30)
    pos = {r: i for i, r in enumerate(new)}
    start = [pos[r] for r in old[act_old] if r in pos]
    assert start  # some previous support vectors are rows of the new problem
    Z = Zall[new]
    cold = min_norm_dual_active_set(Z, pool=np.arange(100), growth=30)
    warm = min_norm_dual_active_set(Z, pool=np.arange(100), growth=30, start=start)
    rand = min_norm_dual_active_set(Z, pool=np.arange(100), growth=30,
                                    start=rng.choice(2500, 60, replace=False))
    # the start completed by the pool's most violated rows (none, once, three times)
    refills = [min_norm_dual_active_set(Z, pool=np.arange(100), growth=30, start=start,
                                        refill=k) for k in (0, 3)]
    for other in (warm, rand, *refills):
        np.testing.assert_allclose(other[0], cold[0], rtol=1e-10, atol=1e-10)
        assert set(other[1]) == set(cold[1])
        assert np.all(other[2] >= 0)
    assert warm[3] < cold[3]  # fewer add/drop steps


@pytest.mark.parametrize("seed", [0, 1])
def test_shortlist_changes_path_not_answer(seed):
    # shortlist=0 is the reference path (the pool's most violated row enters every time);
    # the shortlist picks other violated rows, so the path differs but not the optimum
    Z = _rows(3000, 40, seed=seed)
    ref = min_norm_dual_active_set(Z, pool=np.arange(600), growth=20, shortlist=0)
    for shortlist in (8, 64):
        fast = min_norm_dual_active_set(Z, pool=np.arange(600), growth=20, shortlist=shortlist)
        np.testing.assert_allclose(fast[0], ref[0], rtol=1e-10, atol=1e-12)
        assert set(fast[1]) == set(ref[1])
        np.testing.assert_allclose(fast[2][np.argsort(fast[1])], ref[2][np.argsort(ref[1])],
                                   rtol=1e-8, atol=1e-12)


def test_start_at_the_final_support_takes_no_step_on_ill_conditioned_rows():
    # HardMarginLinearSVC's rows carry an intercept column c ≈ 10³·‖x‖, which makes the
    # active rows' condition number ~10⁵-10⁶. The start's optimum must come from the
    # factor (v = J₁R⁻ᵀ1), not from the normal equations' multipliers (whose error is
    # squared): from those, the exact support in another order left violations above tol
    # and took ~40 steps to undo.
    from skhybrid.transfer._hard_margin import _SignedRows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 40))
    s = np.where(X[:, :5].sum(axis=1) / np.sqrt(5) > -0.04, 1.0, -1.0)
    Z = _SignedRows(X, s, 1e3 * np.sqrt((X ** 2).sum(axis=1).mean()))
    v, active, *_ = min_norm_dual_active_set(Z, pool=np.arange(3000))
    for seed in range(3):
        start = np.random.default_rng(seed).permutation(active)
        v2, active2, u2, steps, _ = min_norm_dual_active_set(Z, pool=np.arange(3000),
                                                             start=start)
        assert steps == 0
        assert set(active2) == set(active)
        np.testing.assert_allclose(v2, v, rtol=0, atol=1e-9 * np.linalg.norm(v))
