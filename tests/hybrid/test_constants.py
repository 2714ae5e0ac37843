"""Paper constants with explicit values (BKNSS Lemma 3.3, Thm 3.4, App. A)."""

import math

import pytest

from skhybrid.hybrid import _constants as K


def test_boosted_parity_size_by_hand():
    # floor 1/2, β = 0.1: k = ⌈ln 20 / ln 2⌉ = 5; β₁ = 0.01; p = tanh(1/2)
    k, n_chunk, total = K.boosted_parity_size(10, 0.1, 0.1, 1.0)
    p = math.tanh(0.5)
    assert k == 5
    assert n_chunk == math.ceil((10 * math.log(2) + math.log(100)) / (p * 0.1)) == 250
    assert total == 5 * 250


def test_dkw():
    assert K.dkw_sample_size(0.01, 0.05) == math.ceil(math.log(40) / 2e-4) == 18445


def test_lemma33_by_hand():
    c, a, b, e = 16, 0.1, 0.1, 1.0
    # blocks: K = 10, each a 0.1-DP (0.01, 0.01)-learner of Parity_17
    kk = math.ceil(math.log(2 / 0.01) / math.log(2))  # 8
    p = math.tanh(0.05)
    n_chunk = math.ceil((17 * math.log(2) + math.log(2 * kk / 0.01)) / (p * 0.01))
    assert K.lemma33_curator_size(c, a, b, e) == max(10 * kk * n_chunk, 23026)
    c_eps2 = 1 / math.tanh(0.5) ** 2
    n_cdf = math.ceil(2 * c_eps2 * 100 * (10 * math.log(2) + math.log(20)) / 1e-4)
    assert K.lemma33_local_size(10, a, b, e) == n_cdf


def test_theorem34_growth():
    b, m, n = K.theorem34_sample_sizes(6)
    assert b == 36
    assert m == K.lemma33_curator_size(6, 1 / 72, 1 / 16, 1.0)
    assert n == K.lemma33_local_size(36, 1 / 72, 1 / 16, 1.0)
    # m = O(c): the per-block parity term is affine in c, so m(2c)/m(c) -> 2 from below
    ms = [K.lemma33_curator_size(c, 1 / 72, 1 / 16, 1.0) for c in (16, 32, 64)]
    assert 1.5 < ms[1] / ms[0] < ms[2] / ms[1] < 2
    # n = Θ(b³) = Θ(c⁶) with these constants (the paper's extra log c is a looser union bound)
    r = [K.theorem34_sample_sizes(c)[2] / c**6 for c in (6, 7)]
    assert r[1] / r[0] == pytest.approx(1, abs=0.1)


def test_app_a_by_hand():
    assert K.app_a_curator_size(5, 0.2, 0.2, 1.0) == K.boosted_parity_size(5, 0.1, 0.1, 1.0)[2]
    # α = 0.5: 7 quantiles, T = 6, λ = 1/32, β_q = 0.1/28
    c_eps2 = 1 / math.tanh(0.5) ** 2
    per_round = math.ceil(c_eps2 * math.log(12 / (0.1 / 28)) / (2 / 32**2))
    assert K.app_a_local_size(4, 0.5, 0.1, 1.0) == 2 * 7 * 6 * per_round
    c, m, n = K.app_a_paper_sizes(16, 0.5, 0.1, 1.0)
    assert c == 4 and m == math.ceil(1000 * 4 * math.log(10) / 0.5) == 18421
    assert n == math.ceil(8e5 * 16 * math.log(16 / 0.05) / 0.125)


def test_bad_parameters():
    with pytest.raises(ValueError, match="alpha"):
        K.lemma33_curator_size(4, 1.5, 0.1, 1.0)
