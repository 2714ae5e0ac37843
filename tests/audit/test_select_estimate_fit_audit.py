"""Black-box audits of SelectThenEstimate through ``fit``: curator row, local agent, curator only.

*Curator row* (selection, exponential mechanism, sensitivity 2). d = 2, three curator rows
(−1, +1) on D; on D' one of them is (+1, −1), which moves both column sums by the
sensitivity in opposite directions; one local agent, the same on both sides. Output:
``selected_index_``; event {selected 0} (fixed in advance: the rarely chosen column, where
the log-ratio approaches ε). Its exact log-ratio here is ln(σ(−1/2)/σ(−3/2)) = 0.73 at
ε = 1 (fewer rows than the limit case so that the twin's event is not too rare to count).
Mutation twin: the selection's rate tripled (a 3ε selection charged as ε).

*Local agent* (randomized response). d = 1, one curator row, one agent at +1 on D and −1
on D'. Output: ``estimate_`` (a function of the agent's one report; exact log-ratio ε).
Mutation twin: agents keep their bit with the probability of 3ε, the charge stays ε.

*Curator only* (``curator_mask=None``: selection at ε/2, Laplace estimate at ε/2). d = 1,
eight rows +1 on D, one of them −1 on D': the mean moves by the sensitivity 2/m, from 1 to
0.75. Output: ``estimate_``; event {estimate ≤ 0.75}, fixed in advance (exact log-ratio
ε/2 for the Laplace law). The whole fit's true loss is ε/2 (d = 1: the selection is
public), so the test asserts ε_lb ≤ ε/2. Mutation twin: Laplace noise at a tenth of its
scale (the charge unchanged).

Measured at ε = 1 (quick runs, each default test 1-3 s): curator ε_lb = 0.48
(2 × 2,000 fits); local 0.68 (2 × 1,500); curator only 0.35 (2 × 2,000); the twins at
2 × 1,000 fits: 1.68, 2.30 and 4.09. Slow runs (2 × 20,000 fits): curator
0.69, local 0.94, curator only 0.44.
"""

import math

import numpy as np
import pytest

from skhybrid.hybrid import SelectThenEstimate
from skhybrid.hybrid import _select_estimate as se
from skhybrid.mechanisms import LaplaceMechanism, RandomizedResponse
from skhybrid.mechanisms.exponential import ExponentialMechanism

from ._stats import pure_dp_lower_bound
from .test_parity_transfer_fit_audit import split_half_bound

EPS = 1.0
QUICK = 2000
LOCAL_QUICK = 1500
TWIN_RUNS = 1000  # each twin's true loss is at least twice the claim


def _fits(X, mask, seeds, attr):
    return np.array([getattr(SelectThenEstimate(epsilon=EPS, random_state=int(s)).fit(
        X, curator_mask=mask), attr) for s in seeds], dtype=float)


# ------------------------------------------------------------------------- curator row

def _curator_audit(runs):
    X = np.vstack([np.tile([-1, 1], (3, 1)), [[1, 1]]])  # last row: the local agent
    X2 = X.copy()
    X2[0] = [1, -1]
    mask = np.r_[np.ones(3, bool), False]
    k1 = np.count_nonzero(_fits(X2, mask, range(runs), "selected_index_") == 0)
    k2 = np.count_nonzero(_fits(X, mask, range(runs, 2 * runs), "selected_index_") == 0)
    return pure_dp_lower_bound(k1, runs, k2, runs, symmetric=False)


@pytest.mark.parametrize("runs", [pytest.param(QUICK, id="quick"),
                                  pytest.param(20_000, id="full", marks=pytest.mark.slow)])
def test_curator_row_respects_epsilon(runs):
    assert 0.3 < _curator_audit(runs) <= EPS


def test_twin_with_three_times_the_selection_rate_is_caught(monkeypatch):
    rate = ExponentialMechanism._scaled_epsilon
    monkeypatch.setattr(ExponentialMechanism, "_scaled_epsilon", lambda self: 3 * rate(self))
    assert _curator_audit(TWIN_RUNS) > EPS


# ------------------------------------------------------------------------- local agent

def _local_audit(runs):
    mask = np.array([True, False])
    X, X2 = np.array([[1], [1]]), np.array([[1], [-1]])
    return split_half_bound(_fits(X, mask, range(runs), "estimate_"),
                            _fits(X2, mask, range(runs, 2 * runs), "estimate_"))


class _AgentsAtThreeEpsilon(RandomizedResponse):
    """Mutant agents: they keep their bit with the probability of 3ε; the charge is ε."""

    @property
    def flip_probability(self):
        return 1.0 / (1.0 + math.exp(3 * self.epsilon))


@pytest.mark.parametrize("runs", [pytest.param(LOCAL_QUICK, id="quick"),
                                  pytest.param(20_000, id="full", marks=pytest.mark.slow)])
def test_local_agent_respects_epsilon(runs):
    assert 0.5 < _local_audit(runs) <= EPS


def test_twin_with_agents_at_three_epsilon_is_caught(monkeypatch):
    monkeypatch.setattr(se, "RandomizedResponse", _AgentsAtThreeEpsilon)
    assert _local_audit(TWIN_RUNS) > EPS


# ------------------------------------------------------------------------- curator only

def _curator_only_audit(runs):
    X = np.ones((8, 1), dtype=int)
    X2 = X.copy()
    X2[0] = -1  # the mean moves from 1 to 0.75 (both on the noise lattice)
    k1 = np.count_nonzero(_fits(X2, None, range(runs), "estimate_") <= 0.75)
    k2 = np.count_nonzero(_fits(X, None, range(runs, 2 * runs), "estimate_") <= 0.75)
    return pure_dp_lower_bound(k1, runs, k2, runs, symmetric=False)


class _TenthLaplace(LaplaceMechanism):
    """Mutant estimate: noise at a tenth of the scale; the charge (event) is unchanged."""

    def __call__(self, value, rng):
        return LaplaceMechanism(10 * self.epsilon, self.sensitivity)(value, rng)


@pytest.mark.parametrize("runs", [pytest.param(QUICK, id="quick"),
                                  pytest.param(20_000, id="full", marks=pytest.mark.slow)])
def test_curator_only_respects_its_half_of_epsilon(runs):
    assert 0.2 < _curator_only_audit(runs) <= EPS / 2


def test_twin_with_a_tenth_of_the_laplace_noise_is_caught(monkeypatch):
    monkeypatch.setattr(se, "LaplaceMechanism", _TenthLaplace)
    assert _curator_only_audit(TWIN_RUNS) > EPS
