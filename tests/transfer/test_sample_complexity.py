"""Sample-complexity calculators against KS's formulas and worked examples (App. C, D)."""

import math

import pytest

from skhybrid.transfer._privacy import _composed_epsilon, coupled_sampling_amplification
from skhybrid.transfer._sample_complexity import (
    chi2_plus_one_gaussian_scale,
    str_curator_size_algorithm2,
    str_curator_size_algorithm4,
    str_curator_size_tight,
    str_kappa,
    str_learner_delta,
    str_local_batch_size,
    str_max_iterations,
    str_requirements,
    str_sgd_iterations,
    str_sgd_sigma2,
    str_min_curator_size,
    str_subsample_size_app_c,
)

# App. D: d = 8, k = 2, S = N(0, 0.1² I), T shrinks k coordinates to std 0.07.
ALPHA, EPS, DELTA, BETA = 0.08, 0.5, 1e-4, 0.05
CHI2_EXACT = chi2_plus_one_gaussian_scale(0.1, 0.07, 2) - 1.0
CHI2_PAPER = 0.35  # the paper prints "χ² + 1 > 1.35"; its T_max and N₀ use 1.35


def test_chi2_worked_examples():
    assert CHI2_EXACT + 1 == pytest.approx(1.3515, abs=1e-4)
    # App. C: σ = 0.02 on k = 10 coordinates gives "> 3·10^15" (σ = 0.01 would give 3e18).
    assert chi2_plus_one_gaussian_scale(1.0, 0.02, 10) == pytest.approx(3.05e15, rel=1e-2)
    assert chi2_plus_one_gaussian_scale(1.0, 0.01, 10) > 3e18
    with pytest.raises(ValueError, match="infinite"):
        chi2_plus_one_gaussian_scale(1.0, 1.5, 2)


def test_app_d_iterations_and_local_batch():
    assert str_kappa(ALPHA, CHI2_PAPER, denominator=4) == pytest.approx(0.08 / 5.4)
    assert str_kappa(ALPHA, CHI2_PAPER) == pytest.approx(0.08 / 10.8)  # Algorithm 2
    t_max = str_max_iterations(ALPHA, CHI2_PAPER)
    assert t_max == 141_536  # 128·log₂(135)/0.0064 = 141 536.3
    assert str_local_batch_size(ALPHA, BETA, EPS, DELTA, t_max) == 419_301
    # With the unrounded χ² + 1 = 1.35153 the same formulas give 141 569 and 419 307.
    assert str_max_iterations(ALPHA, CHI2_EXACT) == 141_569
    # Algorithm 1 (non-private) uses 32 instead of 128; Algorithm 4 multiplies by (LD)².
    assert str_max_iterations(ALPHA, CHI2_PAPER, constant=32) == 35_384
    assert str_max_iterations(ALPHA, CHI2_PAPER, loss_range=0.5) == 35_384


def test_app_d_curator_size_algorithm4():
    kappa = str_kappa(ALPHA, CHI2_PAPER, denominator=4)
    n = str_curator_size_algorithm4(50_000_000, 1000, EPS, kappa)
    # The paper prints 324,700,000; the formula gives 324.81M (325.19M at χ²+1 = 1.35153).
    assert n == pytest.approx(324.7e6, rel=1e-3)
    x = 52 * 5e7 * 1000 / (8 * kappa**2 * EPS)
    assert n == math.ceil(math.sqrt(x * math.log(x)))
    # Only T = 1000 reproduces it; the analysis' own cap T_max needs ≈ 4.1e9 rows.
    n_tmax = str_curator_size_algorithm4(
        50_000_000, str_max_iterations(ALPHA, CHI2_PAPER), EPS, kappa
    )
    assert n_tmax == pytest.approx(4.12e9, rel=1e-2)
    req = str_requirements(
        ALPHA,
        BETA,
        EPS,
        DELTA,
        CHI2_PAPER,
        algorithm=4,
        sgd_iterations=50_000_000,
        max_iter=1000,
        kappa=kappa,
    )
    assert req.n_curator == n
    assert req.n_local == req.local_batch_size * 1000
    assert req.learner_delta is None
    # σ² of Algorithm 4 at these values: 20L² = 0.2 dominates (16·0.01·ln(1e4)/0.5 + 0.08)/ln(κn).
    assert str_sgd_sigma2(EPS, DELTA, 0.1, kappa, n) == pytest.approx(0.2)


