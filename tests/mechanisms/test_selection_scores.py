"""How the selections read their scores: exactly, relative to the best, never refused.

Each test fails on the code before it: integer scores went through float64 (rounded by
up to 128 above 2^60, so neighbours one apart landed 0 or 256 lattice steps apart), and
scores whose lattice value passed 2^61 in magnitude were refused after the charge, so a
private row could decide whether a fit raised.
"""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from skhybrid.adaptation import DiscrepancyAdaptationRegressor
from skhybrid.mechanisms import ExponentialMechanism, ReportNoisyMax
from skhybrid.mechanisms import _exact_selection as xs

BASE = 2**60


@pytest.mark.parametrize("scores, expected", [
    (np.array([BASE + 129, BASE], dtype=np.int64), [0, -129]),
    (np.array([BASE + 1, BASE, BASE + 1], dtype=np.int64), [0, -1, 0]),
    ([2**70 + 3, 2**70], [0, -3]),  # Python ints beyond int64
    (np.array([-(2**63), 2**63 - 1], dtype=np.int64), [-(2**61), 0]),  # clamped
])
def test_integer_scores_are_exact(scores, expected):
    assert xs.relative_lattice_scores(scores, 1.0, integer=True).tolist() == expected


def test_integer_scores_in_float_mode_round_exactly():
    # int64 input with a power-of-two step: round(u/g) half to even, computed exactly
    k = xs.relative_lattice_scores(np.array([BASE + 6, BASE, BASE + 2], dtype=np.int64),
                                   4.0)
    assert k.tolist() == [0, -2, -2]  # (2^58 + 1.5 -> +2, 2^58 + 0.5 -> +0)
    assert xs.relative_lattice_scores(np.array([3, -5]), 0.25).tolist() == [0, -32]


def test_integer_selection_law_above_two_to_the_53():
    # Neighbours one apart (Δ = 1) at 2^60: P(0) = 1/(1 + e^{-γ d}) with γ = ε/2.
    eps, n = 0.5, 20_000
    for cls in (ExponentialMechanism, ReportNoisyMax):
        mech = cls(eps, 1, integer=True)
        for gap in (0, 1):
            scores = np.array([BASE + gap, BASE], dtype=np.int64)
            share = np.mean(mech._select(scores, np.random.default_rng(gap), n) == 0)
            if cls is ExponentialMechanism:
                expected = 1 / (1 + math.exp(-eps / 2 * gap))
                assert abs(share - expected) < 4 * math.sqrt(0.25 / n)
            else:  # first index wins ties; a gap of 1 favours it further
                assert 0.5 < share < 0.75


@pytest.mark.parametrize("cls", [ExponentialMechanism, ReportNoisyMax])
def test_large_scores_close_together_are_selected(cls):
    # The red team's pair: each score moved by Δ = 1, both near 2^41·Δ (the old refusal).
    top = 2.0**41
    mech = cls(1.0, 1.0)
    g = mech.lattice()[0]
    for scores in ([top - 0.75, top - 3.0], [top + 0.25, top - 2.0]):
        assert xs.relative_lattice_scores(scores, g).tolist() == [0, -2_359_296]
        assert mech(scores, np.random.default_rng(0)) == 0
    # far apart: the far candidate is clamped 2^61 steps below the best, not refused
    assert xs.relative_lattice_scores([1e300, -1e300], g).tolist() == [0, -(2**61)]
    assert mech([1e300, -1e300], np.random.default_rng(0)) == 0


def test_clamped_scores_keep_the_sensitivity():
    # Neighbours straddling the clamp (every score moved by at most S): the exponential
    # mechanism's log-probabilities on the relative scores differ by at most ε. The
    # relative scores' differences are taken exactly (they reach 2^61, beyond float).
    eps, S = 1.0, 3
    gamma = eps / (2 * S)
    rng = np.random.default_rng(0)
    C = 2**61
    worst = 0.0
    for _ in range(2000):
        k = np.r_[[0], -C + rng.integers(-6, 7, 3), rng.integers(-4, 1, 4)].astype(np.int64)
        k += int(rng.integers(0, 10))
        k2 = k + rng.integers(-S, S + 1, size=k.size)
        rel, rel2 = (xs.relative_lattice_scores(v, 1.0, integer=True) for v in (k, k2))
        assert np.all(np.abs(np.maximum(k, k.max() - C) - np.maximum(k2, k2.max() - C)) <= S)
        lse, lse2 = (logsumexp(gamma * r.astype(float)) for r in (rel, rel2))
        log_ratio = gamma * (rel - rel2).astype(float) - (lse - lse2)
        worst = max(worst, float(np.max(np.abs(log_ratio))))
    assert 0.5 * eps < worst <= eps * (1 + 1e-12)


