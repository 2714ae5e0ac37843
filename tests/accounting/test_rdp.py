"""RDP of one Gaussian step on a draw from a distribution that moves by TV ≤ η."""

import math

import numpy as np
import pytest
from scipy.integrate import simpson

from skhybrid.accounting import _composition as comp
from skhybrid.accounting._rdp import (
    DEFAULT_ORDERS,
    calibrate_subsampled_gaussian_mu,
    mixture_pair_delta,
    mixture_pair_rdp,
    mixture_pair_rdp_binomial,
    rdp_to_dp_epsilon,
    subsampled_gaussian_epsilon,
    subsampled_gaussian_rdp,
)

ORDERS = np.array([1.5, 2.0, 3.0, 5.0, 10.0, 32.0])


@pytest.mark.parametrize("mu", [0.1, 0.447, 1.0, 2.0])
def test_eta_one_is_the_plain_gaussian_rdp(mu):
    # η = 1: the step is the Gaussian mechanism, RDP α·Δ²/(2σ²) = αμ²/2 exactly.
    np.testing.assert_allclose(subsampled_gaussian_rdp(ORDERS, 1.0, mu), ORDERS * mu**2 / 2,
                               rtol=1e-6)
    np.testing.assert_allclose(mixture_pair_rdp(ORDERS, 1.0, mu), ORDERS * mu**2 / 2, rtol=1e-6)


@pytest.mark.parametrize("eta, mu", [(0.3, 1.0), (0.01, 0.447), (1e-6, 0.447), (0.25, 2.0)])
def test_numerical_pair_matches_binomial_closed_form(eta, mu):
    a = np.array([2.0, 3.0, 5.0, 10.0, 32.0])
    # At eta = 1e-6 the divergence is ~1e-13: the quadrature's integral is 1 + O(1e-13), so
    # float64 rounding leaves ~3e-16 of absolute error in its log (scipy releases differ
    # there); atol covers that and stays below 1/200 of the smallest value compared.
    np.testing.assert_allclose(mixture_pair_rdp(a, eta, mu), mixture_pair_rdp_binomial(a, eta, mu),
                               rtol=1e-4, atol=1e-15)


@pytest.mark.parametrize("eta, mu", [(0.3, 1.0), (0.01, 0.447), (1e-5, 0.447), (0.25, 2.0),
                                     (0.05, 0.05)])
def test_bound_dominates_both_orders_of_the_pair(eta, mu):
    bound = subsampled_gaussian_rdp(ORDERS, eta, mu)
    fwd = mixture_pair_rdp(ORDERS, eta, mu, "forward")
    rev = mixture_pair_rdp(ORDERS, eta, mu, "reverse")
    assert np.all(bound >= np.maximum(fwd, rev) * (1 - 1e-6))
    # ... and is not loose by more than the factor 2 of its second-order term.
    assert np.all(bound <= 2.0 * np.maximum(fwd, rev) * (1 + 1e-6))


def test_second_order_constant_small_eta():
    # B_α ≈ 2·C(α,2)·η²·E_B[(ℓ−1)_+²] as η → 0 (ℓ = dN(μ)/dN(0)); check against a quadrature.
    mu, eta, a = 0.447, 1e-7, 4.0
    z = np.linspace(-12, 12, 200001)
    ell = np.exp(mu * z - mu * mu / 2)
    pos2 = np.trapezoid(np.maximum(ell - 1, 0) ** 2 * np.exp(-z * z / 2) / math.sqrt(2 * math.pi), z)
    expected = math.log1p(2 * a * (a - 1) / 2 * eta**2 * pos2) / (a - 1)
    assert subsampled_gaussian_rdp([a], eta, mu)[0] == pytest.approx(expected, rel=1e-4)


def test_monotone_in_eta_and_alpha():
    etas = [1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0]
    vals = np.array([subsampled_gaussian_rdp(ORDERS, e, 0.8) for e in etas])
    assert np.all(np.diff(vals, axis=0) > 0)   # increasing in η
    assert np.all(np.diff(vals, axis=1) > 0)   # increasing in α (Rényi divergences are)


