"""Tests of STR's per-round privacy arithmetic, Gaussian RR and the composition helpers."""

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import comb
from scipy.stats import binom, norm

from skhybrid.accounting import _composition as comp
from skhybrid.transfer._privacy import (
    _composed_epsilon,
    coupled_sampling_amplification,
    gaussian_rr_sigma,
    ks_claim41_amplification,
    str_curator_guarantee,
)


def gaussian_mechanism_delta(eps, sigma):
    # Balle–Wang curve of N(0, σ²) vs N(1, σ²), from the accounting module.
    return comp.gaussian_delta(1.0 / np.asarray(sigma, dtype=float), eps)


def _advanced_composition_epsilon(eps, k, slack):
    # DRV10 alone (the accounting helper reports min(DRV, basic)): basic composition
    # contributes kε, so a tiny per-use ε isolates the DRV term in these reference numbers.
    adv = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * math.expm1(eps)
    assert comp.advanced_composition(eps, 0.0, k, slack)[0] == pytest.approx(min(adv, k * eps))
    return adv


def _kov_closed_form_epsilon(eps, k, slack):
    return comp.kov_composition(np.full(k, eps), 0.0, slack)[0]


def _optimal_homogeneous_epsilon(eps, dlt, k, target):
    return comp.optimal_homogeneous_epsilon(eps, dlt, k, target)


def _optimal_homogeneous_delta(eps_g, eps, k):
    return comp.optimal_homogeneous_delta(eps, 0.0, k, eps_g)


def test_ks_claim41_hand_values():
    # ε = 1, δ = 1e-6, m = 50, κ = 0.1, n = 10 000: η = 1e-3, ε* = 6·50·1e-3 = 0.3,
    # δ* = 4·50·e^{0.3}·1e-6·1e-3.
    eps, dlt = ks_claim41_amplification(1.0, 1e-6, 50, 0.1, 10_000)
    assert eps == pytest.approx(0.3)
    assert dlt == pytest.approx(2e-7 * math.exp(0.3))
    with pytest.raises(ValueError, match="kappa"):
        ks_claim41_amplification(1.0, 1e-6, 50, 0.0, 10_000)


def test_coupled_sampling_hand_values():
    # The table in docs/notes/building_blocks.rst: ε̂ = 0.23 (ε=1, m=50, η=0.002) and 1.15
    # (ε=1, m=10, η=0.05).
    assert coupled_sampling_amplification(1.0, 0.0, 50, 0.002)[0] == pytest.approx(0.2348, abs=1e-4)
    assert coupled_sampling_amplification(1.0, 0.0, 10, 0.05)[0] == pytest.approx(1.1454, abs=1e-4)
    # m = 1 in closed form: ε̂ = ln((1 + η(e^ε−1))/(1 − η(1−e^{−ε}))), δ̂ = δη(1 + e^{ε̂−ε}).
    eps, dlt, eta = 0.7, 1e-5, 0.01
    e_hat, d_hat = coupled_sampling_amplification(eps, dlt, 1, eta)
    expected_e = math.log((1 + eta * (math.e**eps - 1)) / (1 - eta * (1 - math.e**-eps)))
    assert e_hat == pytest.approx(expected_e, rel=1e-12)
    assert d_hat == pytest.approx(dlt * eta * (1 + math.exp(expected_e - eps)), rel=1e-12)
    # No movement, no loss.
    assert coupled_sampling_amplification(2.0, 1e-3, 7, 0.0) == (0.0, 0.0)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_coupled_sampling_asymptotics_and_looser_forms(eps):
    m, eta, dlt = 20, 1e-6, 1e-7
    e_hat, d_hat = coupled_sampling_amplification(eps, dlt, m, eta)
    assert e_hat == pytest.approx(2 * m * eta * math.sinh(eps), rel=1e-4)
    # The looser δ̂ = (1 + e^{ε̂})·δ·(a^m − 1)/(e^ε − 1) is an upper bound of ours.
    a_m1 = (1 + eta * math.expm1(eps)) ** m - 1
    assert d_hat <= (1 + math.exp(e_hat)) * dlt * a_m1 / math.expm1(eps) * (1 + 1e-12)
    # δ̂ ≈ mηδ·(1 + e^{−ε}) for small mη (from the m = 1 closed form).
    assert d_hat == pytest.approx(m * eta * dlt * (1 + math.exp(-eps)), rel=1e-3, abs=0)
    # Below KS/KV's 6εmη exactly when 2 sinh ε ≤ 6ε, i.e. ε ≤ 2.985.
    assert (e_hat <= 6 * eps * m * eta) == (eps < 2.98)


