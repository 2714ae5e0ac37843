"""Tests of the κ-dense projection Π_κ, the MW step and the subsampler (KS §4, Eq. (2))."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

from skhybrid.mechanisms._noise import record_noise
from skhybrid.transfer._kappa_dense import (
    _kappa_dense_projection_bisect,
    kappa_dense_projection,
    multiplicative_weights_update,
    sample_from_log_weights,
)


def _random_instance(rng):
    n = int(rng.integers(2, 60))
    kappa = float(rng.uniform(0.02, 0.95))
    # Log-weights in (−∞, log κ] with a wide spread, so that some entries get capped.
    log_w = np.log(kappa) - rng.exponential(rng.uniform(0.1, 5.0), size=n)
    return log_w, kappa


def test_projection_mass_density_and_cap():
    rng = np.random.default_rng(0)
    for _ in range(300):
        log_w, kappa = _random_instance(rng)
        n = log_w.size
        log_mu, log_c = kappa_dense_projection(log_w, kappa)
        mu = np.exp(log_mu)
        p = np.minimum(np.exp(log_w + log_c), 1.0)
        assert p.sum() == pytest.approx(kappa * n, rel=1e-12)  # ‖Π_κ(w)‖₁ = κn
        assert mu.sum() == pytest.approx(1.0, rel=1e-12)
        assert mu.max() <= (1 + 1e-12) / (kappa * n)
        assert kappa * mu.max() <= mu.mean() * (1 + 1e-12)  # Def. 4.1: κ-dense
        # w ∈ (0, κ]^n (Algorithm 2's domain) ⇒ c ≥ 1: Eq. (2) never scales down.
        assert log_c >= -1e-12
        # Order preserved, and μ ∝ w on the uncapped entries.
        free = p < 1 - 1e-12
        if free.sum() >= 2:
            ratio = log_mu[free] - log_w[free]
            assert np.ptp(ratio) < 1e-9


def test_projection_agrees_with_bisection():
    rng = np.random.default_rng(1)
    for _ in range(100):
        log_w, kappa = _random_instance(rng)
        log_mu, log_c = kappa_dense_projection(log_w, kappa)
        ref_mu, ref_c = _kappa_dense_projection_bisect(log_w, kappa)
        np.testing.assert_allclose(np.exp(log_mu), np.exp(ref_mu), rtol=1e-9, atol=1e-15)
        assert log_c == pytest.approx(ref_c, abs=1e-9)


def test_projection_hand_example():
    # w = (0.4, 0.1, 0.1, 0.1), κ = 1/2, κn = 2. Cap the first: 1 + 0.3c = 2 ⇒ c = 10/3,
    # and c·0.4 = 4/3 ≥ 1 confirms it is capped. μ = (1, 1/3, 1/3, 1/3)/2.
    log_mu, log_c = kappa_dense_projection(np.log([0.4, 0.1, 0.1, 0.1]), 0.5)
    np.testing.assert_allclose(np.exp(log_mu), [0.5, 1 / 6, 1 / 6, 1 / 6], rtol=1e-13)
    assert np.exp(log_c) == pytest.approx(10 / 3, rel=1e-13)


def test_projection_underflowing_weights():
    # After T ≈ 128·log₂(8(χ²+1)/α)/α² rounds weights reach e^{-3000}: exp() is 0.0 there.
    rng = np.random.default_rng(2)
    log_w = -3000.0 + rng.normal(scale=3.0, size=500)
    assert np.all(np.exp(log_w) == 0.0)
    log_mu, log_c = kappa_dense_projection(log_w, 0.1)
    mu = np.exp(log_mu)
    assert mu.sum() == pytest.approx(1.0, rel=1e-12)
    assert mu.max() <= (1 + 1e-12) / 50
    ref_mu, ref_c = _kappa_dense_projection_bisect(log_w, 0.1)
    np.testing.assert_allclose(mu, np.exp(ref_mu), rtol=1e-9)
    assert log_c == pytest.approx(ref_c, rel=1e-12)
    # Π_κ depends on w only up to scale: shifting log w shifts log c.
    shifted_mu, shifted_c = kappa_dense_projection(log_w + 3000.0, 0.1)
    np.testing.assert_allclose(np.exp(shifted_mu), mu, rtol=1e-10)
    assert shifted_c == pytest.approx(log_c - 3000.0, abs=1e-9)


def test_projection_is_identity_for_dense_unit_weights():
    # BCS/BHK: the KL projection onto {p ∈ [0,1]^n : Σp ≥ κn} leaves such w alone. Eq. (2)
    # scales by c < 1 instead, which induces the same μ = w / Σw ("do not scale down").
    rng = np.random.default_rng(3)
    w = rng.uniform(0.3, 1.0, size=40)
    log_mu, log_c = kappa_dense_projection(np.log(w), 0.2)
    assert log_c < 0
    np.testing.assert_allclose(np.exp(log_mu), w / w.sum(), rtol=1e-12)


def test_projection_zero_weights_and_feasibility():
    # Exactly κn positive weights: all are capped, the zero weights get nothing.
    log_w = np.array([np.log(0.01), -np.inf, np.log(0.2), -np.inf, np.log(0.05)])
    n_pos_kappa = 3 / 5
    log_mu, log_c = kappa_dense_projection(log_w, n_pos_kappa)
    np.testing.assert_allclose(np.exp(log_mu), [1 / 3, 0, 1 / 3, 0, 1 / 3], atol=1e-15)
    assert log_c == pytest.approx(-np.log(0.01))
    # More positive weights than κn: zeros stay at zero.
    log_mu, _ = kappa_dense_projection(log_w, 0.4)
    assert np.all(np.exp(log_mu)[[1, 3]] == 0.0)
    assert np.exp(log_mu).sum() == pytest.approx(1.0)
    # Fewer than κn: infeasible.
    with pytest.raises(ValueError, match="infeasible"):
        kappa_dense_projection(log_w, 0.7)
    with pytest.raises(ValueError, match="infeasible"):
        kappa_dense_projection(np.full(4, -np.inf), 0.5)
    with pytest.raises(ValueError, match="kappa"):
        kappa_dense_projection(np.zeros(3), 1.5)
    with pytest.raises(ValueError, match="NaN"):
        kappa_dense_projection(np.array([0.0, np.nan]), 0.5)


def test_example_level_tv_bound_is_tight():
    """TV between the example distributions of neighbouring datasets ≤ 1/(κn), and tight.

    Neighbours differ in one row i: its weight changes (w_i → w'_i) *and* its example
    changes (x_i → x'_i), so the example-level ℓ₁ distance is
    Σ_{j≠i} |μ_j − μ'_j| + μ_i + μ'_i (docs/notes/building_blocks.rst).
    """
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(2000):
        log_w, kappa = _random_instance(rng)
        n = log_w.size
        i = int(rng.integers(n))
        log_w2 = log_w.copy()
        # Half the time the changed row jumps to the largest possible weight κ.
        log_w2[i] = np.log(kappa) if rng.random() < 0.5 else np.log(kappa) - rng.exponential(2.0)
        mu = np.exp(kappa_dense_projection(log_w, kappa)[0])
        mu2 = np.exp(kappa_dense_projection(log_w2, kappa)[0])
        others = np.arange(n) != i
        tv_examples = 0.5 * (np.abs(mu[others] - mu2[others]).sum() + mu[i] + mu2[i])
        tv_indices = 0.5 * np.abs(mu - mu2).sum()
        assert tv_indices <= tv_examples + 1e-15
        assert tv_examples * kappa * n <= 1.0 + 1e-9
        worst = max(worst, tv_examples * kappa * n)
    assert worst > 0.999


def test_multiplicative_weights_update_values():
    log_w = np.log([0.1, 0.1, 0.05])
    correct = np.array([True, False, True])
    new = multiplicative_weights_update(log_w, correct, alpha=0.08)
    np.testing.assert_allclose(np.exp(new), [0.1 * np.exp(-0.01), 0.1, 0.05 * np.exp(-0.01)])
    # Fractional loss (Algorithm 4 with L/(LD) = 0.25): factor exp(−(α/8)·0.75).
    new = multiplicative_weights_update(np.zeros(1), [0.75], alpha=0.08)
    assert new[0] == pytest.approx(-0.0075)
    with pytest.raises(ValueError, match="shape"):
        multiplicative_weights_update(log_w, correct[:2], alpha=0.08)
    with pytest.raises(ValueError, match="correct"):
        multiplicative_weights_update(log_w, [0.0, 2.0, 1.0], alpha=0.08)
    with pytest.raises(ValueError, match="alpha"):
        multiplicative_weights_update(log_w, correct, alpha=0.0)


def test_sampler_distribution_and_noise_spy():
    rng = np.random.default_rng(5)
    probs = np.array([0.3, 0.0, 0.05, 0.15, 0.0, 0.2, 0.1, 0.2])
    with np.errstate(divide="ignore"):
        log_mu = np.log(probs) - 2900.0  # unnormalised and underflowing on purpose
    m = 20000
    with record_noise() as draws:
        idx = sample_from_log_weights(log_mu, m, rng)
    assert [(d.kind, d.count, d.tag) for d in draws] == [("uniform", m, "str-subsample")]
    counts = np.bincount(idx, minlength=probs.size)
    assert counts[probs == 0].sum() == 0
    pos = probs > 0
    assert chisquare(counts[pos], m * probs[pos]).pvalue > 1e-3


def test_sampler_end_to_end_with_projection():
    rng = np.random.default_rng(6)
    log_w = np.log(0.1) - rng.exponential(1.0, size=30)
    log_mu, _ = kappa_dense_projection(log_w, 0.1)
    idx = sample_from_log_weights(log_mu, 30000, rng)
    counts = np.bincount(idx, minlength=30)
    expected = 30000 * np.exp(log_mu - logsumexp(log_mu))
    assert chisquare(counts, expected).pvalue > 1e-3
    assert sample_from_log_weights(log_mu, 0, rng).shape == (0,)
    with pytest.raises(ValueError, match="m"):
        sample_from_log_weights(log_mu, -1, rng)
