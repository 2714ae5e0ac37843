"""Exact samplers (Canonne, Kamath & Steinke 2020) and the lattice Laplace and Gaussian
mechanisms."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skhybrid.mechanisms import GaussianMechanism, LaplaceMechanism, laplace_mechanism
from skhybrid.mechanisms import _noise
from skhybrid.mechanisms.laplace import laplace_lattice


@pytest.mark.parametrize("num, den", [(0, 1), (1, 3), (3, 3), (7, 2), (25, 10)])
def test_bernoulli_exp_matches_exp_minus_gamma(num, den):
    rng = np.random.default_rng(num * 10 + den)
    n = 200_000
    coins = _noise.bernoulli_exp(rng, np.full(n, num), np.full(n, den))
    p = math.exp(-num / den)
    # Two-sided binomial test at 1e-6: a wrong coin (e.g. the parity rule inverted) fails.
    assert stats.binomtest(int(coins.sum()), n, p).pvalue > 1e-6


@pytest.mark.parametrize("t", [1, 3, 50])
def test_discrete_laplace_pmf(t):
    rng = np.random.default_rng(t)
    n = 200_000
    x = _noise.discrete_laplace(rng, t, n)
    assert x.dtype == np.int64
    q = math.exp(-1 / t)
    ks = np.arange(-3 * t, 3 * t + 1)
    pmf = (1 - q) / (1 + q) * q ** np.abs(ks)
    observed = np.array([(x == k).sum() for k in ks])
    inside = pmf * n > 20
    chi2 = ((observed[inside] - n * pmf[inside]) ** 2 / (n * pmf[inside])).sum()
    assert stats.chi2.sf(chi2, inside.sum()) > 1e-6
    assert np.mean(np.abs(x)) == pytest.approx(2 * q / (1 - q * q), rel=0.02)


@pytest.mark.parametrize("sigma", [1, 4, 30])
def test_discrete_gaussian_pmf(sigma):
    rng = np.random.default_rng(sigma)
    n = 200_000
    x = _noise.discrete_gaussian(rng, sigma, n)
    ks = np.arange(-4 * sigma, 4 * sigma + 1)
    w = np.exp(-(ks.astype(float) ** 2) / (2 * sigma**2))
    pmf = w / np.exp(-(np.arange(-40 * sigma, 40 * sigma + 1) ** 2) / (2 * sigma**2)).sum()
    observed = np.array([(x == k).sum() for k in ks])
    inside = pmf * n > 20
    chi2 = ((observed[inside] - n * pmf[inside]) ** 2 / (n * pmf[inside])).sum()
    assert stats.chi2.sf(chi2, inside.sum()) > 1e-6


def test_samplers_are_reproducible_from_the_generator():
    a = _noise.discrete_laplace(np.random.default_rng(5), 7, 1000)
    b = _noise.discrete_laplace(np.random.default_rng(5), 7, 1000)
    np.testing.assert_array_equal(a, b)
    y1 = laplace_mechanism(np.arange(5.0), sensitivity=1.0, epsilon=0.5,
                           rng=np.random.default_rng(9))
    y2 = laplace_mechanism(np.arange(5.0), sensitivity=1.0, epsilon=0.5,
                           rng=np.random.default_rng(9))
    np.testing.assert_array_equal(y1, y2)


def test_lattice_costs_are_accounted_and_never_exceed_epsilon():
    for sens, eps, d, integer in [(1.0, 1.0, 1, False), (0.37, 2.5, 10, False),
                                  (2.0, 0.1, 1000, False), (2.0, 0.5, 64, True),
                                  (1.0, 7.0, 3, True)]:
        g, t, realised = laplace_lattice(sens, eps, d, integer)
        assert g == 2.0 ** round(math.log2(g))  # a power of two
        assert realised <= eps  # exact: t = ceil(Delta_int / epsilon) in rationals
        assert realised >= eps * (1 - 2e-3)  # and the rounding costs at most ~0.1 %
        delta_int = sens / g if integer else math.floor(sens / g) + d
        assert realised == pytest.approx(delta_int / t)


def test_outputs_are_lattice_points_and_unbiased():
    rng = np.random.default_rng(0)
    y = laplace_mechanism(np.full(50_000, 0.123456789), sensitivity=1.0, epsilon=1.0, rng=rng)
    g, _, _ = laplace_lattice(1.0, 1.0, 50_000)
    assert np.all(np.mod(y, g) == 0)
    assert y.mean() == pytest.approx(0.123456789, abs=0.02)
    assert np.mean(np.abs(y - 0.1234)) == pytest.approx(1.0, rel=0.03)  # scale 1/epsilon
    with pytest.raises(ValueError, match="finite"):
        LaplaceMechanism(1.0)(np.array([np.nan]), rng)


def _worst_integer_shift(g, sensitivity, d):
    """Largest ℓ2 distance between the lattice indices ``rint(x/g)`` of integer neighbours
    (``‖x − x'‖₂ ≤ sensitivity``), over offsets of ``x`` within two lattice periods."""
    r = int(sensitivity)
    steps = [v for v in itertools.product(range(-r, r + 1), repeat=d)
             if math.hypot(*v) <= sensitivity]
    period = max(1, int(2 * g))
    worst = 0.0
    for x in itertools.product(range(period), repeat=d):
        x = np.array(x, dtype=float)
        for v in steps:
            worst = max(worst, float(np.linalg.norm(np.rint((x + v) / g) - np.rint(x / g))))
    return worst


def _old_integer_lattice(sensitivity, rho, n_values, min_sigma):
    """Mutant: the integer branch before it was limited to g ≤ 1 (integers assumed to be
    lattice points on every lattice)."""
    target = max(sensitivity / math.sqrt(2.0 * rho), min_sigma)
    k = math.floor(math.log2(target / 2048))
    for step in range(k, k + 40):
        g = 2.0**step
        if float(sensitivity / g).is_integer():
            shift = sensitivity / g
            sigma_int = max(1, math.ceil(max(shift / math.sqrt(2.0 * rho), min_sigma / g)))
            if sigma_int <= 4096:
                return g, sigma_int, shift**2 / (2.0 * sigma_int**2)


@pytest.mark.parametrize("epsilon, delta, sensitivity, d, coarse", [
    (0.001, 1e-6, 2.0, 1, True), (0.002, 1e-6, 4.0, 2, True), (1.0, 1e-5, 1.0, 1, False),
    (0.01, 1e-6, 3.0, 1, False)])
def test_gaussian_integer_releases_realise_at_most_the_charged_rho(epsilon, delta, sensitivity,
                                                                   d, coarse):
    mech = GaussianMechanism(epsilon, delta, sensitivity)
    g, sigma_int, _ = mech.lattice(d, integer=True)
    realised = _worst_integer_shift(g, sensitivity, d) ** 2 / (2.0 * sigma_int**2)
    assert realised <= mech.event().rho
    if coarse:  # the twin: its coarse lattice (g > 1) rounds integers apart
        g, sigma_int, _ = _old_integer_lattice(sensitivity, mech.rho, d, mech.sigma)
        assert g > 1
        assert _worst_integer_shift(g, sensitivity, d) ** 2 / (2.0 * sigma_int**2) > mech.rho