def test_monte_carlo_renyi_divergence():
    # Independent estimate of D_α(A_η‖B) at α = 2: E_B[ℓ_η²] with ℓ_η = (1−η) + η e^{μz−μ²/2}.
    rng = np.random.default_rng(0)
    mu, eta = 1.0, 0.3
    z = rng.normal(size=2_000_000)
    ell = (1 - eta) + eta * np.exp(mu * z - mu * mu / 2)
    mc = math.log(np.mean(ell**2))
    assert mixture_pair_rdp([2.0], eta, mu)[0] == pytest.approx(mc, rel=0.02)
    assert subsampled_gaussian_rdp([2.0], eta, mu)[0] >= mc * 0.98


def test_mixture_pair_delta_is_hockey_stick_of_pair():
    # δ(ε) = E_B[(ℓ − e^ε)_+] computed directly on a grid.
    mu, eta = 1.5, 0.2
    z = np.linspace(-15, 15, 400001)
    ell = (1 - eta) + eta * np.exp(mu * z - mu * mu / 2)
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    for eps in [0.0, 0.1, 0.5, 1.0]:
        direct = np.trapezoid(np.maximum(ell - math.exp(eps), 0) * phi, z)
        assert mixture_pair_delta(eps, eta, mu) == pytest.approx(direct, rel=1e-5, abs=1e-12)
    # η = 1: the Gaussian curve.
    assert mixture_pair_delta(0.7, 1.0, mu) == pytest.approx(comp.gaussian_delta(mu, 0.7))


def test_conversion_matches_cks_and_beats_mironov():
    # For the Gaussian (RDP αρ) the conversion over a fine grid approaches CKS20's zCDP bound.
    rho = 0.05
    orders = np.linspace(1.01, 200, 20000)
    eps, _ = rdp_to_dp_epsilon(orders * rho, orders, 1e-5)
    assert eps == pytest.approx(comp.zcdp_epsilon(rho, 1e-5), rel=1e-4)
    classic = np.min(orders * rho + math.log(1e5) / (orders - 1))
    assert eps < classic


