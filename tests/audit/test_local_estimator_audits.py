"""Local-agent estimators: the agents' randomizer, seen through ``fit``, matches the charge.

The review of this round found that LocalThresholdClassifier's and ParityAndThreshold's
agents could randomise at 2ε while the estimators charged ε and every existing test still
passed. A black-box audit of the released threshold cannot catch that: with one agent and
one threshold bit, 3,000 fits per side bound ε at 0.38 for the 2ε twin (the hierarchical
CDF asks each agent about one random node, and the threshold keeps little of it). So this
audit is white-box, through ``fit``: the noise spy records every Bernoulli keep-probability
the agents use, and each must be the e^ε/(1+e^ε) of the ε charged to the "local"
population. The mutation twin (agents at 2ε, charge unchanged) must fail.
"""

import math

import numpy as np
import pytest

import skhybrid.hybrid._local_threshold as lt
from skhybrid.hybrid import LocalThresholdClassifier, ParityAndThresholdClassifier
from skhybrid.mechanisms._noise import record_noise
from skhybrid.mechanisms.local.cdf import HierarchicalCDF

EPS = 1.0


class _TwiceEpsilonCDF(HierarchicalCDF):
    """Mutant agents: they randomise at 2ε; the estimator still charges ε."""

    def fit(self, values, rng):
        return HierarchicalCDF(2 * self.epsilon, self.bits).fit(values, rng)


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, (n, 3)), rng.integers(0, 16, n)])
    y_thr = (X[:, -1] >= 9).astype(int)
    y_par = X[:, 0] ^ X[:, 2]
    return X, y_par, y_thr


def _fits():
    X, y_par, y_thr = _data()
    curator = np.arange(len(X)) < 1000
    return {
        "LocalThresholdClassifier": lambda: LocalThresholdClassifier(
            threshold_bits=4, epsilon=EPS, classes=[0, 1], random_state=0).fit(
                X[:, -1:], y_thr, curator_mask=curator),
        "ParityAndThresholdClassifier": lambda: ParityAndThresholdClassifier(
            threshold_bits=4, epsilon=EPS, classes=([0, 1], [0, 1]), random_state=0).fit(
                X, np.column_stack([y_par, y_thr]), curator_mask=curator),
    }


def _agent_keep_probabilities(fit):
    with record_noise() as draws:
        est = fit()
    ps = [d.scale for d in draws if d.kind == "bernoulli" and "cdf" in (d.tag or "")]
    return est, ps


@pytest.mark.parametrize("name", ["LocalThresholdClassifier", "ParityAndThresholdClassifier"])
def test_agents_randomise_at_the_charged_epsilon(name):
    est, ps = _agent_keep_probabilities(_fits()[name])
    eps_local = est.privacy_spent_["local"][0]
    assert eps_local == EPS and ps, "the agents' randomizer must be visible to the spy"
    flip = 1.0 / (1.0 + math.exp(eps_local))  # the spy records the flip probability
    keep = 1.0 / (1.0 + math.exp(-eps_local))
    assert all(math.isclose(p, flip) or math.isclose(p, keep) for p in ps), (ps, flip)


@pytest.mark.parametrize("name", ["LocalThresholdClassifier", "ParityAndThresholdClassifier"])
def test_twin_with_agents_at_twice_epsilon_fails(name, monkeypatch):
    monkeypatch.setattr(lt, "HierarchicalCDF", _TwiceEpsilonCDF)
    est, ps = _agent_keep_probabilities(_fits()[name])
    eps_local = est.privacy_spent_["local"][0]
    flip = 1.0 / (1.0 + math.exp(eps_local))
    keep = 1.0 / (1.0 + math.exp(-eps_local))
    assert ps and not all(math.isclose(p, flip) or math.isclose(p, keep) for p in ps)
