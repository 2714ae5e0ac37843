"""Layer-A tests (docs/notes/auditing.rst) of the composition and privacy-curve math."""

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from skhybrid.accounting import _composition as comp

DELTA = 1e-6


# --------------------------------------------------------------------------- reference values


# Exact values (hand-checked: DRV and KOV with plain arithmetic, optimal with 60-digit
# decimals) next to two-decimal values first tabulated while planning. Two of those are
# one unit too high in the last digit: DRV 10.8748 was given as 10.88 and optimal 4.7746
# as 4.78 (both remain valid, slightly loose, bounds); the correctly rounded table is in
# docs/notes/building_blocks.rst, "Composition".
TABLE = [
    # eps0, k, basic, (drv, table), (kov, table), (optimal, table)
    (0.1, 100, 10.0, (6.308231, 6.31), (5.756106, 5.76), (4.774568, 4.78)),
    (0.05, 1000, 50.0, (10.874846, 10.88), (9.561030, 9.56), (8.283573, 8.28)),
]


@pytest.mark.parametrize("eps0, k, basic, drv, kov, optimal", TABLE)
def test_building_blocks_table(eps0, k, basic, drv, kov, optimal):
    assert comp.basic_composition([eps0] * k, [0.0] * k) == pytest.approx((basic, 0.0))
    e_drv, d = comp.advanced_composition(eps0, 0.0, k, DELTA)
    assert d == DELTA
    e_kov, d = comp.kov_composition([eps0] * k, [0.0] * k, DELTA)
    assert d == pytest.approx(DELTA, rel=1e-12)
    e_opt = comp.optimal_homogeneous_epsilon(eps0, 0.0, k, DELTA)
    for got, (exact, table) in [(e_drv, drv), (e_kov, kov), (e_opt, optimal)]:
        assert got == pytest.approx(exact, abs=1e-6)
        assert abs(got - table) <= 0.0101  # agrees with the table to its last digit
    assert round(e_drv, 2) == round(drv[0], 2) and round(e_opt, 2) == round(optimal[0], 2)


def _decimal_delta_opt(eps, k, eps_g):
    """Murtagh–Vadhan δ_opt in 60-digit decimal arithmetic (independent of numpy)."""
    getcontext().prec = 60
    e, g = Decimal(eps), Decimal(eps_g)
    j0 = math.ceil((g + k * e) / (2 * e))
    s = sum(math.comb(k, j) * ((j * e).exp() - (g + (k - j) * e).exp()) for j in range(j0, k + 1))
    return float(s / (1 + e.exp()) ** k)


def test_optimal_matches_high_precision():
    # Root of δ_opt(ε_g) = 1e-6 for ε = 0.1, k = 100, found by 60-digit bisection.
    eps_g = comp.optimal_homogeneous_epsilon(0.1, 0.0, 100, DELTA)
    assert eps_g == pytest.approx(4.774567588107986, abs=1e-9)
    assert _decimal_delta_opt("0.1", 100, repr(eps_g)) <= DELTA * (1 + 1e-9)
    assert _decimal_delta_opt("0.1", 100, repr(eps_g - 1e-6)) > DELTA
    # 4.78 is a valid (slightly loose) bound, not the optimum.
    assert _decimal_delta_opt("0.1", 100, "4.78") < DELTA


# --------------------------------------------------------------------------- optimal composition


def _lattice_delta_i(eps, k, i):
    """KOV Thm 3.3 δ_i, plain floats (only for small k)."""
    s = sum(
        math.comb(k, m) * (math.exp((k - m) * eps) - math.exp((k - 2 * i + m) * eps))
        for m in range(i)
    )
    return s / (1 + math.exp(eps)) ** k


def _naive_mv_delta(eps, k, eps_g):
    j0 = math.ceil((eps_g + k * eps) / (2 * eps))
    s = sum(
        math.comb(k, j) * (math.exp(j * eps) - math.exp(eps_g + (k - j) * eps))
        for j in range(max(j0, 0), k + 1)
    )
    return s / (1 + math.exp(eps)) ** k