def test_composition_and_calibration_roundtrip():
    eta, steps = 1e-3, 10_000
    mu = calibrate_subsampled_gaussian_mu(1.0, 1e-5, eta, steps)
    eps, order = subsampled_gaussian_epsilon(eta, mu, steps, 1e-5)
    assert eps <= 1.0 and eps == pytest.approx(1.0, rel=1e-4)
    assert order in DEFAULT_ORDERS
    # One step at η = 1 is the Gaussian mechanism: RDP conversion is above the exact curve.
    e1, _ = subsampled_gaussian_epsilon(1.0, 0.5, 1, 1e-5)
    assert e1 >= comp.gaussian_epsilon(0.5, 1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="eta"):
        subsampled_gaussian_rdp([2.0], 1.5, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        subsampled_gaussian_rdp([1.0], 0.1, 1.0)
    with pytest.raises(ValueError, match="integer"):
        mixture_pair_rdp_binomial([2.5], 0.1, 1.0)


# ------------------------------------------------ the fast paths reproduce the originals


@pytest.mark.parametrize("eta, mu, steps, delta", [
    (1 / 2000, 1.12, 2000, 1e-6), (1e-3, 0.3, 10_000, 1e-5), (0.2, 1.5, 10, 1e-6),
    (1e-5, 2.0, 100, 1e-8), (1.0, 0.7, 3, 1e-5), (1 / 500, 0.02, 6000, 1e-6),
    (0.05, 5.0, 50, 1e-6),
])
def test_screened_epsilon_equals_the_all_order_computation(eta, mu, steps, delta):
    from skhybrid.accounting._rdp import _subsampled_gaussian_epsilon_full

    assert (subsampled_gaussian_epsilon(eta, mu, steps, delta)
            == _subsampled_gaussian_epsilon_full(eta, mu, steps, delta))


def test_orders_above_128_are_ruled_out_by_order_128s_bound_or_computed(monkeypatch):
    # The accounting bounds the orders up to 128 first and rules out every order above by
    # order 128's bound (D_α >= D_128); where that cannot rule them out (the minimum sits
    # above 128) it bounds every order. Both paths give the all-order result, bit for bit.
    from skhybrid.accounting import _rdp

    real, seen = _rdp._rdp_lower, []

    def spy(eta, mu, orders):
        seen.append(len(orders))
        return real(eta, mu, orders)

    monkeypatch.setattr(_rdp, "_rdp_lower", spy)
    _rdp._epsilon_cached.cache_clear()
    try:
        for args, passes in [((1 / 2000, 1.12, 2000, 1e-6), [28]), ((1e-4, 0.5, 1000, 1e-6), [28]),
                             ((1e-3, 0.3, 10_000, 1e-5), [28, 35]),  # (minimum at 96)
                             ((1e-5, 0.3, 10, 1e-6), [28, 35]), ((1e-3, 0.2, 50, 1e-9), [28, 35]),
                             ((1e-3, 0.05, 100, 1e-6), [28, 35])]:
            seen.clear()
            got = _rdp.subsampled_gaussian_epsilon(*args)
            assert got == _rdp._subsampled_gaussian_epsilon_full(*args)
            # the 28 orders up to 128 (enough when order 128's bound rules out the
            # others), then all 35
            assert seen == passes
            assert got[1] <= 128 or passes == [28, 35]
    finally:
        _rdp._epsilon_cached.cache_clear()


def test_a_wrong_bound_at_order_128_changes_the_accounting(monkeypatch):
    # Mutation twin of the test above: order 128's bound raised by 1 (far above the ε)
    # rules out the orders above it, and where the minimum sits at 256 the accounting no
    # longer equals the all-order computation.
    from skhybrid.accounting import _rdp

    args = (1e-5, 0.3, 10, 1e-6)
    full = _rdp._subsampled_gaussian_epsilon_full(*args)
    assert full[1] == 256.0
    real = _rdp._rdp_lower

    def too_high(eta, mu, orders):
        out = real(eta, mu, orders).copy()
        out[orders.index(128.0)] += 1.0
        return out

    monkeypatch.setattr(_rdp, "_rdp_lower", too_high)
    _rdp._epsilon_cached.cache_clear()
    try:
        got = _rdp.subsampled_gaussian_epsilon(*args)
    finally:
        _rdp._epsilon_cached.cache_clear()
    assert got[0] > full[0] and got[1] != full[1]


@pytest.mark.parametrize("orders", [(1.5,), (1.1, 1.5, 1.9), (2.0, 2.0, 3.0), (4096.0, 2.0, 32.0)])
def test_screened_epsilon_with_custom_orders(orders):
    # orders below 2 have no binomial lower bound (0); repeated and very large orders
    from skhybrid.accounting._rdp import _subsampled_gaussian_epsilon_full

    for eta, mu, steps in ((1e-3, 1.0, 100), (0.1, 0.5, 10), (1e-4, 0.3, 1000)):
        assert (subsampled_gaussian_epsilon(eta, mu, steps, 1e-6, orders)
                == _subsampled_gaussian_epsilon_full(eta, mu, steps, 1e-6, orders))


@pytest.mark.parametrize("epsilon, delta, eta, steps", [
    (1.0, 1e-6, 1 / 2000, 2000), (1.0, 1e-5, 0.008, 6000),
    pytest.param(0.5, 1e-6, 1 / 1000, 2000, marks=pytest.mark.slow),
    pytest.param(2.0, 1e-5, 1 / 300, 6000, marks=pytest.mark.slow),
])
def test_fast_calibration_matches_the_bisection(epsilon, delta, eta, steps):
    from skhybrid.accounting._rdp import _calibrate_bisection, _subsampled_gaussian_epsilon_full

    old = _calibrate_bisection(epsilon, delta, eta, steps)
    new = calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps)
    # The bisection stops within 1e-6 (in ln μ) below the threshold; the new one within
    # ~1e-10, on the feasible side, checked at full precision over every order.
    assert old <= new <= old * math.exp(1e-6)
    assert _subsampled_gaussian_epsilon_full(eta, new, steps, delta)[0] <= epsilon
    assert _subsampled_gaussian_epsilon_full(eta, new, steps, delta)[0] == pytest.approx(
        epsilon, rel=1e-9)
    assert calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps) == new  # cached


# Where ε(μ) is steep (an order's RDP bending up: dε/dμ in the thousands), the fallbacks
# stopped a relative 1e-3 short in ε (red team 12).
_STEEP = [(0.0240928867333142, 8.995697505411573e-12, 1.5911781108686853e-05, 366339),
          (0.01583275058991222, 1.1087350728635169e-09, 0.0010117398785964272, 59),
          (0.012514164543537862, 5.145917679833291e-06, 0.007887992609407386, 15)]


