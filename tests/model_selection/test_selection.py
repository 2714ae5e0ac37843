"""The selection rule's accounting, against the papers' statements and exact divergences."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from skhybrid.accounting._rdp import rdp_to_dp_epsilon
from skhybrid.model_selection._selection import (
    _ORDERS,
    draw_number_of_runs,
    pure_dp_rdp,
    random_stopping_epsilon,
    random_stopping_rdp,
    run_epsilon_for_budget,
)


@pytest.mark.parametrize("run_eps", [0.01, 0.3, 1.0, 2.5])
@pytest.mark.parametrize("m", [2, 20, 500])
def test_pure_bound_is_liu_talwar_three_epsilon(run_eps, m):
    # Liu & Talwar 2019, Thm 3.4: an eps-DP base run with random stopping is 3 eps-DP,
    # whatever the stopping probability.
    total, analysis = random_stopping_epsilon(run_eps, 0.0, m)
    assert analysis == "pure"
    # 3·ε_run rounded up: never below it, and the next float down would be
    assert Fraction(total) >= 3 * Fraction(run_eps) > Fraction(math.nextafter(total, 0))


def test_the_search_bound_is_never_below_its_exact_value():
    # 3.0 * ε_run rounds to nearest: for about half the ε_run it lands below 3·ε_run
    # (the mutation twin); the Rényi path's ε is padded by a bound on its float error.
    rng = np.random.default_rng(0)
    runs = 10.0 ** rng.uniform(-3, 1, 300)
    assert sum(Fraction(3.0 * e) < 3 * Fraction(e) for e in runs) > 50  # (the old formula)
    assert all(Fraction(random_stopping_epsilon(e, 0.0, 10)[0]) >= 3 * Fraction(e)
               for e in runs)
    for e in runs[:40]:
        padded = random_stopping_epsilon(e, 1e-6, 20)[0]
        rdp = random_stopping_rdp(lambda a, e=e: pure_dp_rdp(e, a), 20)
        plain = min(rdp_to_dp_epsilon(rdp, _ORDERS, 1e-6)[0], 3 * e)
        assert plain <= padded <= plain * (1 + 1e-12) + 1e-12


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_pure_dp_rdp_is_randomized_response_divergence(eps):
    # Steinke 2024, Thm 4: the curve is the Renyi divergence of randomized response.
    p = math.exp(eps) / (1 + math.exp(eps))
    for lam in [1.5, 2.0, 7.0, 40.0]:
        exact = math.log(p**lam * (1 - p) ** (1 - lam) + (1 - p) ** lam * p ** (1 - lam)) / (
            lam - 1)
        assert pure_dp_rdp(eps, [lam])[0] == pytest.approx(exact, rel=1e-12)
    assert pure_dp_rdp(eps, [1e6])[0] == pytest.approx(eps, rel=1e-5)


def test_rdp_curve_matches_papernot_steinke_theorem_2():
    # eps'(lam) = base(lam) + min_lh [2(1 - 1/lh) base(lh) + 2 log(1/g)/lh] + log(1/g)/(lam-1),
    # re-derived here with a continuous minimisation over lh.
    run_eps, m = 0.5, 10
    base = lambda a: pure_dp_rdp(run_eps, np.atleast_1d(a))[0]  # noqa: E731
    inner = minimize_scalar(lambda lh: 2 * (1 - 1 / lh) * base(lh) + 2 * math.log(m) / lh,
                            bounds=(1.0001, 1e4), method="bounded").fun
    for lam in [1.5, 3.0, 20.0]:
        expected = base(lam) + inner + math.log(m) / (lam - 1)
        got = random_stopping_rdp(lambda a: pure_dp_rdp(run_eps, a), m, [lam])[0]
        assert expected - 1e-6 <= got <= expected + 2e-3  # minimize_scalar tolerance


def _best_of_geometric_rr(eps, m):
    """Output law of max of K randomized-response bits, K ~ Geometric(1/m)."""
    gamma = 1 / m

    def p_zero(p):  # E[(1 - p)^K]
        s = 1 - p
        return gamma * s / (1 - (1 - gamma) * s)

    p = math.exp(eps) / (1 + math.exp(eps))
    a0, b0 = p_zero(p), p_zero(1 - p)
    return np.array([a0, 1 - a0]), np.array([b0, 1 - b0])


@pytest.mark.parametrize("eps", [0.2, 1.0])
@pytest.mark.parametrize("m", [2, 10, 100])
def test_bounds_hold_on_best_of_k_randomized_response(eps, m):
    P, Q = _best_of_geometric_rr(eps, m)
    assert np.max(np.abs(np.log(P / Q))) <= 3 * eps + 1e-12
    for lam in [1.5, 2.0, 5.0, 30.0]:
        for A, B in ((P, Q), (Q, P)):
            exact = math.log(np.sum(A**lam * B ** (1 - lam))) / (lam - 1)
            assert exact <= random_stopping_rdp(lambda a: pure_dp_rdp(eps, a), m, [lam])[0]


@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-3])
@pytest.mark.parametrize("eps", [0.3, 1.0, 8.0])
def test_run_epsilon_is_derived_from_the_total(eps, delta):
    run = run_epsilon_for_budget(eps, delta, 20)
    total, analysis = random_stopping_epsilon(run, delta, 20)
    assert total <= eps
    assert random_stopping_epsilon(run * (1 + 1e-6), delta, 20)[0] > eps
    assert run >= eps / 3
    if delta == 0:
        assert analysis == "pure" and run == pytest.approx(eps / 3)


def test_rdp_analysis_wins_at_large_epsilon():
    run = run_epsilon_for_budget(8.0, 1e-6, 10)
    assert run > 8.0 / 3
    assert random_stopping_epsilon(run, 1e-6, 10)[1] == "rdp"


def test_number_of_runs_is_geometric():
    rng = np.random.default_rng(0)
    m = 8
    k = np.array([draw_number_of_runs(rng, m) for _ in range(20_000)])
    assert k.min() == 1
    # P[K = 1] = 1/m and E[K] = m; 20,000 draws: standard errors 0.0023 and 0.053.
    assert abs(np.mean(k == 1) - 1 / m) < 0.01
    assert abs(k.mean() - m) < 0.25
