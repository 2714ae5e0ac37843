"""White-box LDP audits of the local building blocks (docs/notes/auditing.rst, layer C).

Each audit runs one agent's randomizer ``N`` times on two different inputs ``v ≠ v'``
(the local-model neighbours), fixes its events before sampling from the **claimed**
privacy loss (±ε of the declared event where the two inputs' public codes disagree),
and bounds ε with Clopper–Pearson at total α = 1e-3 (``_stats``). Every audit has a
mutation twin whose keep probability uses 1.25ε while declaring ε; it must fail.
"""

import math

import numpy as np
import pytest

from skhybrid.mechanisms.local import HadamardResponse, HierarchicalCDF, QuantileSearch
from skhybrid.mechanisms.local import hadamard_sign
from skhybrid.mechanisms.local import quantile as quantile_module
from skhybrid.mechanisms.randomized_response import RandomizedResponse

from ._stats import Event, audit_events

SHRINK = 1.25
N = 100_000
EPS = 1.0

#: name -> measured ε lower bound (the audit power), for the report.
AUDIT_RESULTS = {}


def _leaky_flip(self):
    return 1.0 / (1.0 + math.exp(SHRINK * self.epsilon))


class _LeakyHRR(HadamardResponse):
    """Mutant: keeps the true sign as if ε were 1.25 times larger, while declaring ε."""

    flip_probability = property(_leaky_flip)


class _LeakyCDF(HierarchicalCDF):
    flip_probability = property(_leaky_flip)


class _LeakyRR(RandomizedResponse):
    flip_probability = property(_leaky_flip)


def _sign_events(code_d, code_d2):
    """Events where the claimed loss is ±ε: the report equals one input's sign, not the other's.

    ``code_d(out)`` / ``code_d2(out)`` give each input's Hadamard sign for the public part of
    the outputs; ``out[:, -1]`` is the randomized sign.
    """
    def plus(out):
        return (out[:, -1] == code_d(out)) & (code_d(out) != code_d2(out))

    def minus(out):
        return (out[:, -1] == code_d2(out)) & (code_d(out) != code_d2(out))

    return [Event("loss=+eps", plus, "forward"), Event("loss=-eps", minus, "reverse")]


# --------------------------------------------------------------------------- HRR


def _hrr_audit(mech, seed):
    eps = mech.event().epsilon
    v, v2 = 0, 5
    events = _sign_events(lambda o: hadamard_sign(v, o[:, 0]), lambda o: hadamard_sign(v2, o[:, 0]))
    rng = np.random.default_rng(seed)
    out_d = np.column_stack(mech.randomize(np.full(N, v), rng))
    out_d2 = np.column_stack(mech.randomize(np.full(N, v2), rng))
    return audit_events(out_d, out_d2, events), eps


def test_hrr_audit():
    result, eps = _hrr_audit(HadamardResponse(EPS, 8), seed=21)
    AUDIT_RESULTS["hadamard_response"] = result.epsilon_lb
    assert 0.9 < result.epsilon_lb <= eps, result.summary()


def test_hrr_mutant_fails_audit():
    result, eps = _hrr_audit(_LeakyHRR(EPS, 8), seed=21)
    AUDIT_RESULTS["hadamard_response_mutant"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


# --------------------------------------------------------------------------- hierarchical CDF agent


def _cdf_audit(mech, seed):
    """One agent with value 0 or 2^b − 1: the two differ in every prefix."""
    eps, bits = mech.event().epsilon, mech.bits
    v, v2 = 0, 2 ** bits - 1

    def code(value):
        return lambda o: hadamard_sign(value >> (bits - o[:, 0]), o[:, 1])

    events = _sign_events(code(v), code(v2))
    rng = np.random.default_rng(seed)
    out_d = np.column_stack(mech.randomize(np.full(N, v), rng))
    out_d2 = np.column_stack(mech.randomize(np.full(N, v2), rng))
    return audit_events(out_d, out_d2, events), eps


def test_cdf_agent_audit():
    result, eps = _cdf_audit(HierarchicalCDF(EPS, 4), seed=22)
    AUDIT_RESULTS["hierarchical_cdf"] = result.epsilon_lb
    assert 0.9 < result.epsilon_lb <= eps, result.summary()


def test_cdf_agent_mutant_fails_audit():
    result, eps = _cdf_audit(_LeakyCDF(EPS, 4), seed=22)
    AUDIT_RESULTS["hierarchical_cdf_mutant"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


# --------------------------------------------------------------------------- quantile-round agent


def _quantile_audit(seed):
    """One round's agent below (0) or above (15) the midpoint 8: claimed loss ±ε on bit 1/0."""
    qs = QuantileSearch(EPS, 0, 16, 1, 0.1, 0.1)
    eps = qs.event().epsilon
    events = [Event("report=1", lambda r: r == 1, "forward"),
              Event("report=0", lambda r: r == 0, "reverse")]
    rng = np.random.default_rng(seed)
    mid = 0.5 * (qs.lo + qs.hi)
    out_d = qs.report(np.zeros(N), mid, rng)
    out_d2 = qs.report(np.full(N, 15.0), mid, rng)
    return audit_events(out_d, out_d2, events), eps


def test_quantile_agent_audit():
    result, eps = _quantile_audit(seed=23)
    AUDIT_RESULTS["rr_quantile_round"] = result.epsilon_lb
    assert 0.9 < result.epsilon_lb <= eps, result.summary()


def test_quantile_agent_mutant_fails_audit(monkeypatch):
    monkeypatch.setattr(quantile_module, "RandomizedResponse", _LeakyRR)
    result, eps = _quantile_audit(seed=23)
    AUDIT_RESULTS["rr_quantile_round_mutant"] = result.epsilon_lb
    assert result.epsilon_lb > eps, result.summary()


@pytest.mark.parametrize("seed", [0, 1])
def test_search_uses_each_agent_once(seed, monkeypatch):
    """Every agent answers in exactly one round (one report per agent)."""
    seen = []
    real = quantile_module.QuantileSearch.report

    def spy(self, values, threshold, rng):
        seen.append(np.asarray(values).copy())
        return real(self, values, threshold, rng)

    monkeypatch.setattr(quantile_module.QuantileSearch, "report", spy)
    qs = QuantileSearch(EPS, 0, 16, 1, 0.2, 0.2)
    values = np.arange(qs.sample_size + 7, dtype=float)  # distinct ids as values
    qs.search(values, 0.5, np.random.default_rng(seed))
    assert len(seen) == qs.rounds
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), values)