def _in_window(epsilon, delta, eta, steps, mu, orders=DEFAULT_ORDERS):
    from skhybrid.accounting._rdp import _subsampled_gaussian_epsilon_full

    eps = _subsampled_gaussian_epsilon_full(eta, mu, steps, delta, orders)[0]
    return epsilon * (1 - 2e-10) - 1e-15 <= eps <= epsilon


@pytest.mark.parametrize("path", ["model-guided", "screening"])
@pytest.mark.parametrize("epsilon, delta, eta, steps", _STEEP)
def test_calibration_reaches_its_window_where_epsilon_is_steep(monkeypatch, epsilon, delta,
                                                                eta, steps, path):
    from skhybrid.accounting import _rdp

    if path == "screening":  # (the search the model-guided path falls back on)
        monkeypatch.setattr(_rdp, "_model_guided_threshold", lambda *args: None)
    _rdp._calibrate_cached.cache_clear()
    try:
        assert _in_window(epsilon, delta, eta, steps,
                          calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps))
    finally:
        _rdp._calibrate_cached.cache_clear()


def test_without_the_refinement_the_steep_cases_stop_short(monkeypatch):
    # Mutation twin of the test above, on the screening search's fallbacks.
    from skhybrid.accounting import _rdp

    monkeypatch.setattr(_rdp, "_refine_threshold", lambda mu, *args: mu)
    monkeypatch.setattr(_rdp, "_model_guided_threshold", lambda *args: None)
    _rdp._calibrate_cached.cache_clear()
    try:
        short = [not _in_window(*case, _rdp.calibrate_subsampled_gaussian_mu(*case))
                 for case in _STEEP]
    finally:
        _rdp._calibrate_cached.cache_clear()
    assert all(short)


def test_calibration_does_not_depend_on_how_the_orders_are_listed():
    # The search's windows of neighbouring orders assumed sorted orders: a permutation of
    # the default ones gave a μ 1-17 % below the threshold (red team 12).
    rng = np.random.default_rng(0)
    for epsilon, delta, eta, steps in [(0.02177234598772483, 0.1531806513426776,
                                        0.3793174159574197, 209),
                                       (64.45663421091857, 4.9116594376130154e-08,
                                        0.016218773446682204, 7153),
                                       (1.0, 1e-6, 1 / 2000, 2000)]:
        shuffled = tuple(rng.permutation(DEFAULT_ORDERS).tolist())
        assert (calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps, shuffled + shuffled[:3])
                == calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps))


@pytest.mark.parametrize("epsilon, delta, eta, steps, orders", [
    (0.010774356158847632, 0.00010276390914404023, 0.48123565717691735, 1,
     (1.23, 1.28, 5.66, 9.05, 155.58, 1227.09)),
    (0.27210736211324354, 0.11095107065649103, 0.5063737975619634, 4889,
     (165.7, 1357.7, 165.94, 1.18)),
    (1.0, 1e-5, 0.5, 1000, (2.0, 8.0, 32.0, 128.0, 1536.0)),
])
def test_calibration_with_custom_orders_where_the_model_leaves_float_range(
        epsilon, delta, eta, steps, orders):
    # The search's model raised "math domain error" here (red team 12).
    mu = calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps, orders)
    assert _in_window(epsilon, delta, eta, steps, mu, orders)


def test_calibration_ends_agree_with_the_bisection():
    from skhybrid.accounting._rdp import _calibrate_bisection

    for fn in (calibrate_subsampled_gaussian_mu, _calibrate_bisection):
        with pytest.raises(ValueError, match="no noise level"):
            fn(1e-4, 1e-6, 0.01, 100)
    # η = 0: the steps reveal nothing, yet a finite ε still gets noise (the top μ).
    assert calibrate_subsampled_gaussian_mu(1.0, 1e-6, 0.0, 100) == 1e3


@pytest.mark.parametrize("eta, steps", [(1 / 60, 2000), (1 / 100_000, 2000), (0.5, 10),
                                        (1e-4, 6000)])
