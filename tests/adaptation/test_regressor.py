"""DiscrepancyAdaptationRegressor: utility, accounting, noise spy, label blindness, routing."""

import math
import sys
import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid.accounting import BudgetExceededError, PrivacyAccountant
from skhybrid.accounting import _composition as comp
from skhybrid.adaptation._data import make_adaptation_data
from skhybrid.adaptation._exact import weighted_ridge
from skhybrid.adaptation._regressor import DiscrepancyAdaptationRegressor
from skhybrid.adaptation._solvers import (
    moments_sensitivity,
    pnorm_prox_simplex,
    project_psd,
)
from skhybrid.adaptation._exact import project_simplex
from skhybrid.mechanisms._noise import record_noise

DELTA = 1e-5


def DAR(**params):
    """The estimator in the paper's setting (rows of norm <= 1, centred labels, no intercept)."""
    params.setdefault("data_norm", 1.0)
    params.setdefault("fit_intercept", False)
    return DiscrepancyAdaptationRegressor(**params)


def _stack(D, private_y=np.nan):
    m, n = len(D.X_source), len(D.X_target)
    X = np.vstack([D.X_source, D.X_target])
    y = np.concatenate([D.y_source, np.full(n, private_y)])
    return X, y, np.arange(m + n) < m


@pytest.fixture(scope="module")
def small():
    return make_adaptation_data(60, 300, 200, d=4, random_state=1)


def _mse(reg, D):
    return float(np.mean((reg.predict(D.X_test) - D.y_test) ** 2))


# ----------------------------------------------------------------------------- utility


def test_exact_and_noisy_moments_beat_public_only():
    D = make_adaptation_data(200, 4000, 4000, d=4, random_state=0)
    X, y, pub = _stack(D)
    w_pub, _ = weighted_ridge(D.X_source, D.y_source, np.full(200, 1 / 200), 1e-3)
    public_only = float(np.mean((D.X_test @ w_pub - D.y_test) ** 2))
    exact = DAR(epsilon=np.inf, solver="exact").fit(X, y, public_mask=pub)
    noisy = DAR(epsilon=10.0, delta=DELTA, random_state=0).fit(X, y, public_mask=pub)
    assert _mse(exact, D) < 0.7 * public_only
    assert _mse(noisy, D) < 0.7 * public_only
    for reg in (exact, noisy):
        q = reg.sample_weights_
        assert q.shape == (200,) and q.min() >= 0 and q.sum() == pytest.approx(1.0)
    # the noise is small at eps * n = 40000: the released moment is close to the truth
    M = noisy.target_moment_
    np.testing.assert_allclose(M, M.T)
    assert np.linalg.eigvalsh(M).min() >= -1e-12


def test_noisy_moments_without_noise_is_exact(small):
    X, y, pub = _stack(small)
    a = DAR(epsilon=np.inf, solver="exact").fit(X, y, public_mask=pub)
    b = DAR(epsilon=np.inf, solver="noisy-moments").fit(X, y, public_mask=pub)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-10)
    assert a.privacy_spent_["central"][0] == math.inf


def test_intercept_by_public_centring_is_shift_equivariant(small):
    X, y, pub = _stack(small)
    v, c = np.array([3.0, -2.0, 1.0, 0.5]), 4.0
    a = DAR(epsilon=np.inf, solver="exact", fit_intercept=True).fit(X, y, public_mask=pub)
    b = DAR(epsilon=np.inf, solver="exact", fit_intercept=True).fit(X + v, y + c,
                                                                    public_mask=pub)
    # The centred problems agree up to rounding, and the numpy stage-1 solver stops once
    # its optimality gap is certified small, so the two fits agree to its accuracy
    # (measured 1e-5 here), not to rounding; a centring error would move the predictions
    # by the shift, of order 1.
    np.testing.assert_allclose(b.predict(small.X_test + v), a.predict(small.X_test) + c,
                               atol=1e-4)
    np.testing.assert_allclose(a.sample_weights_, b.sample_weights_, atol=1e-4)


