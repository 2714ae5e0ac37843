"""gaussian_lattice records its realised ρ exactly, rounded up (never below Δ'^2/(2σ^2))."""

import math
from fractions import Fraction

import numpy as np

from skhybrid.mechanisms.gaussian import _shift_up, gaussian_lattice, zcdp_rho_for
from skhybrid.mechanisms.randomized_response import GaussianRandomizedResponse


def _grid(n, seed):
    rng = np.random.default_rng(seed)
    return [(float(10 ** rng.uniform(-1, 0.7)), float(10 ** rng.uniform(-9, -3)))
            for _ in range(n)]


def test_randomized_response_rho_is_exact_rounded_up():
    # Integer shift 1/g on the lattice: the exact zCDP ρ is the rational (1/g)^2/(2σ^2).
    old_below = 0
    for eps, delta in _grid(120, seed=2):
        rr = GaussianRandomizedResponse(eps, delta)
        shift = Fraction(1) / Fraction(rr.lattice_step)
        exact = shift**2 / (2 * rr.sigma_int**2)
        assert Fraction(rr.rho) >= exact
        assert Fraction(math.nextafter(rr.rho, 0.0)) < exact  # the smallest such float
        assert rr.rho <= zcdp_rho_for(eps, delta)  # within the budget asked for
        # Mutation twin: the float formula rounds to nearest, below the exact ρ at times.
        s = float(shift)
        old_below += Fraction(s**2 / (2.0 * rr.sigma_int**2)) < exact
    assert old_below > 0


def test_real_valued_lattice_pays_the_exact_rounding_bound():
    rng = np.random.default_rng(7)
    for _ in range(150):
        sens, rho = float(10 ** rng.uniform(-3, 2)), float(10 ** rng.uniform(-3, 0))
        n = int(rng.integers(1, 60))
        g, sigma_int, realised = gaussian_lattice(sens, rho, n)
        scaled = Fraction(sens) / Fraction(g)
        shift = Fraction(_shift_up(float(scaled), n))
        assert shift >= scaled and (shift - scaled) ** 2 >= n  # ≥ Δ/g + sqrt(d), exactly
        exact = shift**2 / (2 * sigma_int**2)
        assert exact <= Fraction(rho) and Fraction(realised) >= exact
        assert realised <= rho


def test_shift_up_is_the_smallest_float_above_the_bound():
    for scaled, n in [(1024.0, 2), (3.0, 3), (0.5, 7), (2.0**30, 5), (1e6 + 0.1, 11)]:
        s = _shift_up(scaled, n)
        below = math.nextafter(s, 0.0)
        assert (Fraction(s) - Fraction(scaled)) ** 2 >= n
        assert below < scaled or (Fraction(below) - Fraction(scaled)) ** 2 < n