@pytest.mark.parametrize("epsilon", [1e10, 1e12, 1e300])
def test_a_finite_epsilon_never_calibrates_to_no_noise(eta, steps, epsilon):
    # Feasibility at μ = 1e3 (the top of the search) says nothing about μ = ∞ (no noise:
    # δ ≈ 1 − (1 − η)^steps). Both calibrations return μ = 1e3 itself, which is feasible,
    # and its ε (what a caller charges) is finite, positive and below the target.
    from skhybrid.accounting._rdp import _calibrate_bisection

    for fn in (calibrate_subsampled_gaussian_mu, _calibrate_bisection):
        assert fn(epsilon, 1e-5, eta, steps) == 1e3
    eps, _ = subsampled_gaussian_epsilon(eta, 1e3, steps, 1e-5)
    assert 0.0 < eps <= epsilon and math.isfinite(eps)


@pytest.mark.parametrize("eta", [1e-9, 1e-6, 1e-4, 2e-3, 0.05, 0.5, 0.999, 1.0])
def test_lower_bound_is_below_the_accounted_rdp_and_tight(eta):
    # The accounting skips an order when this bound on its ε exceeds the best ε found:
    # it must lie below the charged RDP at every order (slack included), and be tight
    # enough near the minimiser to rule out (here: within a factor 2).
    from skhybrid.accounting._rdp import _LOWER_ATOL, _LOWER_RTOL, _rdp_lower

    a = np.array(DEFAULT_ORDERS)
    for mu in (1e-4, 1e-2, 0.2, 1.0, 4.0, 16.0):
        lower = _rdp_lower(eta, mu, DEFAULT_ORDERS)
        full = subsampled_gaussian_rdp(a, eta, mu)
        assert np.all(lower * (1 - _LOWER_RTOL) - _LOWER_ATOL <= full)
        assert np.all(lower[a < 2] == 0.0)
        whole = (a >= 2) & (a == np.round(a)) & (full > 1e-12)
        assert np.all(lower[whole] >= 0.5 * full[whole])
    if eta < 1:  # integer orders: the binomial closed form of the forward divergence
        # (both sum in the log domain; where the sum is near 1 its log keeps ~1e-16
        # absolute: 1.1e-16 apart with numpy 2.0, inside _LOWER_ATOL)
        ints = a[(a >= 2) & (a == np.round(a)) & (a <= 64)]
        np.testing.assert_allclose(_rdp_lower(eta, 0.7, tuple(ints)),
                                   mixture_pair_rdp_binomial(ints, eta, 0.7), rtol=1e-12,
                                   atol=1e-15)


def test_a_lower_bound_that_is_too_high_changes_the_accounting(monkeypatch):
    # Mutation twin of the two tests above: a "lower bound" 10x too high at the order
    # attaining the minimum rules it out, and the accounting no longer equals the
    # all-order computation.
    from skhybrid.accounting import _rdp

    args = (1 / 2000, 1.12, 2000, 1e-6)
    full = _rdp._subsampled_gaussian_epsilon_full(*args)
    j = DEFAULT_ORDERS.index(full[1])
    real = _rdp._rdp_lower

    def too_high(eta, mu, orders):
        out = real(eta, mu, orders).copy()
        out[j] *= 10.0
        return out

    monkeypatch.setattr(_rdp, "_rdp_lower", too_high)
    _rdp._epsilon_cached.cache_clear()
    try:
        got = _rdp.subsampled_gaussian_epsilon(*args)
    finally:  # the mutated accounting's results must not outlive the test
        _rdp._epsilon_cached.cache_clear()
    assert got[0] > full[0] and got[1] != full[1]


def _steering_error(al_grid=(2.0, 8.0, 32.0, 128.0)):
    from skhybrid.accounting._rdp import _rdp_one, _steer_rdp

    worst = 0.0
    for eta in (1e-5, 1e-3, 0.1, 1.0):
        for mu in (0.05, 0.5, 2.0):
            for al in al_grid:
                worst = max(worst, abs(_steer_rdp(al, eta, mu)[0] / _rdp_one(al, eta, mu) - 1))
    return worst