def test_algorithm2_formulas():
    kappa, T, m1 = 0.01, 1000, 200
    n = str_curator_size_algorithm2(m1, T, 1.0, 1e-6, kappa)
    assert n == math.ceil(200 * math.sqrt(288 * 1000 * math.log(2e6)) / 0.01)
    # The bound makes KS Claim 4.1's ε* = 6m₁/(κn) at most ε/√(8T ln(2/δ)).
    assert 6 * m1 / (kappa * n) <= 1.0 / math.sqrt(8 * T * math.log(2e6))
    assert str_learner_delta(0.5, 1e-4, 1000) == pytest.approx(1e-4 / (0.5 * math.sqrt(2000)))
    assert str_learner_delta(0.5, 1e-4, 1000, kappa=0.01, source="proof") == pytest.approx(
        0.01 * 1e-4 / (8 * math.e * 1000)
    )
    req = str_requirements(0.05, 0.05, 1.0, 1e-6, 1.0, subsample_size=m1)
    assert req.kappa == pytest.approx(0.05 / 16)
    assert req.max_iter == math.floor(128 * math.log2(8 * 2 / 0.05) / 0.05**2)
    assert req.n_curator == str_curator_size_algorithm2(m1, req.max_iter, 1.0, 1e-6, req.kappa)
    with pytest.raises(ValueError, match="subsample_size"):
        str_requirements(0.05, 0.05, 1.0, 1e-6, 1.0)
    with pytest.raises(ValueError, match="algorithm"):
        str_requirements(0.05, 0.05, 1.0, 1e-6, 1.0, algorithm=3, subsample_size=1)
    with pytest.raises(ValueError, match="source"):
        str_learner_delta(0.5, 1e-4, 1000, source="typo")


def test_app_c_subsample_size_and_sgd_steps():
    chi2 = chi2_plus_one_gaussian_scale(1.0, 0.02, 10) - 1
    T = str_max_iterations(0.01, chi2, constant=32)
    assert str_subsample_size_app_c(500, 0.01, T) == 48_022
    assert str_subsample_size_app_c(500, 0.01, T, paper_sign=False) == 51_979  # ⌈51 978.6⌉
    # Algorithm 3: R = max{9D²(L² + σ²d)/α², 8D²L² ln(2/β)/α²}.
    R = str_sgd_iterations(0.1, 0.05, lipschitz=1.0, diameter=1.0, sigma=2.0, d=3)
    assert R == math.ceil(9 * 13 / 0.01)


def test_tight_curator_size_is_minimal_and_valid():
    kappa, T, m1 = str_kappa(ALPHA, CHI2_PAPER, denominator=4), 1000, 100
    res = str_curator_size_tight(EPS, DELTA, T, kappa, m1)
    assert res.total_epsilon <= EPS
    assert T * res.round_delta == pytest.approx(DELTA / 2)
    # Recompute the guarantee at n and at n − 1 from the primitives.
    for n, ok in ((res.n_curator, True), (res.n_curator - 1, False)):
        e_r, d_r = coupled_sampling_amplification(1.0, res.learner_delta, m1, 1 / (kappa * n))
        assert (_composed_epsilon(e_r, d_r, T, DELTA) <= EPS) == ok
    # Against KS Algorithm 2's formula for the same (m₁, T, κ, ε, δ): ≈ 7.3× fewer rows
    # with optimal composition, ≈ 5× with DRV advanced composition alone.
    ks = str_curator_size_algorithm2(m1, T, EPS, DELTA, kappa)
    assert 7.0 < ks / res.n_curator < 7.6
    drv = str_curator_size_tight(EPS, DELTA, T, kappa, m1, composition="advanced")
    assert 4.8 < ks / drv.n_curator < 5.2
    # 100× fewer than the paper's 324.7M needs a learner with m₁ ≤ 103 draws per round.
    assert str_curator_size_tight(EPS, DELTA, T, kappa, 103).n_curator <= 3.247e6
    assert str_curator_size_tight(EPS, DELTA, T, kappa, 104).n_curator > 3.247e6


def test_tight_curator_size_with_given_learner_delta():
    kappa = 0.05
    res = str_curator_size_tight(1.0, 1e-5, 50, kappa, 20, learner_epsilon=0.5, learner_delta=1e-9)
    assert res.learner_delta == 1e-9
    assert res.total_epsilon <= 1.0
    # Even a large learner δ is amplified away (δ̂ ≈ mηδ(1 + e^{−ε})), at a price in n.
    big = str_curator_size_tight(1.0, 1e-5, 50, kappa, 20, learner_delta=0.5)
    assert big.n_curator > res.n_curator and 50 * big.round_delta < 1e-5
    with pytest.raises(ValueError, match="kappa"):
        str_curator_size_tight(1.0, 1e-5, 50, 0.0, 20)
    with pytest.raises(ValueError, match="subsample_size"):
        str_curator_size_tight(1.0, 1e-5, 50, kappa, 0)


def test_min_curator_size_both_accountings():
    kappa, T, m1 = 0.05, 50, 20
    # Paper: ⌈6·ε_M·m₁·√(8T ln(2/δ))/(εκ)⌉, i.e. Algorithm 2's formula at ε_M = 1.
    assert str_min_curator_size(1.0, 1e-5, T, kappa, m1, accounting="paper") == (
        str_curator_size_algorithm2(m1, T, 1.0, 1e-5, kappa)
    )
    tight = str_min_curator_size(1.0, 1e-5, T, kappa, m1)
    assert tight == str_curator_size_tight(1.0, 1e-5, T, kappa, m1).n_curator
    assert tight < str_min_curator_size(1.0, 1e-5, T, kappa, m1, accounting="paper")
    with pytest.raises(ValueError, match="accounting"):
        str_min_curator_size(1.0, 1e-5, T, kappa, m1, accounting="rdp")