def _rr_output_prob(a, eps):
    """P[output bit = 1] for ε-randomized response of a Bernoulli(a) bit."""
    keep = math.exp(eps) / (1 + math.exp(eps))
    return a * keep + (1 - a) * (1 - keep)


@pytest.mark.parametrize(
    "eps, m, eta, actual",
    [(1.0, 50, 0.002, 0.17), (1.0, 10, 0.05, 0.82), (0.3, 30, 0.01, None), (4.0, 5, 0.01, None)],
)
def test_coupled_sampling_bounds_explicit_rr_mechanism(eps, m, eta, actual):
    """M = per-coordinate ε-RR of m bits (ε-DP, δ = 0); data Bern(a)^m vs Bern(a+η)^m.

    The outputs are Bern(q)^m vs Bern(q')^m, so the worst log-ratio over output vectors is
    m·max(|ln(q/q')|, |ln((1−q)/(1−q'))|). It must stay below ε̂ for every a.
    """
    a = np.linspace(0.0, 1.0 - eta, 2001)
    q, q2 = _rr_output_prob(a, eps), _rr_output_prob(a + eta, eps)
    worst = m * np.max(np.maximum(np.abs(np.log(q / q2)), np.abs(np.log((1 - q) / (1 - q2)))))
    e_hat, d_hat = coupled_sampling_amplification(eps, 0.0, m, eta)
    assert d_hat == 0.0
    assert worst <= e_hat
    assert worst >= 0.5 * e_hat  # and the bound is not vacuous
    if actual is not None:
        assert worst == pytest.approx(actual, abs=0.006)


@pytest.mark.parametrize("eps", [3.0, 4.0])
def test_ks_claim41_fails_for_large_epsilon(eps):
    """KS Claim 4.1's 6εmη is violated by the explicit ε-RR mechanism once ε ≥ 3.

    So Karwa–Vadhan Lemma 6.1 must carry a side condition on ε (KS use ε = 1).
    """
    m, eta = 5, 1e-4
    a = np.linspace(0.0, 1.0 - eta, 2001)
    q, q2 = _rr_output_prob(a, eps), _rr_output_prob(a + eta, eps)
    worst = m * np.max(np.maximum(np.abs(np.log(q / q2)), np.abs(np.log((1 - q) / (1 - q2)))))
    eps_ks, _ = ks_claim41_amplification(eps, 0.0, m, 1.0, 1 / eta)
    assert worst > eps_ks
    assert worst <= coupled_sampling_amplification(eps, 0.0, m, eta)[0]


@pytest.mark.parametrize(
    "eps, dlt, m, eta", [(1.0, 0.01, 10, 0.05), (0.5, 0.05, 20, 0.02), (2.0, 0.01, 4, 0.1)]
)
def test_coupled_sampling_delta_bounds_leaky_mechanism(eps, dlt, m, eta):
    """M(x) = ("leak", x) w.p. δ, else ("rr", ε-RR(x)) — (ε, δ)-DP for replace-one.

    Exact hockey-stick divergence of M's output under Bern(a)^m vs Bern(a+η)^m at level
    e^{ε̂}, summed over output vectors (grouped by their number of ones), must be ≤ δ̂.
    """
    e_hat, d_hat = coupled_sampling_amplification(eps, dlt, m, eta)
    c = np.arange(m + 1)
    worst = 0.0
    for a in np.linspace(0.0, 1.0 - eta, 101):
        for lo, hi in ((a, a + eta), (a + eta, a)):  # both directions
            # Probability of each count of ones (= sum over the vectors with that count;
            # per-vector likelihood ratios depend on the count only).
            p_leak, q_leak = binom.pmf(c, m, lo), binom.pmf(c, m, hi)
            p_rr = binom.pmf(c, m, _rr_output_prob(lo, eps))
            q_rr = binom.pmf(c, m, _rr_output_prob(hi, eps))
            hs = dlt * np.maximum(p_leak - math.exp(e_hat) * q_leak, 0).sum()
            hs += (1 - dlt) * np.maximum(p_rr - math.exp(e_hat) * q_rr, 0).sum()
            worst = max(worst, hs)
    assert worst <= d_hat
    assert worst > 0.0