def test_steering_quadrature_agrees_with_the_accounting_integral():
    # The steering aims the one full-precision integral at the middle of a window 2e-10·ε
    # wide: its own error must be well inside that (measured 3.7e-11 over a finer grid),
    # and its closed-form derivative must be the integral's.
    from skhybrid.accounting._rdp import _rdp_one, _steer_rdp

    assert _steering_error() <= 5e-11
    for al, eta, mu in ((12.0, 5e-4, 1.12), (128.0, 1e-5, 0.3), (2.0, 0.2, 0.05)):
        h = 1e-5
        numeric = (math.log(_rdp_one(al, eta, mu * math.exp(h)))
                   - math.log(_rdp_one(al, eta, mu * math.exp(-h)))) / (2 * h)
        rdp, slope = _steer_rdp(al, eta, mu)
        assert slope / rdp == pytest.approx(numeric, rel=1e-6)


def test_a_coarser_steering_rule_misses_the_accounting_integral(monkeypatch):
    # Mutation twin of the test above: half the panels (16 of 12 nodes) is 1e3 times off.
    from skhybrid.accounting import _rdp

    monkeypatch.setattr(_rdp, "_STEER_UNIT", _rdp._gauss_legendre_unit(16, 12)[0])
    monkeypatch.setattr(_rdp, "_STEER_WEIGHTS", _rdp._gauss_legendre_unit(16, 12)[1])
    assert _steering_error() > 1e-8


@pytest.mark.parametrize("factor", [1.0, 1.01, 0.5, np.nan])
def test_a_wrong_steering_quadrature_cannot_change_the_result(monkeypatch, factor):
    # The steering quadrature only chooses where the full-precision integral is evaluated:
    # scaled by 1 % or by half (or nan), the calibration still returns the threshold of
    # the full-precision accounting, on its feasible side.
    from skhybrid.accounting import _rdp

    real = _rdp._steer_rdp

    def scaled(al, eta, mu):  # (its derivative left alone: the slope is off as well)
        rdp, slope = real(al, eta, mu)
        return factor * rdp, slope

    monkeypatch.setattr(_rdp, "_steer_rdp", scaled)
    args = (1.0, 1e-6, 1 / 1500, 1500)
    _rdp._calibrate_cached.cache_clear()
    try:
        got = _rdp.calibrate_subsampled_gaussian_mu(*args)
    finally:
        _rdp._calibrate_cached.cache_clear()
    eps = _rdp._subsampled_gaussian_epsilon_full(1 / 1500, got, 1500, 1e-6)[0]
    assert 1.0 - 2e-10 <= eps <= 1.0
    assert _rdp._calibrate_bisection(*args) <= got <= _rdp._calibrate_bisection(*args) * math.exp(1e-6)


# μ = Δ/σ calibrated by the implementation before the model-guided screening search
# (commit 30d30b3), each the threshold of the full-precision accounting to ~1e-10.
_PINNED_MU = [
    (0.5, 1e-05, 0.0005, 100, 0.8828026271475276),
    (0.5, 1e-05, 0.0005, 2000, 0.8735103906461068),
    (0.5, 1e-05, 0.01, 2000, 0.26118146875536935),
    (0.5, 1e-05, 0.2, 100, 0.0637784789358721),
    (0.5, 1e-08, 0.0005, 2000, 0.6895904862746887),
    (0.5, 1e-08, 0.2, 2000, 0.010659795855686079),
    (1.0, 1e-05, 0.0005, 100, 1.2567964788644845),
    (1.0, 1e-05, 0.01, 100, 0.8778940206690982),
    (1.0, 1e-05, 0.2, 2000, 0.027215776904347535),
    (1.0, 1e-08, 0.0005, 2000, 0.9668609087351072),
    (1.0, 1e-08, 0.01, 2000, 0.3549485468984532),
    (1.0, 1e-08, 0.2, 100, 0.08956266392883226),
    (4.0, 1e-05, 0.0005, 2000, 2.022599010877565),
    (4.0, 1e-05, 0.01, 100, 1.537876053939423),
    (4.0, 1e-05, 0.2, 2000, 0.09369242059942606),
    (4.0, 1e-08, 0.0005, 100, 1.752423611482317),
    (4.0, 1e-08, 0.01, 2000, 0.9228703116735198),
    (4.0, 1e-08, 0.2, 100, 0.3009830231914495),
    # order 128 takes over past a sharp bend here: a search that stops at order 96's
    # threshold returns a μ with ε = 0.094
    (0.1, 1e-05, 0.0005, 20000, 0.3440886801202225),
    (8.0, 1e-06, 1.0, 2000, 0.03218932279047258),  # orders 4 and 5 nearly tie
]