# ----------------------------------------------------------------------------- accounting

PRIVATE = [
    ("noisy-moments", {}),
    ("single-stage", {}),
    ("single-stage", {"selection": "exponential"}),
    ("two-stage-fw", {}),
    ("two-stage-md", {}),
]


@pytest.mark.parametrize("solver,extra", PRIVATE)
@pytest.mark.parametrize("eps", [0.5, 5.0])
def test_charges_exactly_the_calibrated_budget(small, solver, extra, eps):
    X, y, pub = _stack(small)
    acc = PrivacyAccountant(epsilon=eps, delta=DELTA)
    reg = DAR(epsilon=eps, delta=DELTA, solver=solver, max_iter=20, accountant=acc,
              random_state=0, **extra).fit(X, y, public_mask=pub)
    e, d = reg.privacy_spent_["central"]
    assert e == pytest.approx(eps, rel=1e-6) and e <= eps
    assert d <= DELTA
    assert acc.spent("central")[0] == pytest.approx(eps, rel=1e-6)
    assert reg.privacy_spent_["local"] == (0.0, 0.0)


def test_budget_refused_before_reading_private_rows(small):
    X, y, pub = _stack(small)
    acc = PrivacyAccountant(epsilon=0.5, delta=DELTA)
    X_bad = X.copy()
    X_bad[~pub] = 1e300  # would overflow M0 if read
    with pytest.raises(BudgetExceededError):
        DAR(epsilon=1.0, delta=DELTA, accountant=acc).fit(X_bad, y, public_mask=pub)
    assert acc.spent("central")[0] == 0.0
    with pytest.raises(BudgetExceededError):  # the non-private baseline is a release too
        DAR(epsilon=np.inf, solver="exact", accountant=acc).fit(X, y, public_mask=pub)


def test_paper_algorithm2_noise_overspends():
    """Algorithm 2's printed Laplace scale: per step eps/sqrt(2K log(1/delta)) (non-monotone
    report-noisy-min is 2 tau / b), which advanced composition takes above eps."""
    eps, delta, K = 1.0, 1 / 8000, 1000
    tau = 1.0  # 2 mu r^2 r_hat^2 / n in the paper's notation
    b_paper = 2 * tau * math.sqrt(2 * K * math.log(1 / delta)) / eps
    eps_step = 2 * tau / b_paper
    total, _ = comp.advanced_composition(eps_step, 0.0, K, delta)
    assert total > eps
    assert total == pytest.approx(eps + eps**2 / (2 * math.log(1 / delta)), rel=1e-3)
    # ours: the per-step eps0 actually composes to eps (and is larger than the paper's)
    eps0 = comp.calibrate_pure_epsilon(eps, delta, K)
    assert eps0 > eps_step


# ----------------------------------------------------------------------------- noise spy


def _tau(reg, X_src, n):
    r_hat = np.sqrt(np.max(np.sum(X_src**2, axis=1)))
    return min(reg.mu * reg.data_norm**2 / n, 2.0) * r_hat**2  # hand-written tight bound


