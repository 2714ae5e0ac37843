"""Black-box audits of ParityThresholdClassifier through ``fit``: a local agent, a curator row.

*Local agent* (the referee's CDF from the agents' hierarchical randomized response).
``threshold_bits=1``, two curator rows, one local agent whose threshold value is 0 on D
and 1 on D'. Output: the released ``cdf_.cdf(0)`` (clipped to {0, 1} with one agent);
event {cdf_.cdf(0) = 0}, fixed in advance, more likely on D'. The agent's public column
is uninformative half of the time, so the exact log-ratio of this event is
ln((1 + e^ε)/2) = 0.62 at ε = 1, the most the public output shows of the agent's ε-LDP
report. Mutation twin: the agents randomise at 3ε (exact log-ratio 2.37) while the
estimator charges ε.

*Curator row* (``curator_mask=None``: the curator's Laplace dyadic tree at ε/2, sensitivity
2L). ``threshold_bits=1``, four rows with threshold value 0 on D; on D' one of them has
value 1, which moves the two level-1 counts by one each in opposite directions. Output:
``cdf_.counts_[0]``; event {c_0 ≤ 3 and c_1 ≥ 1} (the D' side's counts), fixed in
advance, exact log-ratio about ε/2 (discrete Laplace of scale 4/ε on each count). The
event reads only the tree, whose share of the budget is ε/2, so the test asserts
ε_lb ≤ ε/2. Mutation twin: the tree's noise at a tenth of its scale, the charge unchanged.
The parity blocks are the private parity learner already audited through ``fit`` in
test_parity_fit_audit.py; they are not audited again here.

Measured at ε = 1 (quick runs; a fit costs about 2.5 ms, nearly all validation; the
module's default tests take about 12 s, at most 5 s each): local agent ε_lb = 0.46
(2 × 800 fits), twin 1.60; curator tree 0.25 (2 × 2,000 fits; −0.06 at 2 × 800, too
few for its smaller log-ratio), twin 2.21 (2 × 800 fits). Slow runs (2 × 10,000 fits, about 30 s each): local agent 0.51,
curator tree 0.39.
"""

import numpy as np
import pytest

from skhybrid.hybrid import ParityThresholdClassifier
from skhybrid.hybrid import _parity_threshold as pth
from skhybrid.mechanisms import LaplaceMechanism
from skhybrid.mechanisms.local.cdf import HierarchicalCDF

from ._stats import pure_dp_lower_bound

pytestmark = pytest.mark.filterwarnings("ignore::skhybrid.exceptions.DegenerateModelWarning")

EPS = 1.0
QUICK = 800
TREE_QUICK = 2000  # the tree's event has a smaller log-ratio (ε/2) to show
RUNS = [pytest.param(QUICK, id="quick"), pytest.param(10_000, id="full", marks=pytest.mark.slow)]


def _fit(X, y, mask, seed):
    return ParityThresholdClassifier(threshold_bits=1, alpha=0.5, epsilon=EPS, classes=[0, 1],
                                     random_state=int(seed)).fit(X, y, curator_mask=mask)


# ------------------------------------------------------------------------- local agent

def _local_hits(value, seeds):
    X = np.array([[0, 1, 0], [1, 0, 1], [0, 0, value]])  # two parity bits, the threshold
    y, mask = np.zeros(3, dtype=int), np.array([True, True, False])
    return sum(_fit(X, y, mask, s).cdf_.cdf(0) == 0 for s in seeds)


def _local_audit(runs):
    k1 = _local_hits(1, range(runs))
    k2 = _local_hits(0, range(runs, 2 * runs))
    return pure_dp_lower_bound(k1, runs, k2, runs, symmetric=False)


class _ThreeEpsilonCDF(HierarchicalCDF):
    """Mutant agents: they randomise at 3ε; the estimator still charges ε."""

    def fit(self, values, rng):
        return HierarchicalCDF(3 * self.epsilon, self.bits).fit(values, rng)


@pytest.mark.parametrize("runs", RUNS)
def test_local_agent_respects_epsilon(runs):
    assert 0.2 < _local_audit(runs) <= EPS


def test_twin_with_agents_at_three_epsilon_is_caught(monkeypatch):
    monkeypatch.setattr(pth, "HierarchicalCDF", _ThreeEpsilonCDF)
    assert _local_audit(QUICK) > EPS


# ------------------------------------------------------------------------- curator row

def _tree_hits(value, seeds):
    X = np.zeros((4, 3), dtype=int)
    X[0, -1] = value
    y = np.zeros(4, dtype=int)
    hits = 0
    for s in seeds:
        c0, c1 = _fit(X, y, None, s).cdf_.counts_[0]
        hits += c0 <= 3 and c1 >= 1
    return hits


def _tree_audit(runs):
    k1 = _tree_hits(1, range(runs))
    k2 = _tree_hits(0, range(runs, 2 * runs))
    return pure_dp_lower_bound(k1, runs, k2, runs, symmetric=False)


@pytest.mark.parametrize("runs", [pytest.param(TREE_QUICK, id="quick"),
                                  pytest.param(10_000, id="full", marks=pytest.mark.slow)])
def test_curator_tree_respects_its_half_of_epsilon(runs):
    assert 0.05 < _tree_audit(runs) <= EPS / 2


def test_twin_with_a_tenth_of_the_tree_noise_is_caught(monkeypatch):
    def event(self, population="central", source=""):  # the charge: unchanged
        return LaplaceMechanism(self.epsilon, 2.0 * self.levels).event(
            population=population, source=source)

    monkeypatch.setattr(pth.LaplaceTreeCDF, "event", event)
    monkeypatch.setattr(pth.LaplaceTreeCDF, "mechanism",
                        lambda self: LaplaceMechanism(10 * self.epsilon, 2.0 * self.levels))
    assert _tree_audit(QUICK) > EPS  # the twin needs fewer runs
