"""Exact samplers' laws whatever the bit generator behind the caller's ``random_state``.

The scalar paths read 64-bit words. MT19937 (what a ``RandomState`` becomes) produces
32-bit raw outputs: read as 64-bit words, their top bit was always 0, so every small
discrete Laplace draw was >= 0 and a local agent's Gaussian report showed its bit (red
team 9, F1). Each test here fails on that code.
"""

import math

import numpy as np
import pytest
from scipy import stats

from skhybrid._validation import check_generator
from skhybrid.hybrid import SelectThenEstimate
from skhybrid.mechanisms import ExponentialMechanism, _noise

ALPHA = 1e-6
BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937,
                  np.random.Philox, np.random.SFC64]


@pytest.mark.parametrize("bit_generator", BIT_GENERATORS)
def test_words_are_uniform_64_bit(bit_generator):
    words = _noise._Words(np.random.Generator(bit_generator(0)))
    w = np.array([words.word() for _ in range(20_000)], dtype=np.uint64)
    for bit in (0, 31, 32, 63):
        ones = int(((w >> np.uint64(bit)) & np.uint64(1)).sum())
        assert stats.binomtest(ones, w.size, 0.5).pvalue > ALPHA


@pytest.mark.parametrize("bit_generator", BIT_GENERATORS)
def test_scalar_discrete_laplace_law(bit_generator):
    t, calls = 3, 4000
    rng = np.random.Generator(bit_generator(1))
    draws = np.concatenate([_noise.discrete_laplace(rng, t, 5) for _ in range(calls)])
    support = np.arange(-12, 13)
    pmf = np.exp(-np.abs(support) / t) * math.tanh(1 / (2 * t))  # P(x) ∝ exp(-|x|/t)
    clipped = np.clip(draws, -13, 13)
    observed = np.array([(clipped <= -13).sum()]
                        + [(clipped == k).sum() for k in support]
                        + [(clipped >= 13).sum()])
    tail = math.exp(-13 / t) * math.tanh(1 / (2 * t)) / (1 - math.exp(-1 / t))
    expected = draws.size * np.r_[tail, pmf, tail]
    assert abs(expected.sum() - draws.size) < 1e-6 * draws.size
    assert stats.chisquare(observed, expected).pvalue > ALPHA


@pytest.mark.parametrize("bit_generator", BIT_GENERATORS)
def test_single_exponential_mechanism_draw_law(bit_generator):
    # scores (0, 1), Δ = 1, ε = 1: P(1) = e^{1/2}/(1 + e^{1/2}) (γ rounded down by < 2^-23)
    rng = np.random.Generator(bit_generator(2))
    mech = ExponentialMechanism(1.0, 1.0)
    n = 20_000
    ones = sum(mech([0.0, 1.0], rng) for _ in range(n))
    p = math.exp(0.5) / (1 + math.exp(0.5))
    assert stats.binomtest(int(ones), n, p).pvalue > ALPHA


def test_select_then_estimate_with_a_random_state_draws_both_signs():
    # Curator-only SelectThenEstimate releases a Laplace estimate of the selected column's
    # mean; with random_state=RandomState(s) it never fell below the true mean.
    X = np.ones((40, 1), dtype=int)
    est = np.array([SelectThenEstimate(epsilon=2.0,
                                       random_state=np.random.RandomState(s)).fit(X).estimate_
                    for s in range(300)])
    below = int((est < 1.0 - 1e-9).sum())
    assert 0.4 * est.size < below < 0.6 * est.size
    assert type(check_generator(np.random.RandomState(0)).bit_generator) is np.random.MT19937