@pytest.mark.parametrize("epsilon, delta, eta, steps, pinned", _PINNED_MU)
def test_calibration_is_the_full_precision_threshold(epsilon, delta, eta, steps, pinned):
    from skhybrid.accounting._rdp import _subsampled_gaussian_epsilon_full

    mu = calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps)
    # certified by the all-order full-precision accounting, and the threshold: ε(μ) is
    # within 2e-10·ε below the target ...
    eps = _subsampled_gaussian_epsilon_full(eta, mu, steps, delta)[0]
    assert epsilon * (1 - 2e-10) <= eps <= epsilon
    # ... so it is the μ calibrated before, to the precision both guarantee
    assert mu == pytest.approx(pinned, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, delta, eta, steps, pinned", _PINNED_MU[::4])
def test_calibration_is_at_least_the_bisection(epsilon, delta, eta, steps, pinned):
    from skhybrid.accounting._rdp import _calibrate_bisection

    old = _calibrate_bisection(epsilon, delta, eta, steps)
    assert old <= calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps) <= (
        old * math.exp(1e-6))


def test_noisy_sgd_calibrations_take_the_model_guided_path(monkeypatch):
    # NoisySGDClassifier's default calibration (ε = 1, δ = 1e-6, 2,000 steps, η = 1/n) is
    # decided by the model-guided steering alone: the screening search is never run, and
    # the result is the full-precision threshold.
    from skhybrid.accounting import _rdp

    def screening(*args, **kwargs):
        raise AssertionError("the screening search ran")

    monkeypatch.setattr(_rdp, "_screening_root", screening)
    _rdp._calibrate_cached.cache_clear()
    try:
        for n in (100, 1_000, 2_000, 2_017, 20_000, 10**6):
            mu = _rdp.calibrate_subsampled_gaussian_mu(1.0, 1e-6, 1 / n, 2000)
            assert _in_window(1.0, 1e-6, 1 / n, 2000, mu)
    finally:
        _rdp._calibrate_cached.cache_clear()


@pytest.mark.parametrize("model", ["off", "none"])
def test_a_wrong_search_model_cannot_change_the_result(monkeypatch, model):
    # The two-term model only steers the screening search: off by a factor 3 in the
    # RDP, or declining every step, the calibration returns the same threshold.
    from skhybrid.accounting import _rdp

    real = _rdp._model_step
    fake = ((lambda al, eta, u0, phi: real(al, eta, u0, phi + math.log(3.0)))
            if model == "off" else (lambda *args: None))
    monkeypatch.setattr(_rdp, "_model_step", fake)
    for epsilon, delta, eta, steps, pinned in (_PINNED_MU[9], _PINNED_MU[-2]):
        _rdp._calibrate_cached.cache_clear()
        try:
            mu = _rdp.calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps)
        finally:
            _rdp._calibrate_cached.cache_clear()
        eps = _rdp._subsampled_gaussian_epsilon_full(eta, mu, steps, delta)[0]
        assert epsilon * (1 - 2e-10) <= eps <= epsilon
        assert mu == pytest.approx(pinned, rel=1e-9)


@pytest.mark.parametrize("eta", [1e-5, 1e-3, 0.1, 1.0])
@pytest.mark.parametrize("mu", [1e-3, 0.05, 0.5, 2.0, 8.0])
def test_screening_integrand_is_the_accounting_integrand(eta, mu):
    # The erfcx form of the screening/steering integrand against the log_ndtr form of
    # the accounting's (_rdp_one), relative to each order's peak.
    from skhybrid.accounting._rdp import _log_gauss_curve, _log_integrand

    a = np.array(DEFAULT_ORDERS)[:, None]
    s = (mu * mu / 2 + np.maximum(a - 1, 1) * mu * mu + 15 * mu) * np.linspace(0, 1, 257)
    log_u = np.logaddexp(math.log1p(-eta) if eta < 1 else -np.inf, math.log(eta) + s)
    ref = np.logaddexp((a - 2) * log_u, (-a - 1) * log_u) + _log_gauss_curve(mu, s) + s
    got = _log_integrand(a, eta, mu, s)
    top = ref.max(axis=1, keepdims=True)
    np.testing.assert_allclose(np.exp(got - top), np.exp(ref - top), rtol=0, atol=1e-5)