@pytest.mark.parametrize("solver,extra", PRIVATE + [("exact", {})])
def test_noise_spy_matches_events(small, solver, extra):
    X, y, pub = _stack(small)
    K, eps = 7, 2.0
    m, n, d = pub.sum(), (~pub).sum(), X.shape[1]
    eps_arg = np.inf if solver == "exact" else eps
    reg = DAR(epsilon=eps_arg, delta=DELTA, solver=solver, max_iter=K, random_state=0,
              **extra)
    with record_noise() as draws:
        reg.fit(X, y, public_mask=pub)
    (event,) = reg.privacy_events_
    tau = _tau(reg, X[pub], n)
    if solver == "exact":
        assert draws == [] and event.kind == "nonprivate"
        return
    if solver == "noisy-moments":
        (draw,) = draws
        sigma = comp.analytic_gaussian_sigma(eps, DELTA, math.sqrt(2) / n)
        assert (draw.kind, draw.count) == ("discrete_gaussian", d * (d + 1) // 2)
        assert draw.scale >= sigma  # exact lattice noise, at least the continuous sigma
        # the released lattice noise realises at most the charged rho
        assert comp.zcdp_epsilon(event.rho, DELTA) <= eps * (1 + 1e-12)
        assert (math.sqrt(2) / n) ** 2 / (2 * draw.scale**2) <= event.rho * (1 + 1e-9)
        return
    assert len(draws) == K == event.count and all(w.count == m for w in draws)
    assert len({w.scale for w in draws}) == 1
    if solver == "two-stage-md":
        sigma = comp.calibrate_gaussian_sigma(eps, DELTA, K, tau * math.sqrt(m))
        assert draws[0].kind == "gaussian"
        assert draws[0].scale == pytest.approx(sigma, rel=1e-12)
        assert event.mu == pytest.approx(tau * math.sqrt(m) / sigma, rel=1e-12)
        return
    sens = tau * (4 * reg.coef_norm**2 if solver == "single-stage" else 1.0)
    if extra.get("selection") == "exponential":
        eps0 = comp.calibrate_pure_epsilon(eps, DELTA, K, zcdp_factor=0.125)
        assert draws[0].kind == "exact_exponential"
    else:
        eps0 = comp.calibrate_pure_epsilon(eps, DELTA, K)
        assert draws[0].kind == "discrete_laplace"
    assert event.epsilon == pytest.approx(eps0, rel=1e-12)
    # Exact lattice noise: never below the nominal 2Δ/ε0, above it by the lattice rounding
    # (a relative 2^-20 or so; the rate's dyadic rounding adds at most 2^-23).
    assert 2 * sens / eps0 <= draws[0].scale <= 2 * sens / eps0 * (1 + 2**-18)


def test_nonprivate_iterative_solvers_draw_nothing(small):
    X, y, pub = _stack(small)
    for solver in ("single-stage", "two-stage-fw", "two-stage-md"):
        with record_noise() as draws:
            reg = DAR(epsilon=np.inf, solver=solver, max_iter=5).fit(X, y, public_mask=pub)
        assert draws == [] and reg.privacy_events_[0].kind == "nonprivate"
        assert reg.n_iter_ == 5


# ----------------------------------------------------------------------------- labels


class _Poison:
    """A label whose every use raises: proves private labels are never read."""

    def __float__(self):
        raise AssertionError("a private label was read")

    __int__ = __index__ = __float__

    def __eq__(self, other):
        raise AssertionError("a private label was read")

    __hash__ = object.__hash__


@pytest.mark.parametrize("solver", ["noisy-moments", "single-stage", "two-stage-fw"])
def test_target_labels_never_read(small, solver):
    X, y, pub = _stack(small)
    y_obj = np.empty(len(y), dtype=object)
    y_obj[pub] = y[pub]
    y_obj[~pub] = [_Poison() for _ in range((~pub).sum())]
    kw = dict(epsilon=3.0, delta=DELTA, solver=solver, max_iter=10)
    a = DAR(random_state=5, **kw).fit(X, y_obj, public_mask=pub)
    rng = np.random.default_rng(0)
    y2 = y.copy()
    y2[~pub] = rng.normal(size=(~pub).sum()) * 1e6
    b = DAR(random_state=5, **kw).fit(X, y2, public_mask=pub)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.sample_weights_, b.sample_weights_)


@pytest.mark.parametrize("private_label", [np.nan, "unlabelled", 1 + 2j, [1, 2], None])
def test_target_labels_in_a_list_are_never_converted(small, private_label):
    # Red team 18: np.asarray of a whole list y took one dtype from every entry, so a
    # private entry of 1+2j or [1, 2] made the fit refuse; only public entries are read.
    X, y, pub = _stack(small)
    listed = [float(v) if p else private_label for v, p in zip(y, pub)]
    kw = dict(epsilon=3.0, delta=DELTA, max_iter=10, random_state=5)
    a = DAR(**kw).fit(X, listed, public_mask=pub)
    b = DAR(**kw).fit(X, np.where(pub, y, 0.0), public_mask=pub)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    with pytest.raises(ValueError, match="one entry per row of X"):
        DAR(**kw).fit(X, listed[:-1], public_mask=pub)


