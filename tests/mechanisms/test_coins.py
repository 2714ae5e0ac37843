"""The coins behind randomized response and PPAR: exact dyadic probabilities, rounded to
the safe side, so the realised likelihood ratios never exceed e^ε — also where the float
keep-probability rounds to 1.0 (ε ≳ 37)."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from skhybrid.learners._parity_core import _inclusion_rate, _min_floor, parity_privacy_epsilon
from skhybrid.mechanisms import RandomizedResponse, _noise
from skhybrid.mechanisms.local import HadamardResponse, HierarchicalCDF

#: ε across the accepted range, with the float cliffs of e^ε/(1+e^ε) (≈ 36.7) and
#: tanh(ε/2) (≈ 38.1) on both sides.
EPSILONS = [1e-12, 1e-6, 0.01, 0.5, 1.0, 3.0, 10.0, 36.0, 36.5, 36.8, 37.5, 38.0, 38.5, 40.0,
            100.0, 745.0, 1e6]


def _exact(x):
    return Decimal(x)  # every float is a dyadic rational: Decimal holds it exactly


def _ln_ratio(num, den):
    """ln(num/den) of two floats, to 50 digits."""
    with localcontext() as ctx:
        ctx.prec = 50
        return (_exact(num) / _exact(den)).ln()


class _CountingGenerator:
    """A stand-in Generator whose bounded integers are given: shows which comparison the
    coin makes."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.int64)
        self.calls = []

    def integers(self, low, high, size=None, dtype=np.int64):
        self.calls.append((low, high, size))
        return self.values.copy()


def test_coin_probability_rounds_up_to_2_pow_minus_53():
    for p in (0.0, 1.0, 0.5, 2.0 ** -53, 3 * 2.0 ** -53):
        assert _noise.coin_probability(p) == p  # multiples stay as they are
    for p in (0.3, 1e-300, 1 - 1e-17, math.pi / 4):
        q = _noise.coin_probability(p)
        assert q >= p and q - p <= 2.0 ** -53 and math.ldexp(q, 53) == int(math.ldexp(q, 53))
    # a computed value is lifted above the few ulps it may sit below the truth
    q = _noise.coin_probability(0.3, computed=True)
    assert q > 0.3 * (1 + 2.0 ** -51)
    # a computed 0 that stands for a positive number (e^-ε underflows past ε ≈ 745)
    assert _noise.coin_probability(0.0, computed=True, positive=True) == 2.0 ** -53
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        _noise.coin_probability(1.5)


def test_bernoulli_compares_uniform_integers_with_the_numerator():
    p = 0.3
    k = int(math.ldexp(_noise.coin_probability(p), 53))
    rng = _CountingGenerator([k - 1, k, 0, (1 << 53) - 1])
    assert _noise.bernoulli(rng, p, 4).tolist() == [True, False, True, False]
    assert rng.calls == [(0, 1 << 53, 4)]
    # the smallest positive probability is realised, not lost: P(True) = 2^-53
    assert _noise.bernoulli(_CountingGenerator([0, 1]), 1e-300, 2).tolist() == [True, False]
    assert not _noise.bernoulli(_CountingGenerator([0]), 0.0, 1).any()


class _FloatCoinRR(RandomizedResponse):
    """Mutant: the flip probability of the old float coin, 1 − e^ε/(1+e^ε) in floating
    point, as ``rng.random() < p`` realised it (to within 2^-53)."""

    @property
    def flip_probability(self):
        return 1.0 - 1.0 / (1.0 + math.exp(-self.epsilon))


def _ratio_violations(make):
    """The ε of :data:`EPSILONS` at which the coin's realised ratio exceeds e^ε (or the
    flip is rarer than 1/(e^ε + 1), or never happens)."""
    bad = []
    for eps in EPSILONS:
        q = make(eps).flip_probability
        with localcontext() as ctx:
            ctx.prec = 50
            true_q = 1 / (1 + _exact(eps).exp())
        if not (0 < q <= 0.5 and _exact(q) >= true_q and _ln_ratio(1 - q, q) <= _exact(eps)):
            bad.append(eps)
    return bad