# _rdp_one (the accounting's integral) as computed before its helpers were inlined
# (commit 9229e63: np.linspace grid, scipy.integrate.simpson).
_RDP_ONE_REF = [
    (2.0, 1e-05, 2.0, 1.0483600027308792e-08),
    (8.0, 0.0005, 1.12, 4.398486239789987e-06),
    (32.0, 0.0005, 1.12, 12.224307138537396),
    (1.1, 0.2, 0.05, 5.678858554576746e-05),
    (128.0, 0.001, 0.3, 7.4537987002670945e-06),
    (5.0, 1.0, 0.7, 1.2250000000000802),
    (1024.0, 0.01, 0.02, 2.0814730795624757e-05),
    (3.0, 0.05, 8.0, 91.50640158966903),
]


@pytest.mark.parametrize("al, eta, mu, ref", _RDP_ONE_REF)
def test_accounting_integral_is_unchanged(al, eta, mu, ref):
    from skhybrid.accounting._rdp import _rdp_one

    assert _rdp_one.__wrapped__(al, eta, mu) == pytest.approx(ref, rel=1e-12, abs=0)


@pytest.mark.parametrize("al, eta, mu", [
    (256.0, 1e-5, 0.3), (8.0, 5e-4, 1.12), (32.0, 5e-4, 1.12), (2.0, 0.2, 0.1),
])
def test_accounting_integral_agrees_with_a_16_times_finer_grid(al, eta, mu):
    # (256, 1e-5, 0.3) sits at the weight's bend: there the integrand written with
    # _log_gauss_curve (the accounting's before the erfcx form) was 2.2e-10 high.
    from skhybrid.accounting._rdp import _log_integrand, _rdp_one

    s = np.linspace(0.0, mu * mu / 2 + max(al - 1, 1) * mu * mu + 15 * mu, 128_001)
    log_f = _log_integrand(al, eta, mu, s)
    top = log_f.max()
    log_b = math.log(al * (al - 1)) + 2 * math.log(eta) + top + math.log(
        simpson(np.exp(log_f - top), x=s))
    assert _rdp_one.__wrapped__(al, eta, mu) == pytest.approx(
        np.logaddexp(0.0, log_b) / (al - 1), rel=1e-11, abs=0)


def test_screening_error_is_within_its_bound():
    # The screening quadrature's error grows with the order and as η shrinks (the
    # weight's bend sharpens); a single 2e-3 bound was exceeded from order 256 on.
    from skhybrid.accounting._rdp import _coarse_rdp, _coarse_rtol, _rdp_one

    a = np.array(DEFAULT_ORDERS)
    worst = np.zeros_like(a)
    for eta in (1e-8, 1e-6, 1e-4):
        for mu in np.geomspace(0.15, 0.6, 7):
            coarse = _coarse_rdp(a, eta, mu)
            exact = np.array([_rdp_one.__wrapped__(al, eta, mu) for al in a])
            worst = np.maximum(worst, np.abs(coarse / exact - 1))
    assert worst.max() > 2e-3  # (the single old bound would not hold)
    assert np.all(worst <= _coarse_rtol(a) / 2)


def test_grid_and_simpson_helpers_agree_with_numpy_and_scipy():
    # the grid bit for bit; Simpson's weights on it to rounding
    from skhybrid.accounting._rdp import _linspace, _simpson_weights

    rng = np.random.default_rng(0)
    for stop in (1e-3, 0.37, 1.0, 12.3456789, 2.2e3):
        for n in (129, 1025, 8001):
            s = np.linspace(0.0, stop, n)
            assert np.array_equal(_linspace(stop, n), s)
            y = np.exp(rng.normal(size=n))
            got = (y @ _simpson_weights(n)) * (stop / (n - 1) / 3.0)
            assert got == pytest.approx(simpson(y, x=s), rel=1e-14, abs=0)