# ----------------------------------------------------------------------------- bad input


def test_a_private_row_whose_centring_overflows_is_clipped_not_refused():
    # Red team 18: public rows at x0 = -0.5e308 (a finite mean), a finite private row at
    # 1.5e308 centred to inf and the fit raised after the charge; its neighbour fitted.
    mask = np.array([True, True, True, False, False])
    y = np.array([0.0, 1.0, 2.0, np.nan, np.nan])
    for v in (0.0, 1.5e308):
        X = np.array([[-0.5e308, 0.0], [-0.5e308, 1.0], [-0.5e308, 2.0], [0.0, 0.0],
                      [v, 0.0]])
        acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
        reg = DAR(epsilon=1.0, delta=1e-5, data_norm=1.0, fit_intercept=True, accountant=acc,
                  random_state=0)
        assert np.isfinite(reg.fit(X, y, public_mask=mask).coef_).all()
        assert acc.spent("central")[0] > 0


@pytest.mark.parametrize("solver", ["noisy-moments", "two-stage-fw"])
@pytest.mark.parametrize("data_norm", [1e152, None])
def test_a_scale_beyond_float64_moments_is_refused_before_the_charge(solver, data_norm):
    # Red team 18: with data_norm=1e152, r²·n overflowed X^T X (or the selection scores)
    # after the charge for one neighbour and not the other. Both radii are public: refused
    # first, naming them.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)) * 1e100
    y = rng.normal(size=40)
    mask = np.arange(40) < 20
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = DAR(epsilon=1.0, delta=1e-5, data_norm=data_norm, solver=solver, accountant=acc,
              random_state=0)
    with pytest.raises(ValueError, match=r"must be at most 1e\+75.*Nothing was charged"):
        reg.fit(X, y, public_mask=mask)
    assert acc.spent("central") == (0.0, 0.0)


def test_bad_input(small):
    X, y, pub = _stack(small)
    reg = DAR(epsilon=1.0, delta=DELTA)
    with pytest.raises(ValueError, match="public"):
        reg.fit(X, y, public_mask=np.zeros(len(X), bool))
    with pytest.raises(ValueError, match="private"):
        reg.fit(X, y, public_mask=np.ones(len(X), bool))
    X_nan = X.copy()
    X_nan[-1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(X_nan, y, public_mask=pub)
    y_nan = y.copy()
    y_nan[0] = np.nan
    with pytest.raises(ValueError, match="public"):
        reg.fit(X, y_nan, public_mask=pub)
    with pytest.raises(ValueError, match="requires y"):
        reg.fit(X, None, public_mask=pub)
    with pytest.raises(ValueError, match="epsilon=np.inf"):
        DAR(epsilon=1.0, solver="exact").fit(X, y, public_mask=pub)
    with pytest.raises(ValueError, match="delta"):
        DAR(epsilon=1.0, delta=0.0, solver="two-stage-md").fit(X, y, public_mask=pub)
    with pytest.raises(ValueError, match="public_mask"):
        reg.fit(X, y, public_mask=pub[:-1])
    # delta = 0 is fine for the Frank-Wolfe solvers (basic composition)
    reg0 = DAR(epsilon=1.0, delta=0.0, solver="two-stage-fw", max_iter=5, random_state=0)
    assert reg0.fit(X, y, public_mask=pub).privacy_spent_["central"] == (1.0, 0.0)


def test_mask_none_fits_zero_model_and_warns(small):
    X, y, _ = _stack(small)
    with pytest.warns(UserWarning, match="no labelled public"):
        reg = DAR(epsilon=1.0).fit(X, np.nan_to_num(y))
    np.testing.assert_array_equal(reg.predict(X), 0.0)
    assert reg.privacy_spent_["central"] == (0.0, 0.0)


# ----------------------------------------------------------------------------- routing

N_ROUTE = 80
FIT_LOG = []


class _Recording(DiscrepancyAdaptationRegressor):
    def fit(self, X, y, *, public_mask=None):
        FIT_LOG.append((np.asarray(X)[:, 0].astype(int), np.asarray(public_mask)))
        return super().fit(X, y, public_mask=public_mask)


def _route_data():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.arange(N_ROUTE), rng.normal(size=(N_ROUTE, 2))])
    y = X[:, 1] - X[:, 2]
    mask = rng.random(N_ROUTE) < 0.4
    y[~mask] = np.nan  # the private rows are unlabelled
    return X, y, mask