def test_gaussian_mechanism_delta_matches_integral():
    # δ(ε) = ∫ [p(x) − e^ε q(x)]_+ dx for N(0, σ²) vs N(1, σ²).
    for eps, sigma in [(0.5, 2.0), (1.0, 1.0), (2.0, 0.8), (0.1, 5.0)]:
        integral = quad(
            lambda x, e=eps, s=sigma: max(norm.pdf(x, 0, s) - math.exp(e) * norm.pdf(x, 1, s), 0.0),
            -40 * sigma,
            40 * sigma,
            points=[0.5],
            limit=400,
        )[0]
        assert float(gaussian_mechanism_delta(eps, sigma)) == pytest.approx(
            integral, rel=1e-6, abs=1e-12
        )


def test_gaussian_rr_sigma_values_and_exact_privacy():
    assert gaussian_rr_sigma(0.5, 1e-4) == pytest.approx(math.sqrt(2 * math.log(2e4)) / 0.5)
    # KS σ² = 2 ln(2/δ)/ε² is (ε, δ)-DP for sensitivity 1 on this grid (exact curve);
    # the classic Dwork–Roth theorem covers only ε < 1.
    eps = np.linspace(0.01, 6.3, 300)
    for dlt in [1e-12, 1e-8, 1e-6, 1e-4, 1e-2, 0.1, 0.5, 0.9, 0.999]:
        sigma = np.sqrt(2 * np.log(2 / dlt)) / eps
        assert np.all(gaussian_mechanism_delta(eps, sigma) <= dlt)
    # It fails beyond ε ≈ 6.4 (δ = 0.5) / 9.0 (δ = 1e-4): refused.
    with pytest.raises(ValueError, match="not"):
        gaussian_rr_sigma(7.0, 0.5)
    with pytest.raises(ValueError, match="not"):
        gaussian_rr_sigma(9.5, 1e-4)
    gaussian_rr_sigma(8.9, 1e-4)
    with pytest.raises(ValueError, match="delta"):
        gaussian_rr_sigma(1.0, 0.0)


def test_composition_reference_numbers():
    # The composition table of docs/notes/building_blocks.rst (δ_target = 1e-6, δ₀ = 0).
    assert _advanced_composition_epsilon(0.1, 100, 1e-6) == pytest.approx(6.31, abs=0.01)
    assert _kov_closed_form_epsilon(0.1, 100, 1e-6) == pytest.approx(5.76, abs=0.01)
    assert _optimal_homogeneous_epsilon(0.1, 0.0, 100, 1e-6) == pytest.approx(4.78, abs=0.01)
    assert _advanced_composition_epsilon(0.05, 1000, 1e-6) == pytest.approx(10.87, abs=0.01)
    assert _kov_closed_form_epsilon(0.05, 1000, 1e-6) == pytest.approx(9.56, abs=0.01)
    assert _optimal_homogeneous_epsilon(0.05, 0.0, 1000, 1e-6) == pytest.approx(8.28, abs=0.01)
    # Advanced composition can be worse than basic (k = 10, ε = 1): the minimum is kept.
    assert _advanced_composition_epsilon(1.0, 10, 1e-5) == pytest.approx(32.4, abs=0.1)
    assert _composed_epsilon(1.0, 0.0, 10, 1e-5, "advanced") == 10.0
    assert _composed_epsilon(0.01, 1e-3, 1000, 1e-4) == math.inf


