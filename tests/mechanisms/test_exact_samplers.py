"""Exact samplers (Canonne, Kamath & Steinke 2020) and the lattice Laplace and Gaussian
mechanisms."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skhybrid.mechanisms import GaussianMechanism, LaplaceMechanism, laplace_mechanism
from skhybrid.mechanisms import _noise
from skhybrid.mechanisms.laplace import laplace_lattice

from ._rngs import ZeroFirst


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


def _float_index(x, g):
    """Mutant: the index as computed before integer input kept its own arithmetic (cast to
    float64 first, which rounds beyond 2^53)."""
    return np.rint(np.clip(np.asarray(x).astype(np.float64) / g, -2.0**50, 2.0**50)).astype(
        np.int64)


@pytest.mark.parametrize("k", [-3, 0, 1, 4, 12])
def test_lattice_index_of_integers_is_exact_round_half_to_even(k):
    from skhybrid.mechanisms._base import RANGE_STEPS, lattice_index

    g = 2.0**k
    rng = np.random.default_rng(k + 10)
    small = rng.integers(-(2**52), 2**52, 500)
    halves = (np.arange(-40, 40) * 2**max(k, 0)) + (2 ** (k - 1) if k > 0 else 0)
    big = np.concatenate([rng.integers(2**53, 2**62, 500), -rng.integers(2**53, 2**62, 500),
                          [2**63 - 1, -(2**63)]])
    for x in (small, halves, big):
        got = lattice_index(x.astype(np.int64), g)
        want = [max(-RANGE_STEPS, min(RANGE_STEPS, round(Fraction(int(max(-(2**62), min(
            2**62, v))), 1) / Fraction(g)))) for v in x]
        assert got.tolist() == want  # (Python rounds a Fraction half to even, as rint)
    # identical to the float path wherever the cast is exact
    np.testing.assert_array_equal(lattice_index(small, g), _float_index(small, g))
    assert lattice_index(np.array([2**64 - 1], dtype=np.uint64), g)[0] > 0  # no wrap


def test_laplace_on_integers_beyond_2_53_moves_neighbours_only_as_far_as_charged():
    # red team 3: Δ = 16399.2, ε = 1 on int64 input: g = 16 and a shift of floor(Δ/g) + 1 =
    # 1025 steps is paid; the float cast made it 1026 (realised ε 1026/1025)
    from skhybrid.mechanisms._base import lattice_index
    from skhybrid.mechanisms.laplace import laplace_lattice

    g, t, _ = laplace_lattice(16399.2, 1.0, 1, integer=True)
    paid = int(16399.2 // g) + 1
    x = np.arange(2**53 + 2**30, 2**53 + 2**30 + 4096, dtype=np.int64)
    shifts = np.abs(lattice_index(x + 16399, g) - lattice_index(x, g))
    assert shifts.max() <= paid
    assert np.abs(_float_index(x + 16399, g) - _float_index(x, g)).max() == paid + 1  # twin
    mech = LaplaceMechanism(1.0, 16399.2)
    worst = int(x[np.argmax(shifts)])
    a = mech(np.int64(worst), np.random.default_rng(7))
    b = mech(np.int64(worst + 16399), np.random.default_rng(7))
    assert abs(b - a) / g <= paid


def test_laplace_at_tiny_epsilon_and_large_sensitivity_keeps_its_scale_in_int64():
    # red team 3: ε = 1e-12 with an integer Δ of 2e6 to 1e7 gave t = Δ/ε ≥ 2^61 on the unit
    # lattice, and the sampler overflowed at random (2/20 to 20/20 draws). A coarser lattice
    # (its rounding paid) now keeps t ≤ 2^56; what no lattice can hold is refused.
    for sensitivity in (2e6, 3e6, 1e7):
        g, t, realised = laplace_lattice(sensitivity, 1e-12, 20, integer=True)
        assert t <= 2**56 and realised <= 1e-12 and g > 1
        out = LaplaceMechanism(1e-12, sensitivity)(np.zeros(20, dtype=np.int64),
                                                  np.random.default_rng(0))  # 20 values
        assert np.all(out / g == np.rint(out / g))
    assert laplace_lattice(1.0, 1.0, 1, integer=True)[0] == 2.0**-10  # unchanged below
    with pytest.raises(ValueError, match=r"epsilon=1e-12 over 1048576 values .*larger epsilon"):
        laplace_lattice(1.0, 1e-12, 2**20)
    with pytest.raises(ValueError, match=r"t in \[1, 2\^56\]"):
        _noise.discrete_laplace(np.random.default_rng(0), 3 * 2**60, 1)


# ------------------------------------------------------- batched coins of discrete_laplace

ALPHA = 1e-6


@pytest.mark.parametrize("num, t", [(0, 1), (0, 7), (1, 2), (5, 7), (6, 7),
                                    (1 << 40, (1 << 40) + 1), (3_000_000, 4_194_305)])
def test_batched_exp_unit_coins_law(num, t):
    # γ = num/t up to 1: about 1/5! of the runs go past the batched rounds (k > 5).
    n = 200_000
    out = _noise._exp_unit_coins(np.random.default_rng(num % 97 + t % 89),
                                 np.full(n, num, dtype=np.int64), t)
    assert stats.binomtest(int(out.sum()), n, math.exp(-num / t)).pvalue > ALPHA


def test_geometric_runs_law():
    n = 300_000
    v = _noise._geometric_runs(np.random.default_rng(4), n)
    expected = [math.exp(-j) - math.exp(-j - 1) for j in range(8)]
    counts = np.bincount(np.minimum(v, 8), minlength=9)
    assert stats.chisquare(counts, n * np.array(expected + [math.exp(-8)])).pvalue > ALPHA


def test_exp_minus_one_coins_law_and_their_tail():
    n = 400_000
    coins = _noise._exp_minus_one_coins(np.random.default_rng(6), (n // 2, 2))
    assert stats.binomtest(int(coins.sum()), n, math.exp(-1)).pvalue > ALPHA
    # U = 0 (probability 1/12!): the algorithm continues from k = 13
    out = _noise._exp_minus_one_coins(ZeroFirst(), (50_000,))
    p_odd = sum(1 / math.factorial(k - 1) - 1 / math.factorial(k) for k in range(13, 60, 2))
    assert stats.binomtest(int(out.sum()), out.size, p_odd * math.factorial(12)).pvalue > ALPHA


@pytest.mark.parametrize("t", [1, 3, 50])
def test_scalar_discrete_laplace_pmf(monkeypatch, t):
    # Few draws are made on Python integers: the same pmf test with that path forced.
    monkeypatch.setattr(_noise, "_SCALAR_DRAWS", 10**9)
    test_discrete_laplace_pmf(t)


def test_scalar_and_vector_paths_agree_in_shape_and_type():
    rng = np.random.default_rng(0)
    for size in [None, 1, (3,), (2, 5), 39, 40, (7, 7)]:
        x = _noise.discrete_laplace(rng, 5, size)
        assert np.shape(x) == (() if size is None else np.empty(size).shape)
        assert np.asarray(x).dtype == np.int64