def _check_log(mask, fits):
    assert len(FIT_LOG) == fits
    for rows, received in FIT_LOG:
        np.testing.assert_array_equal(received, mask[rows])


def test_routing_cross_validate_and_grid_search():
    X, y, mask = _route_data()
    FIT_LOG.clear()
    est = _Recording(epsilon=np.inf, solver="exact", data_norm=100.0)
    # scoring on NaN labels is the user's business; score the public folds only
    cross_validate(est, X, y, cv=KFold(3, shuffle=True, random_state=0),
                   params={"public_mask": mask}, scoring=lambda e, X, y: 0.0)
    _check_log(mask, 3)
    FIT_LOG.clear()
    search = GridSearchCV(est, {"ridge_alpha": [1e-3, 1e-1]}, cv=3,
                          scoring=lambda e, X, y: -float(np.sum(e.coef_**2)))
    search.fit(X, y, public_mask=mask)
    _check_log(mask, 7)
    assert any(len(rows) == N_ROUTE for rows, _ in FIT_LOG)


# ------------------------------------------------------------------ optional exact solver


def test_default_stage_one_needs_no_cvxpy(small, monkeypatch):
    # the default is the numpy solver whether or not cvxpy is installed: the same weights
    # with cvxpy made unimportable (a fresh fit, same seed)
    X, y, pub = _stack(small)
    fits = [DAR(epsilon=1.0, delta=DELTA, random_state=0).fit(X, y, public_mask=pub)]
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # `import cvxpy` now raises ImportError
    fits.append(DAR(epsilon=1.0, delta=DELTA, random_state=0).fit(X, y, public_mask=pub))
    np.testing.assert_array_equal(fits[0].sample_weights_, fits[1].sample_weights_)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[1].solver_info_["discrepancy_solver"] == "numpy"


@pytest.mark.parametrize("solver", ["exact", "noisy-moments"])
def test_cvxpy_solver_without_cvxpy_says_how_to_install_and_charges_nothing(
        small, monkeypatch, solver):
    X, y, pub = _stack(small)
    monkeypatch.setitem(sys.modules, "cvxpy", None)
    acc = PrivacyAccountant()
    est = DAR(epsilon=np.inf if solver == "exact" else 1.0, delta=DELTA, solver=solver,
              discrepancy_solver="cvxpy", accountant=acc)
    with pytest.raises(ImportError, match=r"pip install \"skhybrid\[exact\]\""):
        est.fit(X, y, public_mask=pub)
    assert acc.events == [] and not hasattr(est, "privacy_spent_")
    # the iterative solvers do not solve problem (5) as is, so they do not need it
    DAR(epsilon=np.inf, solver="two-stage-fw", max_iter=5,
        discrepancy_solver="cvxpy").fit(X, y, public_mask=pub)


@pytest.mark.parametrize("solver", ["exact", "noisy-moments"])
def test_cvxpy_stage_one_agrees_with_numpy(small, solver):
    pytest.importorskip("cvxpy")
    X, y, pub = _stack(small)
    eps = np.inf if solver == "exact" else 1.0
    a = DAR(epsilon=eps, delta=DELTA, solver=solver, random_state=0).fit(X, y, public_mask=pub)
    b = DAR(epsilon=eps, delta=DELTA, solver=solver, random_state=0,
            discrepancy_solver="cvxpy").fit(X, y, public_mask=pub)
    assert b.solver_info_["discrepancy_solver"] == "cvxpy"
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-2)