def test_optimal_delta_matches_direct_sum():
    # KOV Thm 3.3 lattice form against the binomial-tail implementation, small k.
    eps, k = 0.3, 12
    for i in range(k // 2 + 1):
        direct = (
            sum(
                comb(k, j) * (math.exp((k - j) * eps) - math.exp((k - 2 * i + j) * eps))
                for j in range(i)
            )
            / (1 + math.exp(eps)) ** k
        )
        assert _optimal_homogeneous_delta((k - 2 * i) * eps, eps, k) == pytest.approx(
            direct, abs=1e-13
        )




def test_composed_epsilon_is_the_minimum_of_the_accounting_views():
    eps, dlt, k, target = 0.05, 1e-8, 200, 1e-5
    views = [
        comp.advanced_composition(eps, dlt, k, target - k * dlt)[0],
        comp.kov_composition(np.full(k, eps), dlt, 1 - (1 - target) / (1 - dlt) ** k)[0],
        comp.optimal_homogeneous_epsilon(eps, dlt, k, target),
    ]
    assert _composed_epsilon(eps, dlt, k, target) == pytest.approx(min(views))
    assert _composed_epsilon(eps, dlt, k, target, "advanced") == pytest.approx(views[0])
    with pytest.raises(ValueError, match="method"):
        _composed_epsilon(eps, dlt, k, target, "rdp")


def test_curator_guarantee_paper_arithmetic_by_hand():
    # KS Thm 4.2: ε* = 6·m/(κn) (ε_M = 1), δ_M chosen so δ* = δ/(2T), DRV with slack δ/2.
    eps, dlt, n, kappa, m, T = 1.0, 1e-5, 200_000, 0.05, 10, 20
    g = str_curator_guarantee(eps, dlt, n, kappa, m, T, accounting="paper")
    eta = 1 / (kappa * n)
    assert g.round_epsilon == pytest.approx(6 * m * eta)
    assert g.round_delta == pytest.approx(dlt / (2 * T))
    assert g.learner_delta == pytest.approx(dlt / (8 * T * m * eta * math.exp(6 * m * eta)))
    drv = math.sqrt(2 * T * math.log(2 / dlt)) * g.round_epsilon + T * g.round_epsilon * math.expm1(
        g.round_epsilon
    )
    assert g.total_epsilon == pytest.approx(min(drv, T * g.round_epsilon))
    assert g.total_delta == pytest.approx(dlt)
    # Feasible iff ε* ≤ ε/√(8T ln(2/δ)); ε_M > 1 is refused (Claim 4.1 is applied at 1).
    assert g.feasible == (g.round_epsilon <= eps / math.sqrt(8 * T * math.log(2 / dlt)))
    assert not str_curator_guarantee(eps, dlt, n, kappa, m, T, learner_epsilon=2.0,
                                     accounting="paper").feasible


def test_curator_guarantee_paper_vacuous_round_does_not_overflow():
    # The planner probes m = n (subsample_size=None): ε* = 6/κ = 960 here, past e^709.
    # main raised OverflowError from the plan of a fit with enough rows for m = 1.
    g = str_curator_guarantee(1.0, 1e-5, 10**7, 0.00625, 10**7, 5, accounting="paper")
    assert not g.feasible and g.round_epsilon == pytest.approx(960.0)
    assert g.total_epsilon == 5 * g.round_epsilon and g.round_delta == pytest.approx(1e-6)
    assert str_curator_guarantee(1.0, 1e-5, 10**7, 0.00625, 1, 5, accounting="paper").feasible


def test_curator_guarantee_tight_matches_primitives():
    eps, dlt, n, kappa, m, T = 2.0, 1e-5, 50_000, 0.05, 30, 40
    g = str_curator_guarantee(eps, dlt, n, kappa, m, T, learner_epsilon=0.7)
    e_r, d_r = coupled_sampling_amplification(0.7, g.learner_delta, m, 1 / (kappa * n))
    assert (g.round_epsilon, g.round_delta) == pytest.approx((e_r, d_r))
    assert T * g.round_delta == pytest.approx(dlt / 2)
    assert g.total_epsilon == pytest.approx(_composed_epsilon(e_r, d_r, T, dlt))
    assert g.feasible == (g.total_epsilon <= eps)
    with pytest.raises(ValueError, match="accounting"):
        str_curator_guarantee(eps, dlt, n, kappa, m, T, accounting="rdp")


def test_round_learner_refusals_come_before_the_charge():
    # Red team 8, F2: DPLogisticRegression refuses tol below 1e-13 (and a tol float64
    # cannot certify at its epsilon) before its own charge; as STR's round learner it
    # refused inside round 1, after STR had charged its whole guarantee.
    import warnings

    from skhybrid.accounting import PrivacyAccountant
    from skhybrid.learners import DPLogisticRegression
    from skhybrid.transfer import SubsampleTestReweigh

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 3))
    y = (X[:, 0] > 0).astype(int)
    curator = np.arange(6000) < 3000
    for base, base_eps, match in [
        (DPLogisticRegression(tol=1e-17), 1.0, "tol=1e-17"),
        (DPLogisticRegression(tol=1e-13), 1e-9, "cannot certify tol=1e-13"),
    ]:
        acc = PrivacyAccountant(100.0, 1e-3)
        str_ = SubsampleTestReweigh(base, epsilon=4.0, delta=1e-5, max_iter=3, kappa=0.5,
                                    alpha=0.2, base_epsilon=base_eps, classes=[0, 1],
                                    accountant=acc, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            with pytest.raises(ValueError, match=f"would refuse every round's fit.*{match}"):
                str_.fit(X, y, curator_mask=curator)
        assert acc.spent() == (0.0, 0.0)
