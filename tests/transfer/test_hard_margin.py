"""HardMarginLinearSVC: exactness against cvxpy, warm starts, non-separable data, STR wiring."""

import numpy as np
import pytest

from skhybrid.transfer import HardMarginLinearSVC, NotSeparableError, SubsampleTestReweigh


def _separable(n, d, seed, margin=0.05, offset=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    f = X @ w + offset
    keep = np.abs(f) > margin * np.linalg.norm(w)
    return X[keep], np.where(f[keep] > 0, 1, -1)


def _cvxpy_hard_margin(X, y, fit_intercept=True):
    # the reference solver is optional (skhybrid[exact]); only these comparisons need it
    cp = pytest.importorskip("cvxpy")
    w = cp.Variable(X.shape[1])
    b = cp.Variable() if fit_intercept else 0.0
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w)),
               [cp.multiply(y, X @ w + b) >= 1]).solve(solver=cp.CLARABEL)
    return w.value, (b.value if fit_intercept else 0.0)


@pytest.mark.parametrize("seed, n, d", [(0, 200, 5), (1, 400, 10), (2, 150, 30)])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("solver", ["active-set", "interior-point"])
def test_matches_cvxpy_exact_qp(seed, n, d, fit_intercept, solver):
    X, y = _separable(n, d, seed, offset=0.3 if fit_intercept else 0.0)
    clf = HardMarginLinearSVC(fit_intercept=fit_intercept, working_set_size=d + 2,
                              batch_size=5, solver=solver).fit(X, y)
    w, b = _cvxpy_hard_margin(X, y, fit_intercept)
    np.testing.assert_allclose(clf.coef_.ravel(), w, atol=1e-4)
    assert abs(clf.intercept_[0] - b) < 1e-4
    margins = y * clf.decision_function(X)
    assert margins.min() >= 1 - 1e-6
    # the support vectors sit on the margin and reconstruct w (SVC's dual_coef_ convention)
    np.testing.assert_allclose(margins[clf.support_], 1.0, atol=1e-6)
    np.testing.assert_allclose(clf.dual_coef_ @ X[clf.support_], clf.coef_, atol=1e-6)
    assert clf.n_iter_ >= 2  # the small first working set forced real working-set rounds


def test_worked_example_and_labels():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [3.0, 1.0]])
    clf = HardMarginLinearSVC().fit(X, np.array(["a", "a", "b", "b"]))
    # parallel class segments at distance √2: w = (1, −1), b = −1
    np.testing.assert_allclose(clf.coef_, [[1.0, -1.0]], atol=1e-9)
    np.testing.assert_allclose(clf.intercept_, [-1.0], atol=1e-9)
    assert clf.predict([[0.5, 0.0], [2.5, 0.0]]).tolist() == ["a", "b"]


def test_warm_start_same_solution_fewer_or_equal_rounds():
    # (a pool of 30 < 2(d + 1) rows: the warm fit starts from the previous support)
    X, y = _separable(3000, 20, 3)
    rng = np.random.default_rng(0)
    cold = HardMarginLinearSVC(working_set_size=30)
    warm = HardMarginLinearSVC(working_set_size=30, warm_start=True)
    warm.fit(X, y)
    for _ in range(3):
        idx = rng.choice(len(y), 2000)
        cold.fit(X[idx], y[idx])
        warm.fit(X[idx], y[idx])
        np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)
        np.testing.assert_allclose(warm.intercept_, cold.intercept_, atol=1e-6)
        assert warm.n_iter_ <= cold.n_iter_


def _app_c_like(n, d, seed, k=5, sigma=0.02, alpha=0.02):
    # KS App. C: source N(0, I_d), target halfspace on k coordinates at threshold σΦ⁻¹(α)
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[:k] = 1 / np.sqrt(k)
    return X, np.where(X @ w > sigma * norm.ppf(alpha), 1, -1)