# ----------------------------------------------------------------------------- solver pieces


@pytest.mark.parametrize("p", [2.0, 1.5, 1 + 1 / math.log(25)])
@pytest.mark.parametrize("eta", [0.05, 2.0])
def test_pnorm_prox_matches_cvxpy(p, eta):
    cp = pytest.importorskip("cvxpy")  # the reference solver (skhybrid[exact])
    rng = np.random.default_rng(int(10 * p + eta))
    m = 25
    g, q0 = rng.normal(size=m), rng.dirichlet(np.ones(m))
    q = pnorm_prox_simplex(g, q0, eta, p)
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0)

    def obj(v):
        return g @ (v - q0) + np.sum(np.abs(v - q0) ** p) ** (2 / p) / (eta * (p - 1))

    Q = cp.Variable(m, nonneg=True)
    prob = cp.Problem(cp.Minimize(g @ (Q - q0) + cp.square(cp.pnorm(Q - q0, p)) /
                                  (eta * (p - 1))), [cp.sum(Q) == 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver="CLARABEL")
    assert obj(q) <= obj(Q.value) + 1e-8
    np.testing.assert_allclose(q, Q.value, atol=1e-4)
    if p == 2.0:  # closed form: Euclidean projection of q0 - eta g / 2
        np.testing.assert_allclose(q, project_simplex(q0 - eta * g / 2), atol=1e-9)


def test_moments_sensitivity_bound_and_psd_projection():
    rng = np.random.default_rng(0)
    r, n, d = 1.5, 7, 5
    worst = 0.0
    for _ in range(2000):
        x, x2 = rng.normal(size=(2, d))
        x *= r * rng.random() ** 0.2 / np.linalg.norm(x)
        x2 *= r / np.linalg.norm(x2)
        D = (np.outer(x, x) - np.outer(x2, x2)) / n
        upper = D[np.triu_indices(d)]
        assert np.linalg.norm(upper) <= np.linalg.norm(D) + 1e-15
        worst = max(worst, np.linalg.norm(D))
    assert worst <= moments_sensitivity(r, n) * (1 + 1e-12)
    e1, e2 = np.eye(d)[:2] * r  # orthogonal rows of norm r attain the bound
    D = (np.outer(e1, e1) - np.outer(e2, e2)) / n
    assert np.linalg.norm(D[np.triu_indices(d)]) == pytest.approx(moments_sensitivity(r, n))
    A = rng.normal(size=(d, d))
    A = A + A.T
    P = project_psd(A)
    assert np.linalg.eigvalsh(P).min() >= -1e-12
    # the projection is the Frobenius-closest PSD matrix: beats random PSD candidates
    for _ in range(50):
        B = rng.normal(size=(d, d))
        assert np.linalg.norm(A - P) <= np.linalg.norm(A - B @ B.T) + 1e-12


def test_verbose_reports_progress(small, capsys):
    X, y, pub = _stack(small)
    DAR(epsilon=np.inf, solver="two-stage-fw", max_iter=20, verbose=1).fit(X, y, public_mask=pub)
    out = capsys.readouterr().out
    assert "iteration 20/20" in out and "weighted ridge" in out


def test_a_budget_too_small_for_the_exact_release_is_refused_before_the_charge():
    # The discrete Gaussian release of the d(d+1)/2 moment entries needs at least
    # sqrt(n_values / (2 rho)) lattice steps of noise; beyond the sampler's range the fit
    # refuses before charging (the check reads parameters and the mask only).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = X @ np.ones(5)
    public = np.arange(400) < 200
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="Raise epsilon or delta"):
        DiscrepancyAdaptationRegressor(epsilon=1e-3, accountant=acc).fit(
            X, y, public_mask=public)
    assert acc.spent() == (0.0, 0.0)
    DiscrepancyAdaptationRegressor(epsilon=0.05, accountant=acc).fit(X, y, public_mask=public)
    assert acc.spent()[0] > 0
