"""The real-valued lattices leave room for a caller's sensitivity a few units in the last
place short (a float formula's roundings, a clipped row's norm), and the library's own
multi-rounding sensitivities are rounded up."""

import math
from fractions import Fraction

import numpy as np

from skhybrid.mechanisms import _base
from skhybrid.mechanisms import _exact_selection as xs
from skhybrid.mechanisms.laplace import laplace_lattice
from skhybrid.utils._rounding import float_at_least, float_sqrt_at_least

#: One unit in the last place below 0.5 (the red team's τ: its exact value is above 0.5).
_JUST_BELOW_HALF = math.nextafter(0.5, 0.0)


def _spans(sensitivity, g):
    # how many lattice steps a change of exactly sensitivity·(1 + 2^-32) can span
    return math.floor(Fraction(sensitivity) * (1 + Fraction(1, 2**32)) / Fraction(g))


def test_selection_lattice_pays_a_sensitivity_2_to_the_minus_32_above_the_one_given():
    rng = np.random.default_rng(0)
    cases = [_JUST_BELOW_HALF, math.nextafter(1.0, 0.0), math.nextafter(2.0**-20, 0.0)]
    cases += list(10.0 ** rng.uniform(-6, 6, 200))
    for sensitivity in cases:
        xs.score_lattice.cache_clear()
        g, S = xs.score_lattice(sensitivity, 1.0, 2)
        # |round(u/g) - round(u'/g)| <= |u - u'|/g + 1: S covers every |u - u'| up to
        # Δ(1 + 2^-32)
        assert S == _spans(sensitivity, g) + 1
    xs.score_lattice.cache_clear()
    g, S = xs.score_lattice(_JUST_BELOW_HALF, 1.0, 2)
    assert (S - 1) * g >= 0.5  # the power of two itself is paid


def test_laplace_lattice_pays_a_sensitivity_2_to_the_minus_32_above_the_one_given():
    for sensitivity in (_JUST_BELOW_HALF, math.nextafter(2.0, 0.0), 0.37, 7.5e4):
        for n_values in (1, 10):
            g, t, realised = laplace_lattice(sensitivity, 1.0, n_values)
            delta_int = _spans(sensitivity, g) + n_values
            assert realised == delta_int / t and realised <= 1.0
    g, t, _ = laplace_lattice(math.nextafter(2.0, 0.0), 1.0, 1)
    assert t * 1.0 >= 2.0 / g + 1  # Δ = 2 itself (and the rounding) is paid


def test_without_the_slack_a_sensitivity_one_ulp_short_loses_its_last_step(monkeypatch):
    # Mutation twin of the two tests above: with no slack the lattice pays exactly the
    # float it is given, and one unit in the last place below 0.5 leaves 0.5 unpaid.
    monkeypatch.setattr(_base, "SENSITIVITY_SLACK", Fraction(1))
    xs.score_lattice.cache_clear()
    try:
        g, S = xs.score_lattice(_JUST_BELOW_HALF, 1.0, 2)
    finally:
        xs.score_lattice.cache_clear()
    assert (S - 1) * g < 0.5


def test_rounding_helpers_return_the_nearest_float_on_the_safe_side():
    rng = np.random.default_rng(1)
    for _ in range(500):
        value = Fraction(int(rng.integers(1, 2**62)), int(rng.integers(1, 2**62)))
        up = float_at_least(value)
        assert Fraction(up) >= value > Fraction(math.nextafter(up, 0.0))
        root = float_sqrt_at_least(value)
        assert Fraction(root) ** 2 >= value > Fraction(math.nextafter(root, 0.0)) ** 2
    assert float_at_least(Fraction(1, 2)) == 0.5 and float_sqrt_at_least(4) == 2.0
    assert float_sqrt_at_least(0) == 0.0


def test_discrepancy_sensitivity_is_never_below_its_exact_value():
    # The red team's parameters: the float formula (five roundings) gave 0.5 - 2^-54 for
    # an exact 0.5 + 2.6e-17.
    from skhybrid.adaptation._discrepancy import discrepancy_gradient_sensitivity as tau

    r, r_hat, mu, n = 0.5214067845269159, 1.9178883544971945, 8.0, 32
    exact = 2 * Fraction(mu) * Fraction(r) ** 2 * Fraction(r_hat) ** 2 / n
    assert Fraction(2.0 * mu * r**2 * r_hat**2 / n) < exact  # (the old formula)
    assert tau(r, r_hat, mu, n) == float_at_least(exact) >= 0.5
    rng = np.random.default_rng(2)
    for _ in range(300):
        r, r_hat, mu = 10.0 ** rng.uniform(-2, 2, 3)
        n, m = int(rng.integers(1, 10**6)), int(rng.integers(1, 10**6))
        paper = 2 * Fraction(mu) * Fraction(r) ** 2 * Fraction(r_hat) ** 2 / n
        tight = min(Fraction(mu) * Fraction(r) ** 2 / n, Fraction(2)) * Fraction(r_hat) ** 2
        for bound, exact in (("paper", paper), ("tight", tight)):
            assert Fraction(tau(r, r_hat, mu, n, bound=bound)) >= exact
            two = tau(r, r_hat, mu, n, bound=bound, norm="2", m=m)
            assert Fraction(two) ** 2 >= exact**2 * m


def test_objective_perturbation_output_sensitivity_is_never_below_its_exact_value():
    from skhybrid.learners._objective_perturbation import ObjectivePerturbation

    rng = np.random.default_rng(3)
    for _ in range(200):
        lam, eps = 10.0 ** rng.uniform(-4, 0), 10.0 ** rng.uniform(-1, 1)
        n = int(rng.integers(10, 10**5))
        op = ObjectivePerturbation(eps, lam, n, output_share=0.1)
        dim, tol = int(rng.integers(1, 200)), 10.0 ** rng.uniform(-12, -6)
        exact = 2 * dim * Fraction(tol) / (Fraction(op.lam) + Fraction(op.extra_reg))
        assert Fraction(op.output_sensitivity(dim, tol)) >= exact