def test_streamed_form_still_refuses_absolute_overflow():
    # PPM's streamed selection needs one origin across blocks: the absolute form keeps
    # its refusal (PPM's scores are error counts, far below it), without printing values.
    with pytest.raises(ValueError, match="scores are too large") as err:
        xs.snap_scores([0.0, 1.5e12], 2.0**-30)
    assert "1.5" not in str(err.value)
    assert xs.snap_scores(np.array([BASE + 1], dtype=np.int64), 1.0, True).tolist() == [
        BASE + 1]


def test_unusable_parameters_are_refused_when_the_mechanism_is_built():
    for cls in (ExponentialMechanism, ReportNoisyMax):
        with pytest.raises(ValueError, match="sensitivity is too small"):
            cls(1.0, 5e-324)
    with pytest.raises(ValueError, match="sensitivity must be an integer"):
        ExponentialMechanism(1.0, 0.5, integer=True)


def test_adaptation_fit_with_large_public_labels_is_not_refused():
    # Frank-Wolfe scores = resid² (public, ~1e18 here) + a private gradient term: the fit
    # used to raise after its charge once the scores passed 2^41·Δ, and near that edge a
    # private row decided it. Both neighbours now return a model.
    rng = np.random.default_rng(0)
    m, n = 30, 20
    Xs = rng.normal(size=(m, 2)) * 0.05
    Xt = rng.normal(size=(n, 2)) * 0.05
    Xt2 = Xt.copy()
    Xt2[0] = Xs[0] / np.linalg.norm(Xs[0]) * 0.2
    y = np.r_[rng.normal(size=m), np.zeros(n)]
    y[0] = 1e9
    public = np.arange(m + n) < m
    for Xt_ in (Xt, Xt2):
        reg = DiscrepancyAdaptationRegressor(epsilon=1.0, solver="single-stage", max_iter=1,
                                             fit_intercept=False, random_state=0)
        reg.fit(np.vstack([Xs, Xt_]), y, public_mask=public)
        assert np.all(np.isfinite(reg.coef_))


@pytest.mark.parametrize("sensitivity", [1.0, 1.99, 2.0**20 - 1, 0.7, 3e300])
@pytest.mark.parametrize("monotonic", [False, True])
def test_report_noisy_max_works_down_to_the_smallest_epsilon(sensitivity, monotonic):
    # At ε = 1e-12 (the bottom of the accepted range) the float lattice keeps 2^8 steps
    # per Δ, so the scale ceil(2S/ε) stays below the sampler's 2^50; it was refused at the
    # first selection, after the estimator's charge.
    mech = ReportNoisyMax(1e-12, sensitivity, monotonic=monotonic)
    assert mech.lattice()[2] <= 2**50
    assert mech([0.0, sensitivity], np.random.default_rng(0)) in (0, 1)


def test_frank_wolfe_fit_at_the_smallest_epsilon_runs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([1.0, -1.0, 0.5])
    public = np.arange(200) < 100
    reg = DiscrepancyAdaptationRegressor(epsilon=1e-11, delta=0.0, max_iter=10,
                                         solver="two-stage-fw", random_state=0)
    reg.fit(X, y, public_mask=public)
    assert reg.privacy_spent_["central"] == pytest.approx((1e-11, 0.0))


def test_containers_that_float64_would_round_are_exact_or_refused():
    # Red team 10, F1: object arrays of Python ints, pandas object Series, longdouble and
    # strings went through a float64 cast before the lattice: an index shift of 1,026
    # steps where 1,025 are paid (Laplace, Δ = 16399.2), and for mixed object scores an
    # exponential-mechanism ratio of e^1.43 at a charged e^1.
    from skhybrid.mechanisms import LaplaceMechanism
    from skhybrid.mechanisms._base import exact_values

    x, xp = 9007200328482824, 9007200328482824 + 16399
    mech = LaplaceMechanism(1.0, 16399.2)
    for make in (lambda v: np.array([v], dtype=np.int64),
                 lambda v: np.array([v], dtype=object)):
        a, b = (mech(make(v), np.random.default_rng(1))[0] for v in (x, xp))
        assert round((b - a) / 16.0) == 1025  # the same seed: the lattice shift alone
    odd = x + 1  # not a float64
    for bad in (np.array([odd], dtype=np.longdouble), np.array([str(odd)]),
                np.array([odd, 2.5], dtype=object)):
        with pytest.raises(ValueError) as err:
            mech(bad, np.random.default_rng(0))
        assert str(odd) not in str(err.value)
    with pytest.raises(ValueError, match="float64 would round"):
        ExponentialMechanism(1.0, 1.0, monotonic=True)(
            np.array([BASE // 128 + 1, 2.0**53], dtype=object), np.random.default_rng(0))
    assert exact_values(np.array([1, 2.5], dtype=object)).tolist() == [1.0, 2.5]
    assert exact_values(np.array([1.5], dtype=np.longdouble)).dtype == np.float64