@pytest.mark.parametrize("data", ["app_c", "random"])
def test_warm_support_start_matches_cold(data, monkeypatch):
    # STR-like successive subsamples: the warm fit starts its active set from a guess of
    # the support (the rows a squared-hinge Newton solve from the previous hyperplane
    # leaves violated), and must return the cold fit's unique optimum
    from skhybrid.transfer import _hard_margin

    X, y = _app_c_like(6000, 40, 0) if data == "app_c" else _separable(6000, 40, 1, 0.01)
    starts, steps = [], []
    solve = _hard_margin.min_norm_dual_active_set

    def spy(Z, **kw):
        out = solve(Z, **kw)
        starts.append(0 if kw["start"] is None else len(kw["start"]))
        steps.append(out[3])
        return out

    monkeypatch.setattr(_hard_margin, "min_norm_dual_active_set", spy)
    rng = np.random.default_rng(1)
    warm = HardMarginLinearSVC(warm_start=True)
    for _ in range(4):
        idx = rng.choice(len(y), 3000)  # with replacement: duplicate rows, as STR draws
        warm.fit(X[idx], y[idx])
        cold = HardMarginLinearSVC().fit(X[idx], y[idx])
        np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(warm.intercept_, cold.intercept_, rtol=1e-9, atol=1e-9)
        assert np.array_equal(np.unique(idx[warm.support_]), np.unique(idx[cold.support_]))
    assert min(starts[2::2]) > 0  # later warm fits did start from a guessed active set
    # ... of at least d + 1 rows
    assert min(starts[2::2]) >= X.shape[1] + 1
    assert sum(steps[2::2]) < sum(steps[3::2])  # ... and took fewer steps than cold fits


def test_solvers_agree_on_larger_problem():
    X, y = _separable(3000, 40, 7, margin=0.02)
    a = HardMarginLinearSVC(solver="active-set").fit(X, y)
    b = HardMarginLinearSVC(solver="interior-point").fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-6, atol=1e-6)
    assert np.array_equal(np.sort(a.support_), np.sort(b.support_))


def test_active_set_far_from_origin():
    # |b| ≈ 50·‖w‖: the scaled intercept column must still give the unpenalised optimum
    # (the interior-point solver's normal equations are too ill-conditioned here)
    X, y = _separable(600, 8, 4, margin=0.05)
    X = X + 50.0
    clf = HardMarginLinearSVC().fit(X, y)
    w, b = _cvxpy_hard_margin(X, y)
    np.testing.assert_allclose(clf.coef_.ravel(), w, rtol=1e-5, atol=1e-5)
    assert abs(clf.intercept_[0] - b) <= 1e-5 * abs(b)
    assert abs(b) > 10 * np.linalg.norm(w)


def test_active_set_falls_back_when_kkt_check_fails(monkeypatch, capsys):
    from skhybrid.transfer import _hard_margin

    X, y = _separable(400, 10, 3)
    exact = HardMarginLinearSVC(solver="interior-point").fit(X, y)
    calls = []

    def no_polish(Z, v, lam, fit_intercept):  # keep the penalised-intercept point
        calls.append(1)
        return v, lam

    monkeypatch.setattr(_hard_margin, "_polish", no_polish)
    clf = HardMarginLinearSVC(verbose=1).fit(X, y)
    assert "KKT check failed" in capsys.readouterr().out
    assert calls  # the check ran and rejected the un-polished point
    np.testing.assert_allclose(clf.coef_, exact.coef_, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, exact.intercept_, atol=1e-6)


def test_sample_weight_zero_drops_rows_positive_ignored():
    X, y = _separable(300, 4, 4)
    sw = np.random.default_rng(1).uniform(0.5, 3, size=len(y))
    a = HardMarginLinearSVC().fit(X, y)
    b = HardMarginLinearSVC().fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    sw0 = np.ones(len(y))
    sw0[a.support_[0]] = 0.0
    c = HardMarginLinearSVC().fit(X, y, sample_weight=sw0)
    keep = sw0 > 0
    d = HardMarginLinearSVC().fit(X[keep], y[keep])
    np.testing.assert_allclose(c.coef_, d.coef_, atol=1e-8)
    with pytest.raises(ValueError, match="non-negative"):
        HardMarginLinearSVC().fit(X, y, sample_weight=-sw)