@pytest.mark.parametrize("eps, k, delta", [(0.3, 20, 1e-4), (0.05, 41, 0.0), (1.0, 9, 1e-3)])
def test_lattice_form_agrees_with_mv_form(eps, k, delta):
    for i in range(k // 2 + 1):
        eps_g = (k - 2 * i) * eps
        expected = 1 - (1 - delta) ** k * (1 - _lattice_delta_i(eps, k, i))
        got = comp.optimal_homogeneous_delta(eps, delta, k, eps_g)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_log_domain_matches_naive_off_lattice():
    for eps_g in [0.0, 0.37, 1.234, 2.9, 5.0]:
        expected = _naive_mv_delta(0.25, 30, eps_g)
        assert comp.optimal_homogeneous_delta(0.25, 0.0, 30, eps_g) == pytest.approx(
            expected, rel=1e-9, abs=1e-16
        )


@pytest.mark.parametrize("eps, delta", [(0.5, 0.0), (1.3, 1e-5), (0.01, 0.2)])
def test_k1_optimal_gives_back_eps_delta(eps, delta):
    assert comp.optimal_homogeneous_delta(eps, delta, 1, eps) == pytest.approx(delta, abs=1e-15)
    assert comp.optimal_homogeneous_epsilon(eps, delta, 1, delta) == pytest.approx(eps, abs=1e-9)
    if delta > 0:
        assert comp.optimal_homogeneous_epsilon(eps, delta, 1, delta * 0.999) == np.inf


def test_optimal_epsilon_inverts_delta():
    for eps, delta, k, target in [
        (0.1, 1e-7, 100, 1e-5),
        (0.7, 0.0, 13, 1e-3),
        (0.02, 0, 5000, 1e-9),
    ]:
        eps_g = comp.optimal_homogeneous_epsilon(eps, delta, k, target)
        assert comp.optimal_homogeneous_delta(eps, delta, k, eps_g) <= target
        assert comp.optimal_homogeneous_delta(eps, delta, k, eps_g - 1e-6) > target
    # Infeasible even at basic composition: 1 - (1 - δ)^k > target.
    assert comp.optimal_homogeneous_epsilon(0.1, 1e-4, 100, 1e-3) == np.inf
    # Feasible already at ε_g = 0 when the target δ is large.
    assert comp.optimal_homogeneous_epsilon(0.01, 0.0, 4, 0.5) == 0.0


@pytest.mark.parametrize("eps0, k", [(0.1, 100), (0.05, 1000), (1.0, 10), (0.3, 1), (0.01, 7)])
@pytest.mark.parametrize("delta0", [0.0, 1e-8])
def test_ordering_optimal_kov_drv_basic(eps0, k, delta0):
    slack = 1e-6
    basic, _ = comp.basic_composition([eps0] * k, [delta0] * k)
    drv, _ = comp.advanced_composition(eps0, delta0, k, slack)
    kov, kov_delta = comp.kov_composition([eps0] * k, [delta0] * k, slack)
    opt = comp.optimal_homogeneous_epsilon(eps0, delta0, k, kov_delta)
    assert opt <= kov + 1e-9
    assert kov <= min(drv, basic) + 1e-12
    assert drv <= basic + 1e-12


def test_monotone_in_k_and_epsilon():
    ks = [1, 2, 5, 10, 50, 200, 1000]
    for fn in (
        lambda e, k: comp.optimal_homogeneous_epsilon(e, 0.0, k, DELTA),
        lambda e, k: comp.kov_composition([e] * k, 0.0, DELTA)[0],
        lambda e, k: comp.advanced_composition(e, 0.0, k, DELTA)[0],
        lambda e, k: comp.zcdp_epsilon(k * comp.pure_to_zcdp(e), DELTA),
    ):
        by_k = [fn(0.1, k) for k in ks]
        assert np.all(np.diff(by_k) > 0)
        by_eps = [fn(e, 50) for e in [1e-3, 0.01, 0.1, 0.5, 1.0, 3.0]]
        assert np.all(np.diff(by_eps) > 0)


# --------------------------------------------------------------------------- closed forms


def test_advanced_composition_hand_values():
    e, d = comp.advanced_composition(0.01, 1e-7, 500, 1e-5)
    expected = math.sqrt(2 * 500 * math.log(1e5)) * 0.01 + 500 * 0.01 * (math.exp(0.01) - 1)
    assert e == pytest.approx(expected, rel=1e-12)
    assert d == pytest.approx(500 * 1e-7 + 1e-5, rel=1e-12)
    # Advanced composition is worse than basic here (32.4 vs 10): report basic.
    assert comp.advanced_composition(1.0, 0.0, 10, DELTA)[0] == pytest.approx(10.0)


def test_kov_second_term_divides_by_slack():
    # sqrt(Σε²) = 0.1 < 1 - e·δ̃, so the second term is the binding one.
    eps = [0.01] * 100
    s2 = 100 * 0.01**2
    drift = 100 * 0.01 * (math.exp(0.01) - 1) / (math.exp(0.01) + 1)
    expected = drift + math.sqrt(2 * s2 * math.log(math.e + math.sqrt(s2) / DELTA))
    assert comp.kov_composition(eps, 0.0, DELTA)[0] == pytest.approx(expected, rel=1e-12)


def test_kov_heterogeneous():
    rng = np.random.default_rng(0)
    eps = rng.uniform(0.01, 0.5, size=40)
    dels = rng.uniform(0, 1e-7, size=40)
    e, d = comp.kov_composition(eps, dels, 1e-6)
    e2, d2 = comp.kov_composition(eps[::-1], dels[::-1], 1e-6)
    assert (e, d) == pytest.approx((e2, d2), rel=1e-12)
    assert d == pytest.approx(1 - (1 - 1e-6) * np.prod(1 - dels), rel=1e-9)
    assert e <= eps.sum()
    # Homogeneous input gives the same as the explicit homogeneous list.
    assert comp.kov_composition([0.2] * 30, [0.0] * 30, 1e-5) == comp.kov_composition(
        np.full(30, 0.2), 0.0, 1e-5
    )


# --------------------------------------------------------------------------- Gaussian


def test_gaussian_delta_matches_privacy_loss_integral():
    mu, eps = 1.0, 1.0
    p, q = stats.norm(mu, 1).pdf, stats.norm(0, 1).pdf
    # δ(ε) = ∫ (p − e^ε q)_+; the positive part is where x > ε/μ + μ/2.
    cut = eps / mu + mu / 2
    expected, _ = integrate.quad(lambda x: p(x) - math.exp(eps) * q(x), cut, np.inf, epsabs=1e-14)
    assert comp.gaussian_delta(mu, eps) == pytest.approx(expected, rel=1e-8)
    assert comp.gaussian_delta(mu, eps) == pytest.approx(0.12693673750664397, rel=1e-10)


def test_gaussian_delta_is_stable_and_vectorised():
    assert comp.gaussian_delta(1.0, 1000.0) == 0.0
    big = comp.gaussian_delta(2.0, np.array([10.0, 20.0, 40.0, 80.0]))
    assert np.all(np.isfinite(big)) and np.all(big[:3] > 0) and np.all(np.diff(big) < 0)
    assert big[3] < 1e-300  # underflows to 0 (true value ~1e-345), never nan
    assert comp.gaussian_delta(0.0, 0.0) == 0.0
    assert comp.gaussian_delta(np.inf, 3.0) == 1.0
    assert comp.gaussian_delta(2.0, np.inf) == 0.0
    assert comp.gaussian_delta(1.0, 0.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1)


def test_k_fold_gaussian_is_one_gaussian():
    sigma, k, delta = 3.0, 25, 1e-5
    mu = comp.compose_gaussian_mu([1.0 / sigma] * k)
    assert mu == pytest.approx(1.0 / (sigma / math.sqrt(k)), rel=1e-12)
    assert comp.gaussian_epsilon(mu, delta) == pytest.approx(
        comp.gaussian_epsilon(math.sqrt(k) / sigma, delta), rel=1e-12
    )
    assert comp.compose_gaussian_mu([0.5, np.inf]) == np.inf


def test_gaussian_epsilon_inverts_delta():
    for mu in [0.05, 0.5, 1.0, 4.0, 20.0]:
        for delta in [1e-10, 1e-5, 1e-2]:
            eps = comp.gaussian_epsilon(mu, delta)
            if eps == 0.0:
                assert comp.gaussian_delta(mu, 0.0) <= delta
                continue
            assert comp.gaussian_delta(mu, eps) <= delta
            assert comp.gaussian_delta(mu, max(eps - 1e-6, 0)) > delta
    assert comp.gaussian_epsilon(0.1, 0.5) == 0.0
    assert comp.gaussian_epsilon(np.inf, 1e-5) == np.inf


@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("delta", [1e-8, 1e-5, 1e-2])
def test_analytic_sigma_beats_classic(eps, delta):
    sigma = comp.analytic_gaussian_sigma(eps, delta, 2.0)
    assert sigma <= comp.classic_gaussian_sigma(eps, delta, 2.0)
    assert comp.gaussian_delta(2.0 / sigma, eps) <= delta
    assert comp.gaussian_delta(2.0 / (sigma * (1 - 1e-6)), eps) > delta


def test_classic_sigma_refuses_large_epsilon():
    assert comp.classic_gaussian_sigma(0.5, 1e-5) == pytest.approx(
        math.sqrt(2 * math.log(1.25e5)) / 0.5
    )
    with pytest.raises(ValueError, match="analytic"):
        comp.classic_gaussian_sigma(1.0, 1e-5)
    # The analytic calibration works for any ε.
    sigma = comp.analytic_gaussian_sigma(5.0, 1e-5)
    assert comp.gaussian_delta(1 / sigma, 5.0) == pytest.approx(1e-5, rel=1e-6)
    with pytest.raises(ValueError, match="delta"):
        comp.analytic_gaussian_sigma(1.0, 0.0)


# --------------------------------------------------------------------------- zCDP


def _grid_zcdp_epsilon(rho, delta):
    alpha = 1 + np.logspace(-5, 5, 400_001)
    vals = alpha * rho + (
        np.log(1 / delta) + (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
    ) / (alpha - 1)
    return vals.min()


def _grid_zcdp_delta(rho, eps):
    alpha = 1 + np.logspace(-5, 5, 400_001)
    log_d = (alpha - 1) * (alpha * rho - eps) - np.log(alpha) + (alpha - 1) * np.log1p(-1 / alpha)
    return min(1.0, float(np.exp(log_d.min())))


@pytest.mark.parametrize("rho, delta", [(0.5, 1e-6), (0.01, 1e-5), (3.0, 1e-9), (1e-4, 0.1)])
def test_zcdp_epsilon_against_grid_and_bun_steinke(rho, delta):
    eps = comp.zcdp_epsilon(rho, delta)
    grid = _grid_zcdp_epsilon(rho, delta)
    # A negative infimum means (0, δ)-DP already holds: the result is clipped at 0.
    assert eps <= max(grid, 0.0) + 1e-12
    assert eps == pytest.approx(max(grid, 0.0), abs=1e-6)
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    # zcdp_delta is the inverse curve.
    if eps > 0:
        assert comp.zcdp_delta(rho, eps) == pytest.approx(delta, rel=1e-6)
    else:
        assert comp.zcdp_delta(rho, 0.0) <= delta
    assert comp.zcdp_delta(rho, eps) == pytest.approx(_grid_zcdp_delta(rho, eps), rel=1e-5)


def test_zcdp_edge_cases():
    assert comp.pure_to_zcdp(0.3) == pytest.approx(0.045)
    assert comp.zcdp_epsilon(0.0, 1e-6) == 0.0
    assert comp.zcdp_epsilon(np.inf, 1e-6) == np.inf
    assert comp.zcdp_epsilon(0.1, 0.0) == np.inf
    assert comp.zcdp_epsilon(0.1, 1.0) == 0.0
    assert comp.zcdp_delta(0.1, np.inf) == 0.0
    assert 0 < comp.zcdp_delta(0.1, 0.0) <= 1.0
    assert np.isfinite(comp.zcdp_epsilon(1e-12, 1e-6))
    assert np.isfinite(comp.zcdp_epsilon(1e6, 1e-6))


# --------------------------------------------------------------------------- oracles


def test_poisson_subsampled_epsilon():
    assert comp.poisson_subsampled_epsilon(1.0, 0.1) == pytest.approx(
        math.log(1 + 0.1 * (math.e - 1))
    )
    assert comp.poisson_subsampled_epsilon(2.0, 1.0) == pytest.approx(2.0)
    assert comp.poisson_subsampled_epsilon(2.0, 0.0) == 0.0
    assert comp.poisson_subsampled_epsilon(1e-12, 1e-3) == pytest.approx(1e-15, rel=1e-9)
    assert comp.poisson_subsampled_epsilon(1000.0, 0.01) == pytest.approx(1000 + math.log(0.01))
    assert comp.poisson_subsampled_epsilon(np.inf, 0.5) == np.inf
    qs = [0.01, 0.1, 0.5, 0.9]
    assert np.all(np.diff([comp.poisson_subsampled_epsilon(1.0, q) for q in qs]) > 0)


def test_randomized_response_epsilon():
    for eps in [0.1, 1.0, 3.0]:
        assert comp.randomized_response_epsilon(2, 2 / (math.exp(eps) + 1)) == pytest.approx(eps)
    # Brute force: output distribution matrix of k-ary RR, worst log-ratio.
    k, p = 5, 0.3
    out = np.full((k, k), p / k) + (1 - p) * np.eye(k)
    worst = np.max(np.log(out[:, None, :] / out[None, :, :]))
    assert comp.randomized_response_epsilon(k, p) == pytest.approx(worst)
    assert comp.randomized_response_epsilon(3, 0.0) == np.inf
    assert comp.randomized_response_epsilon(3, 1.0) == 0.0


# --------------------------------------------------------------------------- calibration


@pytest.mark.parametrize(
    "eps, delta, k, factor",
    [
        (1.0, 1e-6, 100, 0.5),
        (1.0, 1e-6, 1, 0.5),
        (10.0, 1e-5, 1000, 0.5),
        (0.5, 1e-8, 50, 0.125),
        (2.0, 0.0, 20, 0.5),
        (0.1, 1e-8, 100_000, 0.5),
    ],
)
def test_calibrate_pure_round_trip(eps, delta, k, factor):
    eps0 = comp.calibrate_pure_epsilon(eps, delta, k, zcdp_factor=factor)
    # ε/k rounded down: k uses never exceed ε exactly (the accountant sums them exactly).
    split = comp._split_down(eps, k)
    assert eps0 >= split and k * Fraction(split) <= Fraction(eps)
    assert split == eps / k or math.nextafter(split, math.inf) == eps / k
    composed = comp._compose_pure_views(eps0, k, delta, factor)
    assert min(composed.values()) <= eps + 1e-9
    views = comp._pure_views(eps, delta, k, factor)
    binding = max(views, key=views.get)
    if views[binding] <= eps / k * (1 + comp.REPORT_RTOL):
        assert eps0 == split  # a gain the report would not show: basic composition
        return
    assert min(composed.values()) >= eps - 1e-6
    assert composed[binding] == pytest.approx(eps, abs=1e-6)
    if binding == "optimal":  # the guarantee itself, without a second root-find
        assert comp.optimal_homogeneous_delta(eps0, 0.0, k, eps) <= delta
    if factor == 0.5:
        assert comp.calibrate_laplace_scale(eps, delta, k, 3.0) == pytest.approx(3.0 / eps0)


def test_calibrate_pure_choices():
    # The exponential-mechanism factor can only help.
    assert comp.calibrate_pure_epsilon(1.0, 1e-6, 100, 0.125) >= comp.calibrate_pure_epsilon(
        1.0, 1e-6, 100
    )
    assert comp.calibrate_pure_epsilon(np.inf, 1e-6, 10) == np.inf
    assert comp.calibrate_pure_epsilon(3.0, 1.0, 10) == np.inf
    assert comp.calibrate_pure_epsilon(0.0, 1e-6, 10) == 0.0
    assert comp.calibrate_laplace_scale(0.0, 1e-6, 10) == np.inf
    assert comp.calibrate_pure_epsilon(3.0, 0.0, 10) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="zcdp_factor"):
        comp.calibrate_pure_epsilon(1.0, 1e-6, 10, zcdp_factor=1.0)


@pytest.mark.parametrize("eps, delta, k", [(1.0, 1e-5, 1), (1.0, 1e-5, 100), (8.0, 1e-9, 10_000)])
def test_calibrate_gaussian_round_trip(eps, delta, k):
    sigma = comp.calibrate_gaussian_sigma(eps, delta, k, sensitivity=2.0)
    assert sigma == pytest.approx(math.sqrt(k) * comp.analytic_gaussian_sigma(eps, delta, 2.0))
    mu = comp.compose_gaussian_mu(np.full(k, 2.0 / sigma))
    assert comp.gaussian_delta(mu, eps) <= delta
    got = comp.gaussian_epsilon(mu, delta)
    assert eps - 1e-6 <= got <= eps + 1e-9


# --------------------------------------------------------------------------- extremes


def test_large_k_tiny_epsilon_is_sane():
    k, eps = 100_000, 1e-4
    opt = comp.optimal_homogeneous_epsilon(eps, 0.0, k, DELTA)
    kov = comp.kov_composition(np.full(k, eps), 0.0, DELTA)[0]
    drv = comp.advanced_composition(eps, 0.0, k, DELTA)[0]
    assert np.isfinite(opt) and 0 < opt <= kov <= drv <= k * eps
    # CLT: k ε-DP randomized responses approach one Gaussian with μ = √k ε.
    assert opt == pytest.approx(comp.gaussian_epsilon(math.sqrt(k) * eps, DELTA), rel=0.02)
    big = comp.optimal_homogeneous_epsilon(50.0, 0.0, k, DELTA)
    assert np.isfinite(big) and big <= 50.0 * k
    assert np.isfinite(comp.optimal_homogeneous_delta(eps, 1e-12, k, 0.05))
    assert np.isfinite(comp.calibrate_pure_epsilon(1.0, 1e-6, k))


def test_infinite_epsilon_gives_infinite_results():
    assert comp.basic_composition([1.0, np.inf], [0, 0])[0] == np.inf
    assert comp.advanced_composition(np.inf, 0.0, 3, 1e-6)[0] == np.inf
    assert comp.kov_composition([1.0, np.inf], 0.0, 1e-6)[0] == np.inf
    assert comp.optimal_homogeneous_epsilon(np.inf, 0.0, 3, 1e-6) == np.inf
    assert comp.poisson_subsampled_epsilon(np.inf, 0.1) == np.inf
    assert comp.zcdp_epsilon(comp.pure_to_zcdp(np.inf), 1e-6) == np.inf


@pytest.mark.parametrize(
    "call",
    [
        lambda: comp.basic_composition([-1.0], [0.0]),
        lambda: comp.basic_composition([1.0], [1.5]),
        lambda: comp.basic_composition([1.0, 2.0], [0.0, 0.0, 0.0]),
        lambda: comp.advanced_composition(0.1, 0.0, 0, 1e-6),
        lambda: comp.advanced_composition(0.1, 0.0, 2.5, 1e-6),
        lambda: comp.advanced_composition(0.1, -0.1, 2, 1e-6),
        lambda: comp.kov_composition([0.1], [0.0], 2.0),
        lambda: comp.optimal_homogeneous_epsilon(float("nan"), 0.0, 2, 1e-6),
        lambda: comp.optimal_homogeneous_delta(0.1, 0.0, 2, -1.0),
        lambda: comp.zcdp_epsilon(-1.0, 1e-6),
        lambda: comp.gaussian_delta(-1.0, 1.0),
        lambda: comp.gaussian_epsilon(1.0, 1.5),
        lambda: comp.poisson_subsampled_epsilon(1.0, 1.1),
        lambda: comp.randomized_response_epsilon(1, 0.5),
        lambda: comp.calibrate_gaussian_sigma(1.0, 1e-5, 0),
    ],
)
def test_invalid_inputs_raise(call):
    with pytest.raises(ValueError):
        call()