@pytest.mark.parametrize("mech", [lambda e: RandomizedResponse(e),
                                  lambda e: HadamardResponse(e, 8),
                                  lambda e: HierarchicalCDF(e, 4)],
                         ids=["rr", "hadamard", "cdf"])
def test_sign_randomizers_realise_at_most_e_epsilon(mech):
    assert _ratio_violations(mech) == []
    assert all(m.keep_probability + m.flip_probability == 1.0
               for m in map(mech, EPSILONS))
    # the twin: the old float coin breaks the bound past ε ≈ 36 (and flips never at 40)
    assert {36.8, 40.0, 1e6} <= set(_ratio_violations(_FloatCoinRR))


def test_randomized_response_still_flips_past_the_float_cliff():
    # at ε = 40, e^ε/(1+e^ε) is 1.0 in floating point: the old float coin never flipped
    assert 1.0 / (1.0 + math.exp(-40.0)) == 1.0
    rr = RandomizedResponse(40.0)
    assert rr.flip_probability == 2.0 ** -53
    with _noise.record_noise() as draws:
        rr(np.zeros(5, dtype=int), np.random.default_rng(0))
    assert [(d.kind, d.scale) for d in draws] == [("bernoulli", 2.0 ** -53)]


def test_randomized_response_debias_matches_the_realised_coin():
    for eps in (1e-6, 0.5, 40.0):
        rr = RandomizedResponse(eps)
        q = rr.flip_probability
        for frac in (0.0, 0.25, 1.0):
            expected_mean = frac * (1 - q) + (1 - frac) * q
            assert rr.debias(np.array([expected_mean])) == pytest.approx(frac, abs=1e-9)


def _parity_violations(rate_of, floor_of):
    """The ε of :data:`EPSILONS` at which PPAR's realised rate p (the drop coin draws
    1 − p exactly) or ⊥ floor q gives a level above ε."""
    bad = []
    for eps in EPSILONS:
        p = rate_of(eps)
        q = _noise.coin_probability(floor_of(p))  # as the ⊥ coin draws it
        if not 0 <= p < 1 or 1.0 - p != _noise.coin_probability(1.0 - p):
            bad.append(eps)
            continue
        with localcontext() as ctx:
            ctx.prec = 50
            bot = (1 + _exact(p) * (1 - _exact(q)) / _exact(q)).ln()  # ln(1 + p(1−q)/q)
        if _ln_ratio(1 + p, 1 - p) > _exact(eps) or bot > _exact(eps):
            bad.append(eps)
    return bad


def test_parity_rate_and_floor_as_realised_stay_within_epsilon():
    assert _parity_violations(lambda e: _inclusion_rate(e, "tanh"), _min_floor) == []
    klnrs = [e for e in EPSILONS if e <= 3.83]
    assert all(_ln_ratio(1 + p, 1 - p) <= _exact(e)
               for e, p in zip(klnrs, (_inclusion_rate(e, "klnrs") for e in klnrs)))
    p = _inclusion_rate(1.0, "tanh")
    assert parity_privacy_epsilon(p, _min_floor(p)) <= 1.0
    # the twin: the old float rate tanh(ε/2) and floor (1−p)/(3−p) overshoot past ε ≈ 36
    old = _parity_violations(lambda e: math.tanh(e / 2), lambda p: (1 - p) / (3 - p))
    assert {36.0, 40.0, 1e6} <= set(old)


def test_parity_past_the_float_cliff_keeps_dropping_rows():
    # tanh(ε/2) is 1.0 in floating point from ε ≈ 38.1: the old rate kept every row
    assert math.tanh(20.0) == 1.0
    p = _inclusion_rate(40.0, "tanh")
    assert p == 1 - 2.0 ** -53
    assert float(_ln_ratio(1 + p, 1 - p)) == pytest.approx(math.log(2.0 ** 54), rel=1e-12)
    assert _inclusion_rate(np.inf, "tanh") == 1.0  # the non-private baseline