def test_non_separable_raises_clear_error():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 3))
    y = np.where(rng.random(200) < 0.5, 1, -1)  # random labels: not separable in 3-d
    for solver in ("active-set", "interior-point"):
        with pytest.raises(NotSeparableError, match="not linearly separable"):
            HardMarginLinearSVC(solver=solver).fit(X, y)
    assert issubclass(NotSeparableError, ValueError)
    with pytest.raises(ValueError, match="two classes"):
        HardMarginLinearSVC().fit(X, np.ones(200))


def _gauss_shift(n_c, n_l, d=10, k=2, seed=0):
    rng = np.random.default_rng(seed)
    w = np.zeros(d)
    w[:k] = 1.0
    Xs = rng.normal(size=(n_c, d))
    Xt = rng.normal(size=(n_l, d))
    Xt[:, :k] *= 0.1
    X = np.vstack([Xs, Xt])
    y = np.where(X @ w > -0.05, 1, -1)
    return X, y, np.r_[np.ones(n_c, bool), np.zeros(n_l, bool)]


def test_str_warm_start_gives_identical_run():
    X, y, mask = _gauss_shift(1500, 800)
    kw = dict(epsilon=np.inf, alpha=0.02, max_iter=15, subsample_size=300, random_state=0)
    a = SubsampleTestReweigh(HardMarginLinearSVC(), **kw).fit(X, y, curator_mask=mask)
    b = SubsampleTestReweigh(HardMarginLinearSVC(), warm_start=True, **kw).fit(
        X, y, curator_mask=mask)
    np.testing.assert_array_equal(a.target_error_estimates_, b.target_error_estimates_)
    np.testing.assert_allclose(a.hypothesis_.coef_, b.hypothesis_.coef_, atol=1e-6)
    assert b.privacy_params_["warm_start"] is True


def test_str_fast_path_matches_reference_path(monkeypatch):
    # The optimised path (each drawn row once, gathered into one reused buffer, the
    # solver's entering-row shortlist) against the reference one (the subsample as drawn,
    # a fresh array per round, the pool's most violated row every time): the same
    # hypotheses, so the same test decisions and MW updates in every round.
    import functools

    from skhybrid.transfer import _hard_margin
    from skhybrid.transfer._dual_active_set import min_norm_dual_active_set

    X, y, mask = _gauss_shift(3000, 1500, d=40, k=3, seed=1)
    kw = dict(epsilon=np.inf, alpha=0.02, max_iter=12, subsample_size=2500, tau=0.0,
              warm_start=True, random_state=0, classes=[-1, 1])
    fast = SubsampleTestReweigh(HardMarginLinearSVC(), **kw).fit(X, y, curator_mask=mask)

    class AsDrawn(HardMarginLinearSVC):
        _fit_depends_on_distinct_rows_only = False

    monkeypatch.setattr(_hard_margin, "min_norm_dual_active_set",
                        functools.partial(min_norm_dual_active_set, shortlist=0))
    ref = SubsampleTestReweigh(AsDrawn(), **kw).fit(X, y, curator_mask=mask)
    assert ref.n_iter_ == fast.n_iter_ == 12
    np.testing.assert_array_equal(fast.target_error_estimates_, ref.target_error_estimates_)
    np.testing.assert_allclose(fast.hypothesis_.coef_, ref.hypothesis_.coef_, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(fast.hypothesis_.intercept_, ref.hypothesis_.intercept_,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(fast.predict(X), ref.predict(X))


@pytest.mark.parametrize("declared", [True, False])
def test_str_reuses_its_gather_buffer_only_for_a_learner_that_declares_it(declared):
    # A learner refitted in place that keeps no view of X may get each round's rows in
    # one reused buffer; the class must say so itself (a subclass may keep X).
    X, y, mask = _gauss_shift(1500, 800)
    bases = []

    class Spy(HardMarginLinearSVC):
        _fit_depends_on_distinct_rows_only = True
        _fit_keeps_no_view_of_X = declared

        def fit(self, X, y, sample_weight=None):
            bases.append(X.base)
            return super().fit(X, y, sample_weight=sample_weight)

    SubsampleTestReweigh(Spy(), epsilon=np.inf, alpha=0.02, max_iter=4, subsample_size=300,
                         tau=0.0, warm_start=True, random_state=0).fit(X, y, curator_mask=mask)
    assert len(bases) == 4
    if declared:
        assert bases[0] is not None and all(b is bases[0] for b in bases)
    else:
        assert all(b is None for b in bases)  # fresh arrays (fancy indexing)


def test_str_warm_start_errors():
    X, y, mask = _gauss_shift(200, 100)
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB

    with pytest.raises(ValueError, match="warm_start parameter"):
        SubsampleTestReweigh(GaussianNB(), epsilon=np.inf, warm_start=True,
                             max_iter=2).fit(X, y, curator_mask=mask)
    with pytest.raises(ValueError, match="only available\\s+with epsilon=np.inf|epsilon=np.inf"):
        SubsampleTestReweigh(epsilon=1.0, warm_start=True, max_iter=2).fit(
            X, y, curator_mask=mask)
    # LogisticRegression has warm_start: accepted
    SubsampleTestReweigh(LogisticRegression(), epsilon=np.inf, warm_start=True, max_iter=3,
                         random_state=0).fit(X, y, curator_mask=mask)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_polish_vertex_shortcut_matches_kkt_system(fit_intercept):
    # p active rows: the LU shortcut must give the (v, λ) of the full KKT system, and keep
    # the input when that point has a negative multiplier
    from skhybrid.transfer._hard_margin import _polish

    p, kept, moved = 7, 0, 0
    d = p - 1 if fit_intercept else p
    P = np.diag(np.r_[np.ones(d), np.zeros(p - d)])
    for seed in range(20):
        rng = np.random.default_rng(seed)
        Za = np.eye(p) + 0.1 * rng.normal(size=(p, p))
        v_ref = np.linalg.solve(Za, np.ones(p))
        lam_ref = np.linalg.solve(Za.T, P @ v_ref)
        others = 10 * np.abs(rng.normal(size=(5, p)))
        Z = np.vstack([Za, others * np.sign(others @ v_ref)[:, None]])  # feasible rows
        v, lam = _polish(Z, np.zeros(p), np.r_[np.ones(p), np.zeros(5)], fit_intercept)
        if np.all(lam_ref >= 0):
            moved += 1
            np.testing.assert_allclose(v, v_ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(lam[:p], lam_ref, rtol=1e-10, atol=1e-12)
            assert np.all(lam[p:] == 0)
        else:
            kept += 1
            assert np.array_equal(v, np.zeros(p))
    assert moved > 0 and (kept > 0 or not fit_intercept)


def test_factor_drop_same_as_public_qr_delete():
    # _Factor.drop calls qr_delete without scipy's batching wrapper: the factor must be
    # the public function's, bit for bit, and still factor the remaining active rows
    from scipy.linalg import qr_delete

    from skhybrid.transfer._dual_active_set import _Factor

    rng = np.random.default_rng(0)
    p, q = 12, 8
    N = rng.normal(size=(q, p))  # the active rows
    fac = _Factor(p)
    for n in N:
        fac.add(fac.J.T @ n)
    n_new = rng.normal(size=p)  # an entering row, carried along the drop
    for k in (2, 0, q - 3):
        q = fac.q
        d = fac.J.T @ n_new
        R = fac.R[:, :q + 1].copy(order="F")
        R[:q, q] = d[:q]
        J_ref, R_ref = qr_delete(fac.J.copy(order="F"), R, k, which="col",
                                 check_finite=False)
        fac.drop(k, d)
        N = np.delete(N, k, axis=0)
        assert np.array_equal(fac.J, J_ref)
        assert np.array_equal(fac.R[:q - 1, :q - 1], R_ref[:q - 1, :q - 1])
        assert np.array_equal(d[:q - 1], R_ref[:q - 1, q - 1])
        np.testing.assert_allclose(fac.J.T @ fac.J, np.eye(p), atol=1e-12)
        np.testing.assert_allclose(fac.J[:, :q - 1] @ fac.R[:q - 1, :q - 1], N.T, atol=1e-12)
        np.testing.assert_allclose(d, fac.J.T @ n_new, atol=1e-12)


def test_separable_but_badly_scaled_raw_breast_cancer_is_solved_exactly():
    # Raw breast_cancer (features on scales 1e-3 to 4e3) is separable (its standardised
    # copy is, and standardising is affine); the active-set solver once took genuine
    # components of ~1e-7·|n| for linear dependence and called it "not separable".
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    clf = HardMarginLinearSVC().fit(X, y)
    s = np.where(y == clf.classes_[1], 1.0, -1.0)
    w, b = clf.coef_.ravel(), float(clf.intercept_[0])
    margins = s * (X @ w + b)
    alpha = clf.dual_coef_.ravel()  # = s_i u_i on the support vectors
    # KKT of min ½|w|² s.t. margins ≥ 1: feasible, u ≥ 0, tight on the support,
    # w = Σ u_i s_i x_i and Σ u_i s_i = 0 -- the optimum (the problem is convex).
    assert margins.min() >= 1.0 - clf.tol
    assert np.all(alpha * s[clf.support_] > 0)
    np.testing.assert_allclose(margins[clf.support_], 1.0, atol=1e-6)
    np.testing.assert_allclose(alpha @ X[clf.support_], w, rtol=1e-6, atol=1e-6 * np.abs(w).max())
    assert abs(alpha.sum()) <= 1e-8 * np.abs(alpha).sum()


def _badly_scaled(seed, n=40, d=5, fit_intercept=True):
    # columns on scales 1e-6 to 1e6 (the hyperplane scaled to match), a 70 % subsample
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.uniform(-6, 6, size=d)
    w, b = rng.normal(size=d), (rng.normal() if fit_intercept else 0.0)
    X = rng.normal(size=(4 * n, d)) * scale
    m = X @ (w / scale) + b
    keep = np.abs(m) > 0.05 * np.linalg.norm(w)
    X, y = X[keep][:n], (m[keep][:n] > 0).astype(int)
    return X, y, rng.random(len(y)) < 0.7


@pytest.mark.parametrize("seed", [30, 117, 261])
def test_a_warm_fit_on_badly_scaled_features_ends_where_the_cold_fit_does(seed):
    # Red team 23: float64 lost the warm path (NotSeparableError) on data a cold fit solves;
    # the cold fit now decides before anything is raised.
    X, y, sub = _badly_scaled(seed)
    cold = HardMarginLinearSVC().fit(X, y)
    warm = HardMarginLinearSVC(warm_start=True).fit(X[sub], y[sub]).fit(X, y)
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=1e-9)
    np.testing.assert_allclose(warm.intercept_, cold.intercept_, rtol=1e-9)


def test_without_intercept_a_fit_that_lost_stationarity_is_not_returned(monkeypatch):
    # Red team 23: without an intercept the active-set result was returned unchecked; on
    # badly scaled features (column scales 1e-5 to 1e6) its v = Σ uᵢzᵢ was off by 8-19 %
    # of ‖v‖: a non-optimal fit. Now checked: a solve whose v has drifted off its
    # multipliers (simulated here) is finished by the interior-point solver.
    from skhybrid.transfer import _hard_margin

    X, y = _separable(400, 10, 4, offset=0.0)
    exact = HardMarginLinearSVC(fit_intercept=False).fit(X, y)
    solve = _hard_margin.min_norm_dual_active_set

    def drifted(Z, **kw):
        v, act, u, steps, scans = solve(Z, **kw)
        return v * (1 + 1e-3), act, u, steps, scans

    monkeypatch.setattr(_hard_margin, "min_norm_dual_active_set", drifted)
    clf = HardMarginLinearSVC(fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(clf.coef_, exact.coef_, rtol=1e-8)
